// bmp_station_probe: BmpStation + BmpRib on a loopback port, for the integration test with
// real FRR (tests/integration/bgp/test_bgp_bmp_station.py). bgpd's BMP module connects to it;
// each route message the RIB gives out is printed as one JSON line on stdout:
//   {"route":"10.245.1.0/24","next_hops":["198.18.1.1"],"delete":false,"t":12.345}
// and the station's events as {"event":"listening"|"connected"|"disconnected"|"full_table",...}.
// SIGUSR1 prints {"stats":{...}}; SIGTERM/SIGINT print it too and exit 0. "t" is
// CLOCK_MONOTONIC seconds, the clock Python's time.monotonic() reads, so the test can time
// events against its own actions.
#include <csignal>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "bgp/bmp_station.hpp"
#include "common/cpu_baseline.h"
#include "common/peer_credentials.hpp"

namespace {

namespace asio = boost::asio;
using namespace vxfed;
using namespace vxfed::bgp;
using nlohmann::json;

double monotonic() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void emit(json j) {
  j["t"] = monotonic();
  std::cout << j.dump() << '\n' << std::flush;
}

json stats_json(const BmpStation& station, const BmpRib& rib) {
  const auto s = station.stats();
  const auto& r = rib.stats();
  json messages, ignored;
  const char* type_names[] = {"route_monitoring", "statistics_report", "peer_down", "peer_up",
                              "initiation",       "termination",       "route_mirroring"};
  for (std::size_t i = 0; i < s.messages.size(); ++i) messages[type_names[i]] = s.messages[i];
  for (std::size_t i = 0; i < s.ignored.size(); ++i) ignored[bmp::to_string(static_cast<bmp::Ignored>(i))] = s.ignored[i];
  json per_peer = json::object();
  for (const auto& [key, n] : rib.routes_per_peer()) per_peer[key.address.str()] = n;
  return json{{"station",
               {{"connected", s.connected}, {"connections", s.connections}, {"bytes", s.bytes},
                {"messages", messages}, {"ignored", ignored}, {"framing_errors", s.framing_errors},
                {"refused_not_loopback", s.refused_not_loopback}, {"refused_wrong_user", s.refused_wrong_user},
                {"refused_busy", s.refused_busy}}},
              {"rib",
               {{"peers_up", r.peers_up}, {"routes", r.routes}, {"prefixes", r.prefixes}, {"stale", r.stale},
                {"sessions", r.sessions}, {"stale_swept", r.stale_swept}, {"swept_by_limit", r.swept_by_limit},
                {"end_of_ribs", r.end_of_ribs}, {"peer_down_withdrawn", r.peer_down_withdrawn},
                {"unknown_peer", r.unknown_peer}, {"full_tables", r.full_tables}, {"messages", r.messages},
                {"routes_per_peer", per_peer}}}};
}

}  // namespace

int main(int argc, char** argv) {
  vxfed_require_cpu_baseline(argv[0]);
  CLI::App app{"BMP station probe: prints the BMP RIB's route messages as JSON lines"};
  unsigned port = 621;
  std::string listen = "127.0.0.1", user;
  unsigned stale_limit_ms = 120'000;
  app.add_option("--port", port, "TCP port (bgpd's `bmp connect ... port`)")->check(CLI::Range(1, 65535));
  app.add_option("--listen", listen, "loopback address to listen on");
  app.add_option("--peer-user", user, "only a socket of this user (FRR's, e.g. frr) may connect");
  app.add_option("--stale-limit-ms", stale_limit_ms, "BmpRibOptions::stale_limit");
  CLI11_PARSE(app, argc, argv);
  // Logs to stderr: stdout carries the JSON lines only.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("probe"));

  LocalPeerPolicy policy;
  if (!user.empty()) {
    auto uid = uid_of_user(user);
    if (!uid) {
      std::cerr << "--peer-user: " << uid.error() << '\n';
      return 2;
    }
    policy.peer_uid = *uid;
  }
  boost::system::error_code ec;
  const auto address = asio::ip::make_address_v4(listen, ec);
  if (ec) {
    std::cerr << "--listen: '" << listen << "' is not an IPv4 address\n";
    return 2;
  }

  asio::io_context io;
  BmpRib::Handlers rh;
  rh.on_route = [](const fpm::RouteMessage& m) {
    json hops = json::array();
    for (std::uint8_t i = 0; i < m.next_hop_count; ++i) hops.push_back(net::Ipv4Addr{m.next_hops[i].gateway}.str());
    emit({{"route", m.prefix.str()}, {"next_hops", hops}, {"delete", m.is_delete}});
  };
  rh.on_full_table = [] { emit({{"event", "full_table"}}); };
  BmpRib rib(rh, BmpRibOptions{std::chrono::milliseconds(stale_limit_ms)});

  auto handlers = rib_handlers(rib);
  handlers.on_connect = [] { emit({{"event", "connected"}}); };
  handlers.on_disconnect = [&rib](const std::string& why) {
    rib.session_lost();
    emit({{"event", "disconnected"}, {"why", why}});
  };
  auto station = BmpStation::create(io, asio::ip::tcp::endpoint(address, static_cast<std::uint16_t>(port)),
                                    std::move(handlers), policy);
  if (!station) {
    std::cerr << station.error() << '\n';
    return 1;
  }
  emit({{"event", "listening"}, {"port", (*station)->port()}});

  // The adapter's timer, as vxfedd would run it: expire_stale once a second.
  asio::steady_timer tick(io);
  std::function<void()> arm = [&] {
    tick.expires_after(std::chrono::seconds(1));
    tick.async_wait([&](boost::system::error_code e) {
      if (e) return;
      rib.expire_stale(BmpRib::Clock::now());
      arm();
    });
  };
  arm();

  asio::signal_set usr1(io, SIGUSR1), term(io, SIGTERM, SIGINT);
  std::function<void()> wait_usr1 = [&] {
    usr1.async_wait([&](boost::system::error_code e, int) {
      if (e) return;
      emit({{"stats", stats_json(**station, rib)}});
      wait_usr1();
    });
  };
  wait_usr1();
  term.async_wait([&](boost::system::error_code, int) {
    emit({{"stats", stats_json(**station, rib)}});
    (*station)->stop();
    io.stop();
  });
  io.run();
  return 0;
}
