#include "control/daemon/daemon.hpp"
#include "control/daemon/memory_trim.hpp"
#include "control/daemon/gbp_mark_follower.hpp"

#include <grp.h>

#include <deque>
#include <set>
#include <utility>

#include <boost/asio.hpp>
#include <spdlog/spdlog.h>

#include "control/api/api_handler.hpp"
#include "bpf/lib/vxfed_bpf.hpp"
#include "control/api/api_server.hpp"
#include "control/federation/bgp_from_config.hpp"
#include "control/node/bpf_reconcile.hpp"
#include "control/daemon/config_overrides.hpp"
#include "control/node/dataplane_client.hpp"
#include "control/federation/federation_link.hpp"
#include "control/metrics/metrics_server.hpp"
#include "control/metrics/metrics_text.hpp"
#include "control/node/node_state.hpp"
#include "control/metrics/tcp_counters.hpp"
#include "control/policy/policy_api.hpp"
#include "control/policy/policy_drops.hpp"
#include "control/policy/policy_follower.hpp"
#include "control/policy/policy_metrics.hpp"
#include "control/services/service_api.hpp"
#include "control/services/service_cache.hpp"
#include "control/services/service_follower.hpp"
#include "control/services/service_node_view.hpp"
#include "control/services/service_programmer.hpp"

namespace vxfed::control {

namespace asio = boost::asio;

void apply_overrides(Config& config, const DaemonOptions& options) {
  if (options.socket) config.daemon.socket = *options.socket;
  if (options.state_dir) config.daemon.state_dir = *options.state_dir;
  if (options.log_level) config.daemon.log_level = *options.log_level;
  if (options.metrics_listen) config.daemon.metrics_listen = *options.metrics_listen;
}

struct Daemon::Impl {
  Config config;
  DaemonOptions options;
  std::shared_ptr<spdlog::logger> log;
  asio::io_context io;
  MemoryTrim memory_trim{io};                  // before the route source that feeds it
  std::unique_ptr<FederationLink> federation;   // null: vxfedd alone (no federation section)
  std::unique_ptr<PolicyApi> policy;            // null without the federation store
  std::unique_ptr<PolicyFollower> policy_follower;  // likewise: v1/policy/ compiled for this node's pods
  // The forwarder's refusals per pod, attributed to policies with each counters answer
  // (docs/policy.md, "Drops per policy"); with policy_follower only. Before new policy entries
  // go to the forwarder, its counters are asked for first (answered before the Delta is
  // applied): that answer's moves are the view's before the change, kept here until it comes.
  PolicyDropLedger policy_drops;
  std::deque<std::pair<std::uint64_t, PolicyView>> policy_drops_before_;  // (poll number, view)
  void flush_policy_drops() {
    if (!policy_follower) return;
    const std::uint64_t poll = dataplane->poll_counters_now();
    if (poll == 0) return;  // no forwarder: nothing counted meanwhile
    if (policy_drops_before_.size() >= 16) policy_drops_before_.pop_front();  // answers lost with a connection
    policy_drops_before_.emplace_back(poll, policy_follower->view());
  }
  void take_policy_drops(std::uint64_t poll) {
    if (!policy_follower) return;
    while (poll != 0 && !policy_drops_before_.empty() && policy_drops_before_.front().first < poll)
      policy_drops_before_.pop_front();
    if (poll != 0 && !policy_drops_before_.empty() && policy_drops_before_.front().first == poll) {
      policy_drops.update(policy_drops_before_.front().second, dataplane->counters());
      policy_drops_before_.pop_front();
      return;
    }
    policy_drops.update(policy_follower->view(), dataplane->counters());
  }
  v1::PolicyDropsReport policy_drop_report() const {
    const bool have = dataplane->counters_time().time_since_epoch().count() != 0;
    return policy_drops.report(policy_follower->view(), have ? &dataplane->counters() : nullptr);
  }
  std::unique_ptr<ServiceApi> services;         // null without the federation store or services.range
  // vxfedd's service compiler (docs/services.md, "Serving a VIP"): the store's services followed
  // and compiled into the dataplane's Service entries; null like `services`.
  std::unique_ptr<ServiceProgrammer> service_programmer;
  std::unique_ptr<ServiceFollower> service_follower;
  bool services_listed = false;                 // the store's first listing came (the cache is replaced)
  asio::steady_timer service_cache_timer{io};   // a cache write pending
  bool service_cache_due = false;
  std::string service_cache_path() const { return config.daemon.state_dir + "/services.cache"; }
  std::unique_ptr<NodeState> state;
  std::unique_ptr<DataplaneClient> dataplane;
  std::unique_ptr<ApiHandler> handler;
  std::unique_ptr<ApiServer> api;
  std::unique_ptr<MetricsServer> metrics;
  std::unique_ptr<bgp::RouteSource> bgp;     // null: BGP off
  std::unique_ptr<GbpMarkFollower> gbp_mark;  // with `bgp`: the mark's frr-reload, off the io thread
  asio::signal_set stop_signals{io, SIGTERM, SIGINT};
  asio::signal_set reload_signals{io, SIGHUP};
  asio::steady_timer housekeeping{io};
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::uint64_t reloads = 0, reload_failures = 0;
  mutable std::uint64_t bpf_read_errors = 0;

