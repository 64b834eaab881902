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

BackendFlows::BackendFlows(const dp::ServiceCountersReport& counters) {
  for (const auto& s : counters.services()) {
    const auto [it, first] = services_.try_emplace(s.id());
    if (!first) continue;  // ids are unique in the forwarder's report; the first would be found
    for (const auto& b : s.backends()) it->second.try_emplace(b.ip(), b.flows(), b.new_flows());
  }
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> BackendFlows::find(const std::string& service,
                                                                          const std::string& address) const {
  const auto s = services_.find(service);
  if (s == services_.end()) return std::nullopt;
  const auto b = s->second.find(address);
  if (b == s->second.end()) return std::make_pair(std::uint64_t{0}, std::uint64_t{0});  // the service without it: none
  return b->second;
}

void add_node_view(v1::ServiceListing& listing, const std::map<services::ServiceKey, ServiceView>& views,
                   std::int64_t node_revision, const dp::ServiceCountersReport* counters) {
  listing.set_node_revision(node_revision);
  const std::optional<BackendFlows> flows =
      counters && counters->flows_counted() ? std::optional<BackendFlows>(*counters) : std::nullopt;
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
      if (flows) {
        if (const auto f = flows->find(info.namespace_() + "/" + info.name(), backend.address())) {
          backend.set_flows_known(true);
          backend.set_flows(f->first);
          backend.set_new_flows(f->second);
        }
      }
    }
  }
}

}  // namespace vxfed::control
