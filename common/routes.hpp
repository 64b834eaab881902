// Remote routes: the one type for "this prefix of network VNI is reached through these
// VTEPs", from whichever source (the BGP route source, bgp/route_source.hpp; the static routes
// of vxfedd's config). vxfedd merges them per (VNI, prefix) (control/node/node_state.hpp) and turns
// them into the dataplane's protobuf only where it writes a message (control/node/tables_delta.hpp).
//
// Compact on purpose: a federation hands every node ~130,000 of them. No strings: the prefix,
// the VTEPs and the advertising peer are integers; the network is its VNI (vxfedd looks the
// name up from the VNI when it shows a route).
#pragma once

#include <compare>
#include <cstdint>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "common/net/ipv4.hpp"

namespace vxfed {

// What a route is keyed by: a prefix inside one network (VNI). Ordered by VNI first, so the
// routes of one network are adjacent in an ordered map.
struct RouteKey {
  std::uint32_t vni = 0;
  net::Ipv4Prefix prefix;
  auto operator<=>(const RouteKey&) const = default;
};

// A route's VTEPs: nearly always one or two (ECMP), held inline; more spill to the heap. A
// std::vector cost every route (and every copy of it) one more allocation.
using VtepList = boost::container::small_vector<net::Ipv4Addr, 2>;

struct RemoteRoute {
  net::Ipv4Prefix prefix;
  std::uint32_t vni = 0;                  // never 0 in an update: sources resolve it first
  VtepList vteps;                         // ECMP next hops, sorted, unique, never empty
  net::Ipv4Addr peer;                     // BGP peer whose accept list matched; 0: static
  // Every path of the route carries the GBP mark (bgp/gbp_mark.hpp): its VTEPs take VXLAN-GBP
  // unless another route names them without it (vxfedd's rule, bgp/gbp_vteps.hpp).
  bool gbp_mark = false;
  RouteKey key() const { return RouteKey{vni, prefix}; }
  bool operator==(const RemoteRoute&) const = default;
};

// A batch of changes from one source. full == true: `upserts` is the source's complete table
// (it replaces every route the source gave before; `removals` is empty). Otherwise a delta:
// upserts (add or replace by key), then removals.
struct RouteUpdate {
  bool full = false;
  std::vector<RemoteRoute> upserts;
  std::vector<RouteKey> removals;
  bool empty() const { return !full && upserts.empty() && removals.empty(); }
};

}  // namespace vxfed
