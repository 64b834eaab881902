// Pipeline benchmark: the burst functions alone, no I/O. A fixed set of mbufs is fed in
// bursts of 32 and recycled after every burst (encap output: the 50 outer bytes are stripped
// again; decap output: they are put back, still intact in the headroom), so only
// process_pod_burst / process_uplink_burst sit between the two rdtsc reads.
//
// Cases: direction {encap, decap} x frame {64, 8950 bytes (the pod-side frame)} x routes
// {10, 130000}. Global services (docs/conntrack.md): --services N adds N services of
// --service-backends M backends each (backends at route destinations) to the VNI, with a
// connection table per run (ServiceFlows); --vip-traffic sends the encap frames to the
// services' VIP:port instead (flow k to service k % N: after the warm-up, conntrack hits),
// their headers checked (destination, IPv4 and UDP checksums) and restored after every burst
// outside the timed part; --flow-run R makes R encap
// frames in a row one flow (a stream's burst), with or without services. Network policy
// (docs/policy.md, "Enforcement in the forwarder"): --policy-rules N gives the VNI a
// NetworkPolicy whose one local table (every pod's) is isolated both ways with N identity
// peers and N ipBlock spans (the traffic's sources and destinations in the first, the rest
// elsewhere), UDP 4791 allowed: each flow's first packet is decided, the rest are conntrack
// hits (4,096 flows; under callgrind's 128,000 packets 3.2 % are first packets). Per case: several runs, alternating between the route counts; cycles per
// packet (median, min, max) and the Mpps one core would reach at that cost. Instructions per packet come from run.py under callgrind
// (this binary with --packets and one case). JSON per case under --out.
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <arpa/inet.h>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dataplane/core/pipeline.hpp"
#include "dataplane/core/service_nat.hpp"
#include "dataplane/core/tables.hpp"
#include "perf/common/bench_node.hpp"

namespace dp = vxfed::dataplane;
using Bytes = std::vector<std::uint8_t>;

