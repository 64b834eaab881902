// Turns off TX checksum offload, TSO and GSO on the pod's end of the veth. The dataplane reads
// the host end with AF_PACKET, which sees frames before the kernel finishes offloaded work:
// with offloads on, TCP would arrive with unfinished checksums and as 64 KiB GSO super-frames
// that cannot be tunnelled (docs/cni.md, docs/dataplane.md: port model).
#pragma once

#include <string>

#include "common/result.hpp"  // vxfed::Status, from common/

namespace vxfed::cni {

// `netns_fd`: the namespace holding `ifname` (the ioctl socket is created there).
vxfed::Status disable_offloads(int netns_fd, const std::string& ifname);

struct OffloadState {
  bool tx_checksum = true, tso = true, gso = true;
};
vxfed::Result<OffloadState> read_offloads(int netns_fd, const std::string& ifname);

}  // namespace vxfed::cni
