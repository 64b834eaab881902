// The compiled policy tables a forwarder worker decides a new connection with (docs/policy.md,
// "Compiled tables"): plain vectors, no selectors, no strings, no DPDK. PolicyCompiler
// (policy/table_compiler.hpp) builds them from every policy, every identity's labels and the
// node's local identities; decide() and its callers below read them with one lookup for the
// peer's identity and one for its address.
//
// Identity-level, not pod-level: pods that share an identity share its tables. Local
// identities are numbered by their place in the compiler's list (LocalIndex), not by their
// identity number, because every unlabelled local pod has number 1 yet its namespace (known
// locally from its CNI ADD) decides which policies select it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/net/ipv4.hpp"

namespace vxfed::policy {

// The reserved identity numbers (the same as federation/identities.hpp's kIdentity*, which
// this library cannot include: federation/ stands on policy/).
inline constexpr std::uint16_t kPeerUnknown = 0;     // no GBP header where one was due: matches no selector
inline constexpr std::uint16_t kPeerUnlabelled = 1;  // labels not known: matches {} selectors only
inline constexpr std::uint16_t kPeerWorld = 2;       // outside every vxfed network: ipBlock peers only

using PortSetId = std::uint32_t;
inline constexpr PortSetId kNothing = 0;   // no protocol, no port
inline constexpr PortSetId kEverything = 1;  // every protocol (ICMP too) and every port

// One protocol's ports first..last, both included.
struct PortSpan {
  std::uint8_t protocol = 0;  // IP protocol number: 6 TCP, 17 UDP
  std::uint16_t first = 0;
  std::uint16_t last = 0;
  auto operator<=>(const PortSpan&) const = default;
};

// What one or more rules let through: everything, or spans sorted by (protocol, first),
// disjoint and not adjacent (merged), so equal sets have equal bytes and are stored once.
struct PortSet {
  bool every_protocol = false;
  std::vector<PortSpan> spans;
  bool operator==(const PortSet&) const = default;
};

bool port_set_allows(const PortSet& set, std::uint8_t ip_protocol, std::uint16_t port);

struct DirectionTable;
// Keep a table's peer_starts right after its peers changed: index_peers() rebuilds it whole;
// peer_inserted() / peer_erased() adjust it for one entry at `identity`.
void index_peers(DirectionTable& table);
void peer_inserted(DirectionTable& table, std::uint16_t identity);
void peer_erased(DirectionTable& table, std::uint16_t identity);

inline constexpr std::size_t kIndexedPeers = 64;

struct PeerEntry {
  std::uint16_t identity = 0;
  PortSetId ports = kNothing;  // the peer's selector rules united with the rules without peers
};

// Addresses first..last (host order), disjoint, sorted: the ipBlock rules with their excepts
// cut out, each span's port set the union of the blocks that hold it.
struct AddressSpan {
  std::uint32_t first = 0;
  std::uint32_t last = 0;
  PortSetId ports = kNothing;
};

// One identity's rules in one direction.
struct DirectionTable {
  bool isolated = false;          // some policy of this type selects it: what is not let through is denied
  PortSetId any_peer = kNothing;  // rules without from/to: every peer, the unknown identity too
  // Every peer identity some selector rule matches, sorted by identity. A peer not listed
  // gets any_peer: that is how identities 0 and 2 (no selector matches them) are decided.
  std::vector<PeerEntry> peers;
  // With more than kIndexedPeers peers: 257 offsets, peer_starts[h] = the first entry whose
  // identity's high byte is >= h, so a lookup searches one high byte's entries (at most 256)
  // instead of all of them. Empty otherwise.
  std::vector<std::uint32_t> peer_starts;
  // The union of the peers' port sets: what a selector rule might let through toward a peer
  // whose identity the deciding node does not know (the source node, for egress).
  PortSetId some_selector = kNothing;
  std::vector<AddressSpan> addresses;  // ipBlock rules, by the peer's address
};

// The verdict of the source node on a new egress connection toward a pod of another node,
// whose identity it does not know: the destination decides the selector rules.
enum class EgressAtSource { Allow, Deny, AskDestination };

struct PolicyTables {
  std::vector<PortSet> port_sets;  // by PortSetId; [0] = nothing, [1] = everything
  // By LocalIndex: ingress of the node's pods (checked at this node, after decapsulation or
  // between two local pods) and their egress (checked here before encapsulation). Their peers
  // are every identity of the federation.
  std::vector<DirectionTable> local_ingress;
  std::vector<DirectionTable> local_egress;
  // By identity number (65,536 entries, kNoTable where the identity is not egress-isolated):
  // index into remote_egress_tables, one table shared by every identity that the same Egress
  // policies select (they have the same egress rules). The egress rules of a source
  // identity of any node, with peers only the local identities, so the destination can check
  // what the source node could not (the selector rules), from the identity in the GBP header.
  static constexpr std::uint32_t kNoTable = 0xffffffff;
  std::vector<std::uint32_t> remote_egress_of;
  std::vector<DirectionTable> remote_egress_tables;

  std::size_t bytes() const;  // heap and inline bytes of everything above (what a publication copies)
};

// The verdict of one table for a peer by identity and, when known, by address: the peer's
// identity entry (one binary search), then its address span (one more), as allowed() in
// policy/compile.hpp decides it.
bool decide(const PolicyTables& tables, const DirectionTable& table, std::uint16_t peer_identity,
            std::optional<net::Ipv4Addr> peer_address, std::uint8_t ip_protocol, std::uint16_t port);

// Ingress at the destination: local pod `local` (its LocalIndex) from a source identity (the
// GBP header's, 0 without one) and the inner source address.
bool decide_ingress(const PolicyTables& tables, std::uint32_t local, std::uint16_t source_identity,
                    net::Ipv4Addr source_address, std::uint8_t ip_protocol, std::uint16_t port);

// Egress of a local pod toward a local pod (both identities known here): the whole decision.
bool decide_local_egress(const PolicyTables& tables, std::uint32_t local, std::uint16_t destination_identity,
                         net::Ipv4Addr destination_address, std::uint8_t ip_protocol, std::uint16_t port);

// Egress of a local pod toward another node: Allow when a rule without peers or an ipBlock rule
// lets it through (or the pod is not egress-isolated), AskDestination when only a selector rule
// could, Deny when none could.
EgressAtSource decide_egress_at_source(const PolicyTables& tables, std::uint32_t local,
                                       net::Ipv4Addr destination_address, std::uint8_t ip_protocol,
                                       std::uint16_t port);

// The source's egress, checked at the destination (when the source asked: A bit clear): the
// source identity's rules toward the local destination pod's identity number and address.
bool decide_remote_egress(const PolicyTables& tables, std::uint16_t source_identity, std::uint16_t destination_identity,
                          net::Ipv4Addr destination_address, std::uint8_t ip_protocol, std::uint16_t port);

}  // namespace vxfed::policy
