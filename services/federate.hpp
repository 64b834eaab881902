// The federated service set: what every cluster exported, merged per namespace/name as the
// MCS API says (one service, one VIP, one backend set), with its conflicts resolved.
//
// Two exports of one service whose Services disagree on ports or strategy: the oldest export
// (metadata.creationTimestamp; the cluster name breaks a tie) wins, and each other one gets a
// Conflict condition with the reason. A conflicting export's backends are left out until its
// Service agrees (they may not serve the winner's ports). Pure: the inputs are validated
// applies (services/validate.hpp), one per cluster.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"
#include "common/result.hpp"
#include "services/model.hpp"
#include "services/vip_pool.hpp"

namespace vxfed::services {

struct Backend {
  std::string cluster;
  net::Ipv4Addr address;
  bool ready = true;
  auto operator<=>(const Backend&) const = default;
};

struct FederatedService {
  ServiceKey key;
  std::vector<ServicePort> ports;  // the winning export's Service's
  StrategySpec strategy;           // likewise
  std::optional<net::Ipv4Addr> pinned_vip;
  std::optional<net::Ipv4Addr> vip;     // set by assign_vips()
  std::vector<std::string> clusters;    // exporting clusters in force, oldest export first
  std::vector<Backend> backends;        // sorted by cluster, then address; one per address
};

// The MCS API's ServiceExport condition "Conflict": every export gets one.
struct ExportCondition {
  std::string cluster;
  ServiceKey service;
  bool conflict = false;
  // The MCS API's reasons PortConflict and NoConflicts (its spelling), and StrategyConflict
  // (vxfed's annotations; the API allows controllers their own reasons).
  std::string reason;
  std::string message;  // what disagrees, and with which cluster's export
};

struct FederatedSet {
  std::map<ServiceKey, FederatedService> services;
  std::vector<ExportCondition> conditions;  // by service, then cluster
};

// Merges the applies. Error when one cluster exports the same service twice (two applies for
// one cluster): nothing is merged then.
Result<FederatedSet> federate(const std::vector<Objects>& applies);

// A VIP for every service (pinned ones as pinned) from `allocator`. Allocation is idempotent,
// so a failure part-way (range exhausted, a pinned VIP taken) leaves the VIPs already given
// with their services and a retry gives the same ones; the failing services keep no VIP.
Status assign_vips(FederatedSet& set, VipAllocator& allocator, std::uint64_t now_ms);

}  // namespace vxfed::services