  std::uint64_t uptime_s() const {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count());
  }

  v1::DaemonStatus status() const {
    v1::DaemonStatus s;
    s.set_node(config.node.name);
    s.set_cluster(config.cluster.name);
    s.set_vtep_ip(config.node.vtep_ip);
    s.set_dataplane_connected(dataplane->connected());
    s.set_dataplane_ready(dataplane->ready());
    s.set_dataplane_generation(dataplane->acked_generation());
    s.set_bgp_enabled(bgp != nullptr);
    s.set_fpm_connected(bgp && bgp->connected());
    if (bgp) s.set_bgp_feed(bgp::to_string(config.bgp.feed));
    s.set_uptime_s(uptime_s());
    s.set_version(kVersion);
    if (federation) {
      s.set_federation(federation->describe());
      s.set_federation_available(federation->available());
    }
    return s;
  }

  std::vector<v1::PeerInfo> peers() const {
    std::vector<v1::PeerInfo> out;
    if (bgp)
      for (const auto& p : bgp->peers()) out.push_back(peer_info(p));
    return out;
  }

  // The network the VIPs are served on: services.network, else the node's only network.
  std::string service_network() const {
    if (!config.services.network.empty()) return config.services.network;
    const auto networks = state->list_networks();
    return networks.size() == 1 ? networks.front().spec().name() : std::string();
  }

  ServiceNode service_node() const {
    ServiceNode node;
    node.cluster = config.cluster.name;
    const std::string network = service_network();
    if (!network.empty()) node.vni = state->vni_of(network);
    const NodeState* s = state.get();
    node.reaches = [s](std::uint32_t vni, net::Ipv4Addr address) { return s->reaches(vni, address); };
    return node;
  }

  // The GBP mark on this node's blocks (docs/bgp.md, "The GBP mark") follows node.gbp and
  // whether the forwarder now connected takes GBP; told after every dataplane progress (a
  // rolling upgrade may put the previous forwarder under this vxfedd, or the next one). The
  // frr-reload it takes (seconds) runs off the io thread; changes meanwhile coalesce, a failure
  // is retried (gbp_mark_follower.hpp).
  bool dataplane_gbp = false;
  void follow_dataplane_gbp() {
    const bool takes = dataplane_takes_gbp(dataplane->status().version());
    if (!bgp || takes == dataplane_gbp) return;
    dataplane_gbp = takes;
    log->info("bgp: the forwarder (version {}) {} VXLAN-GBP; node.gbp {}: this node's blocks {} the GBP mark",
              dataplane->status().version(), takes ? "takes" : "does not take", config.node.gbp,
              config.node.gbp && takes ? "carry" : "do not carry");
    gbp_mark->want(config.node.gbp && takes);
  }

