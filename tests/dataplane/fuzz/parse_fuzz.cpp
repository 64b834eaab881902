// libFuzzer target for the pure packet parsers (dataplane/core/parse.cpp), built with clang
// and ASan/UBSan, without DPDK. Each input is tried as an uplink frame and as a pod frame,
// whole and with its headers split at a point chosen by the first byte, so both the
// Truncated and the HeadersSplit paths are explored, and the fast paths are checked against
// the reference parsers field by field (and the pod burst loops' checks and flow-hash words).
#include <cstddef>
#include <cstdint>

#include "dataplane/core/flow_hash.hpp"
#include "dataplane/core/parse.hpp"

namespace dp = vxfed::dataplane;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > 65535) return 0;
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
          f.inner_dst_ip_be != r.inner_dst_ip_be || f.inner_ip_total_len != r.inner_ip_total_len)))
      __builtin_trap();
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
