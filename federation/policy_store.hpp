// Network policy in the federation store (docs/federation.md, "Policy"; docs/policy.md,
// "The store"): MultiNetworkPolicy objects scoped to the cluster they were applied for,
// namespace labels and pod labels per cluster, and the federation's identity numbers, so that
// a node of cluster B enforces what was applied in cluster A.
//
// An apply is one guarded transaction: its policies, namespaces and pods are written together
// with the identity numbers its pods need, or nothing is. A number is allocated once for the
// federation: the transaction that creates it is guarded by "no number for this key, no
// record for this number", so two appliers asking at once for one key get one number, and two
// keys never share one. Each pod holding a number has a key under identity-users/<number>/
// (the reference count etcd can guard); the number whose last user is gone is held down for
// the range's hold-down (only the same key may take it back meanwhile), then forgotten.
// No I/O besides the Kv, no clock: callers pass now_ms.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "federation/identities.hpp"
#include "federation/kv.hpp"
#include "federation/policy_records.hpp"
#include "policy/model.hpp"

namespace vxfed::federation {

struct PolicyStoreOptions {
  IdentityRange identity_range;   // seeds the store when it has none; the store's are used after
  unsigned max_attempts = 64;     // transaction retries under contention before giving up
  // etcd's --max-txn-ops (default 128): an apply needing more compares or operations in its
  // one transaction is refused (split it, or raise etcd's limit and this with it).
  std::size_t max_txn_ops = 128;
};

struct ObjectName {
  std::string namespace_name;
  std::string name;
  auto operator<=>(const ObjectName&) const = default;
};

// One apply, for one cluster. Puts replace what the store has; deletes of objects the store
// does not have are no error (counted in the report), so an apply may be repeated.
struct PolicyBatch {
  std::string cluster;
  std::vector<policy::Policy> policies;
  std::vector<policy::Namespace> namespaces;
  std::vector<policy::Pod> pods;
  std::vector<ObjectName> delete_policies;
  std::vector<std::string> delete_namespaces;
  std::vector<ObjectName> delete_pods;
};

struct PodIdentity {
  std::string namespace_name;
  std::string name;
  std::uint32_t identity = 0;
  bool operator==(const PodIdentity&) const = default;
};

struct ApplyReport {
  std::int64_t revision = 0;             // the store revision of the apply's transaction
  unsigned attempts = 0;                 // transactions tried (more than 1: it lost a race and read again)
  std::vector<PodIdentity> pods;         // the batch's pods with their numbers, in batch order
  std::size_t new_identities = 0;        // numbers this apply allocated (or took back from hold-down)
  std::size_t absent_deletes = 0;        // deletes of objects the store did not have
  std::size_t renumbered = 0;            // other pods of a namespace whose labels changed, renumbered after
  std::vector<std::string> warnings;     // follow-up steps that failed (the apply itself stands)
};

struct StoredPod {
  std::string cluster;
  std::string namespace_name;
  std::string name;
  PodRecord record;
};

// Everything under v1/policy/ at one revision (what a node loads before it watches from
// revision + 1).
struct PolicySnapshot {
  std::int64_t revision = 0;
  std::vector<policy::Policy> policies;    // every cluster's
  std::vector<policy::Namespace> namespaces;
  std::vector<StoredPod> pods;
  std::map<std::uint32_t, IdentityRecord> identities;
  std::map<std::uint32_t, std::size_t> users;  // number -> pods holding it
};

struct MaintenanceReport {
  std::size_t released = 0;   // allocated numbers without users, now held down
  std::size_t forgotten = 0;  // held numbers whose hold-down ended, now free
};

class PolicyStore {
 public:
  PolicyStore(Kv& kv, PolicyStoreOptions options);

  // The federation's identity range; seeds it from the options when the store has none.
  StoreResult<IdentityRange> identity_range();

  // Writes the batch in one transaction (nothing half-applied), with the identity numbers its
  // pods need. A pod's identity is computed from its labels and its namespace's labels as they
  // are after the batch (policy::identity_of). After the transaction: numbers the batch left
  // without users are released (held down), and the other pods of a namespace whose labels the
  // batch changed are renumbered, one transaction each (until then they keep the number of
  // their old labels: docs/policy.md, "The store"). INVALID for a batch that names objects of
  // another cluster, the same object twice, a policy with no policyTypes, or one that needs
  // more than max_txn_ops operations; EXHAUSTED when a new label set finds no free number
  // (counted in exhausted_refusals()).
  StoreResult<ApplyReport> apply(const PolicyBatch& batch, std::uint64_t now_ms);

  // Everything, at one revision.
  StoreResult<PolicySnapshot> list();

  // Numbers whose last user is gone (an apply that crashed before its release step) are held
  // down; held numbers whose hold-down ended are forgotten. Any node may run it (the
  // federation's collector does): every step is guarded.
  StoreResult<MaintenanceReport> maintain(std::uint64_t now_ms);

  // Applies refused because the identity numbers ran out, since this object was made (a
  // metric: vxfed_policy_identity_exhausted_total).
  std::uint64_t exhausted_refusals() const { return exhausted_refusals_.load(std::memory_order_relaxed); }

 private:
  struct Attempt;
  enum class Outcome { applied, retry };
  StoreResult<Outcome> try_apply(const PolicyBatch& batch, const IdentityRange& range, std::int64_t range_revision,
                                 std::uint64_t now_ms, ApplyReport& report, std::set<std::uint32_t>& released_users,
                                 std::set<std::string>& relabelled);
  // Whether it held the number down (false: it is in use again, already held, or gone).
  StoreResult<bool> release_if_unused(std::uint32_t number, std::uint64_t now_ms);
  StoreResult<std::size_t> renumber_namespace(const std::string& cluster, const std::string& ns,
                                              const std::set<std::string>& skip, std::uint64_t now_ms);

  Kv& kv_;
  PolicyStoreOptions options_;
  std::atomic<std::uint64_t> exhausted_refusals_{0};
};

}  // namespace vxfed::federation
