// vxfed-bgp-driver: a thin host for the BGP adapter in integration tests (and a way to try the
// adapter by hand before vxfedd hosts it). It reads a YAML file with a `bgp:` section, starts
// the adapter (renders + applies FRR config, runs the FPM server) and reports:
//   --state FILE   JSON rewritten atomically after every change: routes, peers, stats
//   --events FILE  one JSON line per route update (deltas and full resyncs), with a timestamp
//   stdout         the same update lines
// SIGHUP re-reads the config file and reconfigures (applies idempotently); SIGTERM/SIGINT exit.
#include <CLI/CLI.hpp>
#include <utility>  // before asio (Boost 1.74 + C++20)
#include <boost/asio.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "bgp/adapter.hpp"
#include "bgp/frr_apply.hpp"

using nlohmann::json;
using namespace vxfed::bgp;
using vxfed::net::Ipv4Addr, vxfed::net::Ipv4Prefix;
using vxfed::RemoteRoute, vxfed::RouteUpdate;

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "network": the vxfed network of the peer the route is attributed to ("" for a fixed VNI).
json route_json(const RemoteRoute& r, const BgpConfig& config) {
  json v = json::array();
  for (const auto& a : r.vteps) v.push_back(a.str());
  std::string network;
  for (const auto& p : config.peers)
    if (p.address == r.peer) network = p.network;
  return {{"prefix", r.prefix.str()}, {"vteps", v}, {"vni", r.vni}, {"network", network}, {"peer", r.peer.str()}};
}

