// TCP header (RFC 9293), as far as segmentation and coalescing of super-packets need it.
#pragma once

#include <cstdint>

#include "dataplane/core/wire/byte_order.hpp"

namespace vxfed::wire {

struct __attribute__((packed)) TcpHeader {
  be16 src_port_be;
  be16 dst_port_be;
  be32 seq_be;
  be32 ack_be;
  std::uint8_t data_offset;     // header length in 32-bit words in the high nibble
  std::uint8_t flags;           // CWR ECE URG ACK PSH RST SYN FIN
  be16 window_be;
  be16 checksum_be;
  be16 urgent_be;
};
static_assert(sizeof(TcpHeader) == 20);

constexpr std::uint8_t kTcpFin = 0x01;
constexpr std::uint8_t kTcpSyn = 0x02;
constexpr std::uint8_t kTcpRst = 0x04;
constexpr std::uint8_t kTcpPsh = 0x08;
constexpr std::uint8_t kTcpAck = 0x10;
constexpr std::uint8_t kTcpUrg = 0x20;
constexpr std::uint8_t kTcpEce = 0x40;
constexpr std::uint8_t kTcpCwr = 0x80;

constexpr std::uint32_t kTcpChecksumOffset = 16;  // offsetof(TcpHeader, checksum_be)
constexpr std::uint32_t kUdpChecksumOffset = 6;   // offsetof(UdpHeader, checksum_be)

inline std::uint32_t tcp_header_len(const TcpHeader& h) { return (h.data_offset >> 4) * 4u; }

}  // namespace vxfed::wire
