#include "control/policy/policy_publisher.hpp"

#include <functional>

#include "control/daemon/daemon_config.hpp"

namespace vxfed::control {

namespace pol = ::vxfed::policy;

ClusterCidrs cluster_cidrs_of(const Config& config) {
  ClusterCidrs out;
  if (!config.cluster.name.empty() && !config.cluster.pod_cidrs.empty()) out[config.cluster.name] = config.cluster.pod_cidrs;
  for (const auto& [cluster, prefixes] : config.bgp.clusters)
    for (const auto& p : prefixes) out[cluster].push_back(p.str());
  return out;
}

std::optional<std::uint32_t> local_index_of(const PolicyFeed& feed, const pol::PolicyCompiler& compiler,
                                            const LocalPod& pod) {
  const auto number = feed.number_of(pod);
  const auto& locals = compiler.locals();
  for (std::size_t i = 0; i < locals.size(); ++i) {
    if (locals[i].number != number) continue;
    if (number == pol::kPeerUnlabelled && locals[i].identity.namespace_name != pod.namespace_name) continue;
    return static_cast<std::uint32_t>(i);
  }
  return std::nullopt;
}

void PolicyPublisher::update(const PolicyFeed& feed, const std::vector<LocalPod>& pods,
                             std::optional<Clock::time_point> change_seen) {
  const auto start = Clock::now();
  std::vector<dp::NetworkPolicy> upserts;
  std::vector<std::uint32_t> removals;
  std::map<std::string, Published> next;

  for (const auto& [network, compiler] : feed.compilers()) {
    if (!feed.has_policy_for(network)) continue;
    std::uint32_t vni = 0;
    std::vector<EndpointLocal> endpoints;
    for (const auto& pod : pods) {
      if (pod.network != network || pod.endpoint_id.empty()) continue;
      vni = pod.vni;
      // Every pod has a local identity: the compiler's locals were made from these pods.
      if (auto local = local_index_of(feed, *compiler, pod)) endpoints.push_back({pod.endpoint_id, *local});
    }
    if (vni == 0) continue;  // no VNI known for it: nothing to key the entry by
    const std::size_t mapped = endpoints.size();
    auto entry = network_policy_to_wire(vni, compiler->tables(), std::move(endpoints));
    add_identity_clusters(entry, clusters_, [&](std::uint16_t n) { return feed.cluster_of(n); });
    const std::string bytes = entry.SerializeAsString();
    Published p;
    p.vni = vni;
    p.bytes = bytes.size();
    p.hash = std::hash<std::string>{}(bytes);
    p.local_tables = static_cast<std::size_t>(entry.local_ingress_size());
    p.endpoints = mapped;
    p.remote_egress = static_cast<std::size_t>(entry.remote_egress_size());
    const auto was = published_.find(network);
    const bool same = was != published_.end() && was->second.vni == vni && was->second.bytes == p.bytes &&
                      was->second.hash == p.hash;
    p.generation = was != published_.end() ? was->second.generation : 0;
    if (same) {
      ++stats_.unchanged;
    } else {
      if (was != published_.end() && was->second.vni != vni) removals.push_back(was->second.vni);
      ++p.generation;
      stats_.last_bytes = p.bytes;
      upserts.push_back(std::move(entry));
    }
    next.emplace(network, p);
  }
  for (const auto& [network, p] : published_)
    if (!next.count(network)) removals.push_back(p.vni);
  // A VNI both removed (its old network) and upserted (another network took it): the upsert wins.
  std::erase_if(removals, [&](std::uint32_t vni) {
    for (const auto& u : upserts)
      if (u.vni() == vni) return true;
    return false;
  });
  published_ = std::move(next);

  const auto built = Clock::now() - start;
  stats_.last_build = built;
  stats_.max_build = std::max(stats_.max_build, built);
  const bool complete = first_;
  first_ = false;
  if (upserts.empty() && removals.empty() && !complete) return;
  stats_.upserts += upserts.size();
  stats_.removals += removals.size();
  if (sink_) sink_(upserts, removals, complete);
  if (upserts.empty() && removals.empty()) return;
  if (change_seen) {
    const auto latency = Clock::now() - *change_seen;
    stats_.last_latency = latency;
    stats_.max_latency = std::max(stats_.max_latency, latency);
    ++stats_.latency_samples;
  }
}

}  // namespace vxfed::control
