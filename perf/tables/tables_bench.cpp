// Tables benchmark: what one change costs the dataplane's forwarding tables, in place, with 10
// and with 130,000 routes installed, and what route churn costs a worker that forwards.
//
// Latency of one change (p50, p99, max over --changes each): one endpoint attach, one endpoint
// detach, one route add, one route withdraw, each a Delta of its own, timed from its serialized
// bytes (as the API socket hands them over: parse + validate + apply) to its return, which is
// when the workers see it; deferred frees excluded (they run after a grace period).
// Churn throughput: single-route Deltas (add or withdraw a /24 around the table) back to back
// for --churn-seconds, no reader: changes per second.
// Forwarding during churn: one worker thread forwards pod frames through process_pod_burst
// (encapsulation toward the installed routes, never toward a churned prefix) on its own core,
// reporting an RCU quiescent state after every burst as the runtime's workers do, while the
// main thread applies route changes paced at --churn-rate; its packet rate over
// --window-seconds windows, alternating churn and no churn (side by side), ratio of medians.
// Any pod frame not forwarded is counted (the steady destinations must lose nothing).
// Memory: the tables' resident bytes (ForwardingTables::memory_bytes) and the process's RSS in
// steady state, and its peak RSS (VmHWM, reset before) while the changes above run.
//
// Writes one JSON object to --out; perf/tables/run.py drives it.
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/core/pipeline.hpp"
#include "dataplane/core/tables.hpp"
#include "dataplane/runtime/rcu_reclaimer.hpp"
#include "perf/common/bench_node.hpp"

namespace dp = vxfed::dataplane;
using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::uint8_t>;

namespace {

using namespace vxfed::bench;  // the node: pods, routes, VTEPs (perf/common/bench_node.hpp)

constexpr std::uint16_t kBurst = 32;
constexpr std::uint16_t kAttachPort = 100;  // where the benchmark's attached pod goes
constexpr std::uint32_t kFlows = 4096;
constexpr std::uint32_t kVteps = 1000;

// Churned: /24s of 100.64.0.0/10, outside the installed ones.
std::uint32_t churn_prefix(std::uint32_t i) { return (100u << 24) + (64u << 16) + ((i % 65536) << 8); }

long rss_kib(const char* field) {  // VmRSS / VmHWM of this process
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(f, line))
    if (line.compare(0, n, field) == 0) return std::stol(line.substr(n + 1));
  return -1;
}
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

void put16(Bytes& b, std::size_t at, std::uint16_t v) { b[at] = v >> 8; b[at + 1] = v & 255; }
void put32(Bytes& b, std::size_t at, std::uint32_t v) { put16(b, at, v >> 16); put16(b, at + 2, v & 0xffff); }
Bytes pod_frame(std::uint32_t dst, std::uint16_t sport) {  // 64-byte UDP frame from pod 1
  Bytes b(64, 0);
  const std::uint8_t dmac[6] = {2, 0x76, 0x78, 0, 3, 0xe9}, smac[6] = {2, 0xaa, 0, 0, 0, 1};
  std::memcpy(&b[0], dmac, 6);
  std::memcpy(&b[6], smac, 6);
  put16(b, 12, 0x0800);
  b[14] = 0x45;
  put16(b, 16, 50);
  put16(b, 20, 0x4000);
  b[22] = 64;
  b[23] = 17;
  put32(b, 26, (10u << 24) | (244u << 16) | (1u << 8) | 1);
  put32(b, 30, dst);
  std::uint32_t s = 0;
  for (std::size_t i = 0; i < 20; i += 2) s += (b[14 + i] << 8) | b[14 + i + 1];
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  put16(b, 24, static_cast<std::uint16_t>(~s));
  put16(b, 34, sport);
  put16(b, 36, 4791);
  put16(b, 38, 30);
  return b;
}

struct Setup {
  dp::NeighborCache neighbors{4096};
  dp::VniCounterSlots slots;
  dp::BuildContext ctx;
  std::unique_ptr<dp::ForwardingTables> tables;
  std::uint32_t routes = 0;
};

bool build_tables(Setup& s, std::uint32_t routes) {
  // Every VTEP a churned route may name is resolved.
  s.ctx = node_context(&s.neighbors, &s.slots);
  s.tables = build_node_tables(node_tables(routes, std::min(routes, kVteps), kVteps), s.ctx);
  if (!s.tables) return false;
  s.routes = routes;
  return true;
}

