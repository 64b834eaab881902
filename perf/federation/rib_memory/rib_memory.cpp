// perf/federation/rib_memory: the heap that vxfedd's per-route state holds at federation scale,
// without FRR. Feeds a BmpRib (bgp/bmp_rib.hpp) what the node's bgpd sends over BMP in
// perf/federation/scale.py — every /26 block once per reflector, a VTEP of its own per block,
// the reflectors' streams interleaved in UPDATE-sized chunks — and hands its route messages to
// a RouteTable (bgp/route_table.hpp) whose pending changes are taken per chunk, as the adapter
// does per BMP batch. Prints, as one JSON object, the heap bytes in use (mallinfo2's uordblks:
// live allocations, whatever the allocator keeps around them) after each part, per block, and
// the process's VmRSS.
#include <CLI/CLI.hpp>
#include <malloc.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "bgp/bmp_rib.hpp"
#include "bgp/route_table.hpp"

using namespace vxfed::bgp;
using vxfed::net::Ipv4Addr, vxfed::net::Ipv4Prefix;

namespace {

// In use from the heap proper and from mmap (large blocks, e.g. the table's pool chunks).
std::size_t heap_in_use() {
  const auto m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

long rss_kb() {
  std::ifstream status("/proc/self/status");
  std::string key;
  long value = 0;
  while (status >> key) {
    if (key == "VmRSS:") {
      status >> value;
      return value;
    }
    status.ignore(1 << 12, '\n');
  }
  return -1;
}

// As scale.py's bed: /26 blocks of 10.64.0.0/10 (cluster-a) and 10.128.0.0/10 (cluster-b),
// half each, each with a VTEP of its own in 198.18.0.0/15.
Ipv4Prefix block(std::uint32_t i, std::uint32_t routes) {
  const std::uint32_t half = routes / 2;
  const std::uint32_t base = i < half ? 0x0a400000u : 0x0a800000u;
  const std::uint32_t k = i < half ? i : i - half;
  return Ipv4Prefix::make(base + (k << 6), 26);
}
Ipv4Addr vtep(std::uint32_t i) { return Ipv4Addr{0xc6120100u + i}; }

std::vector<PeerConfig> node_peers(int reflectors) {
  std::vector<PeerConfig> peers;
  for (int r = 0; r < reflectors; ++r) {
    PeerConfig p;
    p.address = Ipv4Addr{0xc6120008u + static_cast<std::uint32_t>(r)};
    p.remote_asn = 65001;
    p.cluster = "a";
    p.vni = 1001;
    p.max_prefix = 1'000'000;
    p.accept.push_back(PrefixMatch{Ipv4Prefix::make(0x0a000000u, 8), 0, 32});
    peers.push_back(p);
  }
  return peers;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Heap held by vxfedd's BMP RIB and route table per block (perf/federation/rib_memory)"};
  std::uint32_t routes = 130'000;
  int reflectors = 2;
  std::uint32_t chunk = 64;  // routes per BMP batch
  std::string json_path;
  app.add_option("--routes", routes, "blocks, a VTEP each")->check(CLI::Range(2u, 4'000'000u));
  app.add_option("--reflectors", reflectors, "BMP peers sending every block")->check(CLI::Range(1, 8));
  app.add_option("--chunk", chunk, "routes per BMP batch (the route table's pending taken after each)")
      ->check(CLI::Range(1u, 1'000'000u));
  app.add_option("--json", json_path, "also write the result here");
  CLI11_PARSE(app, argc, argv);

  malloc_trim(0);
  const std::size_t heap0 = heap_in_use();
  const long rss0 = rss_kb();

  auto table = std::make_unique<RouteTable>(node_peers(reflectors), nullptr);
  std::size_t upserts = 0;
  BmpRib::Handlers h;
  h.on_route = [&](const vxfed::bgp::fpm::RouteMessage& m) { table->apply(m); };
  auto rib = std::make_unique<BmpRib>(std::move(h));
  const auto now = BmpRib::Clock::now();
  rib->session_started(now);
  std::vector<bmp::PeerKey> keys;
  for (int r = 0; r < reflectors; ++r) {
    keys.push_back(bmp::PeerKey{0, Ipv4Addr{0xc6120008u + static_cast<std::uint32_t>(r)}});
    rib->peer_up(keys.back(), {}, now);
  }
  // The reflectors' streams interleaved chunk by chunk; one UPDATE per block (a VTEP each).
  bmp::Update u;
  for (std::uint32_t first = 0; first < routes; first += chunk) {
    const std::uint32_t last = std::min(routes, first + chunk);
    for (const auto& key : keys) {
      for (std::uint32_t i = first; i < last; ++i) {
        u.clear();
        u.announced.push_back(block(i, routes));
        u.next_hop = vtep(i);
        rib->update(key, u);
      }
    }
    upserts += table->take_pending().upserts.size();
  }
  for (const auto& key : keys) {
    u.clear();
    u.end_of_rib = true;
    rib->update(key, u);
  }
  upserts += table->take_pending().upserts.size();
  u = bmp::Update{};

  const std::size_t heap_both = heap_in_use();
  const long rss_both = rss_kb();
  const auto stats = rib->stats();
  const std::size_t table_routes = table->size();
  // Each part alone: what freeing it gives back.
  table.reset();
  const std::size_t heap_rib = heap_in_use();
  rib.reset();
  const std::size_t heap_none = heap_in_use();

  const double blocks = routes;
  nlohmann::json out{
      {"routes", routes},
      {"reflectors", reflectors},
      {"chunk", chunk},
      {"rib_entries", stats.routes},
      {"rib_prefixes", stats.prefixes},
      {"table_routes", table_routes},
      {"upserts", upserts},
      {"heap_bytes_rib_and_table", heap_both - heap0},
      {"heap_bytes_table", heap_both - heap_rib},
      {"heap_bytes_rib", heap_rib - heap_none},
      {"heap_bytes_per_block_table", static_cast<double>(heap_both - heap_rib) / blocks},
      {"heap_bytes_per_block_rib", static_cast<double>(heap_rib - heap_none) / blocks},
      {"rss_kb_before", rss0},
      {"rss_kb_rib_and_table", rss_both},
  };
  std::printf("%s\n", out.dump(2).c_str());
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  const bool whole = stats.prefixes == routes && table_routes == routes;
  if (!whole) std::fprintf(stderr, "expected %u prefixes in the RIB and the table\n", routes);
  return whole ? 0 : 1;
}
