#include "control/services/service_programmer.hpp"

#include <algorithm>
#include <memory>
#include <numeric>
#include <set>
#include <span>
#include <string>
#include <utility>

#include "dataplane/core/service_entry.hpp"

namespace vxfed::control {

namespace svc = ::vxfed::services;

const char* backend_state_name(BackendState state) {
  switch (state) {
    case BackendState::ready: return "ready";
    case BackendState::not_ready: return "not ready";
    case BackendState::node_down: return "node down";
  }
  return "?";
}

namespace {

bool same_service(const svc::FederatedService& a, const svc::FederatedService& b) {
  return a.key == b.key && a.ports == b.ports && a.strategy == b.strategy && a.vip == b.vip &&
         a.clusters == b.clusters && a.backends == b.backends;
}

// What the forwarder takes (it refuses the whole Delta otherwise): weights 0..65535, at most
// kMaxServiceBackends backends.
constexpr std::uint32_t kMaxEntryWeight = 65535;

// allowed_backends() splits a cluster's weight in kWeightUnits (720720 x up to 1000): reduced by
// their common divisor, then scaled down to the forwarder's 16 bits when still larger (each
// share kept to within 1/65535 of the largest, none rounded to 0).
std::vector<std::uint32_t> entry_weights(const std::vector<svc::WeightedBackend>& allowed) {
  std::uint64_t g = 0, top = 0;
  for (const auto& a : allowed) g = std::gcd(g, std::uint64_t{a.weight});
  std::vector<std::uint32_t> out;
  for (const auto& a : allowed) top = std::max(top, a.weight / (g ? g : 1));
  for (const auto& a : allowed) {
    std::uint64_t w = a.weight / (g ? g : 1);
    if (top > kMaxEntryWeight) w = std::max<std::uint64_t>(1, (w * kMaxEntryWeight + top / 2) / top);
    out.push_back(static_cast<std::uint32_t>(w));
  }
  return out;
}

}  // namespace

ServiceView compile_service(const svc::FederatedService& service, const ServiceNode& node) {
  ServiceView view;
  view.key = service.key;
  view.strategy = svc::strategy_name(service.strategy.strategy);
  view.vip = service.vip;
  // allowed_backends() takes a span of bool, which std::vector<bool> cannot give.
  const std::size_t n = service.backends.size();
  std::unique_ptr<bool[]> alive(new bool[n ? n : 1]);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& b = service.backends[i];
    alive[i] = node.vni && node.reaches && node.reaches(*node.vni, b.address);
    BackendView v;
    v.cluster = b.cluster;
    v.address = b.address;
    // "node down" only when the node can tell: without the network it can reach nothing.
    v.state = !b.ready ? BackendState::not_ready
                       : (node.vni && !alive[i] ? BackendState::node_down : BackendState::ready);
    view.backends.push_back(std::move(v));
  }
  if (!service.vip) {
    view.not_programmed = "no VIP allocated";
    return view;
  }
  if (!node.vni) {
    view.not_programmed = "this node does not serve the services' network";
    return view;
  }
  std::set<std::pair<svc::Protocol, std::uint16_t>> ports;
  for (const auto& p : service.ports)
    if (!ports.emplace(p.protocol, p.port).second) {
      view.not_programmed = std::string("port ") + svc::protocol_name(p.protocol) + " " + std::to_string(p.port) + " listed twice";
      return view;
    }
  if (ports.empty()) {
    view.not_programmed = "no ports";
    return view;
  }
  const auto allowed = svc::allowed_backends(service, node.cluster, std::span<const bool>(alive.get(), n));
  if (allowed.size() > dataplane::kMaxServiceBackends) {
    view.not_programmed = std::to_string(allowed.size()) + " backends allowed, more than the forwarder's " +
                          std::to_string(dataplane::kMaxServiceBackends);
    return view;
  }
  // Backends ready and reached that the strategy does not give new flows now (the other
  // cluster's after LocalFirst's local side returned, FailoverOnly's standby after the primary
  // did) stay in the entry at weight 0: the forwarder keeps a tracked flow while its backend is
  // in the entry and re-picks it otherwise, so leaving them out would move every open flow
  // (a TCP connection to the new backend is answered with a reset). They leave only when they
  // are gone: not ready, pod deleted, node not reached. Within the forwarder's limit: the
  // allowed ones first, the kept ones after while they fit.
  std::vector<bool> in_entry(n, false);
  for (const auto& a : allowed) in_entry[a.backend] = true;
  std::size_t entry_size = allowed.size(), dropped_kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (in_entry[i] || !service.backends[i].ready || !alive[i]) continue;
    if (entry_size == dataplane::kMaxServiceBackends) {
      ++dropped_kept;
      continue;
    }
    in_entry[i] = true;
    view.backends[i].kept = true;
    ++entry_size;
  }
  if (dropped_kept)
    view.kept_left_out = std::to_string(dropped_kept) + " backends not allowed now left out of the entry (the "
                         "forwarder's limit of " + std::to_string(dataplane::kMaxServiceBackends) +
                         "): their open flows are moved";
  const auto weights = entry_weights(allowed);

  dp::Service entry;
  entry.set_id(service.key.str());
  entry.set_vni(*node.vni);
  entry.set_vip(service.vip->str());
  for (const auto& p : service.ports) {
    auto* port = entry.add_ports();
    port->set_protocol(static_cast<std::uint32_t>(p.protocol));
    port->set_port(p.port);
    port->set_target_port(p.target_port ? p.target_port : p.port);
  }
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    const auto& a = allowed[i];
    view.backends[a.backend].allowed = true;
    view.backends[a.backend].weight = weights[i];
  }
  // In the service's order (cluster, address): the forwarder sorts them by address anyway.
  for (std::size_t i = 0; i < n; ++i) {
    if (!in_entry[i]) continue;
    auto* backend = entry.add_backends();
    backend->set_ip(service.backends[i].address.str());
    backend->set_weight(view.backends[i].allowed ? view.backends[i].weight : 0);
  }
  // The forwarder's size for the service's backends of every cluster and state, pinned, not
  // left to its default for the backends allowed now: a failover (3 local -> 30 remote) or
  // backends turning not ready would otherwise cross its size tiers and re-deal every new flow
  // of backends that stayed. Changes only when backends are added or removed across a tier.
  entry.set_table_size(dataplane::default_service_table_size(std::max<std::size_t>(service.backends.size(), entry_size)));
  view.entry = std::move(entry);
  return view;
}

