// perf/bgp: routes streamed over FPM by a synthetic sender (zebra's framing: one netlink
// RTM_NEWROUTE per FPM frame, over TCP on loopback) into the adapter's FPM server and route
// table, then (when dataplane/core is built) into the dataplane's forwarding tables.
// Prints and writes JSON: wall time and routes/s per stage; median, min, max over --runs.
// The same is measured for --small routes so the result reads as a ratio (docs/conventions.md: measuring).
#include <utility>  // before asio (Boost 1.74 + C++20)
#include <boost/asio.hpp>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <thread>

#include "bgp/fpm_encoder.hpp"
#include "bgp/fpm_server.hpp"
#include "bgp/route_table.hpp"

#include <arpa/inet.h>
#include "dataplane/core/tables.hpp"

using namespace vxfed::bgp;
using vxfed::net::Ipv4Addr, vxfed::net::Ipv4Prefix;
using vxfed::RemoteRoute, vxfed::RouteUpdate;
using Clock = std::chrono::steady_clock;
namespace asio = boost::asio;

namespace {

struct RunResult {
  double fpm_to_table_s = 0;   // first byte sent -> last route in the adapter's table
  double to_proto_s = 0;         // adapter snapshot -> v1::Tables (what vxfedd sends)
  double dataplane_build_s = 0;  // v1::Tables -> dataplane ForwardingTables::create
  std::size_t routes = 0;
  std::size_t bytes = 0;
};

std::vector<std::uint8_t> encode(std::uint32_t n, std::uint32_t ecmp) {
  std::vector<std::uint8_t> out;
  out.reserve(static_cast<std::size_t>(n) * (80 + 16 * ecmp));
  std::vector<std::uint8_t> nl;
  for (std::uint32_t i = 0; i < n; ++i) {
    // 10.0.0.0/8 cut into /25s: 131072 distinct prefixes.
    auto prefix = Ipv4Prefix::make(0x0a000000u + (i << 7), 25);
    fpm::RouteMessage r = fpm::make_bgp_route(prefix, {});
    for (std::uint32_t k = 0; k < ecmp; ++k) {
      r.next_hops[r.next_hop_count++] = fpm::NextHop{0xc6120000u + 2 + ((i + k) % 1000), 2, 1};  // 198.18.x.x
    }
    nl.clear();
    fpm::append_route_message(nl, r);
    fpm::append_frame(out, nl);
  }
  return out;
}

std::vector<PeerConfig> bench_peers() {
  PeerConfig p;
  p.address = Ipv4Addr{0xc6120002};
  p.remote_asn = 65002;
  p.cluster = "b";
  p.vni = 1500;
  p.max_prefix = 1000000;
  p.accept.push_back(PrefixMatch{Ipv4Prefix::make(0x0a000000u, 8), 0, 32});
  return {p};
}

double g_proto_s = 0;  // last run: RemoteRoutes -> v1::Tables (vxfedd's side of the handoff)

double build_dataplane(const std::vector<RemoteRoute>& routes) {
  namespace dp = vxfed::dataplane;
  auto t0 = Clock::now();
  vxfed::dataplane::v1::Tables t;
  auto* n = t.add_networks();
  n->set_vni(1500);
  n->set_gateway_ip("10.244.0.1");
  for (const auto& r : routes) {
    auto* pr = t.add_routes();
    pr->set_vni(r.vni);
    pr->set_prefix(r.prefix.str());
    for (const auto& v : r.vteps) pr->add_next_hops()->set_vtep(v.str());
  }
  const double proto_s = std::chrono::duration<double>(Clock::now() - t0).count();
  t0 = Clock::now();
  dp::NeighborCache neighbors{4096};
  dp::VniCounterSlots slots;
  dp::BuildContext ctx;
  ctx.local_vtep_ip_be = htonl(0xc6120001u);
  ctx.uplink_mac = {2, 0, 0, 0, 0, 1};
  ctx.neighbors = &neighbors;
  ctx.vni_slots = &slots;
  ctx.port_for_iface = [](const std::string&) -> std::optional<std::uint16_t> { return std::nullopt; };
  auto built = dp::ForwardingTables::create(t, ctx);
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  g_proto_s = proto_s;
  if (!built) {
    std::fprintf(stderr, "dataplane tables refused the routes: %s\n", built.error().c_str());
    return -1;
  }
  return s;
}

RunResult run_once(std::uint32_t n, std::uint32_t ecmp, bool dataplane) {
  const auto bytes = encode(n, ecmp);
  asio::io_context io;
  RouteTable table(bench_peers(), nullptr);
  std::size_t delivered = 0;
  Clock::time_point done{};
  FpmServer::Handlers h;
  h.on_route = [&](const fpm::RouteMessage& m) { table.apply(m); };
  h.on_batch_end = [&] {
    RouteUpdate u = table.take_pending();  // what the adapter hands to vxfedd
    delivered += u.upserts.size();
    if (delivered >= n && done == Clock::time_point{}) {
      done = Clock::now();
      io.stop();
    }
  };
  auto server = FpmServer::create(io, asio::ip::tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), 0), h);
  if (!server) {
    std::fprintf(stderr, "%s\n", server.error().c_str());
    std::exit(1);
  }
  const std::uint16_t port = (*server)->port();
  Clock::time_point start{};
  std::thread sender([&] {
    asio::io_context sio;
    asio::ip::tcp::socket s(sio);
    s.connect(asio::ip::tcp::endpoint(asio::ip::make_address_v4("127.0.0.1"), port));
    start = Clock::now();
    asio::write(s, asio::buffer(bytes));
    // Keep the connection open until the receiver is done (zebra stays connected).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    while (done == Clock::time_point{}) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  io.run();
  sender.join();
  RunResult r;
  r.routes = table.size();
  r.bytes = bytes.size();
  r.fpm_to_table_s = std::chrono::duration<double>(done - start).count();
  if (dataplane) {
    r.dataplane_build_s = build_dataplane(table.snapshot());
    r.to_proto_s = g_proto_s;
  }
  return r;
}

nlohmann::json summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {{"median", v[v.size() / 2]}, {"min", v.front()}, {"max", v.back()}, {"runs", v}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"FPM route streaming benchmark: synthetic zebra -> FPM server -> route table -> dataplane tables"};
  std::uint32_t routes = 130000, small = 10, runs = 5, ecmp = 1;
  std::string json_path;
  bool no_dataplane = false;
  app.add_option("--routes", routes, "routes streamed per run");
  app.add_option("--small", small, "routes of the comparison run");
  app.add_option("--runs", runs, "runs (median, min, max reported)");
  app.add_option("--ecmp", ecmp, "next hops per route (1..32)")->check(CLI::Range(1, 32));
  app.add_option("--json", json_path, "write the results here (e.g. perf/results/bgp_fpm.json)");
  app.add_flag("--no-dataplane", no_dataplane, "skip the dataplane table build");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  const bool dataplane = !no_dataplane;

  nlohmann::json out = {{"benchmark", "bgp_fpm_routes"}, {"routes", routes}, {"ecmp", ecmp},
                        {"dataplane_stage", dataplane}};
  for (auto [name, n] : {std::pair<const char*, std::uint32_t>{"large", routes}, {"small", small}}) {
    std::vector<double> fpm, dpb, proto, total, rate;
    std::size_t bytes = 0;
    for (std::uint32_t i = 0; i < runs; ++i) {
      RunResult r = run_once(n, ecmp, dataplane);
      if (r.routes != n) {
        std::fprintf(stderr, "run %u: %zu routes in the table, expected %u\n", i, r.routes, n);
        return 1;
      }
      fpm.push_back(r.fpm_to_table_s);
      dpb.push_back(r.dataplane_build_s);
      proto.push_back(r.to_proto_s);
      total.push_back(r.fpm_to_table_s + r.to_proto_s + r.dataplane_build_s);
      rate.push_back(n / total.back());
      bytes = r.bytes;
    }
    nlohmann::json c = {{"routes", n}, {"fpm_bytes", bytes}, {"fpm_to_route_table_s", summarize(fpm)},
                        {"total_wall_s", summarize(total)}, {"routes_per_s", summarize(rate)}};
    if (dataplane) {
      c["to_dataplane_proto_s"] = summarize(proto);
      c["dataplane_build_s"] = summarize(dpb);
    }
    c["fpm_routes_per_s"] = summarize([&] {
      std::vector<double> v;
      for (double f : fpm) v.push_back(n / f);
      return v;
    }());
    out[name] = c;
    std::printf("%-5s %7u routes: FPM->table %.3f s (median), %s total %.3f s, %.0f routes/s\n", name, n,
                c["fpm_to_route_table_s"]["median"].get<double>(),
                dataplane ? ("dataplane build " + std::to_string(c["dataplane_build_s"]["median"].get<double>()) + " s,").c_str() : "",
                c["total_wall_s"]["median"].get<double>(), c["routes_per_s"]["median"].get<double>());
  }
  out["goal_fpm_to_table_under_2s"] = out["large"]["fpm_to_route_table_s"]["median"].get<double>() < 2.0;
  out["goal_total_under_2s"] = out["large"]["total_wall_s"]["median"].get<double>() < 2.0;
  std::printf("%s\n", out.dump().c_str());
  if (!json_path.empty()) {
    std::ofstream(json_path) << out.dump(2) << "\n";
  }
  return 0;
}
