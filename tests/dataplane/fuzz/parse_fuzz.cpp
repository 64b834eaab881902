// libFuzzer target for the pure packet parsers (dataplane/core/parse.cpp), built with clang
// and ASan/UBSan, without DPDK. Each input is tried as an uplink frame and as a pod frame,
// whole and with its headers split at a point chosen by the first byte, so both the
// Truncated and the HeadersSplit paths are explored, and the fast paths are checked against
// the reference parsers field by field (and the pod burst loops' checks and flow-hash words).
// The input's first 10 bytes are also taken as a vnet header over the rest (vnet_parse.hpp):
// what the checks accept must describe headers inside the frame, and the segments of an
// accepted super-packet must add up to it (segment.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dataplane/core/flow_hash.hpp"
#include "dataplane/core/icmp_parse.hpp"
#include "dataplane/core/parse.hpp"
#include "dataplane/core/segment.hpp"
#include "dataplane/core/vnet_parse.hpp"

namespace dp = vxfed::dataplane;

namespace {

void check_vnet(const std::uint8_t* data, std::size_t size) {
  vxfed::wire::VirtioNetHeader h;
  if (size <= sizeof h) return;
  std::memcpy(&h, data, sizeof h);
  const dp::ByteSpan frame(data + sizeof h, size - sizeof h);
  const auto len = static_cast<std::uint32_t>(frame.size());
  // An uplink UDP super-packet that is taken must hold its datagrams inside the frame, each
  // with room for VXLAN + inner Ethernet + IPv4 (uplink_super.hpp cuts at these numbers).
  if (const dp::UplinkSuperPacket sp = dp::parse_uplink_super(h, frame, len); sp.ok) {
    if (sp.gso_size < 42 || sp.payload_len + 42 != len) __builtin_trap();
  }
  for (bool pod : {true, false}) {
    const dp::VnetVerdict v = pod ? dp::parse_pod_vnet(h, frame, len) : dp::parse_uplink_vnet(h, frame, len);
    if (!v.ok || v.offload.checksum != dp::L4Checksum::Partial) continue;
    const dp::FrameOffload& o = v.offload;
    if (std::uint32_t{o.l3_offset} + o.l3_len + o.l4_len > len || (o.l4_proto != 6 && o.l4_proto != 17)) __builtin_trap();
    if (o.gso == dp::Segmentation::None) continue;
    if (!pod || o.gso_size == 0) __builtin_trap();  // no super-packet from the wire
    dp::SegmentLayout l;
    l.l3_offset = o.l3_offset;
    l.l3_len = o.l3_len;
    l.l4_len = o.l4_len;
    l.l4_proto = o.l4_proto;
    l.mss = o.gso_size;
    std::uint8_t out[256];
    if (l.headers() > sizeof out || l.headers() > len) __builtin_trap();
    const std::uint32_t n = dp::segment_count(l, len);
    const std::uint32_t payload = len - l.headers();
    if (n == 0 || (n - 1) * std::uint64_t{l.mss} >= std::max<std::uint32_t>(payload, 1)) __builtin_trap();
    for (const std::uint32_t i : {0u, n - 1}) {
      const std::uint32_t seg = dp::write_segment_headers(l, frame.data(), len, i, out);
      if (seg > l.mss || (i + 1 < n && seg != l.mss) || (i + 1 == n && i * l.mss + seg != payload)) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > 65535) return 0;
  check_vnet(data, size);
  const std::size_t split = size > 1 ? 1 + data[0] % (size - 1) : 0;  // first segment size
  const dp::ByteSpan whole(data, size);
  const dp::ByteSpan head(data, split);
  dp::UplinkParseOptions opt;
  opt.local_vtep_ip_be = 0x010012c6;  // 198.18.0.1 in network order, as in the seeds
  for (bool verified : {false, true}) {
    opt.outer_ip_checksum_verified = verified;
    const auto f = dp::parse_uplink_frame(whole, static_cast<std::uint32_t>(size), opt);
    // A VXLAN verdict promises an inner frame inside the packet.
    if (f.kind == dp::FrameKind::Vxlan && (f.inner_len + 50 > size || f.inner_ip_total_len + 14 > f.inner_len))
      __builtin_trap();
    (void)dp::parse_uplink_frame(head, static_cast<std::uint32_t>(size), opt);
    // The fast path must agree with the reference parser on every input.
    const auto r = dp::parse_uplink_frame_full(whole, static_cast<std::uint32_t>(size), opt);
    if (f.kind != r.kind || (f.kind == dp::FrameKind::Drop && f.drop != r.drop) ||
        (f.kind == dp::FrameKind::Vxlan &&
         (f.vni != r.vni || f.outer_src_ip_be != r.outer_src_ip_be || f.inner_len != r.inner_len ||
          f.inner_dst_ip_be != r.inner_dst_ip_be || f.inner_ip_total_len != r.inner_ip_total_len ||
          f.group_policy != r.group_policy || f.group_policy_id != r.group_policy_id ||
          f.group_policy_applied != r.group_policy_applied)))
      __builtin_trap();
    // VXLAN-GBP: a VXLAN verdict has the Group Policy fields exactly when the flags byte (offset
    // 42) is G|I, read from bytes 43-45 with no reserved bit set; plain VXLAN has them zero.
    if (r.kind == dp::FrameKind::Vxlan) {
      const bool gbp = data[42] == 0x88;
      if (r.group_policy != gbp || (!gbp && data[42] != 0x08)) __builtin_trap();
      if (gbp ? ((data[43] & 0xb7) != 0 || r.group_policy_applied != ((data[43] & 0x08) != 0) ||
                 r.group_policy_id != (data[44] << 8 | data[45]))
              : (r.group_policy_applied || r.group_policy_id != 0))
        __builtin_trap();
    }
  }
  // The underlay ICMP parser: a verdict names a VTEP and a positive MTU; the whole message is
  // read from the first segment only.
  for (const auto& span : {whole, head}) {
    const auto icmp = dp::parse_underlay_icmp(span, static_cast<std::uint32_t>(size), opt.local_vtep_ip_be);
    if (icmp.kind == dp::UnderlayIcmp::Kind::FragNeeded && (icmp.mtu == 0 || size < 14 + 20 + 8 + 28)) __builtin_trap();
  }
  const auto p = dp::parse_pod_frame(whole, static_cast<std::uint32_t>(size));
  if (p.kind == dp::FrameKind::Ipv4 && p.ip_total_len + 14u > size) __builtin_trap();
  (void)dp::parse_pod_frame(head, static_cast<std::uint32_t>(size));
  const auto q = dp::parse_pod_frame_full(whole, static_cast<std::uint32_t>(size));
  if (p.kind != q.kind || (p.kind == dp::FrameKind::Drop && p.drop != q.drop) ||
      (p.kind == dp::FrameKind::Ipv4 &&
       (p.src_ip_be != q.src_ip_be || p.dst_ip_be != q.dst_ip_be || p.ip_total_len != q.ip_total_len ||
        p.tos != q.tos || p.protocol != q.protocol || p.dont_fragment != q.dont_fragment ||
        p.src_port_be != q.src_port_be || p.dst_port_be != q.dst_port_be || p.ip_header_len != q.ip_header_len)))
    __builtin_trap();
  // The pod burst loops' own fast path (pod_fast_l4_ok, fields and flow-hash words read
  // straight from the bytes) must agree with the reference parser and the flow hash of its
  // fields, whole and split.
  for (const std::size_t first : {size, split}) {
    if (first < dp::kPodFastMinFirst || !dp::pod_fast_l4_ok(data, static_cast<std::uint32_t>(first),
                                                            static_cast<std::uint32_t>(size)))
      continue;
    if (q.kind != dp::FrameKind::Ipv4 || (q.protocol != 6 && q.protocol != 17) ||
        q.src_ip_be != dp::pod_fast_src(data) || q.dst_ip_be != dp::pod_fast_dst(data) ||
        q.ip_total_len != dp::pod_fast_ip_total(data) || q.tos != data[15] ||
        dp::flow_hash_words(dp::pod_fast_hash_addresses(data), dp::pod_fast_hash_proto_ports(data)) !=
            dp::flow_hash(q.src_ip_be, q.dst_ip_be, q.protocol, q.src_port_be, q.dst_port_be))
      __builtin_trap();
  }
  return 0;
}
