// Resident memory of the forwarder's service tables (docs/services.md, "Table size"): builds
// ForwardingTables with one network and no service, then applies a Delta of --services services
// of --backends backends each (default 10,000 x 100, the goal: <= 200 MB), and prints
// the process's resident set (VmRSS) after each step, the difference, and what the tables count
// themselves (ForwardingTables::memory_by_part). Table size: the default for the backend count
// (--table-size to pin one). Not a test: run build/perf/conntrack/vxfed-services-memory.
#include <arpa/inet.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "common/cpu_baseline.h"
#include "dataplane/core/tables.hpp"

namespace {

using namespace vxfed::dataplane;

std::size_t resident_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  return 0;
}

std::string addr(std::uint32_t host) {
  return std::to_string(host >> 24) + "." + std::to_string((host >> 16) & 255) + "." + std::to_string((host >> 8) & 255) +
         "." + std::to_string(host & 255);
}

}  // namespace

int main(int argc, char** argv) {
  vxfed_require_cpu_baseline("vxfed-services-memory");
  CLI::App app{"resident memory of N services x M backends in the forwarder's tables"};
  std::uint32_t services = 10000, backends = 100, table_size = 0;
  app.add_option("--services", services, "services");
  app.add_option("--backends", backends, "backends per service");
  app.add_option("--table-size", table_size, "Maglev table size (0: the default for the backend count)");
  CLI11_PARSE(app, argc, argv);

  NeighborCache neighbors(1024);
  VniCounterSlots vni_slots;
  BuildContext ctx;
  ctx.local_vtep_ip_be = htonl(0xc6120001u);
  ctx.uplink_mac = {0x02, 0, 0, 0, 0, 1};
  ctx.neighbors = &neighbors;
  ctx.vni_slots = &vni_slots;
  v1::Tables start;
  auto* n = start.add_networks();
  n->set_vni(100);
  n->set_gateway_ip("10.0.0.1");
  auto tables = ForwardingTables::create(start, ctx);
  if (!tables) {
    std::fprintf(stderr, "%s\n", tables.error().c_str());
    return 1;
  }
  v1::Delta delta;
  for (std::uint32_t s = 0; s < services; ++s) {
    auto* sv = delta.mutable_upsert()->add_services();
    sv->set_id("ns/svc" + std::to_string(s));
    sv->set_vni(100);
    sv->set_vip(addr(0x0a600000u + s + 1));  // 10.96.0.0/12
    auto* p = sv->add_ports();
    p->set_protocol(6);
    p->set_port(80);
    for (std::uint32_t b = 0; b < backends; ++b) {
      auto* x = sv->add_backends();
      x->set_ip(addr(0x0af40000u + ((s * 7 + b) % 60000)));  // 10.244.0.0/16, overlapping sets
      x->set_weight(1);
    }
    sv->set_table_size(table_size);
  }
  const std::size_t before = resident_kib();
  const auto t0 = std::chrono::steady_clock::now();
  ImmediateReclaimer reclaimer;
  auto applied = (*tables)->apply(delta, ctx, reclaimer);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!applied) {
    std::fprintf(stderr, "%s\n", applied.error().c_str());
    return 1;
  }
  delta.Clear();  // the request's own memory is not the tables'
  const std::size_t after = resident_kib();
  std::printf("{\"services\": %u, \"backends\": %u, \"table_size\": %u, \"apply_seconds\": %.2f,\n", services, backends,
              table_size ? table_size : default_service_table_size(backends), seconds);
  std::printf(" \"rss_before_kib\": %zu, \"rss_after_kib\": %zu, \"rss_added_mb\": %.1f,\n", before, after,
              (after - before) / 1024.0);
  std::printf(" \"tables_count\": {");
  bool first = true;
  for (const auto& [part, bytes] : (*tables)->memory_by_part()) {
    if (std::string(part) != "services" && std::string(part) != "service_entries" && std::string(part) != "control") continue;
    std::printf("%s\"%s_mb\": %.1f", first ? "" : ", ", part, bytes / 1e6);
    first = false;
  }
  std::printf("}}\n");
  return 0;
}
