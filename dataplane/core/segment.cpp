#include "dataplane/core/segment.hpp"

#include <cstring>

#include "dataplane/core/wire/ethernet.hpp"
#include "dataplane/core/wire/ipv4.hpp"
#include "dataplane/core/wire/tcp.hpp"
#include "dataplane/core/wire/udp.hpp"

namespace vxfed::dataplane {

namespace {

using namespace vxfed::wire;


constexpr std::uint32_t kIpTotalLength = offsetof(Ipv4Header, total_length_be);
constexpr std::uint32_t kIpId = offsetof(Ipv4Header, id_be);
constexpr std::uint32_t kIpChecksum = offsetof(Ipv4Header, checksum_be);
constexpr std::uint32_t kIpAddresses = offsetof(Ipv4Header, src_be);
constexpr std::uint32_t kTcpSeq = offsetof(TcpHeader, seq_be);
constexpr std::uint32_t kTcpFlags = offsetof(TcpHeader, flags);
constexpr std::uint32_t kUdpLength = offsetof(UdpHeader, length_be);

// Rewrites the IPv4 header at ip for a packet of `total` bytes and ID + index.
void rewrite_ipv4(std::uint8_t* ip, std::uint32_t len, std::uint32_t total, std::uint32_t index) {
  store_be16(ip + kIpTotalLength, static_cast<std::uint16_t>(total));
  store_be16(ip + kIpId, static_cast<std::uint16_t>(load_be16(ip + kIpId) + index));
  store_be16(ip + kIpChecksum, ipv4_header_checksum(ip, len));
}

}  // namespace

// The sum runs over every byte a software checksum covers (a DPDK port's segments, the
// uplink's), so it takes 8 bytes a step instead of 2. Adding the 32-bit halves of 64-bit
// loads in a 64-bit accumulator and folding gives the one's-complement sum of the 16-bit
// words in the machine's byte order; on a little-endian machine that is the byte-swap of the
// sum of the big-endian words the checksum is defined over (RFC 1071 2.(B), byte order
// independence). Two accumulators let consecutive loads add in parallel; each takes at most
// 2 * (2^32 - 1) per 16 bytes, so a piece of up to 2^34 bytes cannot overflow it.
void OnesSum::add(const std::uint8_t* p, std::size_t n) {
  if (n == 0) return;
  if (odd_) {  // the low byte of the word the last piece began
    sum_ += p[0];
    ++p;
    --n;
    odd_ = false;
  }
  std::uint64_t a = 0, b = 0;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    std::uint64_t v, w;
    std::memcpy(&v, p + i, 8);
    std::memcpy(&w, p + i + 8, 8);
    a += (v & 0xffffffffu) + (v >> 32);
    b += (w & 0xffffffffu) + (w >> 32);
  }
  for (; i + 2 <= n; i += 2) {
    std::uint16_t v;
    std::memcpy(&v, p + i, 2);
    a += v;
  }
  // 2^32 = 1 modulo 0xffff, so a 64-bit value folds by adding its halves.
  std::uint64_t s = (a & 0xffffffffu) + (a >> 32) + (b & 0xffffffffu) + (b >> 32);
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  sum_ += swap(static_cast<std::uint16_t>(s));  // little-endian only (wire/byte_order.hpp)
  if (i < n) {
    sum_ += static_cast<std::uint32_t>(p[i] << 8);
    odd_ = true;
  }
}

std::uint16_t OnesSum::folded() const {
  std::uint64_t s = sum_;
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<std::uint16_t>(s);
}

void store_l4_checksum(std::uint8_t* field, const OnesSum& sum, bool udp) {
  const auto c = static_cast<std::uint16_t>(~sum.folded());
  store_be16(field, udp && c == 0 ? 0xffff : c);
}

std::uint16_t pseudo_header_sum(const std::uint8_t* src_dst, std::uint8_t proto, std::uint32_t l4_len) {
  OnesSum s;
  s.add(src_dst, 8);
  s.add_word(proto);
  s.add_word(static_cast<std::uint16_t>(l4_len));
  return s.folded();
}

std::uint16_t ipv4_header_checksum(const std::uint8_t* hdr, std::uint32_t len) {
  OnesSum s;
  s.add(hdr, kIpChecksum);
  s.add(hdr + kIpChecksum + 2, len - kIpChecksum - 2);
  return static_cast<std::uint16_t>(~s.folded());
}

std::uint32_t segment_count(const SegmentLayout& l, std::uint32_t packet_len) {
  const std::uint32_t payload = packet_len > l.headers() ? packet_len - l.headers() : 0;
  return payload == 0 ? 1 : (payload + l.mss - 1) / l.mss;
}

std::uint32_t write_segment_headers(const SegmentLayout& l, const std::uint8_t* super, std::uint32_t packet_len,
                                    std::uint32_t index, std::uint8_t* out) {
  const std::uint32_t hdrs = l.headers();
  const std::uint32_t payload = packet_len > hdrs ? packet_len - hdrs : 0;
  const std::uint32_t count = segment_count(l, packet_len);
  const std::uint32_t start = index * l.mss;
  const std::uint32_t len = start >= payload ? 0 : (payload - start < l.mss ? payload - start : l.mss);
  std::memcpy(out, super, hdrs);
  std::uint8_t* ip = out + l.l3_offset;
  std::uint8_t* l4 = out + l.l4_offset();
  const std::uint32_t ip_total = std::uint32_t{l.l3_len} + l.l4_len + len;
  rewrite_ipv4(ip, l.l3_len, ip_total, index);
  if (l.l4_proto == kIpProtoTcp) {
    store_be32(l4 + kTcpSeq, load_be32(l4 + kTcpSeq) + start);
    std::uint8_t flags = l4[kTcpFlags];
    if (index + 1 < count) flags &= static_cast<std::uint8_t>(~(kTcpFin | kTcpPsh));
    if (index > 0) flags &= static_cast<std::uint8_t>(~kTcpCwr);
    l4[kTcpFlags] = flags;
    store_be16(l4 + kTcpChecksumOffset, pseudo_header_sum(ip + kIpAddresses, kIpProtoTcp, l.l4_len + len));
  } else {
    store_be16(l4 + kUdpLength, static_cast<std::uint16_t>(sizeof(UdpHeader) + len));
    store_be16(l4 + kUdpChecksumOffset, pseudo_header_sum(ip + kIpAddresses, kIpProtoUdp, sizeof(UdpHeader) + len));
  }
  if (l.outer) {
    constexpr std::uint32_t outer_ip = sizeof(EthernetHeader);
    const std::uint32_t outer_ip_len = l.l3_offset - outer_ip - sizeof(UdpHeader) - 8 - sizeof(EthernetHeader);
    const std::uint32_t outer_total = l.l3_offset - outer_ip + ip_total;
    rewrite_ipv4(out + outer_ip, outer_ip_len, outer_total, 0);
    std::uint8_t* udp = out + outer_ip + outer_ip_len;
    store_be16(udp + kUdpLength, static_cast<std::uint16_t>(outer_total - outer_ip_len));
    store_be16(udp + kUdpChecksumOffset, 0);
  }
  return len;
}

}  // namespace vxfed::dataplane
