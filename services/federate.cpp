#include "services/federate.hpp"

#include <algorithm>
#include <tuple>

namespace vxfed::services {

namespace {

struct Export {
  const ServiceExport* export_;
  const Service* service;
};

std::string ports_text(const std::vector<ServicePort>& ports) {
  std::string out;
  for (const ServicePort& p : ports)
    out += (out.empty() ? "" : ",") + (p.name.empty() ? "" : p.name + ":") + std::to_string(p.port) + "/" +
           protocol_name(p.protocol) + "->" + std::to_string(p.target_port);
  return out;
}

std::string strategy_text(const StrategySpec& s) {
  std::string out = strategy_name(s.strategy);
  if (!s.weights.empty()) {
    out += " weights ";
    bool first = true;
    for (const auto& [cluster, weight] : s.weights) {
      out += (first ? "" : ",") + cluster + "=" + std::to_string(weight);
      first = false;
    }
  }
  if (!s.failover_order.empty()) {
    out += " order ";
    for (std::size_t i = 0; i < s.failover_order.size(); ++i) out += (i ? "," : "") + s.failover_order[i];
  }
  return out;
}

// Ports compare as a set: the order a Service lists them in does not matter.
std::vector<ServicePort> sorted(std::vector<ServicePort> ports) {
  std::sort(ports.begin(), ports.end(), [](const ServicePort& a, const ServicePort& b) {
    return std::tie(a.name, a.protocol, a.port, a.target_port) < std::tie(b.name, b.protocol, b.port, b.target_port);
  });
  return ports;
}

}  // namespace

Result<FederatedSet> federate(const std::vector<Objects>& applies) {
  std::map<ServiceKey, std::vector<Export>> exports;
  for (const Objects& apply : applies)
    for (const ServiceExport& x : apply.exports) {
      const Service* service = nullptr;
      for (const Service& s : apply.services)
        if (s.key == x.key && s.cluster == x.cluster) service = &s;
      if (!service) return make_error("ServiceExport " + x.key.str() + " of cluster " + x.cluster + ": no Service (not validated?)");
      for (const Export& other : exports[x.key])
        if (other.export_->cluster == x.cluster)
          return make_error("ServiceExport " + x.key.str() + ": cluster " + x.cluster + " exports it twice");
      exports[x.key].push_back({&x, service});
    }

  FederatedSet set;
  for (auto& [key, list] : exports) {
    std::sort(list.begin(), list.end(), [](const Export& a, const Export& b) {
      return std::tie(a.export_->created_s, a.export_->cluster) < std::tie(b.export_->created_s, b.export_->cluster);
    });
    const Export& oldest = list.front();
    FederatedService& fs = set.services[key];
    fs.key = key;
    fs.ports = oldest.service->ports;
    fs.strategy = oldest.service->strategy;
    fs.pinned_vip = oldest.service->pinned_vip;
    const auto winner_ports = sorted(fs.ports);
    for (const Export& e : list) {
      ExportCondition c{e.export_->cluster, key, false, "NoConflicts", ""};
      const std::string against = " than the oldest export, cluster " + oldest.export_->cluster + "'s (created " +
                                  oldest.export_->created_text + "), which is in force; this cluster's backends are "
                                  "left out until its Service agrees";
      if (sorted(e.service->ports) != winner_ports) {
        c = {e.export_->cluster, key, true, "PortConflict",
             "ports " + ports_text(e.service->ports) + " differ from " + ports_text(fs.ports) + against};
      } else if (e.service->strategy != fs.strategy || e.service->pinned_vip != fs.pinned_vip) {
        c = {e.export_->cluster, key, true, "StrategyConflict",
             "strategy " + strategy_text(e.service->strategy) +
                 (e.service->pinned_vip ? " vip " + e.service->pinned_vip->str() : "") + " differs from " +
                 strategy_text(fs.strategy) + (fs.pinned_vip ? " vip " + fs.pinned_vip->str() : "") + against};
      }
      if (!c.conflict) fs.clusters.push_back(e.export_->cluster);
      set.conditions.push_back(std::move(c));
    }
    std::sort(set.conditions.end() - static_cast<std::ptrdiff_t>(list.size()), set.conditions.end(),
              [](const ExportCondition& a, const ExportCondition& b) { return a.cluster < b.cluster; });
  }

  // Backends: every slice of a service, from the clusters whose export is in force. One
  // backend per address (a pod in two slices while the controller moves it), ready when any
  // copy is; an endpoint's first address is the pod's (Kubernetes: the rest are fungible).
  for (const Objects& apply : applies)
    for (const EndpointSlice& slice : apply.slices) {
      const auto it = set.services.find(ServiceKey{slice.namespace_name, slice.service_name});
      if (it == set.services.end()) continue;
      FederatedService& fs = it->second;
      if (std::find(fs.clusters.begin(), fs.clusters.end(), slice.cluster) == fs.clusters.end()) continue;
      for (const Endpoint& e : slice.endpoints) {
        if (e.addresses.empty()) continue;
        Backend b{slice.cluster, e.addresses.front(), e.ready};
        auto same = std::find_if(fs.backends.begin(), fs.backends.end(),
                                 [&](const Backend& x) { return x.address == b.address; });
        if (same == fs.backends.end()) fs.backends.push_back(b);
        else same->ready = same->ready || b.ready;
      }
    }
  for (auto& [key, fs] : set.services) std::sort(fs.backends.begin(), fs.backends.end());
  return set;
}

Status assign_vips(FederatedSet& set, VipAllocator& allocator, std::uint64_t now_ms) {
  std::string errors;
  for (auto& [key, fs] : set.services) {
    auto record = allocator.allocate(key, fs.pinned_vip, now_ms);
    if (!record) {
      errors += (errors.empty() ? "" : "\n") + record.error();
      fs.vip.reset();
      continue;
    }
    fs.vip = record->vip;
  }
  if (!errors.empty()) return make_error(errors);
  return {};
}

}  // namespace vxfed::services
