// The routes ADD installs in the pod through the network's gateway, and the service range's
// place among them. Pure (no netlink): cmd_add installs the plan, tests read it.
//
// Every destination goes via the gateway (the dataplane answers ARP for it), so all of it
// enters the dataplane: the network's subnet, the remote clusters' CIDRs (vxfedd's
// GetNetwork), the global services' VIP range(s) (the config's serviceCidrs merged with the
// range vxfedd hands over in GetNetwork's service_cidrs), then the IPAM
// result's routes with their own gateways (the chained install's 0.0.0.0/0 via the node hop).
// A destination is routed once, by the first in that order to name it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"

namespace vxfed::cni {

struct PodRoute {
  net::Ipv4Prefix dst;
  net::Ipv4Addr gw;
  bool operator==(const PodRoute&) const = default;
};

struct PodRouteSources {
  net::Ipv4Prefix subnet;                        // the network's subnet in this cluster
  net::Ipv4Addr gateway;
  std::vector<net::Ipv4Prefix> remote;           // other clusters' CIDRs on the network
  std::vector<net::Ipv4Prefix> services;         // serviceCidrs and vxfedd's range
  std::vector<PodRoute> ipam;                    // the IPAM result's routes, gateways filled in
};

std::vector<PodRoute> plan_pod_routes(const PodRouteSources& sources);

// A service range and where it came from, for the refusal to name.
struct ServiceCidr {
  net::Ipv4Prefix prefix;
  std::string field;  // "serviceCidrs[1]", or "vxfedd's service range (GetNetwork service_cidrs[0])"
  std::string fix;    // what to change when it holds pod addresses
};

// The config's serviceCidrs, then the ranges vxfedd hands over that the config does not name
// already: each destination once, so a config that repeats vxfedd's range still works.
std::vector<ServiceCidr> merge_service_cidrs(const std::vector<net::Ipv4Prefix>& config,
                                             const std::vector<net::Ipv4Prefix>& from_vxfedd);
std::vector<net::Ipv4Prefix> prefixes_of(const std::vector<ServiceCidr>& cidrs);

// A service range that holds pod addresses (the network's subnet here or in another cluster)
// would send pods' traffic to the translation, or VIPs to a pod: refused before anything is
// made, naming the field. nullopt: none does.
std::optional<std::string> service_cidrs_problem(const std::vector<ServiceCidr>& services,
                                                 const net::Ipv4Prefix& subnet,
                                                 const std::vector<net::Ipv4Prefix>& remote,
                                                 const std::string& network);

}  // namespace vxfed::cni
