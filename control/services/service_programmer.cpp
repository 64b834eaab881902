#include "control/services/service_programmer.hpp"

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

}  // namespace

ServiceView compile_service(const svc::FederatedService& service, const ServiceNode& node) {
  ServiceView view;
  view.key = service.key;
  view.strategy = svc::strategy_name(service.strategy.strategy);
  view.vip = service.vip;
  std::vector<bool> alive_flags(service.backends.size(), false);
  for (std::size_t i = 0; i < service.backends.size(); ++i) {
    const auto& b = service.backends[i];
    alive_flags[i] = node.vni && node.reaches && node.reaches(*node.vni, b.address);
    BackendView v;
    v.cluster = b.cluster;
    v.address = b.address;
    // "node down" only when the node can tell: without the network it can reach nothing.
    v.state = !b.ready ? BackendState::not_ready
                       : (node.vni && !alive_flags[i] ? BackendState::node_down : BackendState::ready);
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
  // std::vector<bool> is no span of bool: copy into a plain array for allowed_backends().
  std::unique_ptr<bool[]> alive(new bool[service.backends.size() + 1]);
  for (std::size_t i = 0; i < service.backends.size(); ++i) alive[i] = alive_flags[i];
  const auto allowed = svc::allowed_backends(service, node.cluster, std::span<const bool>(alive.get(), service.backends.size()));

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
  for (const auto& a : allowed) {
    auto* backend = entry.add_backends();
    backend->set_ip(service.backends[a.backend].address.str());
    backend->set_weight(a.weight);
    view.backends[a.backend].allowed = true;
    view.backends[a.backend].weight = a.weight;
  }
  entry.set_table_size(svc::kServiceTableSize);
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
