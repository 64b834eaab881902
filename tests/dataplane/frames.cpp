#include "tests/dataplane/frames.hpp"

#include <stdexcept>

#include "common/net/ipv4.hpp"

namespace vxfed::test {
namespace {
void put16(Bytes& b, std::uint16_t v) { b.push_back(v >> 8); b.push_back(v & 0xff); }
void put32(Bytes& b, std::uint32_t v) { put16(b, v >> 16); put16(b, v & 0xffff); }
void put_mac(Bytes& b, const Mac& m) { b.insert(b.end(), m.begin(), m.end()); }
}  // namespace

// Text through common/net (the one parser); a typo in a test is a thrown error, not a zero.
Mac mac(const std::string& text) {
  auto m = net::parse_mac(text);
  if (!m) throw std::invalid_argument(m.error());
  return *m;
}

std::uint32_t ip(const std::string& text) {
  auto a = net::Ipv4Addr::parse(text);
  if (!a) throw std::invalid_argument(a.error());
  return a->value;
}

std::uint16_t checksum(const std::uint8_t* p, std::size_t n) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < n; i += 2) sum += (p[i] << 8) | p[i + 1];
  if (n & 1) sum += p[n - 1] << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

Bytes ethernet(const Mac& dst, const Mac& src, std::uint16_t type, const Bytes& payload) {
  Bytes b;
  put_mac(b, dst);
  put_mac(b, src);
  put16(b, type);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes ipv4(std::uint32_t src, std::uint32_t dst, std::uint8_t proto, const Bytes& payload,
           const Ipv4Opts& o) {
  Bytes b;
  const std::size_t hlen = o.ihl >= 5 ? o.ihl * 4u : 20u;
  b.push_back(static_cast<std::uint8_t>(0x40 | o.ihl));
  b.push_back(o.tos);
  put16(b, static_cast<std::uint16_t>(static_cast<int>(hlen + payload.size()) + o.total_length_delta));
  put16(b, o.id);
  put16(b, static_cast<std::uint16_t>((o.df ? 0x4000 : 0) | (o.mf ? 0x2000 : 0) | o.frag_offset));
  b.push_back(o.ttl);
  b.push_back(proto);
  put16(b, 0);
  put32(b, src);
  put32(b, dst);
  while (b.size() < hlen) b.push_back(1);  // NOP options
  std::uint16_t c = checksum(b.data(), hlen);
  if (o.bad_checksum) c ^= 0x5a5a;
  b[10] = c >> 8;
  b[11] = c & 0xff;
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes udp(std::uint16_t sport, std::uint16_t dport, const Bytes& payload, int length_delta) {
  Bytes b;
  put16(b, sport);
  put16(b, dport);
  put16(b, static_cast<std::uint16_t>(static_cast<int>(8 + payload.size()) + length_delta));
  put16(b, 0);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes vxlan(std::uint32_t vni, const Bytes& inner, std::uint8_t flags) {
  Bytes b{flags, 0, 0, 0};
  put32(b, vni << 8);
  b.insert(b.end(), inner.begin(), inner.end());
  return b;
}

Bytes arp(std::uint16_t op, const Mac& sha, std::uint32_t spa, const Mac& tha, std::uint32_t tpa) {
  Bytes b;
  put16(b, 1);
  put16(b, 0x0800);
  b.push_back(6);
  b.push_back(4);
  put16(b, op);
  put_mac(b, sha);
  put32(b, spa);
  put_mac(b, tha);
  put32(b, tpa);
  return b;
}

Bytes payload(std::size_t n, std::uint8_t seed) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(i * 7 + seed);
  return b;
}

Bytes vxlan_frame(const Mac& dst, const Mac& src, std::uint32_t outer_src, std::uint32_t outer_dst,
                  std::uint16_t sport, std::uint32_t vni, const Bytes& inner, std::uint8_t tos) {
  Ipv4Opts o;
  o.df = true;
  o.tos = tos;
  return ethernet(dst, src, 0x0800, ipv4(outer_src, outer_dst, 17, udp(sport, 4789, vxlan(vni, inner)), o));
}

std::string hex_diff(const Bytes& want, const Bytes& got) {
  char buf[160];
  if (want.size() != got.size()) {
    std::snprintf(buf, sizeof(buf), "length %zu, want %zu", got.size(), want.size());
    return buf;
  }
  for (std::size_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i]) {
      std::snprintf(buf, sizeof(buf), "byte %zu: got 0x%02x, want 0x%02x", i, got[i], want[i]);
      return buf;
    }
  return "identical";
}

std::uint16_t get16(const Bytes& b, std::size_t at) { return static_cast<std::uint16_t>(b.at(at) << 8 | b.at(at + 1)); }
std::uint32_t get32(const Bytes& b, std::size_t at) { return std::uint32_t{get16(b, at)} << 16 | get16(b, at + 2); }
void put16(Bytes& b, std::size_t at, std::uint16_t v) {
  b.at(at) = static_cast<std::uint8_t>(v >> 8);
  b.at(at + 1) = static_cast<std::uint8_t>(v);
}

std::uint16_t pseudo_sum(std::uint32_t src, std::uint32_t dst, std::uint8_t proto, std::size_t l4_len) {
  Bytes p;
  for (std::uint32_t a : {src, dst})
    for (int s = 24; s >= 0; s -= 8) p.push_back(static_cast<std::uint8_t>(a >> s));
  p.push_back(0);
  p.push_back(proto);
  p.push_back(static_cast<std::uint8_t>(l4_len >> 8));
  p.push_back(static_cast<std::uint8_t>(l4_len));
  return static_cast<std::uint16_t>(~checksum(p.data(), p.size()));
}

bool l4_checksum_ok(const Bytes& b, std::size_t ip_at) {
  const std::size_t hlen = (b.at(ip_at) & 0x0f) * 4u;
  const std::size_t total = get16(b, ip_at + 2);
  Bytes p(b.begin() + static_cast<long>(ip_at + 12), b.begin() + static_cast<long>(ip_at + 20));
  p.push_back(0);
  p.push_back(b.at(ip_at + 9));
  p.push_back(static_cast<std::uint8_t>((total - hlen) >> 8));
  p.push_back(static_cast<std::uint8_t>(total - hlen));
  p.insert(p.end(), b.begin() + static_cast<long>(ip_at + hlen), b.begin() + static_cast<long>(ip_at + total));
  return checksum(p.data(), p.size()) == 0;
}
bool ipv4_checksum_ok(const Bytes& b, std::size_t ip_at) {
  return checksum(b.data() + ip_at, (b.at(ip_at) & 0x0f) * 4u) == 0;
}

Bytes tcp_partial(std::uint32_t src, std::uint32_t dst, std::uint32_t seq, std::uint8_t flags, const Bytes& data) {
  Bytes t = {0x9c, 0x40, 0x14, 0x51};  // ports 40000 -> 5201
  for (int s = 24; s >= 0; s -= 8) t.push_back(static_cast<std::uint8_t>(seq >> s));
  t.insert(t.end(), {0, 0, 0x30, 0x39, 0x80, flags, 0x01, 0xf5, 0, 0, 0, 0});  // ack 12345, 8 words
  t.insert(t.end(), {1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2});                 // NOP NOP TS
  t.insert(t.end(), data.begin(), data.end());
  put16(t, 16, pseudo_sum(src, dst, 6, t.size()));
  return t;
}

}  // namespace vxfed::test
