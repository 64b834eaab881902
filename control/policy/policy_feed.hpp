// The step between the federation store and the policy compiler (docs/policy.md, "vxfedd
// follows the store"): each listing of v1/policy/ (every policy, identity and pod record at
// one revision) and this node's attached pods are compared with what the compilers hold, and
// only the differences are fed to them: a policy applied or deleted, an identity added or
// removed, a local identity added (or the local set replaced). One PolicyCompiler per network
// that has pods on this node: policies select pods per network (policy-for), and a network
// without local pods has nothing to enforce here.
//
// Pure (no I/O, no clock but the duration it measures), so the follower's step is tested
// without etcd (tests/control/policy_feed_test.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "federation/policy_store.hpp"
#include "policy/table_compiler.hpp"

namespace vxfed::control {

// A pod attached on this node (an endpoint of NodeState, with the CNI's K8S_POD_NAMESPACE and
// K8S_POD_NAME). The compilers read the first three; the endpoint's id and VNI say where its
// network's policy entry goes (control/policy/policy_publisher.hpp).
struct LocalPod {
  std::string network;
  std::string namespace_name;
  std::string name;
  std::string endpoint_id;  // dp::Endpoint.id
  std::uint32_t vni = 0;
  bool operator==(const LocalPod&) const = default;
  auto operator<=>(const LocalPod&) const = default;
};

// What one update changed, summed over the networks' compilers.
struct FeedReport {
  std::size_t policies_applied = 0;    // new or changed
  std::size_t policies_deleted = 0;
  std::size_t identities_added = 0;    // new or relabelled numbers
  std::size_t identities_removed = 0;
  std::size_t locals_added = 0;        // add_local() calls
  std::size_t locals_replaced = 0;     // set_locals() calls (every table rebuilt)
  std::size_t networks_built = 0;      // a compiler made and built whole
  std::size_t networks_dropped = 0;    // the network's last local pod went
  std::vector<std::string> skipped;    // records that did not read (left out, named)
  std::vector<std::string> changes;    // one line per policy and identity change (vxfedd logs them at debug)
  std::chrono::nanoseconds duration{0};
  bool changed() const {
    return policies_applied + policies_deleted + identities_added + identities_removed + locals_added + locals_replaced +
               networks_built + networks_dropped >
           0;
  }
};

class PolicyFeed {
 public:
  explicit PolicyFeed(std::string cluster);  // this node's cluster: its pods are the local ones

  // The store's listing and the attached pods: every compiler brought to them.
  FeedReport update(const federation::PolicySnapshot& snapshot, const std::vector<LocalPod>& pods);
  // Only the attached pods changed: the same, against the last listing.
  FeedReport update_locals(const std::vector<LocalPod>& pods);

  // The number this node puts on the wire for `pod` (Endpoint.identity): its record's number
  // once this node has listed it, else the unlabelled number (docs/policy.md, "Identities on
  // the wire"), the same as the compilers use for it (locals_of()).
  std::uint16_t number_of(const LocalPod& pod) const;

  std::size_t policies() const { return policies_.size(); }       // held, every cluster's
  // Some policy held is for `network` (policy-for, as the compilers resolve it): the network
  // has policy, even if none selects a pod here (its remote-egress tables still decide).
  bool has_policy_for(const std::string& network) const;
  std::size_t identities() const { return identities_.size(); }   // allocated or held down
  // The cluster of an allocated (or held) number, nullptr for others (the GBP trust check).
  const std::string* cluster_of(std::uint16_t number) const {
    const auto it = identities_.find(number);
    return it == identities_.end() ? nullptr : &it->second.second.cluster;
  }
  std::int64_t revision() const { return revision_; }             // of the last listing
  const std::map<std::string, std::unique_ptr<policy::PolicyCompiler>>& compilers() const { return compilers_; }

 private:
  struct HeldPolicy {
    std::string encoded;  // the record's text form: equal text, equal policy
    policy::Policy policy;
  };
  using PolicyKey = std::string;  // cluster '\n' namespace '\n' name

  std::vector<policy::LocalIdentity> locals_of(const std::string& network, const std::vector<LocalPod>& pods) const;
  void bring_locals(policy::PolicyCompiler& compiler, std::vector<policy::LocalIdentity> wanted, FeedReport& report);
  void sync_networks(const std::vector<LocalPod>& pods, FeedReport& report,
                     const std::vector<const policy::Policy*>& applied, const std::vector<PolicyKey>& deleted,
                     const std::vector<std::uint16_t>& added, const std::vector<std::uint16_t>& removed);

  std::string cluster_;
  std::int64_t revision_ = 0;
  std::map<PolicyKey, HeldPolicy> policies_;
  std::map<std::uint16_t, std::pair<std::string, policy::Identity>> identities_;  // number -> key, identity
  std::map<std::pair<std::string, std::string>, std::uint32_t> own_pods_;         // (namespace, name) -> number
  std::vector<LocalPod> pods_;                                                     // as last given
  std::map<std::string, std::unique_ptr<policy::PolicyCompiler>> compilers_;       // by network
};

}  // namespace vxfed::control
