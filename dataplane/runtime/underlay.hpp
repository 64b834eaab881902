// The underlay's shape as the options give it: which remote VTEPs share our link (ARP for the
// VTEP itself) and which sit behind a router (frames go to the router's MAC). Pure: parsed and
// checked once at start-up, consulted by the ARP resolver on the control thread.
//
//   --underlay-subnet CIDR      VTEPs in it are on-link
//   --underlay-gateway IP       the next hop of every other VTEP (without it: all on-link)
//   --underlay-route P=NH       per-VTEP (P = an address) or per-prefix override: NH is the
//                               next hop, or "direct" for on-link; the longest P wins
//
// A next hop must itself be on-link: inside --underlay-subnet when that is given.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"
#include "common/result.hpp"

namespace vxfed::dataplane {

struct UnderlayRoute {
  net::Ipv4Prefix prefix;
  std::optional<net::Ipv4Addr> via;  // empty: on-link ("direct")
};

class Underlay {
 public:
  // From the option texts; errors name the option. Empty strings: not given.
  static Result<Underlay> parse(const std::string& subnet, const std::string& gateway,
                                const std::vector<std::string>& routes);

  // The address to ARP for to reach `vtep`: the VTEP itself when on-link, else its router.
  net::Ipv4Addr next_hop(net::Ipv4Addr vtep) const;
  // Every router some VTEP may be reached through (gateway and route next hops), once each.
  std::vector<net::Ipv4Addr> routers() const;
  bool routed() const { return gateway_.has_value() || !routes_.empty(); }

  const std::optional<net::Ipv4Prefix>& subnet() const { return subnet_; }
  const std::optional<net::Ipv4Addr>& gateway() const { return gateway_; }
  const std::vector<UnderlayRoute>& routes() const { return routes_; }  // longest prefix first

 private:
  std::optional<net::Ipv4Prefix> subnet_;
  std::optional<net::Ipv4Addr> gateway_;
  std::vector<UnderlayRoute> routes_;
};

}  // namespace vxfed::dataplane
