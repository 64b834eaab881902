// Which policies apply to a pod, and what they let through: the rule sets of one pod on one
// network, compiled from the policies, and allowed(), which decides one connection against
// them (docs/policy.md, "Semantics").
//
// allowed() is the reference implementation of the semantics: the forwarder's fast path (with
// identities on the wire and connection tracking, not built yet) will be checked against it
// the way the packet parsers are checked against their reference parsers
// (docs/conventions.md: parsers). Keep it simple and obviously right, not fast.
//
// Cross-cluster scope (namespace sameness, as the MCS API has it): a policy selects pods of
// the cluster it was applied for only; its peers may be in any cluster, and a peer podSelector
// without a namespaceSelector means the policy's namespace in every cluster.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"
#include "policy/identity.hpp"
#include "policy/model.hpp"

namespace vxfed::policy {

enum class Direction { Ingress, Egress };

// The vxfed network a NAD named by policy-for stands for; nullopt when it stands for none.
using NadResolver = std::function<std::optional<std::string>(const NadRef&)>;
// The rule until NADs are read (docs/policy.md, "Networks"): a NAD's name is the vxfed
// network's name, which is the CNI config's default (`network` defaults to `name`, which
// Multus fills with the NAD's name).
std::optional<std::string> nad_name_is_network(const NadRef& nad);

bool is_for_network(const Policy& policy, const std::string& network, const NadResolver& resolve = nad_name_is_network);

// Whether `policy` selects the pod `pod` on `network`. Maybe: the pod is unlabelled and the
// policy's podSelector is not {}: it might select the pod once its labels arrive.
enum class Selection { No, Yes, Maybe };
Selection selects(const Policy& policy, const Identity& pod, const std::string& network,
                  const NadResolver& resolve = nad_name_is_network);

// The policies that select the pod (Yes only), in the order given.
std::vector<const Policy*> policies_selecting(const std::vector<Policy>& policies, const Identity& pod,
                                              const std::string& network,
                                              const NadResolver& resolve = nad_name_is_network);

// Who a rule lets through, resolved against a peer's identity or address.
struct PeerPredicate {
  enum class Kind { Any, Pods, Cidr } kind = Kind::Any;
  // Pods: the peer's namespace is `namespace_name` (when set: a podSelector without a
  // namespaceSelector) or its labels match `namespace_selector`; and its pod labels match
  // `pod_selector` (absent: every pod of those namespaces). Any cluster.
  std::optional<std::string> namespace_name;
  LabelSelector namespace_selector;
  std::optional<LabelSelector> pod_selector;
  // Cidr: the peer's address is in block.cidr and in none of block.except.
  IpBlock block;
};

// What traffic a rule lets through. protocol absent: every protocol (ICMP too) and port.
struct PortRange {
  std::optional<Protocol> protocol;
  std::uint16_t first = 0;
  std::uint16_t last = 65535;
};

// One allowed (peer, ports) pair; a rule with n peers and m ports gives n x m of these.
struct AllowRule {
  PeerPredicate peer;
  PortRange ports;
  std::string policy;  // "namespace/name", for people reading a dump
};

struct DirectionRules {
  bool isolated = false;  // some policy with this type selects (or may select) the pod: default deny
  std::vector<AllowRule> allow;
};

struct CompiledRules {
  DirectionRules ingress;
  DirectionRules egress;
  const DirectionRules& of(Direction d) const { return d == Direction::Ingress ? ingress : egress; }
};

// The pod's rule sets on `network`: the union of the rules of every policy that selects it.
// An unlabelled pod is isolated by every policy that may select it (Maybe) but allowed only by
// the rules of those sure to (Yes): it never gets more than it will have once its labels are
// known (docs/policy.md, "Before a pod's labels arrive").
CompiledRules compile(const Identity& pod, const std::string& network, const std::vector<Policy>& policies,
                      const NadResolver& resolve = nad_name_is_network);
// The same over policies given by address (the table compiler passes one namespace's).
CompiledRules compile(const Identity& pod, const std::string& network, const std::vector<const Policy*>& policies,
                      const NadResolver& resolve = nad_name_is_network);

// The other end of a connection: a pod's identity, an address, or both (a pod's packet carries
// both; ipBlock rules match the address whoever sends it, pod rules the identity).
struct PeerRef {
  std::optional<Identity> identity;
  std::optional<net::Ipv4Addr> ip;
};

bool peer_matches(const PeerPredicate& predicate, const PeerRef& peer);
// Its two halves for a peer known by identity (peer_matches() is their AND for kind Pods; the
// table compiler checks the namespace half once per namespace): the peer's namespace, and
// its pod labels.
bool namespace_part_matches(const PeerPredicate& predicate, const Identity& peer);
bool pod_part_matches(const PeerPredicate& predicate, const Identity& peer);

// Whether a connection is let through in `direction`: ingress, `peer` is the source and `port`
// the local pod's destination port; egress, `peer` is the destination and `port` its port.
// `ip_protocol` is the IP header's protocol number (6 TCP, 17 UDP, 1 ICMP...).
bool allowed(const CompiledRules& rules, Direction direction, const PeerRef& peer, std::uint8_t ip_protocol,
             std::uint16_t port);

// The same from the policies: compile() for `local` on `network`, then allowed().
bool allowed(Direction direction, const Identity& local, const std::string& network,
             const std::vector<Policy>& policies, const PeerRef& peer, std::uint8_t ip_protocol, std::uint16_t port,
             const NadResolver& resolve = nad_name_is_network);

}  // namespace vxfed::policy
