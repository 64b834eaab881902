// Internal to dataplane/core: what a validated Snapshot or Delta changes in ForwardingTables,
// entry by entry. TablesPlanner (tables_plan.cpp) computes it from the request and the tables
// in force, checking everything the result must satisfy, without changing anything;
// TablesWriter (tables_apply.cpp) then applies it, which cannot fail.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/result.hpp"
#include "dataplane/core/policy_entry.hpp"
#include "dataplane/core/tables_text.hpp"
#include "dataplane/core/tables.hpp"

namespace vxfed::dataplane {

struct NetworkSpec {
  std::uint32_t vni = 0;
  std::uint32_t gateway_ip_be = 0;
  wire::MacAddress gateway_mac{};
  bool mac_given = false;
  std::uint16_t mtu = 0;         // in force
  std::uint32_t mtu_given = 0;   // as given (0: the maximum)
};

struct EndpointSpec {
  std::string id;
  std::uint32_t vni = 0;
  std::uint32_t ip_be = 0;
  wire::MacAddress mac{};
  std::string iface;
  std::uint16_t port = 0;
  std::uint16_t identity = 0;    // host order
};

struct HopSpec {
  std::uint32_t ip_be = 0;
  std::uint32_t weight = 0;      // as given
  bool operator==(const HopSpec&) const = default;
};

struct RouteSpec {
  std::uint32_t vni = 0;
  Prefix prefix;
  std::vector<HopSpec> hops;     // sorted by address
};

struct VtepSpec {
  std::uint32_t ip_be = 0;
  std::vector<std::uint32_t> vnis;  // as given, minus removed networks
  bool gbp = false;
};

struct NeighborSpec {
  std::uint32_t ip_be = 0;
  wire::MacAddress mac{};
};

struct ServiceSpec {
  std::string id;
  std::uint32_t vni = 0;
  std::uint32_t vip_be = 0;
  std::vector<ServicePortEntry> ports;                            // in force (target 0 -> port)
  std::vector<std::uint16_t> target_ports_given;                  // as given, for the dump
  std::vector<ServiceBackendWeight> backends;   // ascending address
  std::uint32_t table_size_given = 0;
  std::uint32_t table_size = 0;                                   // in force
};

struct TablesChange {
  std::vector<NetworkSpec> networks;            // added or changed
  std::vector<std::uint32_t> removed_networks;  // VNIs (their entries are listed below too)
  std::vector<EndpointSpec> endpoints;          // added or changed
  std::vector<std::string> removed_endpoints;   // ids
  std::vector<RouteSpec> routes;                // added or changed
  std::vector<std::pair<std::uint32_t, Prefix>> removed_routes;  // (vni, prefix)
  std::vector<VtepSpec> vteps;                  // explicit Vtep entries added or changed
  std::vector<std::uint32_t> removed_vteps;
  std::vector<NeighborSpec> neighbors;          // static neighbours added or changed
  std::vector<std::uint32_t> removed_neighbors;
  std::vector<ServiceSpec> services;            // added or changed
  std::vector<std::string> removed_services;    // ids (with those of removed networks)
  std::vector<PolicySpec> policies;             // network policies added or replaced (whole)
  std::vector<std::uint32_t> removed_policies;  // VNIs (with those of removed networks)
  // Some capacity is free only once the memory released by earlier changes is reclaimed:
  // wait for a grace period before applying.
  bool needs_reclaim_first = false;

  std::size_t entries() const {
    return networks.size() + removed_networks.size() + endpoints.size() + removed_endpoints.size() +
           routes.size() + removed_routes.size() + vteps.size() + removed_vteps.size() + neighbors.size() +
           removed_neighbors.size() + services.size() + removed_services.size() + policies.size() +
           removed_policies.size();
  }
};

// ECMP slots per next hop (hops sorted by address, weight 0 counting as 1): each hop's share of
// the slots is its weight, scaled into kMaxEcmpSlots when the weights add up to more.
constexpr std::uint32_t kMaxEcmpSlots = 256;
inline std::vector<std::uint32_t> ecmp_slots(const std::vector<HopSpec>& hops) {
  std::uint64_t total = 0;
  for (const auto& h : hops) total += h.weight == 0 ? 1 : h.weight;
  std::vector<std::uint32_t> out;
  out.reserve(hops.size());
  for (const auto& h : hops) {
    std::uint64_t n = h.weight == 0 ? 1 : h.weight;
    if (total > kMaxEcmpSlots) n = std::max<std::uint64_t>(1, (n * kMaxEcmpSlots + total / 2) / total);
    out.push_back(static_cast<std::uint32_t>(n));
  }
  return out;
}
inline std::uint32_t ecmp_slot_count(const std::vector<HopSpec>& hops) {
  std::uint32_t n = 0;
  for (std::uint32_t k : ecmp_slots(hops)) n += k;
  return n;
}

// The whole tables into empty tables: errors name "routes[3]"; a key listed twice is an error.
Result<TablesChange> plan_snapshot(const ForwardingTables& tables, const v1::Tables& in, const BuildContext& context);
// A Delta against the tables in force: errors name "upsert.routes[3]"; of several upserts of
// one key the last wins, and removals are checked as apply_delta() checks them.
Result<TablesChange> plan_delta(const ForwardingTables& tables, const v1::Delta& delta, const BuildContext& context);

}  // namespace vxfed::dataplane
