// Frame builders for the BPF golden tests: bytes written field by field, independently of the
// programs under test, so expected outputs are not derived from the code being checked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vxfed::bpf::test {

using Bytes = std::vector<uint8_t>;

struct Ip4 {
  uint8_t tos = 0;
  uint8_t ihl = 5;          // > 5 adds NOP options
  bool mf = false;          // more fragments
  uint16_t frag_offset = 0; // 8-byte units
  int tot_len_delta = 0;    // forge a wrong total length
  uint8_t version = 4;
};

Bytes eth(uint16_t ethertype, const Bytes& payload);
Bytes eth_vlan(uint16_t vid, uint8_t pcp, uint16_t inner_type, const Bytes& payload);  // in-band 802.1Q
Bytes ipv4(uint8_t proto, const Bytes& l4, const Ip4& o = {});  // 10.244.1.1 -> 10.244.1.2
Bytes ipv6_udp(uint16_t sport, uint16_t dport, size_t payload_len);
Bytes udp(uint16_t sport, uint16_t dport, size_t payload_len);
Bytes tcp(uint16_t sport, uint16_t dport, size_t payload_len);
Bytes arp_request();

// IPv4/UDP (or TCP) frame in one call.
Bytes udp4(uint16_t sport, uint16_t dport, size_t payload_len = 32, const Ip4& o = {});
Bytes tcp4(uint16_t sport, uint16_t dport, size_t payload_len = 32, const Ip4& o = {});

uint16_t internet_checksum(const uint8_t* p, size_t n);  // RFC 1071, result in host order
bool ipv4_checksum_ok(const Bytes& frame);               // IPv4 header at offset 14
std::string first_difference(const Bytes& want, const Bytes& got);

}  // namespace vxfed::bpf::test
