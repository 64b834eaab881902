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

void add_node_view(v1::ServiceListing& listing, const std::map<services::ServiceKey, ServiceView>& views,
                   std::int64_t node_revision) {
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
    }
  }
}

}  // namespace vxfed::control