std::string attach_delta(std::uint32_t k) {
  dp::v1::Delta d;
  auto* e = d.mutable_upsert()->add_endpoints();
  e->set_id("bench-pod-" + std::to_string(k));
  e->set_vni(kVni);
  e->set_ip(ip_text((10u << 24) | (244u << 16) | (2u << 8) | (2 + k % 250)));
  e->set_mac("02:bb:00:00:00:02");
  e->set_iface("p" + std::to_string(kAttachPort));
  return d.SerializeAsString();
}
std::string detach_delta(std::uint32_t k) {
  dp::v1::Delta d;
  d.add_remove_endpoints("bench-pod-" + std::to_string(k));
  return d.SerializeAsString();
}
std::string route_add_delta(std::uint32_t k) {
  dp::v1::Delta d;
  auto* r = d.mutable_upsert()->add_routes();
  r->set_vni(kVni);
  r->set_prefix(ip_text(churn_prefix(k)) + "/24");
  r->add_next_hops()->set_vtep(ip_text(vtep_ip(k % kVteps)));
  return d.SerializeAsString();
}
std::string route_withdraw_delta(std::uint32_t k) {
  dp::v1::Delta d;
  auto* r = d.add_remove_routes();
  r->set_vni(kVni);
  r->set_prefix(ip_text(churn_prefix(k)) + "/24");
  return d.SerializeAsString();
}

// Parse + apply one serialized Delta; false (with a message) if it was refused.
bool apply(Setup& s, const std::string& bytes, dp::Reclaimer& reclaimer) {
  dp::v1::Delta d;
  if (!d.ParseFromString(bytes)) {
    std::fprintf(stderr, "delta does not parse\n");
    return false;
  }
  auto r = s.tables->apply(d, s.ctx, reclaimer);
  if (!r) {
    std::fprintf(stderr, "delta refused: %s\n", r.error().c_str());
    return false;
  }
  return true;
}

nlohmann::json summary_us(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[std::min(us.size() - 1, static_cast<std::size_t>(q * us.size()))]; };
  return {{"count", us.size()}, {"p50_us", at(0.50)}, {"p99_us", at(0.99)}, {"max_us", us.back()}};
}

// The worker: forwards pod frames toward installed routes; one quiescent state per burst.
struct Worker {
  Setup* s = nullptr;
  rte_rcu_qsbr* qs = nullptr;
  std::vector<rte_mbuf*> frames;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> forwarded{0}, lost{0};
  std::string lost_reason;  // read after join
  int cpu = -1;

