// Backend selection (docs/services.md, "Strategies"): which of a service's backends a caller
// in a given cluster may get right now, with their weights, and the Maglev table over them
// (dataplane/core/maglev.hpp) that maps a flow hash to one. Pure; built on the control side
// whenever a backend's readiness or health or the service changes. A flow keeps its backend
// across rebuilds through connection tracking (docs/conntrack.md), not through this table.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "dataplane/core/maglev.hpp"
#include "services/federate.hpp"

namespace vxfed::services {

// The size of every service's table: a prime at least 100 times the backends of a service
// of up to 163 (Maglev's rule for near-minimal disruption; at 8,191 adding a 101st backend
// moved 2.87 % of the test's hashes, too close to the 1/n + 2 % = 3 % goal), and fixed,
// because a table whose size followed the backend count would re-deal almost every new flow
// when it changed. 64 KiB per table (4-byte slots): docs/services.md, "Table size", has the
// measured figures and what this costs at 10,000 services.
inline constexpr std::uint32_t kServiceTableSize = 16381;

// A cluster's weight is split over its ready backends in these units: 720720 is divisible by
// every count 1..16, so up to 16 backends per cluster share it exactly (rounded beyond).
inline constexpr std::uint32_t kWeightUnits = 720720;

struct WeightedBackend {
  std::uint32_t backend = 0;  // index into FederatedService::backends
  std::uint32_t weight = 1;   // relative; above 0
  bool operator==(const WeightedBackend&) const = default;
};

// The backends the strategy allows for a caller in `caller_cluster`. A backend counts when it
// is ready and alive; `alive` runs parallel to service.backends (false: its node is gone, e.g.
// its block withdrawn), empty meaning all alive.
//   LocalFirst:         the caller's cluster's, weight 1 each; when it has none, every other
//                       cluster's, weight 1 each.
//   WeightedRoundRobin: without weights every backend, weight 1 each; with weights each
//                       cluster's weight split evenly over its backends (clusters not listed
//                       and weight-0 clusters left out).
//   FailoverOnly:       the first cluster of failover-order that has one, weight 1 each;
//                       clusters not in the order never serve.
// Empty when nothing qualifies (the forwarder will drop with a reason).
std::vector<WeightedBackend> allowed_backends(const FederatedService& service, const std::string& caller_cluster,
                                              std::span<const bool> alive = {});

// A service's lookup table for one caller cluster.
class ServiceTable {
 public:
  static Result<ServiceTable> build(const FederatedService& service, std::span<const WeightedBackend> allowed,
                                    std::uint32_t table_size = kServiceTableSize);

  // The backend (index into FederatedService::backends) for a flow hash; none when the
  // strategy allows no backend.
  std::optional<std::uint32_t> pick(std::uint32_t flow_hash) const {
    const std::uint32_t i = table_.lookup(flow_hash);
    if (i == dataplane::MaglevTable::kNoBackend) return std::nullopt;
    return backend_of_[i];
  }
  const dataplane::MaglevTable& table() const { return table_; }

 private:
  dataplane::MaglevTable table_;
  std::vector<std::uint32_t> backend_of_;  // Maglev's backend index -> service backend index
};

// A backend's Maglev id: its address, the same on every node and across rebuilds.
inline std::uint64_t maglev_id(const Backend& b) { return b.address.value; }

}  // namespace vxfed::services
