// The node the in-process benchmarks (perf/pipeline, perf/tables) forward for: one network
// (VNI 1001, gateway 10.244.0.1), pods 1..kPods on ports 1..kPods (10.244.1.P), N routes of
// /24s from 11.0.0.0 up spread over VTEPs 198.18.x.y, every VTEP's neighbour resolved; and the
// EAL both start (one lcore, no hugepages, no PCI). Header-only: the callgrind copy of the
// pipeline benchmark compiles it with its own flags.
#pragma once

#include <rte_eal.h>

#include <arpa/inet.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/net/ipv4.hpp"
#include "dataplane/core/tables.hpp"

namespace vxfed::bench {

namespace dp = vxfed::dataplane;

constexpr std::uint16_t kUplink = 0;
constexpr std::uint16_t kPods = 16;  // local endpoints on ports 1..16
constexpr std::uint32_t kVni = 1001;
constexpr std::uint8_t kUplinkMac[6] = {2, 0, 0, 0, 0, 1};
constexpr std::uint32_t kLocalVtep = (198u << 24) | (18u << 16) | 1;  // host order

inline std::uint32_t vtep_ip(std::uint32_t index) {  // 198.18.x.y, host order
  return (198u << 24) | (18u << 16) | ((index / 250) << 8) | (2 + index % 250);
}
// Installed routes: /24s from 11.0.0.0 up (130,000 of them reach 12.251.207.0/24).
inline std::uint32_t route_prefix(std::uint32_t i) { return (11u << 24) + (i << 8); }
inline std::string ip_text(std::uint32_t host) { return vxfed::net::Ipv4Addr{host}.str(); }

// The node's tables: the pods, `routes` routes (route i to VTEP i % route_vteps) and a resolved
// neighbour for each of `resolved_vteps` VTEPs (at least the routes' own).
inline dp::v1::Tables node_tables(std::uint32_t routes, std::uint32_t route_vteps, std::uint32_t resolved_vteps) {
  dp::v1::Tables t;
  auto* n = t.add_networks();
  n->set_vni(kVni);
  n->set_gateway_ip("10.244.0.1");
  for (std::uint32_t p = 1; p <= kPods; ++p) {
    auto* e = t.add_endpoints();
    e->set_id("pod" + std::to_string(p));
    e->set_vni(kVni);
    e->set_ip("10.244.1." + std::to_string(p));
    char mac[18];
    std::snprintf(mac, sizeof(mac), "02:aa:00:00:00:%02x", p);
    e->set_mac(mac);
    e->set_iface("p" + std::to_string(p));
  }
  for (std::uint32_t i = 0; i < routes; ++i) {
    auto* r = t.add_routes();
    r->set_vni(kVni);
    r->set_prefix(ip_text(route_prefix(i)) + "/24");
    r->add_next_hops()->set_vtep(ip_text(vtep_ip(i % route_vteps)));
  }
  for (std::uint32_t v = 0; v < std::max(route_vteps, resolved_vteps); ++v) {
    auto* nb = t.add_neighbors();
    nb->set_ip(ip_text(vtep_ip(v)));
    nb->set_mac("02:00:00:00:02:02");
  }
  return t;
}

// The build context of that node: interface "pN" is port N.
inline dp::BuildContext node_context(dp::NeighborCache* neighbors, dp::VniCounterSlots* slots) {
  dp::BuildContext ctx;
  ctx.local_vtep_ip_be = htonl(kLocalVtep);
  std::copy(std::begin(kUplinkMac), std::end(kUplinkMac), ctx.uplink_mac.begin());
  ctx.underlay_mtu = 9000;
  ctx.uplink_port = kUplink;
  ctx.port_for_iface = [](const std::string& i) -> std::optional<std::uint16_t> {
    return static_cast<std::uint16_t>(std::stoi(i.substr(1)));
  };
  ctx.neighbors = neighbors;
  ctx.vni_slots = slots;
  return ctx;
}

inline std::unique_ptr<dp::ForwardingTables> build_node_tables(const dp::v1::Tables& t, const dp::BuildContext& ctx) {
  auto built = dp::ForwardingTables::create(t, ctx);
  if (!built) {
    std::fprintf(stderr, "tables: %s\n", built.error().c_str());
    return nullptr;
  }
  return std::move(*built);
}

// The EAL for a benchmark: lcore 0, `memory_mb` of ordinary memory, no PCI, no shared config;
// a file prefix of its own so that concurrent runs do not meet. False (said) on failure.
inline bool init_eal(const std::string& name, unsigned memory_mb) {
  const std::string prefix = name + std::to_string(getpid());
  std::vector<std::string> eal = {name, "-l", "0", "--no-huge", "-m", std::to_string(memory_mb), "--no-pci",
                                  "--no-shconf", "--no-telemetry", "--file-prefix", prefix, "--log-level=error"};
  std::vector<char*> argv;
  for (auto& a : eal) argv.push_back(a.data());
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) {
    std::fprintf(stderr, "EAL init failed\n");
    return false;
  }
  return true;
}

}  // namespace vxfed::bench
