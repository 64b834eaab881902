// UDP header (RFC 768).
#pragma once

#include <cstdint>

#include "dataplane/core/wire/byte_order.hpp"

namespace vxfed::wire {

struct __attribute__((packed)) UdpHeader {
  be16 src_port_be;
  be16 dst_port_be;
  be16 length_be;     // header + payload
  be16 checksum_be;   // 0: none (allowed for IPv4; VXLAN sends 0)
};
static_assert(sizeof(UdpHeader) == 8);

}  // namespace vxfed::wire
