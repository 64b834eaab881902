// This node's side of `vxfedctl service get` (docs/services.md, "vxfedctl service"): the store's
// listing says what the federation holds; the programmer's views say what this node made of
// it — whether it programmed each service, and per backend its state here (ready / not ready /
// node down), whether the strategy allows it now from this node, and its weight in the entry.
// The two come from different listings (the API reads the store afresh, the programmer has the
// follower's last one), so the node's revision is given and a backend or service the node has
// not seen yet is left blank rather than guessed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "control/services/service_programmer.hpp"
#include "proto/control.pb.h"

namespace vxfed::control {

// The token `service get` shows: "ready", "not-ready", "node-down".
const char* backend_state_token(BackendState state);

// Fills the per-node fields of `listing` from `views` (ServiceProgrammer::views()), and each
// backend's flows from the forwarder's `counters` when given (by service id and address).
void add_node_view(v1::ServiceListing& listing, const std::map<services::ServiceKey, ServiceView>& views,
                   std::int64_t node_revision, const dp::ServiceCountersReport* counters = nullptr);

// The forwarder's counters per backend (GetServiceCounters' answer), indexed once per answer:
// the metrics and `service get` ask for every backend of every service, which a scan of the
// report per backend would make quadratic at 10,000 services.
class BackendFlows {
 public:
  explicit BackendFlows(const dp::ServiceCountersReport& counters);
  // (flows, new flows) of one backend; (0, 0) for a backend the report's service does not
  // have; nothing when the report has no such service.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> find(const std::string& service,
                                                              const std::string& address) const;

 private:
  std::unordered_map<std::string, std::unordered_map<std::string, std::pair<std::uint64_t, std::uint64_t>>> services_;
};

}  // namespace vxfed::control
