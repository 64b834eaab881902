// Definitions of the parsers of parse.hpp, inline so that the pipeline keeps the parse
// result in registers instead of building and re-reading a struct in memory (measured: the
// out-of-line version spent most of its cycles on store-forwarding stalls).
// Include parse.hpp, not this file.
#pragma once

#include <bit>
#include <cstddef>
#include <cstring>

#include "dataplane/core/wire/ipv4.hpp"
#include "dataplane/core/wire/udp.hpp"
#include "dataplane/core/wire/vxlan.hpp"

namespace vxfed::dataplane {
namespace parse_detail {

using namespace vxfed::wire;

// Whether [0, end) is readable; sets *drop to the reason when not.
inline bool readable(ByteSpan first, std::uint32_t packet_len, std::uint32_t end,
                     DropReason* drop) {
  if (end > packet_len) {
    *drop = DropReason::Truncated;
    return false;
  }
  if (end > first.size()) {
    *drop = DropReason::HeadersSplit;
    return false;
  }
  return true;
}

template <typename Header>
inline Header load(ByteSpan first, std::uint32_t offset) {
  Header h;
  std::memcpy(&h, first.data() + offset, sizeof(Header));
  return h;
}

// Sum of the header as 16-bit big-endian words, folded; 0xffff means the checksum is right.
inline bool ipv4_checksum_ok(const std::uint8_t* p, std::uint32_t len) {
  std::uint32_t sum = 0;
  for (std::uint32_t i = 0; i < len; i += 2) sum += static_cast<std::uint32_t>(p[i] << 8 | p[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum == 0xffff;
}

}  // namespace parse_detail

inline bool parse_arp(ByteSpan first, std::uint32_t packet_len, ArpFields* out, DropReason* drop) {
  using namespace parse_detail;
  constexpr std::uint32_t off = sizeof(EthernetHeader);
  if (!readable(first, packet_len, off + sizeof(ArpHeader), drop)) {
    if (*drop == DropReason::Truncated) *drop = DropReason::BadArp;
    return false;
  }
  const auto arp = load<ArpHeader>(first, off);
  const std::uint16_t op = from_be16(arp.opcode_be);
  if (from_be16(arp.hardware_type_be) != kArpHardwareEthernet ||
      from_be16(arp.protocol_type_be) != kEtherTypeIpv4 || arp.hardware_len != 6 ||
      arp.protocol_len != 4 || (op != kArpOpRequest && op != kArpOpReply)) {
    *drop = DropReason::BadArp;
    return false;
  }
  out->opcode = op;
  out->sender_mac = arp.sender_mac;
  out->sender_ip_be = arp.sender_ip_be;
  out->target_ip_be = arp.target_ip_be;
  return true;
}

// Makes f a drop for reason r (what every early exit of the reference parsers returns).
template <typename Frame>
inline Frame& mark_dropped(Frame& f, DropReason r) {
  f.kind = FrameKind::Drop;
  f.drop = r;
  return f;
}

// The start both reference parsers share: lengths consistent, Ethernet, ARP (parsed into
// f.arp, kind Arp), anything else but IPv4 refused, then an IPv4 header that is readable and
// says version 4. Returns true with *ip set when the caller goes on; false when f is final
// (kind Arp, or Drop with its reason).
template <typename Frame>
inline bool parse_ethernet_ipv4_start(ByteSpan first, std::uint32_t packet_len, Frame& f, wire::Ipv4Header* ip) {
  using namespace parse_detail;
  using namespace wire;
  auto fail = [&f](DropReason r) {
    mark_dropped(f, r);
    return false;  // f is final
  };
  if (packet_len < first.size()) return fail(DropReason::Truncated);  // inconsistent caller
  DropReason why = DropReason::Truncated;
  if (!readable(first, packet_len, sizeof(EthernetHeader), &why)) return fail(why);
  const std::uint16_t ether_type = from_be16(load<EthernetHeader>(first, 0).ether_type_be);
  if (ether_type == kEtherTypeArp) {
    if (!parse_arp(first, packet_len, &f.arp, &why)) return fail(why);
    f.kind = FrameKind::Arp;
    return false;
  }
  if (ether_type != kEtherTypeIpv4) return fail(DropReason::NotIpv4);
  constexpr std::uint32_t ip_off = sizeof(EthernetHeader);
  if (!readable(first, packet_len, ip_off + sizeof(Ipv4Header), &why)) return fail(why);
  *ip = load<Ipv4Header>(first, ip_off);
  if ((ip->version_ihl >> 4) != 4) return fail(DropReason::BadIpVersion);
  return true;
}

// The reference parsers: every check in order, with the exact drop reason. The public
// functions below try a fast path for the common valid packet and fall back to these; the
// fuzzer checks that both agree.
[[gnu::noinline]] inline UplinkFrame parse_uplink_frame_full(ByteSpan first, std::uint32_t packet_len,
                                    const UplinkParseOptions& options) {
  using namespace parse_detail;
  UplinkFrame f;
  auto fail = [&f](DropReason r) { return mark_dropped(f, r); };
  DropReason why = DropReason::Truncated;

  // Outer Ethernet (or ARP), then outer IPv4: exactly 20 bytes, not a fragment, to us, UDP
  Ipv4Header ip;
  if (!parse_ethernet_ipv4_start(first, packet_len, f, &ip)) return f;
  constexpr std::uint32_t ip_off = sizeof(EthernetHeader);
  const std::uint32_t ihl = ip.version_ihl & 0x0f;
  if (ihl < 5) return fail(DropReason::IpHeaderTooShort);
  if (ihl > 5) return fail(DropReason::IpOptions);
  const std::uint32_t ip_total = from_be16(ip.total_length_be);
  if (ip_total < sizeof(Ipv4Header)) return fail(DropReason::BadIpLength);
  if (ip_off + ip_total > packet_len) return fail(DropReason::Truncated);
  if (!options.outer_ip_checksum_verified &&
      !ipv4_checksum_ok(first.data() + ip_off, sizeof(Ipv4Header)))
    return fail(DropReason::BadIpChecksum);
  if (from_be16(ip.fragment_be) & (kIpv4FlagMf | kIpv4OffsetMask))
    return fail(DropReason::OuterFragment);
  if (ip.protocol != kIpProtoUdp) return fail(DropReason::NotUdp);
  if (ip.dst_be != options.local_vtep_ip_be) return fail(DropReason::NotOurVtep);

  // Outer UDP
  constexpr std::uint32_t udp_off = ip_off + sizeof(Ipv4Header);
  if (ip_total < sizeof(Ipv4Header) + sizeof(UdpHeader)) return fail(DropReason::Truncated);
  if (!readable(first, packet_len, udp_off + sizeof(UdpHeader), &why)) return fail(why);
  const auto udp = load<UdpHeader>(first, udp_off);
  if (from_be16(udp.dst_port_be) != kVxlanUdpPort) return fail(DropReason::WrongUdpPort);
  const std::uint32_t udp_len = from_be16(udp.length_be);
  if (udp_len != ip_total - sizeof(Ipv4Header)) return fail(DropReason::UdpLengthMismatch);

  // VXLAN
  constexpr std::uint32_t vx_off = udp_off + sizeof(UdpHeader);
  constexpr std::uint32_t inner_off = vx_off + sizeof(VxlanHeader);
  if (udp_len < sizeof(UdpHeader) + sizeof(VxlanHeader)) return fail(DropReason::Truncated);
  if (!readable(first, packet_len, inner_off, &why)) return fail(why);
  const auto vx = load<VxlanHeader>(first, vx_off);
  if (vx.flags != kVxlanFlagsVni) {
    // VXLAN-GBP: G and I. The fast path never takes these (its flags test is for 0x08 alone),
    // so plain VXLAN pays nothing for them.
    if (vx.flags != kVxlanFlagsGroupPolicyVni) return fail(DropReason::BadVxlanFlags);
    if (vx.gbp_flags & kVxlanGbpReservedBits) return fail(DropReason::BadVxlanGbpBits);
    f.group_policy = true;
    f.group_policy_applied = (vx.gbp_flags & kVxlanGbpPolicyApplied) != 0;
    f.group_policy_id = from_be16(vx.group_policy_id_be);
  }

  // Inner Ethernet + IPv4 header (options allowed: they belong to the pods)
  const std::uint32_t inner_len = udp_len - sizeof(UdpHeader) - sizeof(VxlanHeader);
  const std::uint32_t inner_end = inner_off + inner_len;  // <= packet_len (checked above)
  if (inner_len < sizeof(EthernetHeader)) return fail(DropReason::Truncated);
  if (!readable(first, inner_end, inner_off + sizeof(EthernetHeader), &why)) return fail(why);
  if (from_be16(load<EthernetHeader>(first, inner_off).ether_type_be) != kEtherTypeIpv4)
    return fail(DropReason::InnerNotIpv4);
  const std::uint32_t iip_off = inner_off + sizeof(EthernetHeader);
  if (!readable(first, inner_end, iip_off + sizeof(Ipv4Header), &why)) return fail(why);
  const auto iip = load<Ipv4Header>(first, iip_off);
  if ((iip.version_ihl >> 4) != 4) return fail(DropReason::BadIpVersion);
  const std::uint32_t iihl = iip.version_ihl & 0x0f;
  if (iihl < 5) return fail(DropReason::IpHeaderTooShort);
  const std::uint32_t iip_total = from_be16(iip.total_length_be);
  if (iip_total < iihl * 4) return fail(DropReason::BadIpLength);
  if (iip_off + iip_total > inner_end) return fail(DropReason::Truncated);

  f.kind = FrameKind::Vxlan;
  f.outer_src_ip_be = ip.src_be;
  f.vni = vxlan_vni(vx);
  f.inner_len = inner_len;
  f.inner_dst_ip_be = iip.dst_be;
  f.inner_ip_total_len = static_cast<std::uint16_t>(iip_total);
  return f;
}

[[gnu::noinline]] inline PodFrame parse_pod_frame_full(ByteSpan first, std::uint32_t packet_len) {
  using namespace parse_detail;
  PodFrame f;
  auto fail = [&f](DropReason r) { return mark_dropped(f, r); };
  DropReason why = DropReason::Truncated;

  Ipv4Header ip;
  if (!parse_ethernet_ipv4_start(first, packet_len, f, &ip)) return f;
  constexpr std::uint32_t ip_off = sizeof(EthernetHeader);
  const std::uint32_t hlen = (ip.version_ihl & 0x0f) * 4u;
  if (hlen < sizeof(Ipv4Header)) return fail(DropReason::IpHeaderTooShort);
  const std::uint32_t total = from_be16(ip.total_length_be);
  if (total < hlen) return fail(DropReason::BadIpLength);
  if (ip_off + total > packet_len) return fail(DropReason::Truncated);
  if (!readable(first, packet_len, ip_off + hlen, &why)) return fail(why);

  const std::uint16_t frag = from_be16(ip.fragment_be);
  f.src_ip_be = ip.src_be;
  f.dst_ip_be = ip.dst_be;
  f.ip_total_len = static_cast<std::uint16_t>(total);
  f.tos = ip.tos;
  f.protocol = ip.protocol;
  f.dont_fragment = (frag & kIpv4FlagDf) != 0;
  f.ip_header_len = static_cast<std::uint8_t>(hlen);
  // Ports only for whole TCP/UDP packets, so every fragment of a flow hashes alike.
  const bool whole = (frag & (kIpv4FlagMf | kIpv4OffsetMask)) == 0;
  if (whole && (ip.protocol == kIpProtoTcp || ip.protocol == kIpProtoUdp) && total >= hlen + 4) {
    if (!readable(first, packet_len, ip_off + hlen + 4, &why)) return fail(why);
    std::memcpy(&f.src_port_be, first.data() + ip_off + hlen, 2);
    std::memcpy(&f.dst_port_be, first.data() + ip_off + hlen + 2, 2);
  }
  f.kind = FrameKind::Ipv4;
  return f;
}

namespace parse_detail {
inline std::uint16_t raw16(const std::uint8_t* p) {  // as stored (network order)
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline std::uint32_t raw32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// One's-complement sum of a 20-byte header in 32-bit steps; 0xffff when the checksum is right
// (the property holds in either byte order, so no swaps are needed).
inline bool ipv4_header20_checksum_ok(const std::uint8_t* p) {
  std::uint64_t s = static_cast<std::uint64_t>(raw32(p)) + raw32(p + 4) + raw32(p + 8) + raw32(p + 12) + raw32(p + 16);
  s = (s & 0xffffffff) + (s >> 32);
  s = (s & 0xffff) + (s >> 16);
  s = (s & 0xffff) + (s >> 16);
  s = (s & 0xffff) + (s >> 16);
  return s == 0xffff;
}
}  // namespace parse_detail

// Where the fast paths find each field: fixed offsets, since they take only frames whose
// IPv4 headers have no options. Computed from the wire/ structs; all 32-bit so that the
// arithmetic they take part in stays 32-bit (the same code as the literals they replace,
// which the static_asserts spell out).
namespace fast_layout {

using namespace vxfed::wire;

template <typename T>
constexpr std::uint32_t size = static_cast<std::uint32_t>(sizeof(T));

// Fields within their header.
constexpr std::uint32_t kEtherType = offsetof(EthernetHeader, ether_type_be);
constexpr std::uint32_t kIpVersionIhl = offsetof(Ipv4Header, version_ihl);
constexpr std::uint32_t kIpTos = offsetof(Ipv4Header, tos);
constexpr std::uint32_t kIpTotalLength = offsetof(Ipv4Header, total_length_be);
constexpr std::uint32_t kIpFragment = offsetof(Ipv4Header, fragment_be);
constexpr std::uint32_t kIpProtocol = offsetof(Ipv4Header, protocol);
constexpr std::uint32_t kIpSrc = offsetof(Ipv4Header, src_be);
constexpr std::uint32_t kIpDst = offsetof(Ipv4Header, dst_be);
// TCP and UDP both start with the source and destination ports, as UDP's header has them.
constexpr std::uint32_t kL4SrcPort = offsetof(UdpHeader, src_port_be);
constexpr std::uint32_t kL4DstPort = offsetof(UdpHeader, dst_port_be);
constexpr std::uint32_t kL4Ports = kL4DstPort + size<be16>;  // bytes the two ports take
constexpr std::uint32_t kUdpDstPort = offsetof(UdpHeader, dst_port_be);
constexpr std::uint32_t kUdpLength = offsetof(UdpHeader, length_be);
constexpr std::uint32_t kVxlanFlags = offsetof(VxlanHeader, flags);
constexpr std::uint32_t kVxlanVni = offsetof(VxlanHeader, vni_reserved_be);

// Version 4, header length 5 words: the first byte of an IPv4 header without options.
constexpr std::uint32_t kIpv4MinIhl = size<Ipv4Header> / 4;
constexpr std::uint8_t kIpv4NoOptions = static_cast<std::uint8_t>(4 << 4 | kIpv4MinIhl);

// A VXLAN frame on the uplink: outer headers (VxlanOuterHeaders), inner Ethernet, inner IPv4.
constexpr std::uint32_t kOuterIp = offsetof(VxlanOuterHeaders, ip);
constexpr std::uint32_t kOuterUdp = offsetof(VxlanOuterHeaders, udp);
constexpr std::uint32_t kVxlan = offsetof(VxlanOuterHeaders, vxlan);
constexpr std::uint32_t kInnerEth = size<VxlanOuterHeaders>;
constexpr std::uint32_t kInnerIp = kInnerEth + size<EthernetHeader>;
constexpr std::uint32_t kUplinkHeadersEnd = kInnerIp + size<Ipv4Header>;  // all the fast path reads
// Outer IPv4 total length: at least everything after the outer IPv4 header's start up to
// the end of the inner IPv4 header; minus the outer IPv4, UDP and VXLAN headers it is the
// inner frame's length.
constexpr std::uint32_t kOuterIpMinTotal = kUplinkHeadersEnd - kOuterIp;
constexpr std::uint32_t kOuterIpToInnerEth = kInnerEth - kOuterIp;

constexpr std::uint32_t kUplinkEtherType = kEtherType;
constexpr std::uint32_t kOuterVersionIhl = kOuterIp + kIpVersionIhl;
constexpr std::uint32_t kOuterTotalLength = kOuterIp + kIpTotalLength;
constexpr std::uint32_t kOuterFragment = kOuterIp + kIpFragment;
constexpr std::uint32_t kOuterProtocol = kOuterIp + kIpProtocol;
constexpr std::uint32_t kOuterSrc = kOuterIp + kIpSrc;
constexpr std::uint32_t kOuterDst = kOuterIp + kIpDst;
constexpr std::uint32_t kOuterUdpDstPort = kOuterUdp + kUdpDstPort;
constexpr std::uint32_t kOuterUdpLength = kOuterUdp + kUdpLength;
constexpr std::uint32_t kVxlanFlagsAt = kVxlan + kVxlanFlags;
constexpr std::uint32_t kVxlanVniAt = kVxlan + kVxlanVni;
constexpr std::uint32_t kInnerEtherType = kInnerEth + kEtherType;
constexpr std::uint32_t kInnerVersionIhl = kInnerIp + kIpVersionIhl;
constexpr std::uint32_t kInnerTotalLength = kInnerIp + kIpTotalLength;
constexpr std::uint32_t kInnerDst = kInnerIp + kIpDst;

static_assert(kUplinkEtherType == 12 && kOuterVersionIhl == 14 && kOuterTotalLength == 16 &&
              kOuterFragment == 20 && kOuterProtocol == 23 && kOuterSrc == 26 && kOuterDst == 30 &&
              kOuterUdpDstPort == 36 && kOuterUdpLength == 38 && kVxlanFlagsAt == 42 &&
              kVxlanVniAt == 46 && kInnerEtherType == 62 && kInnerVersionIhl == 64 &&
              kInnerTotalLength == 66 && kInnerDst == 80 && kUplinkHeadersEnd == 84 &&
              kOuterIpMinTotal == 70 && kOuterIpToInnerEth == 36 && kIpv4NoOptions == 0x45);

// A frame from a pod: Ethernet, IPv4 without options, the TCP/UDP ports.
constexpr std::uint32_t kPodIp = size<EthernetHeader>;
constexpr std::uint32_t kPodL4 = kPodIp + size<Ipv4Header>;
constexpr std::uint32_t kPodEtherType = kEtherType;
constexpr std::uint32_t kPodVersionIhl = kPodIp + kIpVersionIhl;
constexpr std::uint32_t kPodTos = kPodIp + kIpTos;
constexpr std::uint32_t kPodTotalLength = kPodIp + kIpTotalLength;
constexpr std::uint32_t kPodFragment = kPodIp + kIpFragment;
constexpr std::uint32_t kPodProtocol = kPodIp + kIpProtocol;
constexpr std::uint32_t kPodSrc = kPodIp + kIpSrc;
constexpr std::uint32_t kPodDst = kPodIp + kIpDst;
constexpr std::uint32_t kPodSrcPort = kPodL4 + kL4SrcPort;
constexpr std::uint32_t kPodDstPort = kPodL4 + kL4DstPort;
constexpr std::uint32_t kPodHeadersEnd = kPodL4 + kL4Ports;      // all the pod fast paths read
constexpr std::uint32_t kPodIpMinTotal = size<Ipv4Header>;        // pod_fast_ok: no ports needed
constexpr std::uint32_t kPodIpMinTotalPorts = kPodHeadersEnd - kPodIp;

static_assert(kPodEtherType == 12 && kPodVersionIhl == 14 && kPodTos == 15 && kPodTotalLength == 16 &&
              kPodFragment == 20 && kPodProtocol == 23 && kPodSrc == 26 && kPodDst == 30 &&
              kPodSrcPort == 34 && kPodDstPort == 36 && kPodHeadersEnd == 38 && kPodIpMinTotal == 20 &&
              kPodIpMinTotalPorts == 24);
// pod_fast_hash_addresses loads source and destination as one 8-byte word.
static_assert(kPodDst == kPodSrc + size<be32>);

}  // namespace fast_layout

// The fast paths' tests alone, and their fields read straight from the bytes: burst loops use
// these to keep what they need in registers (a result struct built on the stack and read back
// as wider words stalls on store forwarding: measured as the hottest instruction of the
// forwarder). try_parse_*_fast below are built from the same pieces, and the fuzzer checks
// those against the reference parsers.

// A valid VXLAN packet whose headers (through the inner IPv4 header) are all in the first
// segment (p, first_len bytes of packet_len). False: anything else, or any doubt.
[[gnu::always_inline]] inline bool uplink_fast_ok(const std::uint8_t* p, std::uint32_t first_len,
                                                  std::uint32_t packet_len, std::uint32_t local_vtep_ip_be,
                                                  bool checksum_verified) {
  using namespace parse_detail;
  using namespace fast_layout;
  if (first_len >= kUplinkHeadersEnd && packet_len >= first_len &&
      raw16(p + kUplinkEtherType) == to_be16(kEtherTypeIpv4) && p[kOuterVersionIhl] == kIpv4NoOptions) [[likely]] {
    const std::uint32_t total = from_be16(raw16(p + kOuterTotalLength));
    const std::uint32_t itotal = from_be16(raw16(p + kInnerTotalLength));
    return total >= kOuterIpMinTotal && kOuterIp + total <= packet_len &&
           (checksum_verified || ipv4_header20_checksum_ok(p + kOuterIp)) &&
           (raw16(p + kOuterFragment) & to_be16(kIpv4FlagMf | kIpv4OffsetMask)) == 0 &&
           p[kOuterProtocol] == kIpProtoUdp && raw32(p + kOuterDst) == local_vtep_ip_be &&
           raw16(p + kOuterUdpDstPort) == to_be16(kVxlanUdpPort) &&
           from_be16(raw16(p + kOuterUdpLength)) == total - size<Ipv4Header> &&
           p[kVxlanFlagsAt] == kVxlanFlagsVni && raw16(p + kInnerEtherType) == to_be16(kEtherTypeIpv4) &&
           (p[kInnerVersionIhl] >> 4) == 4 && (p[kInnerVersionIhl] & 0x0f) >= kIpv4MinIhl &&
           itotal >= (p[kInnerVersionIhl] & 0x0fu) * 4 && kInnerIp + itotal <= total + kOuterIp;
  }
  return false;
}
// Fields of a packet uplink_fast_ok accepted.
inline std::uint32_t uplink_fast_outer_src(const std::uint8_t* p) {
  return parse_detail::raw32(p + fast_layout::kOuterSrc);
}
inline std::uint32_t uplink_fast_vni(const std::uint8_t* p) {
  return wire::from_be32(parse_detail::raw32(p + fast_layout::kVxlanVniAt)) >> 8;
}
inline std::uint32_t uplink_fast_inner_len(const std::uint8_t* p) {
  return wire::from_be16(parse_detail::raw16(p + fast_layout::kOuterTotalLength)) - fast_layout::kOuterIpToInnerEth;
}
inline std::uint32_t uplink_fast_inner_dst(const std::uint8_t* p) {
  return parse_detail::raw32(p + fast_layout::kInnerDst);
}
inline std::uint16_t uplink_fast_inner_ip_total(const std::uint8_t* p) {
  return wire::from_be16(parse_detail::raw16(p + fast_layout::kInnerTotalLength));
}

// Fast path: a valid VXLAN packet whose headers (through the inner IPv4 header) are all in
// the first segment. Returns false for anything else, or any doubt (then use the reference
// parser, which finds the exact reason). Only sets the fields of a Vxlan result.
[[gnu::always_inline]] inline bool try_parse_uplink_fast(ByteSpan first, std::uint32_t packet_len,
                                                         const UplinkParseOptions& options, UplinkFrame* out) {
  const std::uint8_t* p = first.data();
  if (!uplink_fast_ok(p, static_cast<std::uint32_t>(first.size()), packet_len, options.local_vtep_ip_be,
                      options.outer_ip_checksum_verified))
    return false;
  out->kind = FrameKind::Vxlan;
  out->outer_src_ip_be = uplink_fast_outer_src(p);
  out->vni = uplink_fast_vni(p);
  out->inner_len = uplink_fast_inner_len(p);
  out->inner_dst_ip_be = uplink_fast_inner_dst(p);
  out->inner_ip_total_len = uplink_fast_inner_ip_total(p);
  return true;
}

inline UplinkFrame parse_uplink_frame(ByteSpan first, std::uint32_t packet_len,
                                      const UplinkParseOptions& options) {
  UplinkFrame f;
  if (try_parse_uplink_fast(first, packet_len, options, &f)) return f;
  return parse_uplink_frame_full(first, packet_len, options);
}

// IPv4 without options, total length consistent, ports (if any) in the first segment.
[[gnu::always_inline]] inline bool pod_fast_ok(const std::uint8_t* p, std::uint32_t first_len,
                                               std::uint32_t packet_len) {
  using namespace parse_detail;
  using namespace fast_layout;
  if (first_len >= kPodHeadersEnd && packet_len >= first_len &&
      raw16(p + kPodEtherType) == to_be16(kEtherTypeIpv4) && p[kPodVersionIhl] == kIpv4NoOptions) [[likely]] {
    const std::uint32_t total = from_be16(raw16(p + kPodTotalLength));
    return total >= kPodIpMinTotal && kPodIp + total <= packet_len;
  }
  return false;
}
// The pod burst loops' own fast path, without branches, for a first segment of at least
// kPodFastMinFirst bytes (the caller checks that; every field read lies in the first 38):
// a whole (unfragmented) TCP or UDP packet in IPv4 without options, total length consistent,
// ports inside the IP packet. Narrower than pod_fast_ok so that the ports can be read with one
// load and no mask: what it refuses (ICMP, fragments, options) takes the reference parser.
constexpr std::uint32_t kPodFastMinFirst = fast_layout::kPodHeadersEnd;
[[gnu::always_inline]] inline bool pod_fast_l4_ok(const std::uint8_t* p, std::uint32_t first_len,
                                                  std::uint32_t packet_len) {
  using namespace parse_detail;
  using namespace fast_layout;
  const std::uint32_t total = from_be16(raw16(p + kPodTotalLength));
  const std::uint8_t proto = p[kPodProtocol];
  return (packet_len >= first_len) & (raw16(p + kPodEtherType) == to_be16(kEtherTypeIpv4)) &
         (p[kPodVersionIhl] == kIpv4NoOptions) & (total >= kPodIpMinTotalPorts) & (kPodIp + total <= packet_len) &
         ((raw16(p + kPodFragment) & to_be16(kIpv4FlagMf | kIpv4OffsetMask)) == 0) &
         ((proto == kIpProtoTcp) | (proto == kIpProtoUdp));
}
// An IPv4 header at `ip` (its 20 bytes readable) without options, neither MF nor a fragment
// offset, of TCP or UDP: what a flow's known packet must be for its ports to sit right after
// the header and to name the flow (the conntrack fast paths after pod_fast_l4_ok: a
// decapsulated frame, a packet translate_pod_burst takes from its words). Version and IHL
// (byte 0) and the fragment field's high byte (byte 6, its low 6 bits MF and the offset's top)
// with byte 7 in one load, as a little-endian load lays them out; the caller checks that the
// L4 header it reads is in the segment.
[[gnu::always_inline]] inline bool ipv4_plain_tcp_udp(const std::uint8_t* ip) {
  using namespace parse_detail;
  static_assert(std::endian::native == std::endian::little);
  std::uint64_t head;
  std::memcpy(&head, ip, 8);
  constexpr std::uint64_t kMask = 0xffull | 0x3full << 48 | 0xffull << 56, kWant = fast_layout::kIpv4NoOptions;
  const std::uint8_t protocol = ip[fast_layout::kIpProtocol];
  return ((head & kMask) == kWant) & ((protocol == kIpProtoTcp) | (protocol == kIpProtoUdp));
}
// The two words of flow_hash_words (flow_hash.hpp) of a packet pod_fast_l4_ok accepted.
inline std::uint64_t pod_fast_hash_addresses(const std::uint8_t* p) {
  using namespace parse_detail;
  using namespace fast_layout;
  if constexpr (std::endian::native == std::endian::little) {
    std::uint64_t v;
    std::memcpy(&v, p + kPodSrc, 8);  // source and destination
    return v;
  }
  return raw32(p + kPodSrc) | static_cast<std::uint64_t>(raw32(p + kPodDst)) << 32;
}
inline std::uint64_t pod_fast_hash_proto_ports(const std::uint8_t* p) {
  using namespace parse_detail;
  using namespace fast_layout;
  std::uint32_t ports_raw = raw32(p + kPodSrcPort);
  if constexpr (std::endian::native != std::endian::little)
    ports_raw = static_cast<std::uint32_t>(raw16(p + kPodSrcPort)) | static_cast<std::uint32_t>(raw16(p + kPodDstPort)) << 16;
  return p[kPodProtocol] | static_cast<std::uint64_t>(ports_raw) << 8;
}
// Fields of a packet pod_fast_ok or pod_fast_l4_ok accepted.
inline std::uint32_t pod_fast_src(const std::uint8_t* p) { return parse_detail::raw32(p + fast_layout::kPodSrc); }
inline std::uint32_t pod_fast_dst(const std::uint8_t* p) { return parse_detail::raw32(p + fast_layout::kPodDst); }
inline std::uint16_t pod_fast_ip_total(const std::uint8_t* p) {
  return wire::from_be16(parse_detail::raw16(p + fast_layout::kPodTotalLength));
}
// TCP/UDP ports as one word, (src_port_be << 16) | dst_port_be, for whole TCP/UDP packets
// (every fragment of a flow hashes alike); 0 otherwise.
inline std::uint32_t pod_fast_ports(const std::uint8_t* p) {
  using namespace parse_detail;
  using namespace fast_layout;
  const bool ports = (raw16(p + kPodFragment) & to_be16(kIpv4FlagMf | kIpv4OffsetMask)) == 0 &&
                     (p[kPodProtocol] == kIpProtoTcp || p[kPodProtocol] == kIpProtoUdp) &&
                     pod_fast_ip_total(p) >= kPodIpMinTotalPorts;
  if (!ports) return 0;
  const std::uint32_t w = raw32(p + kPodSrcPort);  // as stored: src port in the low half on x86
  return (w << 16) | (w >> 16);
}

// Fast path: IPv4 without options, ports (if any) in the first segment. False: use the
// reference parser. Only sets the fields of an Ipv4 result (ports: 0 when absent).
[[gnu::always_inline]] inline bool try_parse_pod_fast(ByteSpan first, std::uint32_t packet_len, PodFrame* out) {
  using namespace parse_detail;
  const std::uint8_t* p = first.data();
  if (!pod_fast_ok(p, static_cast<std::uint32_t>(first.size()), packet_len)) return false;
  out->kind = FrameKind::Ipv4;
  out->src_ip_be = pod_fast_src(p);
  out->dst_ip_be = pod_fast_dst(p);
  out->ip_total_len = pod_fast_ip_total(p);
  out->tos = p[fast_layout::kPodTos];
  out->protocol = p[fast_layout::kPodProtocol];
  out->dont_fragment = (raw16(p + fast_layout::kPodFragment) & to_be16(kIpv4FlagDf)) != 0;
  out->ip_header_len = fast_layout::size<Ipv4Header>;
  const std::uint32_t ports = pod_fast_ports(p);
  out->src_port_be = static_cast<std::uint16_t>(ports >> 16);
  out->dst_port_be = static_cast<std::uint16_t>(ports);
  return true;
}

inline PodFrame parse_pod_frame(ByteSpan first, std::uint32_t packet_len) {
  PodFrame f;
  if (try_parse_pod_fast(first, packet_len, &f)) return f;
  return parse_pod_frame_full(first, packet_len);
}

}  // namespace vxfed::dataplane