  // The range GetNetwork hands the CNI plugin: the store's once listed (it wins over the
  // config's, docs/services.md), else the config's; on the network the VIPs are served on.
  void hand_over_service_range() {
    if (!services) return;
    std::optional<net::Ipv4Prefix> range = config.services.range;
    if (service_follower && service_follower->stats().range) range = service_follower->stats().range;
    state->set_service_range(service_network(), range);
  }

  // What the compiler changed goes to the node's tables (only entries that differ are sent).
  void program_services(const ServiceProgrammer::Changes& changes) {
    if (changes.empty()) return;
    for (const auto& entry : changes.upserts) {
      if (!log->should_log(spdlog::level::debug)) break;
      if (const auto* held = find_service(entry.id()); held && held->SerializeAsString() == entry.SerializeAsString())
        continue;
      std::string backends;
      for (const auto& b : entry.backends()) backends += (backends.empty() ? "" : " ") + b.ip() + "/" + std::to_string(b.weight());
      log->debug("services: {} VIP {} on VNI {}: backends [{}]", entry.id(), entry.vip(), entry.vni(), backends);
    }
    for (const auto& id : changes.removals) log->debug("services: {} removed from the dataplane's tables", id);
    state->set_services(changes.upserts, changes.removals);
    save_service_cache_soon();
  }

  // At most one cache write per interval, with what the node holds then.
  void save_service_cache_soon() {
    if (service_cache_due) return;
    service_cache_due = true;
    service_cache_timer.expires_after(std::chrono::milliseconds(kServiceCacheIntervalMs));
    service_cache_timer.async_wait([this](const boost::system::error_code& ec) {
      service_cache_due = false;
      if (ec) return;
      if (auto ok = save_service_cache(service_cache_path(), state->services()); !ok)
        log->warn("services: cache not written: {}", ok.error());
    });
  }

  // The store's listing. The first one replaces what the cache gave: entries it does not
  // produce (services deleted while vxfedd was away) are removed.
  void services_listed_now(const services::FederatedSet& set) {
    hand_over_service_range();
    auto changes = service_programmer->set_federated(set);
    if (!services_listed) {
      services_listed = true;
      std::set<std::string> produced;
      for (const auto& [key, view] : service_programmer->views())
        if (view.entry) produced.insert(key.str());
      for (const auto& [id, entry] : state->services())
        if (!produced.count(id)) changes.removals.push_back(id);
    }
    program_services(changes);
  }
  const dp::Service* find_service(const std::string& id) const {
    auto it = state->services().find(id);
    return it == state->services().end() ? nullptr : &it->second;
  }

