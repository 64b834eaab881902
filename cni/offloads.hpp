// Reads the TX checksum and segmentation offloads of the pod's end of the veth, for CHECK.
// ADD leaves them on, as the kernel creates a veth: the dataplane reads the host end with
// AF_PACKET and vnet headers, taking the pod's 64 KiB GSO super-packets and pending checksums
// as they are (docs/pod-ports.md, docs/cni.md).
#pragma once

#include <string>

#include "common/result.hpp"  // vxfed::Status, from common/

namespace vxfed::cni {

struct OffloadState {
  bool tx_checksum = true, tso = true, gso = true;
};
// `netns_fd`: the namespace holding `ifname` (the ioctl socket is created there).
vxfed::Result<OffloadState> read_offloads(int netns_fd, const std::string& ifname);

}  // namespace vxfed::cni
