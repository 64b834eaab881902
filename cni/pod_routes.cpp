#include "cni/pod_routes.hpp"

#include <set>

namespace vxfed::cni {

std::vector<PodRoute> plan_pod_routes(const PodRouteSources& s) {
  std::vector<PodRoute> out;
  std::set<net::Ipv4Prefix> routed;
  auto add = [&](const net::Ipv4Prefix& dst, net::Ipv4Addr gw) {
    if (routed.insert(dst).second) out.push_back({dst, gw});
  };
  add(s.subnet, s.gateway);
  for (const auto& p : s.remote) add(p, s.gateway);
  for (const auto& p : s.services) add(p, s.gateway);
  for (const auto& r : s.ipam) add(r.dst, r.gw);
  return out;
}

std::optional<std::string> service_cidrs_problem(const std::vector<net::Ipv4Prefix>& services,
                                                 const net::Ipv4Prefix& subnet,
                                                 const std::vector<net::Ipv4Prefix>& remote,
                                                 const std::string& network) {
  for (std::size_t i = 0; i < services.size(); ++i) {
    const auto& svc = services[i];
    const std::string field = "serviceCidrs[" + std::to_string(i) + "]: " + svc.str();
    if (svc.overlaps(subnet))
      return field + " overlaps vxfed network \"" + network + "\"'s subnet " + subnet.str() +
             " here: VIPs and pod addresses must not share addresses (give vxfedd's services.range)";
    for (const auto& r : remote)
      if (svc.overlaps(r))
        return field + " overlaps " + r.str() + ", another cluster's CIDR on vxfed network \"" + network +
               "\": VIPs and pod addresses must not share addresses (give vxfedd's services.range)";
  }
  return std::nullopt;
}

}  // namespace vxfed::cni
