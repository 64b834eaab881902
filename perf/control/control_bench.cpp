// Benchmark of vxfedd's API: 10,000 network allocations (AddNetwork: a VNI from the pool,
// persisted) and 100,000 endpoint attach + detach (AttachEndpoint/DetachEndpoint, persisted,
// pushed to a dataplane) through the unix socket, closed loop from N client connections.
// Reports operations per second and p50/p99 latency; writes JSON (perf/results/control.json).
//
// vxfedd runs as a child process with its own temp state dir on the real disk (every change is
// fdatasync'ed), talking to an in-process null dataplane that acknowledges every request (so
// the delta path is exercised; the real dataplane's in-place table updates are perf/tables').
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "proto/control.pb.h"
#include "proto/dataplane.pb.h"
#include "common/delimited.hpp"
#include "perf/control/null_dataplane.hpp"
#include "perf/control/vxfedd_process.hpp"

namespace v1 = vxfed::control::v1;
namespace dp = vxfed::dataplane::v1;
using Clock = std::chrono::steady_clock;

namespace {

using vxfed::perf::NullDataplane;
using vxfed::perf::VxfeddProcess;

struct Summary {
  std::size_t ops = 0;
  double seconds = 0;
  std::vector<double> latencies_us;
  nlohmann::json json() {
    std::sort(latencies_us.begin(), latencies_us.end());
    auto pct = [&](double p) {
      if (latencies_us.empty()) return 0.0;
      return latencies_us[std::min(latencies_us.size() - 1, static_cast<std::size_t>(p * latencies_us.size()))];
    };
    return {{"operations", ops},           {"seconds", seconds},        {"ops_per_s", ops / seconds},
            {"p50_us", pct(0.50)},          {"p99_us", pct(0.99)},       {"max_us", latencies_us.empty() ? 0 : latencies_us.back()}};
  }
};

struct Client {
  int fd = -1;
  std::uint64_t id = 0;
  explicit Client(const std::string& socket) {
    auto c = vxfed::connect_unix(socket, 10000);
    if (!c) {
      std::cerr << c.error() << "\n";
      std::exit(1);
    }
    fd = *c;
  }
  ~Client() { ::close(fd); }
  // Returns latency in microseconds; exits on any failure (a benchmark of errors is useless).
  double call(v1::ControlRequest& request) {
    request.set_request_id(++id);
    const auto start = Clock::now();
    v1::ControlResponse response;
    auto ok = vxfed::write_delimited(fd, request, 30000);
    if (ok) ok = vxfed::read_delimited(fd, response, 30000);
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (!ok || response.code() != v1::OK) {
      std::cerr << "request failed: " << (ok ? response.error() : ok.error()) << "\n";
      std::exit(1);
    }
    return us;
  }
};

// Runs `total` operations split over `clients` connections; op(client, i) builds request i.
template <typename Build>
Summary run(const std::string& socket, std::size_t total, int clients, Build build) {
  Summary s;
  std::vector<std::vector<double>> lat(clients);
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      Client client(socket);
      for (std::size_t i = c; i < total; i += clients) {
        v1::ControlRequest request = build(i);
        lat[c].push_back(client.call(request));
      }
    });
  for (auto& t : threads) t.join();
  s.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& l : lat) s.latencies_us.insert(s.latencies_us.end(), l.begin(), l.end());
  s.ops = total;
  return s;
}

