// The routes the adapter learned, in the shape vxfedd hands to the dataplane.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"

namespace vxfed::bgp {

// One remote prefix as the dataplane wants it.
struct LearnedRoute {
  net::Ipv4Prefix prefix;
  std::vector<net::Ipv4Addr> vteps;  // ECMP set (RTA_GATEWAY or RTA_MULTIPATH), sorted, unique
  std::uint32_t vni = 0;
  std::string network;          // "" when the peer's config gives a fixed vni
  std::string peer;             // address of the peer whose accept list matched
  bool operator==(const LearnedRoute&) const = default;
};

struct RouteKey {
  std::uint32_t vni = 0;
  net::Ipv4Prefix prefix;
  bool operator==(const RouteKey&) const = default;
};

// A batch of changes. full == true: `upserts` is the complete table (replace every BGP route;
// `removals` is empty). Otherwise a delta: upserts (add or replace by key), then removals.
struct RouteUpdate {
  bool full = false;
  std::vector<LearnedRoute> upserts;
  std::vector<RouteKey> removals;
  bool empty() const { return !full && upserts.empty() && removals.empty(); }
};

// network name -> VNI; nullopt while the network is unknown to the daemon.
using VniLookup = std::function<std::optional<std::uint32_t>(const std::string& network)>;

}  // namespace vxfed::bgp
