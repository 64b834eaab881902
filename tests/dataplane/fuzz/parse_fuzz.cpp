// libFuzzer target for the pure packet parsers (dataplane/core/parse.cpp), built with clang
// and ASan/UBSan, without DPDK. Each input is tried as an uplink frame and as a pod frame,
// whole and with its headers split at a point chosen by the first byte, so both the
// Truncated and the HeadersSplit paths are explored.
#include <cstddef>
#include <cstdint>

#include "core/parse.hpp"

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
  }
  const auto p = dp::parse_pod_frame(whole, static_cast<std::uint32_t>(size));
  if (p.kind == dp::FrameKind::Ipv4 && p.ip_total_len + 14u > size) __builtin_trap();
  (void)dp::parse_pod_frame(head, static_cast<std::uint32_t>(size));
  return 0;
}
