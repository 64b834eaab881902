// Whether a kernel VXLAN device of this network namespace listens on a UDP port (another CNI's,
// or an operator's): such a device decapsulates every datagram to the port for its own VNIs
// (or, in external mode, for any), so the uplink's tc drop must leave its VNIs alone
// (uplink_kernel_drop.hpp, scope `our_vnis`) and drop only ours. Read from the kernel's link
// table (RTM_GETLINK over rtnetlink): only devices that are up hold their port.
#pragma once

#include <cstdint>

#include "common/result.hpp"

namespace vxfed::dataplane {

Result<bool> kernel_vxlan_device_on_port(std::uint16_t port);

}  // namespace vxfed::dataplane
