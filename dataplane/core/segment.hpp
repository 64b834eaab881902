// Segmentation of a super-packet (a TCP or UDP packet larger than the MTU, as a pod's kernel
// hands it over with GSO; docs/pod-ports.md) into the packets that go on the wire, and the
// Internet checksums it needs. Pure: headers in, headers out, no DPDK, so the same code
// serves the socket senders (which point iovecs at the payload) and the software fallback
// for DPDK ports (which copies it), and is fuzzed with the parsers.
//
// Segment i carries payload bytes [i * mss, (i + 1) * mss) of the super-packet (the last one
// what is left), behind a copy of its headers with: IPv4 total length, ID + i and header
// checksum; TCP sequence number + i * mss, FIN and PSH only on the last segment, CWR only on
// the first (what the kernel's own segmentation does); UDP length; the L4 checksum left
// partial (the pseudo-header sum, for the receiver's kernel or the device to finish, as the
// pod's kernel left it on the super-packet). Behind VXLAN, the outer IPv4 total length and
// checksum and the outer UDP length follow the segment's size; the outer UDP checksum is 0.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vxfed::dataplane {

struct SegmentLayout {
  std::uint16_t l3_offset = 0;  // the (inner) IPv4 header: 14, or 64 behind VXLAN outer headers
  std::uint16_t l3_len = 0;
  std::uint16_t l4_len = 0;     // TCP header with options, or 8 for UDP
  std::uint8_t l4_proto = 0;    // 6 or 17
  std::uint16_t mss = 0;        // payload bytes per segment, > 0
  bool outer = false;           // VXLAN outer headers in front (outer IPv4 at 14, UDP behind it)

  std::uint32_t l4_offset() const { return std::uint32_t{l3_offset} + l3_len; }
  std::uint32_t headers() const { return l4_offset() + l4_len; }
};

// How many segments a super-packet of packet_len bytes (headers included) makes (>= 1).
std::uint32_t segment_count(const SegmentLayout& l, std::uint32_t packet_len);

// Writes segment `index`'s headers (l.headers() bytes) to `out` from the super-packet's
// headers `super` (the same l.headers() bytes) and returns the segment's payload length; its
// payload starts at l.headers() + index * l.mss in the super-packet.
std::uint32_t write_segment_headers(const SegmentLayout& l, const std::uint8_t* super, std::uint32_t packet_len,
                                    std::uint32_t index, std::uint8_t* out);

// One's-complement sum of bytes taken as big-endian 16-bit words, over pieces of any length
// in order (an odd piece shifts the next one by a byte, as the sum over the whole would).
class OnesSum {
 public:
  void add(const std::uint8_t* p, std::size_t n);
  void add_word(std::uint16_t host_order_word) { sum_ += odd_ ? swap(host_order_word) : host_order_word; }
  std::uint16_t folded() const;  // the 16-bit sum, not complemented
 private:
  static std::uint16_t swap(std::uint16_t w) { return static_cast<std::uint16_t>(w >> 8 | w << 8); }
  std::uint64_t sum_ = 0;
  bool odd_ = false;  // an odd number of bytes so far
};

// Writes the complete L4 checksum for `sum` (taken over the L4 header, whose field held the
// pseudo-header sum, and its payload) into the 2-byte field, big-endian; for UDP a checksum
// of 0 goes out as 0xffff (0 would mean "no checksum", RFC 768).
void store_l4_checksum(std::uint8_t* field, const OnesSum& sum, bool udp);

// The TCP/UDP pseudo-header sum (RFC 9293 3.1, RFC 768) for addresses as stored in the
// packet: what a partial checksum field holds (store it with to_be16).
std::uint16_t pseudo_header_sum(const std::uint8_t* src_dst, std::uint8_t proto, std::uint32_t l4_len);

// The IPv4 header checksum of hdr (its checksum field taken as 0), host order.
std::uint16_t ipv4_header_checksum(const std::uint8_t* hdr, std::uint32_t len);

}  // namespace vxfed::dataplane
