#include "control/route_source_factory.hpp"

#include <chrono>
#include <optional>

#include "bgp/adapter.hpp"
#include "bgp/route_cache.hpp"

namespace vxfed::control {

namespace {

// Adapts bgp::Adapter (the FRR/FPM adapter) to the RouteSource seam.
//
// Restarts: the routes learned are cached in the state directory (bgp/route_cache.hpp). A
// restarted vxfedd replays them before its first dataplane snapshot, so the dataplane keeps
// forwarding while zebra re-sends its table over FPM; the adapter's first full table (after
// its resync) replaces them. Without it the new vxfedd's first snapshot had no BGP routes:
// the integration test saw the dataplane without them for 1-2 s after every restart. If no
// full table comes within bgp.restart_time (FRR down), the preserved routes are dropped.
//
// Networks: a peer's routes get the VNI of its `network`. Networks also come and go through
// the API (vxfedctl add-network / remove-network), which does not tell route sources (only a
// reload calls networks_changed()); so once a second the source looks up the VNIs of its
// peers' networks (a few map lookups) and lets the adapter re-resolve when one changed.
// Without it, routes learned before their network was added stayed unresolved until SIGHUP.
class BgpRouteSource : public RouteSource {
 public:
  BgpRouteSource(boost::asio::io_context& io, NodeState& state, std::shared_ptr<spdlog::logger> log)
      : state_(state), log_(std::move(log)), save_timer_(io), preserve_timer_(io), network_timer_(io),
        start_timer_(io) {}

  static std::vector<net::Ipv4Prefix> advertised(const Config& config) {
    std::vector<net::Ipv4Prefix> out;
    for (const auto& cidr : config.cluster.pod_cidrs)
      if (auto p = net::Ipv4Prefix::parse(cidr)) out.push_back(*p);
    if (out.empty())
      for (const auto& n : config.networks)
        if (auto p = net::Ipv4Prefix::parse(n.subnet)) out.push_back(*p);
    return out;
  }

  Status init(boost::asio::io_context& io, const Config& config, bgp::BgpConfig bgp_config) {
    auto vtep = net::Ipv4Addr::parse(config.node.vtep_ip);
    if (!vtep) return make_error("node.vtep_ip: " + vtep.error());
    bgp::AdapterOptions options;
    options.config = std::move(bgp_config);
    options.vtep = *vtep;
    options.advertise = advertised(config);
    options.vni_of = [this](const std::string& network) { return state_.vni_of(network); };
    options.on_routes = [this](const bgp::RouteUpdate& update) { deliver(update); };
    cache_path_ = config.daemon.state_dir + "/bgp-routes.json";
    preserve_for_ = std::chrono::seconds(options.config.restart_time_s);
    set_peer_networks(options.config);
    auto adapter = bgp::Adapter::create(io, std::move(options));
    if (!adapter) return make_error("bgp: " + adapter.error());
    adapter_ = std::move(*adapter);
    return {};
  }

  std::string name() const override { return "bgp"; }

  Status start(Sink sink) override {
    sink_ = std::move(sink);
    replay_cache();
    try_start();
    return {};
  }
  void stop() override {
    start_timer_.cancel();
    save_timer_.cancel();
    preserve_timer_.cancel();
    network_timer_.cancel();
    if (!preserving_) save_cache();
    adapter_->stop();
  }

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
    set_peer_networks(*parsed);
    return adapter_->reconfigure(std::move(*parsed), advertised(config));
  }

 private:
  static LearnedRoute convert(const bgp::LearnedRoute& r) {
    LearnedRoute route;
    route.vni = r.vni;
    route.network = r.network;
    route.prefix = r.prefix.str();
    for (const auto& v : r.vteps) route.vteps.push_back(v.str());
    route.peer = r.peer;
    return route;
  }

