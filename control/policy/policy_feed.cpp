#include "control/policy/policy_feed.hpp"

#include <algorithm>
#include <set>

#include "control/policy/identity_key.hpp"
#include "federation/identities.hpp"
#include "federation/policy_records.hpp"

namespace vxfed::control {

namespace fed = ::vxfed::federation;
namespace pol = ::vxfed::policy;

namespace {

std::string policy_key(const pol::Policy& p) { return p.cluster + "\n" + p.namespace_name + "\n" + p.name; }

bool same_local(const pol::LocalIdentity& a, const pol::LocalIdentity& b) {
  return a.number == b.number && a.identity == b.identity;
}

bool less_local(const pol::LocalIdentity& a, const pol::LocalIdentity& b) {
  if (a.number != b.number) return a.number < b.number;
  return a.identity.namespace_name < b.identity.namespace_name;  // unlabelled: one per namespace
}

}  // namespace

PolicyFeed::PolicyFeed(std::string cluster) : cluster_(std::move(cluster)) {}

FeedReport PolicyFeed::update(const fed::PolicySnapshot& snapshot, const std::vector<LocalPod>& pods) {
  const auto start = std::chrono::steady_clock::now();
  FeedReport report;
  revision_ = snapshot.revision;

  // Policies: the new and changed ones, and the ones gone.
  std::map<PolicyKey, HeldPolicy> next_policies;
  for (const auto& p : snapshot.policies) next_policies[policy_key(p)] = HeldPolicy{fed::encode_policy(p), p};
  std::vector<PolicyKey> deleted;
  for (const auto& [key, held] : policies_)
    if (!next_policies.count(key)) deleted.push_back(key);
  std::vector<PolicyKey> applied_keys;
  for (const auto& [key, held] : next_policies) {
    auto it = policies_.find(key);
    if (it == policies_.end() || it->second.encoded != held.encoded) applied_keys.push_back(key);
  }

  // Identities: allocated and held-down numbers alike (a held number may still be on the
  // wire, meaning its old labels), read from their canonical keys.
  std::map<std::uint16_t, std::pair<std::string, pol::Identity>> next_identities;
  for (const auto& [number, record] : snapshot.identities) {
    if (number < fed::kFirstAllocatableIdentity || number > fed::kLastIdentity) {
      report.skipped.push_back("identity " + std::to_string(number) + ": outside the allocatable numbers");
      continue;
    }
    auto it = identities_.find(static_cast<std::uint16_t>(number));
    if (it != identities_.end() && it->second.first == record.key) {
      next_identities.emplace(static_cast<std::uint16_t>(number), it->second);
      continue;
    }
    auto identity = identity_from_key(record.key);
    if (!identity || identity->unlabelled) {
      report.skipped.push_back("identity " + std::to_string(number) + ": " +
                               (identity ? std::string("the unlabelled key holds a number") : identity.error()));
      continue;
    }
    next_identities.emplace(static_cast<std::uint16_t>(number), std::make_pair(record.key, std::move(*identity)));
  }
  std::vector<std::uint16_t> added, removed;
  for (const auto& [number, held] : next_identities) {
    auto it = identities_.find(number);
    if (it == identities_.end() || it->second.first != held.first) added.push_back(number);
  }
  for (const auto& [number, held] : identities_)
    if (!next_identities.count(number)) removed.push_back(number);

  std::map<std::pair<std::string, std::string>, std::uint32_t> next_pods;
  for (const auto& p : snapshot.pods)
    if (p.cluster == cluster_) next_pods[{p.namespace_name, p.name}] = p.record.identity;

  policies_ = std::move(next_policies);
  identities_ = std::move(next_identities);
  own_pods_ = std::move(next_pods);
  std::vector<const pol::Policy*> applied;
  for (const auto& key : applied_keys) applied.push_back(&policies_.at(key).policy);

  sync_networks(pods, report, applied, deleted, added, removed);
  for (const auto* p : applied)
    report.changes.push_back("policy " + p->cluster + "/" + p->namespace_name + "/" + p->name + " applied");
  for (const auto& key : deleted) {
    auto name = key;
    std::replace(name.begin(), name.end(), '\n', '/');
    report.changes.push_back("policy " + name + " deleted");
  }
  for (auto number : added) {
    const auto& identity = identities_.at(number).second;
    report.changes.push_back("identity " + std::to_string(number) + " added (" + identity.cluster + "/" +
                             identity.namespace_name + ", " + std::to_string(identity.pod_labels.size()) + " pod labels)");
  }
  for (auto number : removed) report.changes.push_back("identity " + std::to_string(number) + " removed");
  report.policies_applied = applied.size();
  report.policies_deleted = deleted.size();
  report.identities_added = added.size();
  report.identities_removed = removed.size();
  report.duration = std::chrono::steady_clock::now() - start;
  return report;
}

FeedReport PolicyFeed::update_locals(const std::vector<LocalPod>& pods) {
  const auto start = std::chrono::steady_clock::now();
  FeedReport report;
  sync_networks(pods, report, {}, {}, {}, {});
  report.duration = std::chrono::steady_clock::now() - start;
  return report;
}

// The local identities of `network`: one per distinct number among its attached pods; a pod
// without a record (its labels have not reached the store) or whose number this node does not
// know yet is unlabelled, one local identity per namespace (it fails closed: docs/policy.md,
// "Before a pod's labels arrive").
std::uint16_t PolicyFeed::number_of(const LocalPod& pod) const {
  auto record = own_pods_.find({pod.namespace_name, pod.name});
  if (record == own_pods_.end()) return pol::kPeerUnlabelled;
  auto known = identities_.find(static_cast<std::uint16_t>(record->second));
  return known == identities_.end() ? pol::kPeerUnlabelled : known->first;
}

bool PolicyFeed::has_policy_for(const std::string& network) const {
  return std::any_of(policies_.begin(), policies_.end(), [&](const auto& held) {
    return pol::is_for_network(held.second.policy, network, pol::nad_name_is_network);
  });
}

std::vector<pol::LocalIdentity> PolicyFeed::locals_of(const std::string& network, const std::vector<LocalPod>& pods) const {
  std::vector<pol::LocalIdentity> out;
  for (const auto& pod : pods) {
    if (pod.network != network) continue;
    pol::LocalIdentity local;
    auto record = own_pods_.find({pod.namespace_name, pod.name});
    auto known = record == own_pods_.end() ? identities_.end() : identities_.find(static_cast<std::uint16_t>(record->second));
    if (known != identities_.end()) {
      local.number = known->first;
      local.identity = known->second.second;
    } else {
      local.number = pol::kPeerUnlabelled;
      local.identity = pol::Identity::make_unlabelled(cluster_, pod.namespace_name);
    }
    if (std::none_of(out.begin(), out.end(), [&](const auto& l) { return same_local(l, local); })) out.push_back(std::move(local));
  }
  std::sort(out.begin(), out.end(), less_local);
  return out;
}

// Additions only: add_local() each (its two tables and one peer entry per remote-egress
// table); any other change (a pod gone, an identity relabelled): set_locals(), every table.
void PolicyFeed::bring_locals(pol::PolicyCompiler& compiler, std::vector<pol::LocalIdentity> wanted, FeedReport& report) {
  const auto& held = compiler.locals();
  const auto in = [](const std::vector<pol::LocalIdentity>& list, const pol::LocalIdentity& l) {
    return std::any_of(list.begin(), list.end(), [&](const auto& x) { return same_local(x, l); });
  };
  const bool only_added = std::all_of(held.begin(), held.end(), [&](const auto& l) { return in(wanted, l); });
  if (only_added) {
    for (auto& l : wanted)
      if (!in(compiler.locals(), l)) {
        compiler.add_local(std::move(l));
        ++report.locals_added;
      }
    return;
  }
  compiler.set_locals(std::move(wanted));
  ++report.locals_replaced;
}

void PolicyFeed::sync_networks(const std::vector<LocalPod>& pods, FeedReport& report,
                               const std::vector<const pol::Policy*>& applied, const std::vector<PolicyKey>& deleted,
                               const std::vector<std::uint16_t>& added, const std::vector<std::uint16_t>& removed) {
  pods_ = pods;
  std::set<std::string> networks;
  for (const auto& p : pods) networks.insert(p.network);
  for (auto it = compilers_.begin(); it != compilers_.end();) {
    if (networks.count(it->first)) {
      ++it;
      continue;
    }
    it = compilers_.erase(it);
    ++report.networks_dropped;
  }
  for (const auto& network : networks) {
    auto it = compilers_.find(network);
    if (it == compilers_.end()) {
      // A network's first local pod: everything at once.
      auto compiler = std::make_unique<pol::PolicyCompiler>(network);
      std::vector<pol::Policy> all;
      for (const auto& [key, held] : policies_) all.push_back(held.policy);
      std::vector<pol::NumberedIdentity> numbered;
      for (const auto& [number, held] : identities_) numbered.push_back({number, held.second});
      compiler->build(std::move(all), std::move(numbered), locals_of(network, pods));
      compilers_.emplace(network, std::move(compiler));
      ++report.networks_built;
      continue;
    }
    auto& compiler = *it->second;
    // Identities first (a policy's peers and a new local need them), then policies, then the
    // locals, and the removed numbers last: remove_identity() takes no local's number, and
    // the locals no longer hold them once brought to the listing.
    for (auto number : added) compiler.add_identity({number, identities_.at(number).second});
    for (const auto* p : applied) compiler.apply_policy(*p);
    for (const auto& key : deleted) {
      const auto a = key.find('\n'), b = key.find('\n', a + 1);
      compiler.delete_policy(key.substr(0, a), key.substr(a + 1, b - a - 1), key.substr(b + 1));
    }
    bring_locals(compiler, locals_of(network, pods), report);
    for (auto number : removed) compiler.remove_identity(number);
  }
}

}  // namespace vxfed::control
