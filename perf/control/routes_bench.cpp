// vxfedd holding a federation's routes: N node-block routes streamed over FPM (zebra's
// framing, as bgp/fpm_encoder writes it) into a real vxfedd, which hands them to a null
// dataplane (perf/control/null_dataplane.hpp). Measures, for --routes 10 and N:
//   - vxfedd's share of a burst: the first FPM byte sent -> the last route acknowledged by the
//     dataplane (the null one answers at once: what remains is vxfedd's own work);
//   - vxfedd's memory once the routes are in and the single-route changes below are done, a
//     route cache save included (VmRSS, "vxfedd_rss_mib"), and its peak (VmHWM);
//   - one route withdrawn / announced again over FPM -> its Delta at the dataplane, p50/p99/max
//     over --changes each (the path a single node block takes through vxfedd);
//   - how the burst was cut into messages (Deltas, the largest in entries and bytes).
// Writes JSON (--out); perf/tables/run.py takes vxfedd_rss_mb_130k from it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bgp/fpm_encoder.hpp"
#include "perf/control/null_dataplane.hpp"
#include "perf/control/vxfedd_process.hpp"

namespace fpm = vxfed::bgp::fpm;
using vxfed::net::Ipv4Prefix;
using vxfed::perf::NullDataplane;
using vxfed::perf::VxfeddProcess;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::uint32_t kVni = 1500;

// Route i: 10.0.0.0/9 cut into /26 node blocks (131,072 of them), next hop one of `vteps`
// VTEPs in 198.18.0.0/15.
Ipv4Prefix block(std::uint32_t i) { return Ipv4Prefix::make(0x0a000000u + (i << 6), 26); }

void append_route(std::vector<std::uint8_t>& out, std::uint32_t i, std::uint32_t vteps, bool withdraw) {
  fpm::RouteMessage r = fpm::make_bgp_route(block(i), {}, withdraw);
  if (!withdraw) r.next_hops[r.next_hop_count++] = fpm::NextHop{0xc6120000u + 2 + (i % vteps), 2, 1};
  std::vector<std::uint8_t> nl;
  fpm::append_route_message(nl, r);
  fpm::append_frame(out, nl);
}

int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// zebra's side of the FPM connection (vxfedd listens; zebra connects).
int connect_fpm(int port) {
  const auto deadline = Clock::now() + std::chrono::seconds(15);
  while (Clock::now() < deadline) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("vxfedd's FPM port " + std::to_string(port) + " never accepted a connection");
}

void send_all(int fd, const std::vector<std::uint8_t>& bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error(std::string("FPM send: ") + std::strerror(errno));
    off += static_cast<std::size_t>(n);
  }
}