  void replay_cache() {
    auto cached = bgp::load_route_cache(cache_path_);
    if (!cached) {
      log_->warn("bgp: ignoring the route cache: {}", cached.error());
      return;
    }
    if (cached->empty()) return;
    RouteUpdate out;
    for (const auto& r : *cached) {
      auto route = convert(r);
      if (!route.network.empty()) route.vni = 0;  // the network's VNI now (NodeState looks it up)
      out.upserts.push_back(std::move(route));
    }
    preserving_ = true;
    sink_(name(), out);
    log_->info("bgp: forwarding on {} routes of the previous run until the first FPM resync (at most {} s)",
               out.upserts.size(), preserve_for_.count());
    preserve_timer_.expires_after(preserve_for_);
    preserve_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || !preserving_) return;
      log_->warn("bgp: no full table from zebra within {} s; dropping the routes kept from the previous run",
                 preserve_for_.count());
      bgp::RouteUpdate full;
      full.full = true;
      full.upserts = adapter_->routes();
      deliver(full);
    });
  }

  // FRR may not be up yet (boot order) or be restarting: vxfedd serves pods, static routes
  // and the preserved BGP routes meanwhile, and retries; BGP routes follow once FRR is up.
  // (Failing here made vxfedd exit, taking the CNI API down with it, whenever FRR was down.)
  void try_start() {
    auto ok = adapter_->start();
    if (ok) {
      if (start_failures_ > 0) log_->info("bgp: adapter started after {} failed attempts", start_failures_);
      network_vnis_ = peer_network_vnis();
      watch_networks();
      return;
    }
    if (start_failures_++ % 12 == 0)
      log_->error("{} (retrying every {} s; BGP routes wait for it)", ok.error(), kStartRetry.count());
    start_timer_.expires_after(kStartRetry);
    start_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) try_start();
    });
  }

  void set_peer_networks(const bgp::BgpConfig& config) {
    peer_networks_.clear();
    for (const auto& p : config.peers)
      if (!p.network.empty()) peer_networks_.push_back(p.network);
  }

  std::vector<std::optional<std::uint32_t>> peer_network_vnis() const {
    std::vector<std::optional<std::uint32_t>> out;
    for (const auto& n : peer_networks_) out.push_back(state_.vni_of(n));
    return out;
  }

  void watch_networks() {
    network_timer_.expires_after(std::chrono::seconds(1));
    network_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      if (auto now = peer_network_vnis(); now != network_vnis_) {
        network_vnis_ = std::move(now);
        log_->info("bgp: a peer's network was added, removed or renumbered; re-resolving learned routes");
        adapter_->networks_changed();
      }
      watch_networks();
    });
  }

  void save_cache() {
    if (auto ok = bgp::save_route_cache(cache_path_, adapter_->routes()); !ok)
      log_->warn("bgp: route cache not written: {}", ok.error());
  }

  // At most one write per kSaveInterval: the cache only has to be recent, not exact.
  void schedule_save() {
    if (save_pending_) return;
    save_pending_ = true;
    save_timer_.expires_after(kSaveInterval);
    save_timer_.async_wait([this](const boost::system::error_code& ec) {
      save_pending_ = false;
      if (!ec && !preserving_) save_cache();
    });
  }

  void deliver(const bgp::RouteUpdate& update) {
    if (update.full && preserving_) {
      preserving_ = false;
      preserve_timer_.cancel();
    }
    // While preserved routes are in force the cache keeps them (a second restart needs them too).
    if (!preserving_) schedule_save();
    if (!sink_) return;
    RouteUpdate out;
    out.full = update.full;
    for (const auto& r : update.upserts) out.upserts.push_back(convert(r));
    for (const auto& k : update.removals) out.removals.push_back(RouteRemoval{k.vni, k.prefix.str()});
    sink_(name(), out);
  }

  NodeState& state_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<bgp::Adapter> adapter_;
  Sink sink_;
  static constexpr std::chrono::seconds kSaveInterval{2};
  static constexpr std::chrono::seconds kStartRetry{5};
  std::uint64_t start_failures_ = 0;
  std::string cache_path_;
  std::chrono::seconds preserve_for_{120};
  bool preserving_ = false;   // routes of the previous run in force, no full table yet
  bool save_pending_ = false;
  boost::asio::steady_timer save_timer_;
  boost::asio::steady_timer preserve_timer_;
  std::vector<std::string> peer_networks_;                       // bgp.peers[].network
  std::vector<std::optional<std::uint32_t>> network_vnis_;        // their VNIs at the last check
  boost::asio::steady_timer network_timer_;
  boost::asio::steady_timer start_timer_;
};

}  // namespace

Result<std::vector<std::unique_ptr<RouteSource>>> make_route_sources(boost::asio::io_context& io, const Config& config,
                                                                     NodeState& state,
                                                                     std::shared_ptr<spdlog::logger> log) {
  std::vector<std::unique_ptr<RouteSource>> sources;
  if (!config.bgp || config.bgp.IsNull()) return sources;
  auto parsed = bgp::parse_config(config.bgp);
  if (!parsed) return make_error(config.source + ": " + parsed.error());
  if (!parsed->enabled) return sources;
  auto source = std::make_unique<BgpRouteSource>(io, state, log);
  if (auto ok = source->init(io, config, std::move(*parsed)); !ok) return make_error(ok.error());
  sources.push_back(std::move(source));
  return sources;
}

}  // namespace vxfed::control