namespace {

using namespace vxfed::bench;  // the node: pods, routes, VTEPs (perf/common/bench_node.hpp)

constexpr std::uint16_t kBurst = 32;
constexpr std::uint32_t kFlows = 4096;       // distinct mbufs / flows per case

void put16(Bytes& b, std::size_t at, std::uint16_t v) { b[at] = v >> 8; b[at + 1] = v & 255; }
void put32(Bytes& b, std::size_t at, std::uint32_t v) { put16(b, at, v >> 16); put16(b, at + 2, v & 0xffff); }
void ip_checksum(Bytes& b, std::size_t at) {
  std::uint32_t s = 0;
  for (std::size_t i = 0; i < 20; i += 2) s += (b[at + i] << 8) | b[at + i + 1];
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  put16(b, at + 10, static_cast<std::uint16_t>(~s));
}
// The one's complement sum of n bytes (big-endian words), folded.
std::uint32_t sum_words(const std::uint8_t* p, std::size_t n, std::uint32_t s = 0) {
  for (std::size_t i = 0; i + 1 < n; i += 2) s += (p[i] << 8) | p[i + 1];
  if (n & 1) s += p[n - 1] << 8;
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return s;
}
// The UDP checksum an IPv4 packet (20-byte header at ip) should carry, its own field taken as 0.
std::uint16_t udp_checksum(const std::uint8_t* ip) {
  const std::size_t udp_len = (ip[24] << 8) | ip[25];
  std::uint32_t s = sum_words(ip + 12, 8) + 17 + udp_len;
  s += sum_words(ip + 20, 6) + sum_words(ip + 28, udp_len - 8);
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<std::uint16_t>(~s);
}
// A translated VIP packet (encapsulated: its inner frame 50 bytes in) is right: destination
// not the VIP, both checksums valid.
bool verify_translated(const std::uint8_t* frame) {
  const std::uint8_t* ip = frame + 50 + 14;
  if (ip[16] == 10 && ip[17] == 96) return false;  // still the VIP (10.96.0.0/16)
  if (sum_words(ip, 20) != 0xffff) return false;
  const std::uint16_t carried = (ip[26] << 8) | ip[27];
  const std::uint16_t want = udp_checksum(ip);
  return carried == (want == 0 ? 0xffff : want);
}

// Ethernet + IPv4 + UDP frame of `len` bytes at offset `at` of b.
void write_udp_frame(Bytes& b, std::size_t at, std::size_t len, std::uint32_t src, std::uint32_t dst,
                     std::uint16_t sport, std::uint16_t dport) {
  const std::uint8_t dmac[6] = {2, 0x76, 0x78, 0, 3, 0xe9}, smac[6] = {2, 0xaa, 0, 0, 0, 1};
  std::memcpy(&b[at], dmac, 6);
  std::memcpy(&b[at + 6], smac, 6);
  put16(b, at + 12, 0x0800);
  b[at + 14] = 0x45;
  put16(b, at + 16, static_cast<std::uint16_t>(len - 14));
  put16(b, at + 20, 0x4000);
  b[at + 22] = 64;
  b[at + 23] = 17;
  put32(b, at + 26, src);
  put32(b, at + 30, dst);
  ip_checksum(b, at + 14);
  put16(b, at + 34, sport);
  put16(b, at + 36, dport);
  put16(b, at + 38, static_cast<std::uint16_t>(len - 34));
}

struct Setup {
  dp::NeighborCache neighbors{4096};
  dp::VniCounterSlots slots;
  std::unique_ptr<dp::ForwardingTables> tables;
  std::uint32_t vteps = 0;
  std::unique_ptr<dp::ConntrackTable> conntrack;
  dp::ServiceFlows flows;
  dp::ServiceCounterSlots service_slots{1};  // new flows per backend, as the runtime counts them
};

struct ServiceOptions {
  std::uint32_t services = 0;
  std::uint32_t backends = 16;
  bool vip_traffic = false;
  std::uint32_t flow_run = 1;  // consecutive encap frames of one flow (a stream's burst)
};
ServiceOptions g_services;  // from the command line
std::uint32_t g_policy_rules = 0;  // --policy-rules

// A compiled table of `rules` identity peers and `rules` address spans, TCP/UDP 4791 through:
// the benchmark's addresses (11.0.0.0 - 12.255.255.255 and 10.244.0.0/16) in the first two
// spans, the others in 172.16.0.0/12.
dp::v1::PolicyDirection* bench_direction(dp::v1::PolicyDirection* d, std::uint32_t rules) {
  d->set_isolated(true);
  d->set_some_selector(2);
  for (std::uint32_t i = 0; i < rules; ++i) {
    auto* p = d->add_peers();
    p->set_identity(3 + i);
    p->set_ports(2);
  }
  auto span = [&](std::uint32_t first, std::uint32_t last) {
    auto* a = d->add_addresses();
    a->set_first(first);
    a->set_last(last);
    a->set_ports(2);
  };
  span((10u << 24) | (244u << 16), (10u << 24) | (244u << 16) | 0xffff);
  if (rules > 1) span(11u << 24, (13u << 24) - 1);
  for (std::uint32_t i = 2; i < rules; ++i) span((172u << 24) | (16u << 16) | (i << 4), (172u << 24) | (16u << 16) | (i << 4) | 7);
  return d;
}

void add_bench_policy(dp::v1::Tables& t, std::uint32_t rules) {
  auto* p = t.add_policies();
  p->set_vni(kVni);
  p->add_port_sets();
  p->add_port_sets()->set_every_protocol(true);
  auto* s = p->add_port_sets()->add_spans();
  s->set_protocol(17);
  s->set_first(4791);
  s->set_last(4791);
  bench_direction(p->add_local_ingress(), rules);
  bench_direction(p->add_local_egress(), rules);
  for (std::uint32_t pod = 1; pod <= kPods; ++pod) {
    auto* e = p->add_endpoints();
    e->set_endpoint_id("pod" + std::to_string(pod));
    e->set_local(0);
  }
}
constexpr std::uint16_t kServicePort = 4791;
std::uint32_t vip_of(std::uint32_t service) { return (10u << 24) | (96u << 16) | (service + 1); }  // 10.96.0.0/16

// underlay_vlan >= 0: every encapsulated frame asks the port for that 802.1Q tag (--underlay-vlan).
bool build_tables(Setup& s, std::uint32_t routes, std::uint32_t max_vteps, int underlay_vlan) {
  s.vteps = std::min<std::uint32_t>(routes, max_vteps);
  dp::BuildContext ctx = node_context(&s.neighbors, &s.slots);
  ctx.service_counters = &s.service_slots;
  if (underlay_vlan >= 0) ctx.underlay_tag = dp::UnderlayTag::make(static_cast<std::uint16_t>(underlay_vlan));
  dp::v1::Tables t = node_tables(routes, s.vteps, 0);
  for (std::uint32_t i = 0; i < g_services.services; ++i) {
    auto* sv = t.add_services();
    sv->set_id("bench/svc" + std::to_string(i));
    sv->set_vni(kVni);
    sv->set_vip(ip_text(vip_of(i)));
    auto* p = sv->add_ports();
    p->set_protocol(17);
    p->set_port(kServicePort);
    for (std::uint32_t b = 0; b < g_services.backends; ++b) {
      auto* x = sv->add_backends();
      x->set_ip(ip_text(route_prefix((i * g_services.backends + b) % routes) + 5 + b / routes));
      x->set_weight(1);
    }
  }
  if (g_policy_rules) add_bench_policy(t, g_policy_rules);
  s.tables = build_node_tables(t, ctx);
  // A connection table even without services: the runtime always hands its workers' flows to
  // the burst functions, so that the cost measured for networks without services is the
  // runtime's (the has-services tests run, and say no).
  {
    dp::ConntrackConfig cc;
    cc.capacity = 65536;
    cc.timeouts = dp::ConntrackTimeouts::from_seconds(rte_get_tsc_hz());
    auto table = dp::ConntrackTable::create(cc);
    if (!table) return false;
    s.conntrack = std::move(*table);
    s.flows.table = s.conntrack.get();
    s.flows.now = rte_rdtsc();
    s.flows.backend_counters = &s.service_slots;
  }
  return s.tables != nullptr;
}

// The frames of one case: encap = pod frames from pod 1; decap = VXLAN frames from VTEPs.
std::vector<rte_mbuf*> make_frames(rte_mempool* pool, const Setup& s, bool encap, std::uint32_t frame,
                                   std::uint32_t routes) {
  std::vector<rte_mbuf*> out;
  for (std::uint32_t k = 0; k < kFlows; ++k) {
    Bytes b(encap ? frame : frame + 50, 0);
    const std::uint32_t route = static_cast<std::uint32_t>((k * 2654435761ull) % routes);
    if (encap) {
      const std::uint32_t flow = k / g_services.flow_run;  // --flow-run frames in a row share it
      const std::uint32_t flow_route = static_cast<std::uint32_t>((flow * 2654435761ull) % routes);
      if (g_services.vip_traffic) {
        write_udp_frame(b, 0, frame, (10u << 24) | (244u << 16) | (1u << 8) | 1, vip_of(flow % g_services.services),
                        static_cast<std::uint16_t>(1024 + flow), kServicePort);
        // With a UDP checksum, so that the translation updates it (and verify_translated checks it).
        const std::uint16_t sum = udp_checksum(&b[14]);
        put16(b, 40, sum == 0 ? 0xffff : sum);
      } else
        write_udp_frame(b, 0, frame, (10u << 24) | (244u << 16) | (1u << 8) | 1, route_prefix(flow_route) + 5,
                        static_cast<std::uint16_t>(1024 + flow), 4791);
    } else {
      const std::uint32_t pod = 1 + k % kPods;
      write_udp_frame(b, 0, frame + 50, vtep_ip(route % s.vteps), (198u << 24) | (18u << 16) | 1,
                      static_cast<std::uint16_t>(49152 + k % 16384), 4789);
      std::memcpy(&b[0], kUplinkMac, 6);  // to the uplink's MAC: others are dropped (not_our_mac)
      b[42] = 0x08;
      put32(b, 46, kVni << 8);
      write_udp_frame(b, 50, frame, route_prefix(route) + 5, (10u << 24) | (244u << 16) | (1u << 8) | pod,
                      static_cast<std::uint16_t>(1024 + k), 4791);
    }
    rte_mbuf* m = rte_pktmbuf_alloc(pool);
    if (!m || rte_pktmbuf_tailroom(m) < b.size()) {
      std::fprintf(stderr, "mbuf pool too small\n");
      std::exit(1);
    }
    std::memcpy(rte_pktmbuf_append(m, static_cast<std::uint16_t>(b.size())), b.data(), b.size());
    out.push_back(m);
  }
  return out;
}

// Inner IPv4 header back to TTL 64 with its checksum (after decapsulation took one hop).
void restore_inner_ttl(std::uint8_t* ip) {
  ip[8] = 64;
  ip[10] = ip[11] = 0;
  std::uint32_t s = 0;
  for (int i = 0; i < 20; i += 2) s += (ip[i] << 8) | ip[i + 1];
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  ip[10] = static_cast<std::uint8_t>((~s >> 8) & 0xff);
  ip[11] = static_cast<std::uint8_t>(~s & 0xff);
}

struct RunResult {
  double cycles_per_packet;       // median burst / 32: immune to preemption of the process
  double mean_cycles_per_packet;  // all cycles / all packets: includes preemptions
  std::uint64_t packets;
};

// One timed run over `packets` packets. Returns cycles per packet, or < 0 if any packet was
// not forwarded (the benchmark must measure the forwarding path, not drops).
RunResult run(Setup& s, std::vector<rte_mbuf*>& frames, bool encap, std::uint64_t packets,
              dp::TxStage& tx, dp::WorkerCounters& counters) {
  // VIP traffic: each frame's Ethernet + IPv4 + UDP headers as made, put back after each burst.
  constexpr std::size_t kHeaders = 42;
  std::vector<std::array<std::uint8_t, kHeaders>> original;
  if (encap && g_services.vip_traffic) {
    original.resize(frames.size());
    for (std::size_t i = 0; i < frames.size(); ++i)
      std::memcpy(original[i].data(), rte_pktmbuf_mtod(frames[i], const std::uint8_t*), kHeaders);
  }
  dp::ServiceFlows* flows = s.flows.table ? &s.flows : nullptr;
  std::uint64_t cycles = 0, done = 0;
  std::size_t pos = 0;
  std::vector<std::uint32_t> per_burst;
  per_burst.reserve(packets / kBurst + 1);
  while (done < packets) {
    rte_mbuf** burst = &frames[pos];
    const std::uint64_t t0 = rte_rdtsc();
    if (encap)
      dp::process_pod_burst(*s.tables, 1, burst, kBurst, tx, counters, flows);
    else
      dp::process_uplink_burst(*s.tables, burst, kBurst, tx, counters, flows);
    const std::uint64_t spent = rte_rdtsc() - t0;
    cycles += spent;
    per_burst.push_back(static_cast<std::uint32_t>(std::min<std::uint64_t>(spent, UINT32_MAX)));
    // Recycle: every packet must be staged; undo what the pipeline did to it.
    std::uint32_t staged = 0;
    for (std::uint16_t i = 0; i < tx.n_dirty; ++i) {
      auto& q = tx.ports[tx.dirty[i]];
      staged += q.count;
      q.count = 0;
    }
    tx.n_dirty = 0;
    if (staged != kBurst) return RunResult{-1, -1, done};
    for (std::uint16_t i = 0; i < kBurst; ++i) {
      if (encap) {
        rte_pktmbuf_adj(burst[i], 50);
        if (!original.empty()) {
          if (!verify_translated(rte_pktmbuf_mtod(burst[i], const std::uint8_t*) - 50)) {
            std::fprintf(stderr, "a translated packet is wrong (destination or checksums)\n");
            return RunResult{-1, -1, done};
          }
          std::memcpy(rte_pktmbuf_mtod(burst[i], std::uint8_t*), original[pos + i].data(), kHeaders);
        }
      } else {
        // The outer headers are back; the inner TTL the pipeline decremented is restored.
        rte_pktmbuf_prepend(burst[i], 50);
        restore_inner_ttl(rte_pktmbuf_mtod(burst[i], std::uint8_t*) + 50 + 14);
      }
    }
    done += kBurst;
    pos = (pos + kBurst) % frames.size();
  }
  if (per_burst.empty()) return RunResult{0, 0, 0};
  std::nth_element(per_burst.begin(), per_burst.begin() + per_burst.size() / 2, per_burst.end());
  return RunResult{static_cast<double>(per_burst[per_burst.size() / 2]) / kBurst,
                   static_cast<double>(cycles) / static_cast<double>(done), done};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vxfed pipeline benchmark: cycles per packet of the burst functions, no I/O"};
  std::string out_dir = "perf/results/pipeline";
  std::vector<std::string> directions = {"encap", "decap"};
  std::vector<std::uint32_t> frame_sizes = {64, 8950};
  std::vector<std::uint32_t> route_counts = {10, 130000};
  std::uint64_t packets = 4'000'000;
  std::uint64_t warmup = kFlows * 4;
  int runs = 5;
  bool no_json = false;
  int underlay_vlan = -1;
  std::uint32_t max_vteps = 1000;
  app.add_option("--out", out_dir, "directory for the JSON files (one per case)");
  app.add_option("--direction", directions, "encap and/or decap")->check(CLI::IsMember({"encap", "decap"}));
  app.add_option("--frame-bytes", frame_sizes, "pod-side frame sizes (decap input is 50 bytes more)");
  app.add_option("--routes", route_counts, "route counts");
  app.add_option("--packets", packets, "packets per run");
  app.add_option("--runs", runs, "runs per case (median, min, max reported)");
  app.add_option("--warmup", warmup, "packets before the timed runs (0 under callgrind)");
  app.add_flag("--no-json", no_json, "print only (used under callgrind)");
  app.add_option("--vteps", max_vteps, "VTEPs the routes are spread over (at most one per route; default 1000)")
      ->check(CLI::Range(1u, 4000u));
  app.add_option("--underlay-vlan", underlay_vlan, "tag encapsulated frames with this VLAN ID (-1: untagged)")
      ->check(CLI::Range(-1, 4094));
  app.add_option("--services", g_services.services, "global services on the VNI (0: none)");
  app.add_option("--service-backends", g_services.backends, "backends per service")->check(CLI::Range(1u, 4096u));
  app.add_option("--policy-rules", g_policy_rules,
                 "network policy on the VNI: a compiled table of N peers and N address spans, both directions (0: none)");
  app.add_flag("--vip-traffic", g_services.vip_traffic, "encap frames go to the services' VIP:port (needs --services)");
  app.add_option("--flow-run", g_services.flow_run,
                 "encap frames in a row of one flow (1: every frame its own flow; 32: a stream's whole burst)")
      ->check(CLI::Range(1u, 4096u));
  CLI11_PARSE(app, argc, argv);
  if (g_services.vip_traffic && g_services.services == 0) {
    std::fprintf(stderr, "--vip-traffic needs --services\n");
    return 2;
  }

  if (!init_eal("vxfed-pipeline-bench", 1024)) return 1;
  // Every route count's frames of one case are in the pools at once: the runs alternate
  // between the route counts (below), so that the machine's drift (this VM's speed moves by
  // a third within minutes) falls on all of them alike instead of on whichever ran last.
  const auto pool_mbufs = static_cast<unsigned>(kFlows * route_counts.size() + 512);
  rte_mempool* small = rte_pktmbuf_pool_create("bench_small", pool_mbufs, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  rte_mempool* jumbo = rte_pktmbuf_pool_create("bench_jumbo", pool_mbufs, 256, 0, 9216 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
  if (!small || !jumbo) {
    std::fprintf(stderr, "mempool: out of EAL memory\n");
    return 1;
  }
  auto tx = std::make_unique<dp::TxStage>();
  auto counters = std::make_unique<dp::WorkerCounters>();
  const double hz = static_cast<double>(rte_get_tsc_hz());
  if (!no_json) std::filesystem::create_directories(out_dir);
  std::vector<Setup> setups(route_counts.size());
  for (std::size_t k = 0; k < route_counts.size(); ++k)
    if (!build_tables(setups[k], route_counts[k], max_vteps, underlay_vlan)) return 1;
  std::printf("%-6s %6s %7s %10s %10s %10s %8s\n", "dir", "frame", "routes", "cyc/pkt", "min", "max", "Mpps");
  int status = 0;
  for (const auto& dir : directions) {
    const bool encap = dir == "encap";
    for (std::uint32_t frame : frame_sizes) {
      rte_mempool* pool = frame + 50 > 2048 - 64 ? jumbo : small;
      std::vector<std::vector<rte_mbuf*>> frames(route_counts.size());
      std::vector<std::vector<double>> cpp(route_counts.size()), mean(route_counts.size());
      for (std::size_t k = 0; k < route_counts.size(); ++k) {
        frames[k] = make_frames(pool, setups[k], encap, frame, route_counts[k]);
        if (warmup) run(setups[k], frames[k], encap, warmup, *tx, *counters);  // warm caches, predictors
      }
      bool dropped = false;
      for (int r = 0; r < runs && !dropped; ++r) {
        for (std::size_t k = 0; k < route_counts.size(); ++k) {
          const RunResult res = run(setups[k], frames[k], encap, packets, *tx, *counters);
          if (res.cycles_per_packet < 0) {
            std::fprintf(stderr, "%s %u %u: packets were dropped; not a forwarding benchmark\n", dir.c_str(), frame,
                         route_counts[k]);
            status = 1;
            dropped = true;
            break;
          }
          cpp[k].push_back(res.cycles_per_packet);
          mean[k].push_back(res.mean_cycles_per_packet);
        }
      }
      for (auto& f : frames)
        for (rte_mbuf* m : f) rte_pktmbuf_free(m);
      if (dropped) continue;
      for (std::size_t k = 0; k < route_counts.size(); ++k) {
        const std::uint32_t routes = route_counts[k];
        std::vector<double> sorted = cpp[k];
        std::sort(sorted.begin(), sorted.end());
        const double median = sorted[sorted.size() / 2];
        std::printf("%-6s %6u %7u %10.1f %10.1f %10.1f %8.2f\n", dir.c_str(), frame, routes, median,
                    sorted.front(), sorted.back(), hz / median / 1e6);
        if (no_json) continue;
        nlohmann::json j = {
            {"direction", dir},
            {"frame_bytes", frame},
            {"routes", routes},
            {"underlay_vlan", underlay_vlan},
            {"services", g_services.services},
            {"policy_rules", g_policy_rules},
            {"service_backends", g_services.backends},
            {"vip_traffic", g_services.vip_traffic},
            {"flow_run", g_services.flow_run},
            {"burst", kBurst},
            {"flows", kFlows},
            {"vteps", setups[k].vteps},
            {"packets_per_run", packets},
            {"runs", cpp[k]},
            {"runs_mean_cycles_per_packet", mean[k]},
            {"runs_interleaved_with_routes", route_counts},
            {"statistic",
             "per run: median cycles of a 32-packet burst / 32; across runs: median. Run r of every route count "
             "ran back to back (runs_interleaved_with_routes), so runs of one index are paired"},
            {"cycles_per_packet", median},
            {"cycles_per_packet_min", sorted.front()},
            {"cycles_per_packet_max", sorted.back()},
            {"mpps_one_core", hz / median / 1e6},
            {"instructions_per_packet", nullptr},  // filled in by perf/pipeline/run.py (callgrind)
            {"tsc_hz", hz},
        };
        std::ofstream(out_dir + "/" + dir + "-" + std::to_string(frame) + "-" + std::to_string(routes) + ".json")
            << j.dump(2) << "\n";
      }
      // Run r of each route count against run r of the first: the drift cancels in each pair.
      for (std::size_t k = 1; k < route_counts.size(); ++k) {
        std::vector<double> ratio;
        for (std::size_t r = 0; r < cpp[k].size() && r < cpp[0].size(); ++r) ratio.push_back(cpp[k][r] / cpp[0][r]);
        std::sort(ratio.begin(), ratio.end());
        std::printf("%-6s %6u %7u / %u routes, paired runs: x%.3f median [x%.3f-x%.3f]\n", dir.c_str(), frame,
                    route_counts[k], route_counts[0], ratio[ratio.size() / 2], ratio.front(), ratio.back());
      }
    }
  }
  rte_eal_cleanup();
  return status;
}