vxfed::Result<BgpConfig> load(const std::string& path) {
  try {
    YAML::Node root = YAML::LoadFile(path);
    return parse_config(root["bgp"]);
  } catch (const YAML::Exception& e) {
    return vxfed::make_error(path + ": " + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Hosts the vxfed BGP adapter and reports learned routes as JSON (integration tests)."};
  std::string config_path, vtep, state_path, events_path, polls_path, log_level = "info";
  std::vector<std::string> advertise, networks;
  app.add_option("--config", config_path, "YAML file with a bgp: section")->required();
  app.add_option("--vtep", vtep, "this node's VTEP IPv4")->required();
  app.add_option("--advertise", advertise, "CIDR of this cluster to advertise (repeatable)");
  app.add_option("--network", networks, "NAME=VNI known to the daemon (repeatable)");
  app.add_option("--state", state_path, "JSON state file, rewritten on every change");
  app.add_option("--events", events_path, "JSON-lines file of route updates");
  app.add_option("--polls", polls_path, "JSON-lines file: each peer status poll and the BMP RIB's counters after it");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::from_str(log_level));

  auto cfg = load(config_path);
  if (!cfg) {
    std::cerr << "vxfed-bgp-driver: " << cfg.error() << "\n";
    return 2;
  }
  auto vtep_ip = Ipv4Addr::parse(vtep);
  if (!vtep_ip) {
    std::cerr << "vxfed-bgp-driver: --vtep: " << vtep_ip.error() << "\n";
    return 2;
  }
  std::vector<Ipv4Prefix> adv;
  for (const auto& a : advertise) {
    auto p = Ipv4Prefix::parse(a);
    if (!p) {
      std::cerr << "vxfed-bgp-driver: --advertise: " << p.error() << "\n";
      return 2;
    }
    adv.push_back(*p);
  }
  std::map<std::string, std::uint32_t> vnis;
  for (const auto& n : networks) {
    auto eq = n.find('=');
    if (eq == std::string::npos) {
      std::cerr << "vxfed-bgp-driver: --network expects NAME=VNI\n";
      return 2;
    }
    vnis[n.substr(0, eq)] = static_cast<std::uint32_t>(std::stoul(n.substr(eq + 1)));
  }

  boost::asio::io_context io;
  std::unique_ptr<Adapter> adapter;
  std::ofstream events;
  if (!events_path.empty()) events.open(events_path, std::ios::app);
  std::ofstream polls;
  if (!polls_path.empty()) polls.open(polls_path, std::ios::app);
  std::uint64_t updates = 0;
  double started_ms = now_ms();

  json last_peers, last_bmp_rib;
  auto write_state = [&] {
    if (state_path.empty() || !adapter) return;
    json routes = json::array();
    for (const auto& r : adapter->routes()) routes.push_back(route_json(r, adapter->config()));
    json peers = json::array();
    for (const auto& p : adapter->peers()) {
      peers.push_back({{"address", p.address}, {"remote_asn", p.remote_asn}, {"cluster", p.cluster},
                       {"state", p.state}, {"uptime_s", p.uptime_s},
                       {"prefixes_received", p.prefixes_received}, {"prefixes_accepted", p.prefixes_accepted},
                       {"prefixes_advertised", p.prefixes_advertised}, {"prefixes_stale", p.prefixes_stale},
                       {"connections_dropped", p.connections_dropped},
                       {"established_epoch", p.established_epoch}, {"ibgp", p.ibgp},
                       {"prefixes_denied", p.prefixes_denied}, {"max_prefix_overflow", p.max_prefix_overflow},
                       {"max_prefix_teardowns", p.max_prefix_teardowns}, {"end_of_rib_received", p.end_of_rib_received},
                       {"nsf_passive", p.nsf_passive}});
    }
    const auto s = adapter->stats();
    const auto& r = s.bmp_rib;
    json bmp_rib = {{"peers_up", r.peers_up},         {"routes", r.routes},
                    {"stale", r.stale},               {"sessions", r.sessions},
                    {"stale_swept", r.stale_swept},   {"swept_by_limit", r.swept_by_limit},
                    {"full_tables", r.full_tables},   {"peer_down_withdrawn", r.peer_down_withdrawn},
                    {"gr_peers", r.gr_peers},         {"gr_kept", r.gr_kept},
                    {"gr_confirmed", r.gr_confirmed}, {"gr_dropped_by_bgpd", r.gr_dropped_by_bgpd},
                    {"gr_expired", r.gr_expired},     {"gr_recovered", r.gr_recovered},
                    {"gr_stale_withdraw_kept", r.gr_stale_withdraw_kept}};
    json stats = {{"feed_connected", s.feed_connected}, {"bmp_rib", bmp_rib},
                  {"fpm_connected", s.fpm_connected}, {"fpm_connections", s.fpm_connections},
                  {"frames", s.frames}, {"messages", s.messages}, {"malformed", s.malformed},
                  {"stream_errors", s.stream_errors}, {"non_bgp_ignored", s.non_bgp_ignored},
                  {"no_peer", s.no_peer}, {"unresolved_routes", s.unresolved_routes},
                  {"resyncs", s.resyncs}, {"swept", s.swept}, {"routes", s.routes},
                  {"max_prefix_exceeded", s.max_prefix_exceeded}, {"withheld", s.withheld},
                  {"applies", s.applies}, {"last_apply_seconds", s.last_apply_seconds},
                  {"resyncing", s.resyncing}, {"updates", updates}};
    last_peers = peers;
    last_bmp_rib = bmp_rib;
    json st = {{"time_ms", now_ms()}, {"started_ms", started_ms}, {"routes", routes},
               {"peers", peers}, {"stats", stats}};
    const std::string tmp = state_path + ".tmp";
    {
      std::ofstream f(tmp);
      f << st.dump(1) << "\n";
    }
    std::rename(tmp.c_str(), state_path.c_str());
  };

  AdapterOptions opts;
  opts.config = *cfg;
  opts.vtep = *vtep_ip;
  opts.advertise = adv;
  opts.vni_of = [&vnis](const std::string& n) -> std::optional<std::uint32_t> {
    auto it = vnis.find(n);
    if (it == vnis.end()) return std::nullopt;
    return it->second;
  };
  opts.on_routes = [&](const RouteUpdate& u) {
    ++updates;
    json up = json::array(), rm = json::array();
    for (const auto& r : u.upserts) up.push_back(route_json(r, adapter->config()));
    for (const auto& k : u.removals) rm.push_back({{"prefix", k.prefix.str()}, {"vni", k.vni}});
    json line = {{"t_ms", now_ms()}, {"full", u.full}, {"upserts", up}, {"removals", rm}};
    const std::string text = line.dump();
    std::cout << text << std::endl;
    if (events.is_open()) events << text << std::endl;
    write_state();
  };
  opts.on_peers = [&](const std::vector<PeerStatus>&) {
    write_state();
    if (polls.is_open()) polls << json{{"t_ms", now_ms()}, {"peers", last_peers}, {"bmp_rib", last_bmp_rib}}.dump() << std::endl;
  };

  auto created = Adapter::create(io, std::move(opts));
  if (!created) {
    std::cerr << "vxfed-bgp-driver: " << created.error() << "\n";
    return 2;
  }
  adapter = std::move(*created);
  if (auto st = adapter->start(); !st) {
    std::cerr << "vxfed-bgp-driver: " << st.error() << "\n";
    return 1;
  }
  write_state();

  boost::asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        if (sig == SIGHUP) {
          auto c = load(config_path);
          if (!c) {
            spdlog::error("reload refused: {}", c.error());
          } else if (auto st = adapter->reconfigure(*c, adv); !st) {
            spdlog::error("reconfigure failed: {}", st.error());
          } else {
            spdlog::info("reconfigured from {}", config_path);
          }
          write_state();
          signals.async_wait(on_signal);
          return;
        }
        spdlog::info("exiting on signal {}", sig);
        adapter->stop();
        io.stop();
      };
  signals.async_wait(on_signal);
  io.run();
  adapter.reset();
  return 0;
}