  std::string render_metrics_text() const {
    MetricsInput in;
    in.version = kVersion;
    in.uptime_s = uptime_s();
    in.networks = state->network_count();
    in.endpoints = state->endpoint_count();
    in.routes = state->route_count();
    const auto endpoints = state->list_endpoints();
    for (const auto& e : endpoints)
      if (!e.in_dataplane()) ++in.endpoints_not_in_dataplane;
    for (const auto& v : state->list_vnis()) (v.state() == "held" ? in.vnis_held : in.vnis_allocated)++;
    in.pools = state->pool_usage();
    in.stores = state->store_write_latency();
    for (const auto& n : state->list_networks()) in.vnis_of_networks.insert(n.vni());
    in.per_vni = config.daemon.metrics_per_vni;
    in.dataplane_connected = dataplane->connected();
    in.dataplane_ready = dataplane->ready();
    in.dataplane_generation = dataplane->generation();
    in.dataplane_acked_generation = dataplane->acked_generation();
    const auto& ds = dataplane->stats();
    in.dataplane_connects = ds.connects;
    in.dataplane_snapshots = ds.snapshots_sent;
    in.dataplane_snapshots_refused = ds.snapshots_refused;
    in.dataplane_deltas = ds.deltas_sent;
    in.dataplane_deltas_refused = ds.deltas_refused;
    in.dataplane_endpoints_refused = ds.endpoints_refused;
    in.dataplane_last_sync_ms = ds.last_sync_ms;
    in.dataplane_deltas_queued = dataplane->deltas_queued();
    in.dataplane_deltas_in_flight = dataplane->deltas_in_flight();
    in.dataplane_oldest_unacked_age_s = dataplane->oldest_unacked_age_s();
    in.dataplane_delta_latency = &dataplane->delta_latency();
    const auto& as = api->stats();
    in.api_connections = as.connections;
    in.api_denied = as.denied;
    in.api_bad_frames = as.bad_frames;
    in.api_malformed = as.malformed;
    in.api_unknown = as.unknown;
    in.api = &handler->counters();
    if (metrics) in.metrics_server = metrics->stats();
    if (service_programmer && service_follower) {
      ServiceFigures f;
      const auto& fs = service_follower->stats();
      f.listings = fs.listings;
      f.list_failures = fs.list_failures;
      f.watch_breaks = fs.watch_breaks;
      f.watching = fs.watching;
      f.compiles = service_programmer->compiles();
      for (const auto& [key, view] : service_programmer->views()) {
        ServiceFigures::PerService p;
        p.service = key.str();
        p.programmed = view.entry.has_value();
        for (const auto& b : view.backends) {
          p.allowed += b.allowed ? 1 : 0;
          (b.state == BackendState::ready ? p.ready : b.state == BackendState::not_ready ? p.not_ready : p.node_down)++;
        }
        f.services.push_back(std::move(p));
      }
      // The forwarder's flows per backend (its last GetServiceCounters answer).
      if (dataplane->service_counters_time().time_since_epoch().count() != 0 &&
          dataplane->service_counters().flows_counted()) {
        f.have_flows = true;
        const BackendFlows counted(dataplane->service_counters());
        for (const auto& [key, view] : service_programmer->views())
          for (const auto& b : view.backends) {
            const auto flows = counted.find(key.str(), b.address.str());
            if (!flows) continue;  // not in the forwarder's tables
            f.backend_flows.push_back({key.str(), b.cluster, b.address.str(), flows->first, flows->second});
          }
      }
      in.services = std::move(f);
    }
    in.federation_enabled = federation != nullptr;
    if (federation) {
      in.federation_available = federation->available();
      const auto& fs = federation->stats();
      in.federation_unavailable = fs.unavailable;
      in.federation_reconciles = fs.reconciles;
      in.federation_restored = fs.restored;
      in.federation_conflicts = fs.conflicts;
      in.networks_pending = state->pending_count();
    }
    in.config_reloads = reloads;
    in.config_reload_failures = reload_failures;
    if (dataplane->counters_time().time_since_epoch().count() != 0) {
      in.have_counters = true;
      in.counters = dataplane->counters();
      in.counters_age_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - dataplane->counters_time()).count();
    }
    if (config.bpf.reconcile) {  // the per-pod programs are vxfedd's to watch
      in.bpf_enabled = true;
      bpf::Options bpf_options;
      if (!config.bpf.pin_root.empty()) bpf_options.pin_root = config.bpf.pin_root;
      for (const auto& info : endpoints) {
        const auto& e = info.spec();
        const auto key = bpf::pod_key_for(e.container_id(), e.ifname());
        if (!bpf::has_pins(key, bpf_options)) continue;  // no limits or marking for this pod
        auto counters = bpf::read_counters(key, bpf_options);
        if (!counters) {
          ++bpf_read_errors;
          continue;
        }
        const auto& pod = e.pod();
        const auto field = [&pod](const char* k) {
          auto it = pod.find(k);
          return it == pod.end() ? std::string() : it->second;
        };
        in.pods.push_back({e.network(), field("K8S_POD_NAMESPACE"), field("K8S_POD_NAME"), e.ifname(), std::move(*counters)});
      }
      in.bpf_read_errors = bpf_read_errors;
    }
    if (bgp) {
      BgpFigures figures;
      figures.stats = bgp->stats();
      figures.peers = bgp->peers();
      const auto tcp = read_tcp_ext();  // this namespace's: where FRR's BGP sockets are
      const auto counter = [&tcp](const char* name) -> std::optional<std::uint64_t> {
        auto it = tcp.find(name);
        if (it == tcp.end()) return std::nullopt;
        return it->second;
      };
      figures.md5_failure = counter("TCPMD5Failure");
      figures.md5_not_found = counter("TCPMD5NotFound");
      figures.md5_unexpected = counter("TCPMD5Unexpected");
      in.bgp = std::move(figures);
    }
    auto text = render_metrics(in);
    if (policy_follower)
      text += render_policy_metrics(*policy_follower, policy->exhausted_refusals()) +
              render_policy_drop_metrics(policy_drop_report());
    return text;
  }

  void log_notes(const std::vector<std::string>& notes) {
    for (const auto& n : notes) log->warn("{}", n);
  }

  void reload() {
    log->info("SIGHUP: reloading {}", options.config_path);
    auto loaded = load_config(options.config_path, NodeOverrides{options.node_name, options.vtep_ip});
    if (!loaded) {
      ++reload_failures;
      log->error("config reload refused, keeping the running config: {}", loaded.error());
      return;
    }
    Config next = std::move(*loaded);
    apply_overrides(next, options);
    if (next.daemon.socket != config.daemon.socket || next.daemon.state_dir != config.daemon.state_dir ||
        next.daemon.metrics_listen != config.daemon.metrics_listen || next.dataplane.socket != config.dataplane.socket)
      log->warn("changes to daemon.socket, daemon.state_dir, daemon.metrics_listen and dataplane.socket take effect at restart");
    if (next.federation.enabled != config.federation.enabled || next.federation.endpoints != config.federation.endpoints ||
        next.federation.key_prefix != config.federation.key_prefix)
      log->warn("changes to the federation section take effect at restart");
    std::vector<std::string> notes;
    if (auto ok = state->reconfigure(next, &notes); !ok) {
      ++reload_failures;
      log_notes(notes);
      log->error("config reload refused: {}", ok.error());
      return;
    }
    log_notes(notes);
    // (NodeState told the BGP source about its networks already, through the observer.)
    if (bgp)
      if (auto ok = reconfigure_bgp_route_source(*bgp, next, *state, dataplane_gbp); !ok)
        log->error("bgp: reload: {}", ok.error());
    spdlog::level::level_enum level = spdlog::level::from_str(next.daemon.log_level);
    log->set_level(level);
    const auto keep_socket = config.daemon;
    const auto keep_dataplane = config.dataplane;
    const auto keep_federation = config.federation;
    config = std::move(next);
    config.federation = keep_federation;
    config.daemon.socket = keep_socket.socket;
    config.daemon.state_dir = keep_socket.state_dir;
    config.daemon.metrics_listen = keep_socket.metrics_listen;
    config.dataplane.socket = keep_dataplane.socket;
    ++reloads;
    hand_over_service_range();
    if (service_programmer) program_services(service_programmer->recompile_all());  // services.network may differ
    log->info("config reloaded: {} networks", state->network_count());
  }

  void wait_stop() {
    stop_signals.async_wait([this](const boost::system::error_code& ec, int signo) {
      if (ec) return;
      log->info("signal {}: stopping", signo);
      housekeeping.cancel();
      reload_signals.cancel();
      if (bgp) bgp->stop();
      if (federation) federation->stop();
      if (service_programmer) {  // the last changes, not left to a timer that will not run
        service_cache_timer.cancel();
        if (auto ok = save_service_cache(service_cache_path(), state->services()); !ok)
          log->warn("services: cache not written: {}", ok.error());
      }
      if (dataplane) dataplane->stop();
      if (api) api->stop();
      if (metrics) metrics->stop();
      io.stop();
    });
  }

  void wait_reload() {
    reload_signals.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;
      reload();
      wait_reload();
    });
  }

  void tick_housekeeping() {
    housekeeping.expires_after(std::chrono::seconds(5));
    housekeeping.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      if (auto ok = state->expire_hold_downs(); !ok) log->error("hold-down expiry: {}", ok.error());
      tick_housekeeping();
    });
  }
};

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Daemon::~Daemon() = default;