void ServiceProgrammer::index(const svc::FederatedService& service, bool add) {
  for (const auto& b : service.backends) {
    if (add) {
      by_backend_[b.address.value].insert(service.key);
      continue;
    }
    auto it = by_backend_.find(b.address.value);
    if (it == by_backend_.end()) continue;
    it->second.erase(service.key);
    if (it->second.empty()) by_backend_.erase(it);
  }
}

void ServiceProgrammer::compile(const svc::ServiceKey& key, const ServiceNode& node, Changes& changes) {
  ++compiles_;
  ServiceView view = compile_service(services_.at(key), node);
  auto old = views_.find(key);
  const bool was_programmed = old != views_.end() && old->second.entry;
  if (view.entry) changes.upserts.push_back(*view.entry);
  else if (was_programmed) changes.removals.push_back(key.str());
  views_[key] = std::move(view);
}

ServiceProgrammer::Changes ServiceProgrammer::set_federated(const svc::FederatedSet& set) {
  Changes changes;
  const ServiceNode node = node_();
  for (auto it = services_.begin(); it != services_.end();) {
    if (set.services.count(it->first)) {
      ++it;
      continue;
    }
    index(it->second, false);
    if (auto v = views_.find(it->first); v != views_.end()) {
      if (v->second.entry) changes.removals.push_back(it->first.str());
      views_.erase(v);
    }
    it = services_.erase(it);
  }
  for (const auto& [key, service] : set.services) {
    auto it = services_.find(key);
    if (it != services_.end() && same_service(it->second, service)) continue;
    if (it != services_.end()) index(it->second, false);
    services_[key] = service;
    index(service, true);
    compile(key, node, changes);
  }
  return changes;
}

ServiceProgrammer::Changes ServiceProgrammer::reach_changed(std::uint32_t vni, const net::Ipv4Prefix& prefix) {
  // The index first: a route burst (a BGP resync is ~130,000 routes) mostly touches no
  // backend, and then costs one map lookup per route, not a look at the node.
  Changes changes;
  std::set<svc::ServiceKey> affected;
  for (auto it = by_backend_.lower_bound(prefix.addr); it != by_backend_.end() && it->first <= prefix.last().value; ++it)
    affected.insert(it->second.begin(), it->second.end());
  if (affected.empty()) return changes;
  const ServiceNode node = node_();
  if (!node.vni || *node.vni != vni) return changes;  // another network's: no backend of ours
  for (const auto& key : affected) compile(key, node, changes);
  return changes;
}

ServiceProgrammer::Changes ServiceProgrammer::recompile_all() {
  Changes changes;
  const ServiceNode node = node_();
  for (const auto& [key, service] : services_) compile(key, node, changes);
  return changes;
}

}  // namespace vxfed::control
