#include "dataplane/runtime/underlay.hpp"

#include <algorithm>

namespace vxfed::dataplane {

Result<Underlay> Underlay::parse(const std::string& subnet, const std::string& gateway,
                                 const std::vector<std::string>& routes) {
  Underlay u;
  if (!subnet.empty()) {
    auto p = net::Ipv4Prefix::parse(subnet);
    if (!p) return make_error("--underlay-subnet: " + p.error());
    u.subnet_ = *p;
  }
  const auto on_link_router = [&u](const std::string& option, net::Ipv4Addr router) -> Status {
    if (u.subnet_ && !u.subnet_->contains(router))
      return make_error(option + ": next hop " + router.str() + " is not on-link: it is outside --underlay-subnet " +
                        u.subnet_->str());
    return {};
  };
  if (!gateway.empty()) {
    auto g = net::Ipv4Addr::parse(gateway);
    if (!g) return make_error("--underlay-gateway: " + g.error());
    if (auto st = on_link_router("--underlay-gateway", *g); !st) return make_error(st.error());
    u.gateway_ = *g;
  }
  for (const auto& text : routes) {
    const std::string option = "--underlay-route '" + text + "'";
    const auto eq = text.find('=');
    if (eq == std::string::npos)
      return make_error(option + ": expected VTEP=NEXTHOP or PREFIX=NEXTHOP (NEXTHOP an address or 'direct')");
    const std::string dest = text.substr(0, eq), hop = text.substr(eq + 1);
    UnderlayRoute r;
    if (dest.find('/') == std::string::npos) {
      auto a = net::Ipv4Addr::parse(dest);
      if (!a) return make_error(option + ": " + a.error());
      r.prefix = net::Ipv4Prefix::make(*a, 32);
    } else {
      auto p = net::Ipv4Prefix::parse(dest);
      if (!p) return make_error(option + ": " + p.error());
      r.prefix = *p;
    }
    if (hop != "direct") {
      auto v = net::Ipv4Addr::parse(hop);
      if (!v) return make_error(option + ": next hop: " + v.error() + " (or 'direct' for on-link)");
      if (auto st = on_link_router(option, *v); !st) return make_error(st.error());
      r.via = *v;
    }
    for (const auto& other : u.routes_)
      if (other.prefix == r.prefix) return make_error(option + ": " + r.prefix.str() + " is given twice");
    u.routes_.push_back(r);
  }
  std::stable_sort(u.routes_.begin(), u.routes_.end(),
                   [](const UnderlayRoute& a, const UnderlayRoute& b) { return a.prefix.len > b.prefix.len; });
  // A router reached through a router would never be ARPed for: refuse it.
  for (const auto router : u.routers())
    if (u.next_hop(router) != router)
      return make_error("next hop " + router.str() + " is itself routed (through " + u.next_hop(router).str() +
                        "): a next hop must be on-link; add --underlay-route " + router.str() + "=direct");
  return u;
}

net::Ipv4Addr Underlay::next_hop(net::Ipv4Addr vtep) const {
  for (const auto& r : routes_)
    if (r.prefix.contains(vtep)) return r.via.value_or(vtep);
  if (!gateway_) return vtep;
  if (subnet_ && subnet_->contains(vtep)) return vtep;
  return *gateway_;
}

std::vector<net::Ipv4Addr> Underlay::routers() const {
  std::vector<net::Ipv4Addr> out;
  const auto add = [&out](net::Ipv4Addr a) {
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  };
  if (gateway_) add(*gateway_);
  for (const auto& r : routes_)
    if (r.via) add(*r.via);
  return out;
}

}  // namespace vxfed::dataplane