Result<std::unique_ptr<Daemon>> Daemon::create(Config config, DaemonOptions options,
                                               std::shared_ptr<spdlog::logger> log) {
  auto impl = std::make_unique<Impl>();
  impl->config = std::move(config);
  impl->options = std::move(options);
  impl->log = std::move(log);
  auto& d = *impl;

  std::vector<std::string> notes;
  NodeState::Options state_options;
  state_options.state_dir = d.config.daemon.state_dir;
  if (d.config.federation.enabled) {
    auto link = FederationLink::create(d.io, d.config, d.log);
    if (!link) return make_error(link.error());
    d.federation = std::move(*link);
    state_options.allocator = d.federation.get();
    auto policy = PolicyApi::create(d.io, d.config, d.log);
    if (!policy) return make_error(policy.error());
    d.policy = std::move(*policy);
    // Each local pod's identity number goes into its dataplane endpoint (Endpoint.identity,
    // the GBP group policy ID it sends with; docs/policy.md, "Identities on the wire").
    auto identities = [&d](const PolicyView& view) {
      d.state->set_endpoint_identities([&view](const v1::EndpointInfo& info) { return endpoint_identity(view, info); });
    };
    // Each network's compiled tables go to the forwarder (docs/policy.md, "Publishing to the forwarder").
    auto publish = [&d](const std::vector<dp::NetworkPolicy>& upserts, const std::vector<std::uint32_t>& removals,
                        bool complete) {
      d.flush_policy_drops();  // the drops until this change are counted with the policies before it
      d.state->set_policies(upserts, removals, complete);
    };
    auto follower = PolicyFollower::create(d.io, d.config, d.log, [&d] { return local_pods(d.state->list_endpoints()); },
                                           identities, publish);
    if (!follower) return make_error(follower.error());
    d.policy_follower = std::move(*follower);
    if (d.config.services.range) {
      auto services = ServiceApi::create(d.io, d.config, d.log);
      if (!services) return make_error(services.error());
      d.services = std::move(*services);
    }
  }
  auto state = NodeState::open(d.config, state_options, &notes);
  d.log_notes(notes);
  if (!state) return make_error(state.error());
  d.state = std::move(*state);
  if (d.federation) d.federation->attach(d.state.get());
  if (d.services) {
    d.service_programmer = std::make_unique<ServiceProgrammer>([&d] { return d.service_node(); });
    auto follower = ServiceFollower::create(d.io, d.config, d.log, [&d](const services::FederatedSet& set, std::int64_t) {
      d.services_listed_now(set);
    });
    if (!follower) return make_error(follower.error());
    d.service_follower = std::move(*follower);
    // The entries of the last run, until the store's first listing: the first snapshot carries
    // them even when the store is away (fail static).
    if (auto cached = load_service_cache(d.service_cache_path()); !cached) {
      d.log->warn("services: ignoring the cache: {}", cached.error());
    } else if (!cached->empty()) {
      d.state->set_services(*cached, {});
      d.log->info("services: {} entries from {} until the federation store's first listing", cached->size(),
                  d.service_cache_path());
    }
    // A route or endpoint that comes or goes changes which backends this node reaches.
    d.state->set_reach_observer([&d](std::uint32_t vni, const net::Ipv4Prefix& prefix) {
      d.program_services(d.service_programmer->reach_changed(vni, prefix));
    });
  }

  DataplaneClient::Options dataplane_options{d.config.dataplane.socket, d.config.dataplane.reconnect_min_ms,
                                             d.config.dataplane.reconnect_max_ms,
                                             d.config.dataplane.counters_interval_ms,
                                             d.config.dataplane.request_timeout_ms};
  dataplane_options.service_counters = d.service_programmer != nullptr;  // per service and backend
  d.dataplane = std::make_unique<DataplaneClient>(d.io, dataplane_options, *d.state, d.log);

  DaemonView view;
  view.status = [&d] { return d.status(); };
  view.peers = [&d] { return d.peers(); };
  view.counters = [&d] { return d.dataplane->counters(); };
  view.policy = [&d](const v1::ControlRequest& request, std::function<void(v1::ControlResponse)> reply) {
    if (!PolicyApi::handles(request)) return false;
    if (request.op_case() == v1::ControlRequest::kPolicyDrops) {  // this node's, from the io thread's state
      if (!d.policy_follower) {
        reply(PolicyApi::without_store(request));
        return true;
      }
      v1::ControlResponse response;
      response.set_request_id(request.request_id());
      *response.mutable_policy_drops() = d.policy_drop_report();
      reply(std::move(response));
      return true;
    }
    if (d.policy) d.policy->handle(request, std::move(reply));
    else reply(PolicyApi::without_store(request));
    return true;
  };
  view.services = [&d](const v1::ControlRequest& request, std::function<void(v1::ControlResponse)> reply) {
    if (!ServiceApi::handles(request)) return false;
    if (!d.services) {
      reply(ServiceApi::unconfigured(request, d.config));
      return true;
    }
    if (request.op_case() == v1::ControlRequest::kServiceGet) {
      // The store's listing comes back on the io thread, where the programmer lives: this
      // node's view of each service is added then.
      d.services->handle(request, [&d, reply = std::move(reply)](v1::ControlResponse response) {
        if (response.has_service_listing() && d.service_programmer && d.service_follower)
          add_node_view(*response.mutable_service_listing(), d.service_programmer->views(),
                        d.service_follower->stats().revision,
                        d.dataplane->service_counters_time().time_since_epoch().count() != 0
                            ? &d.dataplane->service_counters()
                            : nullptr);
        reply(std::move(response));
      });
      return true;
    }
    d.services->handle(request, std::move(reply));
    return true;
  };
  d.handler = std::make_unique<ApiHandler>(*d.state, view);
  d.dataplane->set_counters_listener([&d](std::uint64_t poll) { d.take_policy_drops(poll); });
  d.dataplane->set_listener([&d] {
    d.handler->progress();
    d.follow_dataplane_gbp();
  });

  ApiServer::Options api_options;
  api_options.path = d.config.daemon.socket;
  api_options.max_connections = d.config.daemon.max_connections;
  api_options.idle_timeout_ms = d.config.daemon.idle_timeout_ms;
  if (!d.config.daemon.socket_group.empty()) {
    const group* g = ::getgrnam(d.config.daemon.socket_group.c_str());
    if (g == nullptr)
      return make_error(d.config.source + ": daemon.socket_group: group '" + d.config.daemon.socket_group + "' does not exist");
    api_options.group = g->gr_gid;
  }
  auto api = ApiServer::create(
      d.io, api_options,
      [&d](const v1::ControlRequest& request, const PeerCredentials& peer, ApiServer::Reply reply) {
        d.handler->handle(request, [&d, peer, reply = std::move(reply)](v1::ControlResponse response) {
          if (response.code() != v1::OK)
            d.log->info("API: request {} from pid {} failed ({}): {}", response.request_id(), peer.pid,
                        error_code_name(response.code()), response.error());
          reply(std::move(response));
        });
      },
      d.log);
  if (!api) return make_error(api.error());
  d.api = std::move(*api);

  if (!d.config.daemon.metrics_listen.empty()) {
    auto metrics = MetricsServer::create(d.io, d.config.daemon.metrics_listen, [&d] { return d.render_metrics_text(); }, d.log);
    if (!metrics) return make_error(metrics.error());
    d.metrics = std::move(*metrics);
  }

  auto bgp = make_bgp_route_source(d.io, d.config, *d.state, d.log);
  if (!bgp) return make_error(bgp.error());
  d.bgp = std::move(*bgp);
  if (d.bgp)  // the source starts without the mark (make_bgp_route_source)
    d.gbp_mark = std::make_unique<GbpMarkFollower>(
        d.io, false, [&d](bool mark, std::function<void(Status)> done) { d.bgp->set_gbp_mark(mark, std::move(done)); },
        [&d](bool mark, const Status& result) {
          if (result)
            d.log->info("bgp: FRR's config applied with the GBP mark {}", mark ? "on our blocks" : "off");
          else
            d.log->error("bgp: GBP mark: {} (tried again in {} s)", result.error(),
                         std::chrono::duration_cast<std::chrono::seconds>(GbpMarkFollower::kRetry).count());
        });
  // Networks added, removed or renumbered (API, reload) reach the source at once.
  d.state->set_networks_observer([&d] {
    if (d.bgp) d.bgp->networks_changed();
    d.hand_over_service_range();
    if (d.service_programmer) d.program_services(d.service_programmer->recompile_all());
  });
  d.hand_over_service_range();
  return std::unique_ptr<Daemon>(new Daemon(std::move(impl)));
}

