// The virtio-net header (struct virtio_net_hdr of the virtio specification, 5.1.6) that an
// AF_PACKET socket with PACKET_VNET_HDR puts in front of every frame it hands over and takes
// in front of every frame it sends: the frame's checksum state and, for a super-packet, how
// it is to be segmented (docs/pod-ports.md). The kernel writes it in the host's byte order
// for legacy headers (little-endian here: byte_order.hpp asserts it), so its 16-bit fields
// are plain host-order integers, not be16.
#pragma once

#include <cstdint>

namespace vxfed::wire {

struct __attribute__((packed)) VirtioNetHeader {
  std::uint8_t flags;         // kVnetNeedsCsum, kVnetDataValid
  std::uint8_t gso_type;      // kVnetGso*, optionally | kVnetGsoEcn
  std::uint16_t hdr_len;      // the sender's hint of the header bytes (never trusted)
  std::uint16_t gso_size;     // payload bytes per segment
  std::uint16_t csum_start;   // where the checksum to finish starts (from the frame's start)
  std::uint16_t csum_offset;  // where, from csum_start, the checksum is stored
};
static_assert(sizeof(VirtioNetHeader) == 10);

// flags
constexpr std::uint8_t kVnetNeedsCsum = 1;  // the L4 checksum field holds only the pseudo-header sum
constexpr std::uint8_t kVnetDataValid = 2;  // the checksum was verified (received frames only)
// gso_type
constexpr std::uint8_t kVnetGsoNone = 0;
constexpr std::uint8_t kVnetGsoTcpv4 = 1;
constexpr std::uint8_t kVnetGsoUdp = 3;     // UDP fragmentation offload: refused
constexpr std::uint8_t kVnetGsoTcpv6 = 4;
constexpr std::uint8_t kVnetGsoUdpL4 = 5;   // UDP segmentation (UDP_SEGMENT, USO)
constexpr std::uint8_t kVnetGsoEcn = 0x80;  // TCP with ECN: CWR only on the first segment

}  // namespace vxfed::wire
