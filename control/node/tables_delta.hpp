// A change to the dataplane's tables as vxfedd computes it (NodeState -> TablesSink). Networks,
// endpoints and services are few and kept in the wire's form; routes (a federation's ~130,000) stay
// RemoteRoutes until the dataplane client writes the wire's Delta (to_wire), the one place a
// route becomes protobuf. Applied like the wire's Delta: upserts first, then removals.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/routes.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::control {

namespace dp = ::vxfed::dataplane::v1;

struct TablesDelta {
  std::vector<dp::Network> networks;       // upserted, by VNI
  std::vector<dp::Endpoint> endpoints;     // upserted, by id
  std::vector<RemoteRoute> routes;         // upserted, by (VNI, prefix)
  std::vector<dp::Service> services;       // upserted, by id (global services' VIPs)
  std::vector<dp::Vtep> vteps;             // upserted, by ip (Vtep.gbp: bgp/gbp_vteps.hpp)
  std::vector<dp::NetworkPolicy> policies;  // upserted, by VNI (control/policy/policy_publisher.hpp)
  std::vector<std::uint32_t> removed_networks;   // with their endpoints and routes
  std::vector<std::string> removed_endpoints;
  std::vector<RouteKey> removed_routes;
  std::vector<std::string> removed_services;
  std::vector<std::string> removed_vteps;  // explicit Vtep entries, by ip
  std::vector<std::uint32_t> removed_policies;  // by VNI

  bool empty() const {
    return networks.empty() && endpoints.empty() && routes.empty() && removed_networks.empty() &&
           removed_endpoints.empty() && removed_routes.empty() && services.empty() && removed_services.empty() &&
           vteps.empty() && removed_vteps.empty() && policies.empty() && removed_policies.empty();
  }
};

void to_wire(const RemoteRoute& route, dp::Route* out);
void to_wire(const RouteKey& key, dp::RouteKey* out);
dp::Delta to_wire(const TablesDelta& delta);

}  // namespace vxfed::control