template <typename Pred>
bool wait_for(Pred pred, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (!pred()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

nlohmann::json percentiles(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto pct = [&](double p) { return us.empty() ? 0.0 : us[std::min(us.size() - 1, static_cast<std::size_t>(p * us.size()))]; };
  return {{"count", us.size()}, {"p50_us", pct(0.50)}, {"p99_us", pct(0.99)}, {"max_us", us.empty() ? 0.0 : us.back()}};
}

std::string config(const std::string& dp_socket, int fpm_port) {
  return "node: {name: bench, vtep_ip: 198.19.0.1}\n"
         "cluster: {name: a, asn: 65001, pod_cidrs: [172.16.0.0/16]}\n"
         "daemon: {metrics_listen: \"\", log_level: warn}\n"
         "dataplane: {socket: " + dp_socket + "}\n"
         "networks: [{name: fed, subnet: 172.16.0.0/16, vni: " + std::to_string(kVni) + "}]\n"
         "bgp:\n"
         "  enabled: true\n"
         "  asn: 65001\n"
         "  router_id: 198.19.0.1\n"
         "  clusters: {b: [10.0.0.0/9]}\n"
         "  frr: {apply: none}\n"
         "  fpm: {port: " + std::to_string(fpm_port) + ", zebra_user: root, resync_settle_ms: 500, resync_min_ms: 500}\n"
         // The node's cluster reflector: node blocks of every cluster, any prefix length.
         "  peers: [{address: 198.19.0.254, remote_asn: 65001, network: fed, max_prefix: 1000000}]\n";
}

nlohmann::json run(const std::string& binary, const std::string& state_root, std::uint32_t routes,
                   std::uint32_t vteps, std::uint32_t changes, double hold_s) {
  char tmpl[256];
  std::snprintf(tmpl, sizeof tmpl, "%s/vxfed-routesbench-XXXXXX", state_root.c_str());
  const std::string dir = ::mkdtemp(tmpl);
  const std::string dp_socket = dir + "/dp.sock";
  const int port = free_tcp_port();
  NullDataplane dataplane(dp_socket);
  VxfeddProcess daemon(binary, dir, config(dp_socket, port));
  if (!wait_for([&] { return dataplane.snapshots > 0; }, 15))
    throw std::runtime_error("vxfedd sent no snapshot; its log: " + dir + "/vxfedd.log");
  const double rss_empty = daemon.status_mib("VmRSS");
  const int fd = connect_fpm(port);

  std::vector<std::uint8_t> burst;
  burst.reserve(static_cast<std::size_t>(routes) * 80);
  for (std::uint32_t i = 0; i < routes; ++i) append_route(burst, i, vteps, false);
  const auto deltas_before = dataplane.deltas.load();
  const auto t0 = Clock::now();
  send_all(fd, burst);
  if (!wait_for([&] { return dataplane.routes() == routes; }, 60))
    throw std::runtime_error("only " + std::to_string(dataplane.routes()) + " of " + std::to_string(routes) +
                             " routes reached the dataplane; its log: " + dir + "/vxfedd.log");
  const double burst_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const auto burst_deltas = dataplane.deltas.load() - deltas_before;
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double rss_after_burst = daemon.status_mib("VmRSS");

  // One node block at a time: withdrawn, then announced again (the route that was there).
  std::vector<double> withdraw_us, announce_us;
  for (std::uint32_t k = 0; k < changes; ++k) {
    const std::uint32_t i = (k * 7919u) % routes;
    const std::string prefix = block(i).str();
    for (const bool withdraw : {true, false}) {
      std::vector<std::uint8_t> one;
      append_route(one, i, vteps, withdraw);
      const auto start = Clock::now();
      send_all(fd, one);
      if (!wait_for([&] { return dataplane.has_route(kVni, prefix) != withdraw; }, 10))
        throw std::runtime_error("route " + prefix + (withdraw ? " withdrawal" : " announcement") +
                                 " never reached the dataplane; its log: " + dir + "/vxfedd.log");
      (withdraw ? withdraw_us : announce_us)
          .push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
  }
  // Steady state: after the changes and a route cache save (one per 2 s at most) — what vxfedd
  // keeps holding, transient buffers included as glibc keeps them.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const double rss = daemon.status_mib("VmRSS"), hwm = daemon.status_mib("VmHWM");
  if (hold_s > 0) {
    std::cerr << "vxfedd pid " << daemon.pid() << " holds " << routes << " routes; stopping it in " << hold_s << " s\n";
    std::this_thread::sleep_for(std::chrono::duration<double>(hold_s));
  }
  ::close(fd);
  const int exit_code = daemon.stop();
  std::filesystem::remove_all(dir);
  return {{"routes", routes},
          {"vteps", vteps},
          {"burst_s", burst_s},
          {"burst_routes_per_s", routes / burst_s},
          {"burst_deltas", burst_deltas},
          {"largest_delta_entries", dataplane.largest_delta_entries.load()},
          {"largest_request_bytes", dataplane.largest_request_bytes.load()},
          {"vxfedd_rss_mib_empty", rss_empty},
          {"vxfedd_rss_mib_after_burst", rss_after_burst},
          {"vxfedd_rss_mib", rss},
          {"vxfedd_hwm_mib", hwm},
          {"route_withdraw", percentiles(withdraw_us)},
          {"route_announce", percentiles(announce_us)},
          {"vxfedd_exit", exit_code}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vxfed-routes-bench: vxfedd with N routes from FPM (memory, burst time, per-route latency; JSON to --out)"};
  std::string vxfedd = "build/control/vxfedd", out = "perf/results/vxfedd_routes.json", state_root = "/var/tmp";
  std::vector<std::uint32_t> route_counts{10, 130000};
  std::uint32_t vteps = 1000, changes = 1000;
  double hold_s = 0;
  app.add_option("--vxfedd", vxfedd, "vxfedd binary")->capture_default_str();
  app.add_option("--routes", route_counts, "route counts to measure (each a fresh vxfedd)")->capture_default_str();
  app.add_option("--vteps", vteps, "distinct next hops")->capture_default_str()->check(CLI::Range(1, 60000));
  app.add_option("--changes", changes, "single-route withdraw + announce pairs timed")->capture_default_str();
  app.add_option("--state-root", state_root, "where vxfedd's temp dir goes")->capture_default_str();
  app.add_option("--out", out, "JSON result file")->capture_default_str();
  app.add_option("--hold-seconds", hold_s, "keep each vxfedd running this long after its measurement (to inspect it)");
  CLI11_PARSE(app, argc, argv);
  if (::geteuid() != 0) {
    std::cerr << "run as root: vxfedd's FPM listener takes routes only from zebra's user, here root\n";
    return 2;
  }
  nlohmann::json result = {{"benchmark", "vxfedd_routes"}, {"unix_time", std::time(nullptr)}, {"runs", nlohmann::json::object()}};
  for (auto n : route_counts) {
    if (n == 0 || n > 131072) {
      std::cerr << "--routes: 1..131072 (10.0.0.0/9 in /26 blocks)\n";
      return 2;
    }
    std::cerr << "vxfedd with " << n << " routes...\n";
    try {
      result["runs"][std::to_string(n)] = run(vxfedd, state_root, n, vteps, std::min(changes, n), hold_s);
    } catch (const std::exception& e) {  // vxfedd and the null dataplane are stopped by now
      std::cerr << "vxfed-routes-bench: " << e.what() << "\n";
      return 1;
    }
  }
  double load[3] = {0, 0, 0};
  ::getloadavg(load, 3);
  result["load_average_1m_at_end"] = load[0];
  const auto parent = std::filesystem::path(out).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::ofstream(out) << result.dump(2) << "\n";
  std::cout << result.dump(2) << "\n";
  return 0;
}
