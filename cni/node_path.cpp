#include "cni/node_path.hpp"

#include <algorithm>

namespace vxfed::cni {

namespace {

bool has_onlink_route(const std::vector<RouteEntry>& routes, net::Ipv4Addr dst) {
  const auto want = net::Ipv4Prefix::make(dst, 32);
  return std::any_of(routes.begin(), routes.end(),
                     [&](const RouteEntry& r) { return r.dst == want && r.gateway.value == 0; });
}

}  // namespace

vxfed::Status add_pod_side(Netlink& pod_nl, int pod_index, const net::Mac& host_end_mac) {
  if (auto st = pod_nl.add_route(pod_index, net::Ipv4Prefix::make(kNodeHop, 32), net::Ipv4Addr{}, true); !st)
    return make_error("the pod's route to the node (" + kNodeHop.str() + "): " + st.error());
  if (auto st = pod_nl.set_neighbor(pod_index, kNodeHop, host_end_mac); !st)
    return make_error("the pod's neighbour entry for the node: " + st.error());
  return {};
}

vxfed::Status add_node_side(Netlink& host_nl, int host_index, net::Ipv4Addr pod_ip, const net::Mac& pod_mac) {
  if (auto st = host_nl.add_address(host_index, net::Ipv4Interface{kNodeHop, 32}); !st)
    return make_error("the node hop address on the host end: " + st.error());
  if (auto st = host_nl.add_route(host_index, net::Ipv4Prefix::make(pod_ip, 32), net::Ipv4Addr{}, true); !st)
    return make_error("the node's route to the pod: " + st.error());
  if (auto st = host_nl.set_neighbor(host_index, pod_ip, pod_mac); !st)
    return make_error("the node's neighbour entry for the pod: " + st.error());
  return {};
}

vxfed::Result<std::string> node_path_problem(Netlink& host_nl, int host_index, Netlink& pod_nl, int pod_index,
                                             net::Ipv4Addr pod_ip) {
  auto addrs = host_nl.addresses(host_index);
  if (!addrs) return make_error(addrs.error());
  if (std::none_of(addrs->begin(), addrs->end(), [](const net::Ipv4Interface& a) { return a.addr == kNodeHop; }))
    return "the host end has no node hop address " + kNodeHop.str() + "/32 (the node cannot reach the pod)";
  auto node_routes = host_nl.routes(host_index);
  if (!node_routes) return make_error(node_routes.error());
  if (!has_onlink_route(*node_routes, pod_ip))
    return "the node has no route " + pod_ip.str() + "/32 through the host end (the node cannot reach the pod)";
  auto pod_routes = pod_nl.routes(pod_index);
  if (!pod_routes) return make_error(pod_routes.error());
  if (!has_onlink_route(*pod_routes, kNodeHop))
    return "the pod has no on-link route to the node hop " + kNodeHop.str() + " (the pod cannot answer the node)";
  return std::string{};
}

}  // namespace vxfed::cni