int Daemon::run() {
  auto& d = *impl_;
  d.wait_stop();
  d.wait_reload();
  d.tick_housekeeping();
  if (d.config.bpf.reconcile) {
    // Before the API serves: no CNI DEL can race it; a CNI ADD in flight is covered by the grace.
    auto bpf = reconcile_pod_programs(d.state->list_endpoints(),
                                      BpfReconcileOptions{d.config.bpf.pin_root, d.config.bpf.grace_ms}, *d.log);
    if (!bpf) d.log->error("{} (pod limits already in force stay; nothing was removed)", bpf.error());
  }
  d.dataplane->start();
  if (d.bgp) {
    // The dataplane first: the adapter's start (frr-reload through FRR's vty sockets) blocks
    // this thread for seconds, and in a rolling update the new dataplane forwards nothing until
    // it has its tables (issue 37 item 15: 14 s with FRR loading at the same time). The route
    // cache is replayed at once (the first snapshot carries the other nodes' blocks); the
    // adapter starts when the dataplane has applied it, or after 5 s.
    auto* state = d.state.get();
    auto* trim = &d.memory_trim;
    auto* dataplane = d.dataplane.get();
    d.bgp->start(
        [state, trim](const RouteUpdate& update) {
          state->apply_routes(RouteOrigin::bgp, update);
          trim->changed(update.upserts.size() + update.removals.size());  // a full update lists every route
        },
        [dataplane] { return dataplane->ready(); });
  }
  if (d.federation) d.federation->start();
  if (d.service_follower) d.service_follower->start();
  if (d.policy_follower) d.policy_follower->start();
  d.log->info("vxfedd {} serving {} (node {}, cluster {}, {} networks, {} endpoints; metrics {})", kVersion,
              d.config.daemon.socket, d.config.node.name, d.config.cluster.name, d.state->network_count(),
              d.state->endpoint_count(), d.config.daemon.metrics_listen.empty() ? "off" : d.config.daemon.metrics_listen);
  d.io.run();
  d.log->info("vxfedd stopped");
  return 0;
}

}  // namespace vxfed::control
