// The GBP mark: the BGP large community (RFC 8092) that a node's advertised blocks carry when
// its registration in the federation store says it takes VXLAN-GBP (docs/bgp.md, "The GBP
// mark"; docs/policy.md, "VXLAN-GBP on the wire").
//
// Why a community and not the registration itself: a node must not watch the registrations of
// 130,000 nodes; the routes already reach it (BMP from its bgpd view), so the capability rides
// on them. Global administrator 4200000000 is the first private-use 4-byte ASN (RFC 6996): no
// operator's own ASN, so the mark cannot be mistaken for a community a network sets for its own
// reasons. Local data 1 = 34 (the issue that brought it), local data 2 = 1 (VXLAN-GBP).
#pragma once

#include <cstdint>
#include <string>

namespace vxfed::bgp {

struct LargeCommunity {
  std::uint32_t global_admin = 0, local1 = 0, local2 = 0;
  bool operator==(const LargeCommunity&) const = default;
};

inline constexpr LargeCommunity kGbpMark{4200000000u, 34u, 1u};

// "4200000000:34:1", as FRR writes it in `set large-community` and `show bgp`.
inline std::string gbp_mark_text() {
  return std::to_string(kGbpMark.global_admin) + ":" + std::to_string(kGbpMark.local1) + ":" +
         std::to_string(kGbpMark.local2);
}

}  // namespace vxfed::bgp
