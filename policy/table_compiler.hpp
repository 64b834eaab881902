// Compiles every policy, every identity's labels and this node's local identities into the
// PolicyTables a forwarder worker reads (policy/tables.hpp; docs/policy.md, "Compiled tables"),
// and keeps them up to date one change at a time.
//
// What each change rebuilds, and why that is all it can change:
//   - a policy applied, replaced or deleted: a policy contributes only to the tables of the
//     identities it selects, and it selects only identities of its own cluster and namespace.
//     So the tables rebuilt are those of the identities of that namespace that the old or the
//     new version selects (local ingress and egress; the remote-egress table).
//   - an identity added or removed: it is a peer in the local tables (one entry each, from
//     the rules those tables were built from), and it has a remote-egress table (shared by
//     the identities the same Egress policies select).
//   - a local identity added (a pod of an identity new to this node): its own tables, and one
//     peer entry in each remote-egress table (their peers are the local identities). Any other
//     change of the local set (set_locals) rebuilds every table.
// Every change is computed with the reference semantics of policy/compile.hpp (compile(),
// peer_matches()): the tables are a faster shape of the same answers, and a test checks that
// decide() equals allowed() everywhere (tests/policy/tables_test.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "policy/compile.hpp"
#include "policy/tables.hpp"

namespace vxfed::policy {

struct NumberedIdentity {
  std::uint16_t number = 0;
  Identity identity;
};

// One of this node's identities: an allocated number and its identity, or an unlabelled pod
// of a known namespace (number kPeerUnlabelled, Identity::make_unlabelled(cluster, ns)).
using LocalIdentity = NumberedIdentity;

// What one change did, for the benchmark and for logs.
struct ChangeCost {
  std::size_t tables_rebuilt = 0;   // direction tables built from their rules
  std::size_t peer_entries_set = 0;  // single peer entries added or removed
};

class PolicyCompiler {
 public:
  explicit PolicyCompiler(std::string network, NadResolver resolve = nad_name_is_network);

  // Everything at once (start-up, resync). `identities` is every allocated identity of the
  // federation (numbers >= 256); the reserved ones are the compiler's own. `locals` are
  // indexed by their place: the LocalIndex of the tables.
  void build(std::vector<Policy> policies, std::vector<NumberedIdentity> identities,
             std::vector<LocalIdentity> locals);

  ChangeCost apply_policy(Policy policy);  // new or replacing the one of the same cluster/namespace/name
  ChangeCost delete_policy(const std::string& cluster, const std::string& namespace_name, const std::string& name);
  ChangeCost add_identity(NumberedIdentity identity);  // a number not yet known (a known one is replaced)
  // A released number. Not one of the locals' (their pods are relabelled, and set_locals()
  // called, before their number can be released): their tables would keep it as a peer.
  ChangeCost remove_identity(std::uint16_t number);
  ChangeCost set_locals(std::vector<LocalIdentity> locals);  // every table rebuilt
  // A pod of an identity new to this node: its two tables, and one peer entry in each shared
  // remote-egress table whose rules match it. Its LocalIndex is the last.
  ChangeCost add_local(LocalIdentity local);

  const PolicyTables& tables() const { return tables_; }
  const std::vector<LocalIdentity>& locals() const { return locals_; }
  // The policies that isolate local identity `local` (a LocalIndex) in `direction`: those that
  // select it (or may: an unlabelled pod) and have that type, as "namespace/name", sorted. A
  // flow its table refuses is refused for each of them (docs/policy.md, "Drops per policy").
  std::vector<std::string> isolating(std::size_t local, Direction direction) const;

 private:
  using PolicyKey = std::string;  // cluster, namespace, name joined by '\n' (none of them may hold one)
  using NamespaceKey = std::pair<std::string, std::string>;  // cluster, namespace
  // The identities of one namespace of one cluster with one set of namespace labels (two sets
  // while a namespace's relabelling renumbers its pods): a namespaceSelector is matched once
  // per group, not once per identity.
  using GroupKey = std::tuple<std::string, std::string, Labels, bool>;  // cluster, namespace, its labels, unlabelled
  struct NamespaceGroup {
    std::vector<std::uint16_t> numbers;  // sorted
  };

  PortSetId intern(PortSet set);
  PortSetId unite(PortSetId a, PortSetId b);
  PortSetId ports_of(const PortRange& range);

  std::vector<const Policy*> policies_of(const NamespaceKey& ns) const;
  const Identity* peer_identity(std::uint16_t number) const;
  DirectionTable build_table(const DirectionRules& rules, bool peers_are_locals);
  PortSetId selector_ports_for(const DirectionRules& rules, const Identity& peer);
  void rebuild_local(std::size_t index);
  // The remote-egress table of `number` (built or shared, replaced or dropped); true when it has one.
  bool rebuild_remote_egress(std::uint16_t number);
  void release_remote_egress(std::uint16_t number);
  void index_identity(NumberedIdentity identity);
  void unindex_identity(std::uint16_t number);
  ChangeCost policy_changed(const std::optional<Policy>& before, const std::optional<Policy>& after);

  std::string network_;
  NadResolver resolve_;

  std::map<PolicyKey, Policy> policies_;
  std::map<NamespaceKey, std::set<PolicyKey>> policies_by_namespace_;
  std::map<std::uint16_t, Identity> identities_;  // allocated numbers only
  std::map<NamespaceKey, std::set<std::uint16_t>> identities_by_namespace_;
  std::map<std::string, std::set<std::uint16_t>> identities_by_namespace_name_;  // every cluster
  std::map<GroupKey, NamespaceGroup> groups_;
  std::vector<LocalIdentity> locals_;
  std::vector<CompiledRules> local_rules_;  // by LocalIndex: what local_ingress/egress were built from
  // Remote-egress tables are shared by the identities with one selection (the Egress policies
  // that select them, each with its generation): by slot, its users and its selection.
  std::vector<std::uint32_t> free_remote_tables_;
  std::vector<std::uint32_t> remote_users_;
  std::vector<std::string> remote_selection_;
  std::vector<DirectionRules> remote_rules_;  // what each table was built from, for add_local()
  std::unordered_map<std::string, std::uint32_t> remote_by_selection_;
  std::map<PolicyKey, std::uint64_t> policy_generation_;
  std::uint64_t generation_ = 0;

  PolicyTables tables_;
  std::unordered_map<std::string, PortSetId> port_set_ids_;
  std::unordered_map<std::uint64_t, PortSetId> unions_;
  std::vector<PortSetId> scratch_;  // by identity number: a peer's ports while a table is built
};

}  // namespace vxfed::policy
