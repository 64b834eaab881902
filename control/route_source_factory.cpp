#include "route_source_factory.hpp"

#ifdef VXFED_HAVE_BGP
#include "../bgp/adapter.hpp"
#endif

namespace vxfed::control {

#ifdef VXFED_HAVE_BGP
namespace {

// Adapts bgp::Adapter (the FRR/FPM adapter) to the RouteSource seam.
class BgpRouteSource : public RouteSource {
 public:
  BgpRouteSource(NodeState& state, std::shared_ptr<spdlog::logger> log) : state_(state), log_(std::move(log)) {}

  static std::vector<bgp::Ipv4Prefix> advertised(const Config& config) {
    std::vector<bgp::Ipv4Prefix> out;
    for (const auto& cidr : config.cluster.pod_cidrs)
      if (auto p = bgp::Ipv4Prefix::parse(cidr)) out.push_back(*p);
    if (out.empty())
      for (const auto& n : config.networks)
        if (auto p = bgp::Ipv4Prefix::parse(n.subnet)) out.push_back(*p);
    return out;
  }

  Status init(boost::asio::io_context& io, const Config& config, bgp::BgpConfig bgp_config) {
    auto vtep = bgp::Ipv4Addr::parse(config.node.vtep_ip);
    if (!vtep) return make_error("node.vtep_ip: " + vtep.error());
    bgp::AdapterOptions options;
    options.config = std::move(bgp_config);
    options.vtep = *vtep;
    options.advertise = advertised(config);
    options.vni_of = [this](const std::string& network) { return state_.vni_of(network); };
    options.on_routes = [this](const bgp::RouteUpdate& update) { deliver(update); };
    auto adapter = bgp::Adapter::create(io, std::move(options));
    if (!adapter) return make_error("bgp: " + adapter.error());
    adapter_ = std::move(*adapter);
    return {};
  }

  std::string name() const override { return "bgp"; }

  Status start(Sink sink) override {
    sink_ = std::move(sink);
    return adapter_->start();
  }
  void stop() override { adapter_->stop(); }

  std::vector<v1::PeerInfo> peers() const override {
    std::vector<v1::PeerInfo> out;
    for (const auto& p : adapter_->peers()) {
      v1::PeerInfo info;
      info.set_address(p.address);
      info.set_remote_asn(p.remote_asn);
      info.set_cluster(p.cluster);
      info.set_state(p.state);
      info.set_uptime_s(p.uptime_s);
      info.set_prefixes_received(p.prefixes_received);
      info.set_prefixes_accepted(p.prefixes_accepted);
      info.set_prefixes_advertised(p.prefixes_advertised);
      out.push_back(std::move(info));
    }
    return out;
  }
  bool connected() const override { return adapter_->stats().fpm_connected; }
  void networks_changed() override { adapter_->networks_changed(); }
  Status reconfigure(const Config& config) override {
    auto parsed = bgp::parse_config(config.bgp);
    if (!parsed) return make_error(parsed.error());
    return adapter_->reconfigure(std::move(*parsed), advertised(config));
  }

 private:
  void deliver(const bgp::RouteUpdate& update) {
    if (!sink_) return;
    RouteUpdate out;
    out.full = update.full;
    for (const auto& r : update.upserts) {
      LearnedRoute route;
      route.vni = r.vni;
      route.network = r.network;
      route.prefix = r.prefix.str();
      for (const auto& v : r.vteps) route.vteps.push_back(v.str());
      route.peer = r.peer;
      out.upserts.push_back(std::move(route));
    }
    for (const auto& k : update.removals) out.removals.push_back(RouteRemoval{k.vni, k.prefix.str()});
    sink_(name(), out);
  }

  NodeState& state_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<bgp::Adapter> adapter_;
  Sink sink_;
};

}  // namespace
#endif

Result<std::vector<std::unique_ptr<RouteSource>>> make_route_sources(boost::asio::io_context& io, const Config& config,
                                                                     NodeState& state,
                                                                     std::shared_ptr<spdlog::logger> log) {
  std::vector<std::unique_ptr<RouteSource>> sources;
  if (!config.bgp || config.bgp.IsNull()) return sources;
#ifdef VXFED_HAVE_BGP
  auto parsed = bgp::parse_config(config.bgp);
  if (!parsed) return make_error(config.source + ": " + parsed.error());
  if (!parsed->enabled) return sources;
  auto source = std::make_unique<BgpRouteSource>(state, log);
  if (auto ok = source->init(io, config, std::move(*parsed)); !ok) return make_error(ok.error());
  sources.push_back(std::move(source));
#else
  (void)io;
  (void)state;
  if (config.bgp["enabled"] && config.bgp["enabled"].as<bool>(false))
    log->warn("{}: bgp.enabled is true but this vxfedd was built without the BGP adapter; only static routes apply",
              config.source);
#endif
  return sources;
}

}  // namespace vxfed::control
