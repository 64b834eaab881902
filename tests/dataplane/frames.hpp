// Frame builders for packet tests: plain bytes, written field by field independently of the
// pipeline's own header code, so expected outputs are not derived from the code under test.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/net/mac.hpp"

namespace vxfed::test {

using Bytes = std::vector<std::uint8_t>;
using Mac = net::Mac;

Mac mac(const std::string& text);
std::uint32_t ip(const std::string& text);  // host order

Bytes ethernet(const Mac& dst, const Mac& src, std::uint16_t type, const Bytes& payload);

struct Ipv4Opts {
  std::uint8_t tos = 0;
  std::uint8_t ttl = 64;
  std::uint16_t id = 0;
  bool df = false;
  bool mf = false;
  std::uint16_t frag_offset = 0;   // 8-byte units
  std::uint8_t ihl = 5;            // > 5: NOP options are added
  int total_length_delta = 0;      // to forge a wrong total length
  bool bad_checksum = false;
};
Bytes ipv4(std::uint32_t src, std::uint32_t dst, std::uint8_t proto, const Bytes& payload,
           const Ipv4Opts& o = {});
Bytes udp(std::uint16_t sport, std::uint16_t dport, const Bytes& payload, int length_delta = 0);
Bytes vxlan(std::uint32_t vni, const Bytes& inner, std::uint8_t flags = 0x08);
Bytes arp(std::uint16_t op, const Mac& sha, std::uint32_t spa, const Mac& tha, std::uint32_t tpa);
Bytes payload(std::size_t n, std::uint8_t seed = 0);  // deterministic filler

// A whole VXLAN frame as a remote VTEP sends it (DF, TTL 64, UDP checksum 0).
Bytes vxlan_frame(const Mac& dst, const Mac& src, std::uint32_t outer_src, std::uint32_t outer_dst,
                  std::uint16_t sport, std::uint32_t vni, const Bytes& inner, std::uint8_t tos = 0);

std::uint16_t checksum(const std::uint8_t* p, std::size_t n);  // Internet checksum, host order

// The pseudo-header sum (not complemented) of an L4 packet, as a kernel leaves it in the
// checksum field of a packet whose checksum it hands over pending (NEEDS_CSUM).
std::uint16_t pseudo_sum(std::uint32_t src, std::uint32_t dst, std::uint8_t proto, std::size_t l4_len);
// A TCP segment, ports 40000 -> 5201, ACK number 12345, a 20-byte header + 12 bytes of options
// (NOP NOP timestamp), with its checksum pending (the pseudo-header sum in the field).
Bytes tcp_partial(std::uint32_t src, std::uint32_t dst, std::uint32_t seq, std::uint8_t flags, const Bytes& data);
// Whether the L4 checksum of the IPv4 packet at `ip_at` in frame b is complete and right.
bool l4_checksum_ok(const Bytes& b, std::size_t ip_at);
bool ipv4_checksum_ok(const Bytes& b, std::size_t ip_at);
std::uint16_t get16(const Bytes& b, std::size_t at);
std::uint32_t get32(const Bytes& b, std::size_t at);
void put16(Bytes& b, std::size_t at, std::uint16_t v);
std::string hex_diff(const Bytes& want, const Bytes& got);     // first difference, for messages

}  // namespace vxfed::test