  void run() {
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    }
    auto tx = std::make_unique<dp::TxStage>();
    auto counters = std::make_unique<dp::WorkerCounters>();
    rte_rcu_qsbr_thread_register(qs, 0);
    rte_rcu_qsbr_thread_online(qs, 0);
    std::size_t pos = 0;
    std::uint64_t done = 0, missing = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      rte_mbuf** burst = &frames[pos];
      dp::process_pod_burst(*s->tables, 1, burst, kBurst, *tx, *counters);
      std::uint32_t staged = 0;
      for (std::uint16_t i = 0; i < tx->n_dirty; ++i) {
        auto& q = tx->ports[tx->dirty[i]];
        staged += q.count;
        q.count = 0;
      }
      tx->n_dirty = 0;
      rte_rcu_qsbr_quiescent(qs, 0);
      if (staged != kBurst) {  // a dropped frame was freed by the pipeline: the ring is broken
        missing += kBurst - staged;
        lost.store(missing, std::memory_order_relaxed);
        for (std::uint32_t r = 0; r < dp::kDropReasonCount; ++r)
          if (counters->drops[r].get())
            lost_reason = std::string(dp::drop_reason_name(static_cast<dp::DropReason>(r)));
        break;
      }
      for (std::uint16_t i = 0; i < kBurst; ++i) rte_pktmbuf_adj(burst[i], 50);
      done += kBurst;
      if ((done & 1023) == 0) forwarded.store(done, std::memory_order_relaxed);
      pos = (pos + kBurst) % frames.size();
    }
    forwarded.store(done, std::memory_order_relaxed);
    rte_rcu_qsbr_thread_offline(qs, 0);
    rte_rcu_qsbr_thread_unregister(qs, 0);
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vxfed tables benchmark: in-place changes with 10 and 130,000 routes"};
  std::string out = "perf/results/tables/bench.json";
  std::vector<std::uint32_t> route_counts = {10, 130000};
  std::uint32_t changes = 1000;
  double churn_seconds = 2, window_seconds = 0.5, churn_rate = 10000;
  int windows = 10, worker_cpu = 1, control_cpu = 0;
  bool pacing_only = false;
  app.add_option("--out", out, "JSON file");
  app.add_option("--routes", route_counts, "installed route counts");
  app.add_option("--changes", changes, "changes timed per kind");
  app.add_option("--churn-seconds", churn_seconds, "unpaced churn duration");
  app.add_option("--churn-rate", churn_rate, "route changes per second while the worker forwards");
  app.add_option("--window-seconds", window_seconds, "one forwarding measurement window");
  app.add_option("--windows", windows, "windows per condition (churn / no churn, alternating)");
  app.add_option("--worker-cpu", worker_cpu, "CPU of the forwarding thread (-1: any)");
  app.add_option("--control-cpu", control_cpu, "CPU of the control thread (-1: any)");
  app.add_flag("--pacing-only", pacing_only,
               "control experiment: churn windows wake at --churn-rate but apply nothing (what the wake-ups alone cost the worker)");
  CLI11_PARSE(app, argc, argv);

  if (!init_eal("vxfed-tables-bench", 256)) return 1;
  if (control_cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(control_cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  rte_mempool* pool = rte_pktmbuf_pool_create("tables_bench", kFlows + 512, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  auto* qs = static_cast<rte_rcu_qsbr*>(rte_zmalloc("bench_qsbr", rte_rcu_qsbr_get_memsize(1), RTE_CACHE_LINE_SIZE));
  if (!pool || !qs || rte_rcu_qsbr_init(qs, 1) != 0) {
    std::fprintf(stderr, "out of EAL memory\n");
    return 1;
  }
  dp::RcuReclaimer reclaimer(qs);

  nlohmann::json result = {{"changes_per_kind", changes}, {"pacing_only", pacing_only}};
  for (std::uint32_t routes : route_counts) {
    Setup s;
    const auto b0 = Clock::now();
    if (!build_tables(s, routes)) return 1;
    const double build_ms = std::chrono::duration<double, std::milli>(Clock::now() - b0).count();
    const long steady_rss = rss_kib("VmRSS:");
    const double tables_mib = static_cast<double>(s.tables->memory_bytes()) / (1 << 20);
    reset_peak_rss();

    // One change at a time, no reader: the worker is offline, grace periods end at once.
    std::vector<double> attach, detach, add, withdraw;
    auto timed = [&](const std::string& bytes, std::vector<double>& into) {
      const auto t0 = Clock::now();
      if (!apply(s, bytes, reclaimer)) std::exit(1);
      into.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      reclaimer.poll();
    };
    for (std::uint32_t k = 0; k < changes; ++k) {
      timed(attach_delta(k), attach);
      timed(detach_delta(k), detach);
      timed(route_add_delta(k), add);
      timed(route_withdraw_delta(k), withdraw);
    }

    // Unpaced churn: add then withdraw /24s around the table.
    std::uint64_t churned = 0;
    {
      std::vector<std::string> adds, withdraws;
      for (std::uint32_t k = 0; k < 4096; ++k) {
        adds.push_back(route_add_delta(k));
        withdraws.push_back(route_withdraw_delta(k));
      }
      const auto end = Clock::now() + std::chrono::duration<double>(churn_seconds);
      const auto t0 = Clock::now();
      while (Clock::now() < end) {
        const std::uint32_t k = static_cast<std::uint32_t>(churned / 2) % 4096;
        if (!apply(s, (churned % 2 == 0) ? adds[k] : withdraws[k], reclaimer)) return 1;
        ++churned;
        if ((churned & 63) == 0) reclaimer.poll();
      }
      if (churned % 2 == 1) {  // leave the table as it was
        if (!apply(s, withdraws[static_cast<std::uint32_t>(churned / 2) % 4096], reclaimer)) return 1;
      }
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      reclaimer.poll();
      result["churn"][std::to_string(routes)] = {{"changes", churned}, {"seconds", secs},
                                                 {"changes_per_s", static_cast<double>(churned) / secs}};
    }

    // Forwarding with and without paced churn, side by side.
    Worker w;
    w.s = &s;
    w.qs = qs;
    w.cpu = worker_cpu;
    for (std::uint32_t k = 0; k < kFlows; ++k) {
      const Bytes b = pod_frame(route_prefix(static_cast<std::uint32_t>((k * 2654435761ull) % routes)) + 5,
                                static_cast<std::uint16_t>(1024 + k));
      rte_mbuf* m = rte_pktmbuf_alloc(pool);
      std::memcpy(rte_pktmbuf_append(m, static_cast<std::uint16_t>(b.size())), b.data(), b.size());
      w.frames.push_back(m);
    }
    std::thread worker([&w] { w.run(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // warm up
    std::vector<double> idle_pps, churn_pps, churn_achieved;
    std::uint64_t k = 0;
    const auto gap = std::chrono::duration<double>(1.0 / churn_rate);
    for (int i = 0; i < 2 * windows; ++i) {
      const bool churn = i % 2 == 1;
      const std::uint64_t f0 = w.forwarded.load();
      const auto t0 = Clock::now();
      const auto end = t0 + std::chrono::duration<double>(window_seconds);
      std::uint64_t applied = 0;
      if (churn) {
        auto next = t0;
        while (Clock::now() < end) {
          if (Clock::now() < next) {  // between requests the runtime's control thread sleeps in epoll
            std::this_thread::sleep_until(next);
            continue;
          }
          const std::uint32_t r = static_cast<std::uint32_t>(k / 2) % 4096;
          if (!pacing_only && !apply(s, k % 2 == 0 ? route_add_delta(r) : route_withdraw_delta(r), reclaimer)) return 1;
          if (!pacing_only) ++k;
          ++applied;
          reclaimer.poll();
          next += std::chrono::duration_cast<Clock::duration>(gap);
        }
      } else {
        while (Clock::now() < end) {
          reclaimer.poll();
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
      }
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      const double pps = static_cast<double>(w.forwarded.load() - f0) / secs;
      (churn ? churn_pps : idle_pps).push_back(pps);
      if (churn) churn_achieved.push_back(static_cast<double>(applied) / secs);
    }
    if (k % 2 == 1 && !apply(s, route_withdraw_delta(static_cast<std::uint32_t>(k / 2) % 4096), reclaimer)) return 1;
    w.stop = true;
    worker.join();
    reclaimer.run_all();
    for (rte_mbuf* m : w.frames) rte_pktmbuf_free(m);
    const long peak_rss = rss_kib("VmHWM:");
    if (s.tables->route_count() != routes || s.tables->endpoint_count() != kPods) {
      std::fprintf(stderr, "the changes did not leave the tables as they were (%zu routes, %zu endpoints)\n",
                   s.tables->route_count(), s.tables->endpoint_count());
      return 1;
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : v[v.size() / 2];
    };
    std::vector<double> ratios;
    for (std::size_t i = 0; i < churn_pps.size(); ++i) ratios.push_back(churn_pps[i] / idle_pps[i]);

    result["routes"][std::to_string(routes)] = {
        {"build_ms", build_ms},
        {"attach", summary_us(attach)},
        {"detach", summary_us(detach)},
        {"route_add", summary_us(add)},
        {"route_withdraw", summary_us(withdraw)},
        {"tables_mib", tables_mib},
        {"steady_rss_mib", static_cast<double>(steady_rss) / 1024},
        {"peak_rss_mib", static_cast<double>(peak_rss) / 1024},
        {"peak_over_steady", static_cast<double>(peak_rss) / static_cast<double>(steady_rss)},
        {"forwarding",
         {{"idle_pps", idle_pps},
          {"churn_pps", churn_pps},
          {"churn_changes_per_s", churn_achieved},
          {"ratio_per_pair", ratios},
          {"ratio_median", median(ratios)},
          {"lost", w.lost.load()},
          {"lost_reason", w.lost_reason}}},
    };
    std::printf("%7u routes: attach p99 %.1f us, route add p99 %.1f us, withdraw p99 %.1f us, churn %.0f/s, "
                "forwarding %.3f of idle (lost %llu), tables %.1f MiB, rss %ld->%ld KiB peak\n",
                routes, result["routes"][std::to_string(routes)]["attach"]["p99_us"].get<double>(),
                result["routes"][std::to_string(routes)]["route_add"]["p99_us"].get<double>(),
                result["routes"][std::to_string(routes)]["route_withdraw"]["p99_us"].get<double>(),
                result["churn"][std::to_string(routes)]["changes_per_s"].get<double>(), median(ratios),
                static_cast<unsigned long long>(w.lost.load()), tables_mib, steady_rss, peak_rss);
    if (w.lost.load() != 0) {
      std::fprintf(stderr, "the worker lost frames toward steady destinations (%s)\n", w.lost_reason.c_str());
      std::ofstream(out) << result.dump(2) << "\n";
      return 1;
    }
  }
  std::ofstream(out) << result.dump(2) << "\n";
  rte_eal_cleanup();
  return 0;
}
