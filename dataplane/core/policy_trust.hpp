// The GBP trust check (docs/policy.md, "Trusting the identity"; docs/security.md, the GBP
// trust model): a VTEP is trusted for the identities of its own pods only. The route check
// (inner_source_spoofed) already ties a decapsulated packet's inner source to the prefixes its
// VTEP is routed; this ties the claimed identity to the inner source: every allocated identity
// belongs to one cluster, every pod address to one cluster's CIDRs, so an identity of cluster B
// claimed for an address of cluster A is forged and the flow is refused
// (policy_forged_identity). It runs when a new flow is decided, never on a conntrack hit.
//
// What it cannot see: a node claiming another identity of its own cluster for its own pods'
// addresses (that would need every node's pods' identities at every node).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::dataplane {

// A NetworkPolicy's clusters, in the form the new-flow decision reads. Immutable once built.
class IdentityTrust {
 public:
  // Checks `in.clusters()` and builds the trust table. Errors start with `where` and name the
  // field: `policies[0] (vni 7): clusters[1].identities[0]: identity 300 is already in
  // clusters[0] ("a") (an identity belongs to one cluster)`. An entry without clusters gives
  // an empty table (admits everything).
  static Result<IdentityTrust> create(const v1::NetworkPolicy& in, const std::string& where);

  bool empty() const { return claims_.empty(); }

  // False when `identity` is listed for a cluster whose CIDRs do not hold `source` (host
  // order): the claim is forged. True for identities not listed (the reserved ones, those no
  // table names) and for a listed one claimed from its own cluster's addresses.
  bool admits(std::uint16_t identity, std::uint32_t source) const;

  // The cluster `identity` is listed for, "" when none (dumps, tests).
  const std::string& cluster_of(std::uint16_t identity) const;
  std::size_t identities() const { return claims_.size(); }
  std::size_t spans() const { return spans_.size(); }
  std::size_t bytes() const;

 private:
  struct Span {
    std::uint32_t first = 0, last = 0;  // host order, both included
    std::uint32_t cluster = 0;          // index into names_
  };
  static constexpr std::uint32_t kNone = 0xffffffff;
  std::uint32_t cluster_index(std::uint16_t identity) const;

  std::vector<Span> spans_;              // sorted by first, disjoint (touching spans of one cluster merged)
  std::vector<std::uint32_t> claims_;    // identity << 16 | cluster index, sorted
  std::vector<std::string> names_;
};

}  // namespace vxfed::dataplane
