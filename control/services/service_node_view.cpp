#include "control/services/service_node_view.hpp"

#include <string>
#include <utility>

namespace vxfed::control {

const char* backend_state_token(BackendState state) {
  switch (state) {
    case BackendState::ready: return "ready";
    case BackendState::not_ready: return "not-ready";
    case BackendState::node_down: return "node-down";
  }
  return "?";
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> backend_flows(const dp::ServiceCountersReport& counters,
                                                                   const std::string& service,
                                                                   const std::string& address) {
  for (const auto& s : counters.services()) {
    if (s.id() != service) continue;
    for (const auto& b : s.backends())
      if (b.ip() == address) return std::make_pair(b.flows(), b.new_flows());
    return std::make_pair(std::uint64_t{0}, std::uint64_t{0});  // the service without this backend: none
  }
  return std::nullopt;
}

void add_node_view(v1::ServiceListing& listing, const std::map<services::ServiceKey, ServiceView>& views,
                   std::int64_t node_revision, const dp::ServiceCountersReport* counters) {
  listing.set_node_revision(node_revision);
  for (auto& info : *listing.mutable_services()) {
    services::ServiceKey key;
    key.namespace_name = info.namespace_();
    key.name = info.name();
    const auto it = views.find(key);
    if (it == views.end()) continue;  // not in the node's listing yet
    const ServiceView& view = it->second;
    info.set_in_node_view(true);
    info.set_programmed(view.entry.has_value());
    info.set_not_programmed(view.entry ? "" : view.not_programmed);
    std::map<std::pair<std::string, std::string>, const BackendView*> by_backend;
    for (const auto& b : view.backends) by_backend[{b.cluster, b.address.str()}] = &b;
    for (auto& backend : *info.mutable_backends()) {
      const auto b = by_backend.find({backend.cluster(), backend.address()});
      if (b == by_backend.end()) continue;
      backend.set_state(backend_state_token(b->second->state));
      backend.set_allowed(b->second->allowed);
      backend.set_weight(b->second->allowed ? b->second->weight : 0);
      backend.set_kept(b->second->kept);
      if (counters && counters->flows_counted()) {
        if (const auto f = backend_flows(*counters, info.namespace_() + "/" + info.name(), backend.address())) {
          backend.set_flows_known(true);
          backend.set_flows(f->first);
          backend.set_new_flows(f->second);
        }
      }
    }
  }
}

}  // namespace vxfed::control
