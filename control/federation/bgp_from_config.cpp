#include "control/federation/bgp_from_config.hpp"

#include <sstream>

#include <algorithm>

namespace vxfed::control {

// federated: blocks come from the store, so a node without networks has nothing to announce
// (the cluster's CIDRs are the other nodes' blocks too).
std::vector<net::Ipv4Prefix> advertised_prefixes(const std::vector<std::string>& pod_cidrs, bool federated,
                                                 const std::vector<NetworkPrefixes>& networks) {
  std::vector<net::Ipv4Prefix> out;
  std::vector<net::Ipv4Prefix> cluster;
  for (const auto& cidr : pod_cidrs)
    if (auto p = net::Ipv4Prefix::parse(cidr)) cluster.push_back(*p);
  bool whole_cluster = networks.empty() && !federated;  // a lone node announces its cluster
  for (const auto& n : networks) {
    if (auto block = net::Ipv4Prefix::parse(n.block)) {
      out.push_back(*block);  // other nodes of the cluster hold the rest of the subnet
    } else if (!cluster.empty()) {
      whole_cluster = true;
    } else if (auto subnet = net::Ipv4Prefix::parse(n.subnet)) {
      out.push_back(*subnet);
    }
  }
  if (whole_cluster) out.insert(out.end(), cluster.begin(), cluster.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

std::vector<net::Ipv4Prefix> advertised(const std::vector<std::string>& pod_cidrs, bool federated,
                                        const NodeState& state) {
  std::vector<NetworkPrefixes> networks;
  for (const auto& n : state.list_networks()) {
    if (n.node_blocks().empty()) networks.push_back({n.node_block(), n.spec().subnet()});
    for (const auto& block : n.node_blocks()) networks.push_back({block, n.spec().subnet()});  // each block it owns
  }
  return advertised_prefixes(pod_cidrs, federated, networks);
}

}  // namespace

std::vector<net::Ipv4Prefix> advertised_prefixes(const Config& config, const NodeState& state) {
  return advertised(config.cluster.pod_cidrs, config.federation.enabled, state);
}

// This node's own prefixes must not overlap a cluster of its eBGP peers: FRR would prefer our
// `network` statement and the node would lose its route to that cluster without a word.
// The same check runs on the config's own networks when it is read (daemon_config.cpp), so
// --check-config refuses what a start would.
static Status check_own_prefixes(const Config& config, const NodeState& state, const bgp::BgpConfig& bgp) {
  const std::string why = bgp::own_prefix_overlap(advertised_prefixes(config, state), bgp);
  if (!why.empty()) return make_error(config.source + ": this node's prefix " + why);
  return {};
}

Result<std::unique_ptr<bgp::RouteSource>> make_bgp_route_source(boost::asio::io_context& io, const Config& config,
                                                                 const NodeState& state,
                                                                 std::shared_ptr<spdlog::logger> log,
                                                                 const bgp::AdapterFactory& make_adapter) {
  if (!config.bgp.enabled) return std::unique_ptr<bgp::RouteSource>();
  if (auto own = check_own_prefixes(config, state, config.bgp); !own) return make_error(own.error());
  auto vtep = net::Ipv4Addr::parse(config.node.vtep_ip);
  if (!vtep) return make_error(config.source + ": node.vtep_ip: " + vtep.error());
  bgp::RouteSourceOptions options;
  options.config = config.bgp;
  options.config.gbp_mark = false;  // until the forwarder says it takes GBP (dataplane_takes_gbp)
  options.vtep = *vtep;
  options.advertise = advertised_prefixes(config, state);
  // The blocks change with the networks (a new network gets a block): the source asks again.
  options.advertise_of = [&state, pod_cidrs = config.cluster.pod_cidrs, federated = config.federation.enabled] {
    return advertised(pod_cidrs, federated, state);
  };
  options.vni_of = [&state](const std::string& network) { return state.vni_of(network); };
  options.cache_path = config.daemon.state_dir + "/bgp-routes.json";
  if (make_adapter) return bgp::RouteSource::create(io, std::move(options), make_adapter, std::move(log));
  return bgp::RouteSource::create(io, std::move(options), std::move(log));
}

Status reconfigure_bgp_route_source(bgp::RouteSource& source, const Config& config, const NodeState& state,
                                    bool dataplane_gbp) {
  if (auto own = check_own_prefixes(config, state, config.bgp); !own) return own;
  bgp::BgpConfig bgp = config.bgp;
  bgp.gbp_mark = config.node.gbp && dataplane_gbp;
  return source.reconfigure(std::move(bgp), advertised_prefixes(config, state));
}

bool dataplane_takes_gbp(const std::string& version) {
  // "MAJOR.MINOR.PATCH", perhaps with a suffix ("0.2.0-rc1"): the first two numbers decide.
  unsigned major = 0, minor = 0;
  char dot = 0;
  std::istringstream in(version);
  if (!(in >> major >> dot >> minor) || dot != '.') return false;
  return major > 0 || minor >= 2;
}

v1::PeerInfo peer_info(const bgp::PeerStatus& p) {
  v1::PeerInfo info;
  info.set_address(p.address);
  info.set_remote_asn(p.remote_asn);
  info.set_cluster(p.cluster);
  info.set_state(p.state);
  info.set_uptime_s(p.uptime_s);
  info.set_prefixes_received(p.prefixes_received);
  info.set_prefixes_accepted(p.prefixes_accepted);
  info.set_prefixes_advertised(p.prefixes_advertised);
  return info;
}

}  // namespace vxfed::control
