#include "control/bgp_from_config.hpp"

namespace vxfed::control {

std::vector<net::Ipv4Prefix> advertised_prefixes(const Config& config) {
  std::vector<net::Ipv4Prefix> out;
  for (const auto& cidr : config.cluster.pod_cidrs)
    if (auto p = net::Ipv4Prefix::parse(cidr)) out.push_back(*p);
  if (out.empty())
    for (const auto& n : config.networks)
      if (auto p = net::Ipv4Prefix::parse(n.subnet)) out.push_back(*p);
  return out;
}

Result<std::unique_ptr<bgp::RouteSource>> make_bgp_route_source(boost::asio::io_context& io, const Config& config,
                                                                 const NodeState& state,
                                                                 std::shared_ptr<spdlog::logger> log,
                                                                 const bgp::AdapterFactory& make_adapter) {
  if (!config.bgp || config.bgp.IsNull()) return std::unique_ptr<bgp::RouteSource>();
  auto parsed = bgp::parse_config(config.bgp);
  if (!parsed) return make_error(config.source + ": " + parsed.error());
  if (!parsed->enabled) return std::unique_ptr<bgp::RouteSource>();
  auto vtep = net::Ipv4Addr::parse(config.node.vtep_ip);
  if (!vtep) return make_error(config.source + ": node.vtep_ip: " + vtep.error());
  bgp::RouteSourceOptions options;
  options.config = std::move(*parsed);
  options.vtep = *vtep;
  options.advertise = advertised_prefixes(config);
  options.vni_of = [&state](const std::string& network) { return state.vni_of(network); };
  options.cache_path = config.daemon.state_dir + "/bgp-routes.json";
  if (make_adapter) return bgp::RouteSource::create(io, std::move(options), make_adapter, std::move(log));
  return bgp::RouteSource::create(io, std::move(options), std::move(log));
}

Status reconfigure_bgp_route_source(bgp::RouteSource& source, const Config& config) {
  auto parsed = bgp::parse_config(config.bgp);
  if (!parsed) return make_error(parsed.error());
  return source.reconfigure(std::move(*parsed), advertised_prefixes(config));
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
