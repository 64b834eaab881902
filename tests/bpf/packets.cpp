#include "tests/bpf/packets.hpp"

#include <fmt/format.h>

namespace vxfed::bpf::test {
namespace {
void put16(Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v & 0xff));
}
const uint8_t kDst[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
const uint8_t kSrc[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
Bytes filler(size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; i++) b[i] = static_cast<uint8_t>(i * 7 + 3);
  return b;
}
}  // namespace

uint16_t internet_checksum(const uint8_t* p, size_t n) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < n; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (n & 1) sum += static_cast<uint32_t>(p[n - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

bool ipv4_checksum_ok(const Bytes& f) {
  if (f.size() < 34) return false;
  size_t ihl = (f[14] & 0x0f) * 4u;
  if (f.size() < 14 + ihl) return false;
  return internet_checksum(f.data() + 14, ihl) == 0;
}

Bytes eth(uint16_t ethertype, const Bytes& payload) {
  Bytes b(kDst, kDst + 6);
  b.insert(b.end(), kSrc, kSrc + 6);
  put16(b, ethertype);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes eth_vlan(uint16_t vid, uint8_t pcp, uint16_t inner_type, const Bytes& payload) {
  Bytes b(kDst, kDst + 6);
  b.insert(b.end(), kSrc, kSrc + 6);
  put16(b, 0x8100);
  put16(b, static_cast<uint16_t>(pcp << 13 | (vid & 0x0fff)));
  put16(b, inner_type);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes ipv4(uint8_t proto, const Bytes& l4, const Ip4& o) {
  Bytes b;
  size_t hlen = o.ihl * 4u;
  b.push_back(static_cast<uint8_t>(o.version << 4 | (o.ihl & 0x0f)));
  b.push_back(o.tos);
  put16(b, static_cast<uint16_t>(static_cast<int>(hlen + l4.size()) + o.tot_len_delta));
  put16(b, 0x1234);  // id
  put16(b, static_cast<uint16_t>((o.mf ? 0x2000 : 0) | (o.frag_offset & 0x1fff)));
  b.push_back(64);  // ttl
  b.push_back(proto);
  put16(b, 0);  // checksum, below
  for (uint8_t a : {10, 244, 1, 1}) b.push_back(a);
  for (uint8_t a : {10, 244, 1, 2}) b.push_back(a);
  while (b.size() < hlen) b.push_back(1);  // NOP options
  uint16_t c = internet_checksum(b.data(), b.size() >= hlen ? hlen : b.size());
  b[10] = static_cast<uint8_t>(c >> 8);
  b[11] = static_cast<uint8_t>(c & 0xff);
  b.insert(b.end(), l4.begin(), l4.end());
  return b;
}

Bytes udp(uint16_t sport, uint16_t dport, size_t n) {
  Bytes b;
  put16(b, sport);
  put16(b, dport);
  put16(b, static_cast<uint16_t>(8 + n));
  put16(b, 0);  // UDP checksum 0 (IPv4): the DSCP rewrite must not need it
  Bytes p = filler(n);
  b.insert(b.end(), p.begin(), p.end());
  return b;
}

Bytes tcp(uint16_t sport, uint16_t dport, size_t n) {
  Bytes b;
  put16(b, sport);
  put16(b, dport);
  for (int i = 0; i < 8; i++) b.push_back(0);  // seq, ack
  b.push_back(0x50);                            // data offset 5
  b.push_back(0x18);                            // PSH ACK
  put16(b, 0xffff);                             // window
  put16(b, 0xbeef);                             // checksum (not checked by the programs)
  put16(b, 0);                                  // urgent
  Bytes p = filler(n);
  b.insert(b.end(), p.begin(), p.end());
  return b;
}

Bytes ipv6_udp(uint16_t sport, uint16_t dport, size_t n) {
  Bytes l4 = udp(sport, dport, n);
  Bytes b = {0x60, 0, 0, 0};
  put16(b, static_cast<uint16_t>(l4.size()));
  b.push_back(17);  // next header
  b.push_back(64);
  for (int i = 0; i < 32; i++) b.push_back(static_cast<uint8_t>(i == 0 ? 0xfd : i));
  b.insert(b.end(), l4.begin(), l4.end());
  return eth(0x86dd, b);
}

Bytes arp_request() {
  Bytes b;
  put16(b, 1);       // ethernet
  put16(b, 0x0800);  // ipv4
  b.push_back(6);
  b.push_back(4);
  put16(b, 1);  // request
  b.insert(b.end(), kSrc, kSrc + 6);
  for (uint8_t a : {10, 244, 1, 1}) b.push_back(a);
  for (int i = 0; i < 6; i++) b.push_back(0);
  for (uint8_t a : {10, 244, 1, 2}) b.push_back(a);
  return eth(0x0806, b);
}

Bytes udp4(uint16_t sport, uint16_t dport, size_t n, const Ip4& o) { return eth(0x0800, ipv4(17, udp(sport, dport, n), o)); }
Bytes tcp4(uint16_t sport, uint16_t dport, size_t n, const Ip4& o) { return eth(0x0800, ipv4(6, tcp(sport, dport, n), o)); }

std::string first_difference(const Bytes& want, const Bytes& got) {
  if (want.size() != got.size()) return fmt::format("length {} != {}", got.size(), want.size());
  for (size_t i = 0; i < want.size(); i++)
    if (want[i] != got[i]) return fmt::format("byte {}: got 0x{:02x}, want 0x{:02x}", i, got[i], want[i]);
  return "";
}

}  // namespace vxfed::bpf::test
