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

std::vector<ServiceCidr> merge_service_cidrs(const std::vector<net::Ipv4Prefix>& config,
                                             const std::vector<net::Ipv4Prefix>& from_vxfedd) {
  std::vector<ServiceCidr> out;
  std::set<net::Ipv4Prefix> seen;
  for (std::size_t i = 0; i < config.size(); ++i)
    if (seen.insert(config[i]).second)
      out.push_back({config[i], "serviceCidrs[" + std::to_string(i) + "]", "give vxfedd's services.range"});
  for (std::size_t i = 0; i < from_vxfedd.size(); ++i)
    if (seen.insert(from_vxfedd[i]).second)
      out.push_back({from_vxfedd[i], "vxfedd's service range (GetNetwork service_cidrs[" + std::to_string(i) + "])",
                     "change vxfedd's services.range, or the federation store's v1/services/range that overrides it"});
  return out;
}

std::vector<net::Ipv4Prefix> prefixes_of(const std::vector<ServiceCidr>& cidrs) {
  std::vector<net::Ipv4Prefix> out;
  for (const auto& c : cidrs) out.push_back(c.prefix);
  return out;
}

std::optional<std::string> service_cidrs_problem(const std::vector<ServiceCidr>& services,
                                                 const net::Ipv4Prefix& subnet,
                                                 const std::vector<net::Ipv4Prefix>& remote,
                                                 const std::string& network) {
  for (const auto& svc : services) {
    const std::string field = svc.field + ": " + svc.prefix.str();
    if (svc.prefix.overlaps(subnet))
      return field + " overlaps vxfed network \"" + network + "\"'s subnet " + subnet.str() +
             " here: VIPs and pod addresses must not share addresses (" + svc.fix + ")";
    for (const auto& r : remote)
      if (svc.prefix.overlaps(r))
        return field + " overlaps " + r.str() + ", another cluster's CIDR on vxfed network \"" + network +
               "\": VIPs and pod addresses must not share addresses (" + svc.fix + ")";
  }
  return std::nullopt;
}

}  // namespace vxfed::cni