std::string ip_of(std::size_t i) {  // 10.128.0.0/9 host addresses .2-.254 (.1 is the gateway)
  const std::size_t host = 2 + (i / 253) * 256 + (i % 253);
  return "10." + std::to_string(128 + (host >> 16)) + "." + std::to_string((host >> 8) & 0xff) + "." +
         std::to_string(host & 0xff);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vxfed-control-bench: vxfedd API throughput and latency (JSON to --out)"};
  std::string vxfedd = "build/control/vxfedd", out = "perf/results/control.json", state_root = "/var/tmp";
  std::size_t networks = 10000, endpoints = 100000, batch = 1000;
  int clients = 4;
  app.add_option("--vxfedd", vxfedd, "vxfedd binary")->capture_default_str();
  app.add_option("--networks", networks, "AddNetwork operations")->capture_default_str();
  app.add_option("--endpoints", endpoints, "endpoints attached (and detached again)")->capture_default_str();
  app.add_option("--batch", batch, "endpoints attached before they are detached")->capture_default_str();
  app.add_option("--clients", clients, "concurrent API connections")->capture_default_str();
  app.add_option("--state-root", state_root, "where vxfedd's temp state dir goes (a real disk)")->capture_default_str();
  app.add_option("--out", out, "JSON result file")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  char tmpl[256];
  std::snprintf(tmpl, sizeof tmpl, "%s/vxfed-ctlbench-XXXXXX", state_root.c_str());
  const std::string dir = ::mkdtemp(tmpl);
  const std::string dp_socket = dir + "/dp.sock";
  NullDataplane dataplane(dp_socket);
  VxfeddProcess daemon(vxfedd, dir,
                       "node: {name: bench, vtep_ip: 198.18.0.1}\n"
                       "cluster: {name: bench, pod_cidrs: [10.0.0.0/8]}\n"
                       "daemon: {metrics_listen: \"\", log_level: warn, max_connections: 64}\n"
                       "dataplane: {socket: " + dp_socket + "}\n"
                       "vni: {pools: [{name: bench, ranges: [\"100000-199999\"]}]}\n"
                       "networks: [{name: pods, subnet: 10.128.0.0/9}]\n");
  const std::string& socket = daemon.socket();
  const pid_t pid = daemon.pid();
  std::cerr << "vxfedd pid " << pid << ", state in " << dir << "\n";

  auto nets = run(socket, networks, clients, [](std::size_t i) {
    v1::ControlRequest r;
    auto* spec = r.mutable_add_network()->mutable_spec();
    spec->set_name("net-" + std::to_string(i));
    spec->set_subnet("10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24");
    return r;
  });
  std::cerr << "networks: " << nets.ops << " in " << nets.seconds << " s\n";

  Summary attach, detach;
  const auto churn_start = Clock::now();
  for (std::size_t first = 0; first < endpoints; first += batch) {
    const std::size_t n = std::min(batch, endpoints - first);
    auto a = run(socket, n, clients, [first](std::size_t i) {
      v1::ControlRequest r;
      auto* e = r.mutable_attach_endpoint()->mutable_endpoint();
      e->set_container_id("bench-" + std::to_string(first + i));
      e->set_ifname("net1");
      e->set_network("pods");
      e->set_ip(ip_of(first + i));
      e->set_mac("02:00:00:00:00:02");
      e->set_host_iface("vxfbench");
      return r;
    });
    auto d = run(socket, n, clients, [first](std::size_t i) {
      v1::ControlRequest r;
      r.mutable_detach_endpoint()->set_container_id("bench-" + std::to_string(first + i));
      r.mutable_detach_endpoint()->set_ifname("net1");
      return r;
    });
    attach.ops += a.ops;
    attach.seconds += a.seconds;
    attach.latencies_us.insert(attach.latencies_us.end(), a.latencies_us.begin(), a.latencies_us.end());
    detach.ops += d.ops;
    detach.seconds += d.seconds;
    detach.latencies_us.insert(detach.latencies_us.end(), d.latencies_us.begin(), d.latencies_us.end());
  }
  const double churn_s = std::chrono::duration<double>(Clock::now() - churn_start).count();
  std::cerr << "endpoints: " << attach.ops << " attach + " << detach.ops << " detach in " << churn_s << " s\n";

  const int vxfedd_exit = daemon.stop();
  double load[3] = {0, 0, 0};
  ::getloadavg(load, 3);
  nlohmann::json result = {
      {"benchmark", "control"},
      {"unix_time", std::time(nullptr)},
      {"clients", clients},
      {"load_average_1m_at_end", load[0]},
      {"state_dir_fs", state_root},
      {"network_allocations", nets.json()},
      {"endpoint_attach", attach.json()},
      {"endpoint_detach", detach.json()},
      {"endpoint_churn", {{"operations", attach.ops + detach.ops}, {"seconds", churn_s},
                          {"ops_per_s", (attach.ops + detach.ops) / churn_s}}},
      {"dataplane", {{"snapshots", dataplane.snapshots.load()}, {"deltas", dataplane.deltas.load()},
                     {"changes_in_deltas", dataplane.delta_changes.load()}}},
      {"vxfedd_exit", vxfedd_exit},
  };
  std::filesystem::create_directories(std::filesystem::path(out).parent_path().empty() ? "." : std::filesystem::path(out).parent_path());
  std::ofstream(out) << result.dump(2) << "\n";
  std::cout << result.dump(2) << "\n";
  std::filesystem::remove_all(dir);
  return 0;
}
