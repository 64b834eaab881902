// Connection tracking and Maglev microbenchmark (dataplane/core/conntrack.hpp, maglev.hpp): ns
// per operation on one core, single-threaded, as a worker would run them (but one packet at a
// time: no burst, no prefetch). For each table size (--flows, default 1k, 100k, 1M live flows,
// capacity 1.25x):
//   hit       find() of a live flow, in random order, half the packets in the reply direction,
//             then track(): the cost per packet of an established flow
//   hit_burst32  the same packets in bursts of 32: prefetch() of every home bucket, then
//             find() with the hash and track() (what the pipeline integration should do)
//   new_flow  find() that misses, insert() of the new flow, erase() of the oldest one (so the
//             table stays at its size): the cost per first packet of a flow
//   new_flow_nat  the same with a destination NAT (two keys per flow)
//   sweep64_call  one sweep(now, 64) call (64 entries visited, none expired), ns per call
// and for Maglev (65537 slots, --backends backends):
//   maglev_lookup          lookup() with the flow hashes precomputed (the table read alone)
//   maglev_hash_and_lookup flow_hash() of the tuple, then lookup()
// Every figure: the median of --repeat runs, with min and max. Prints one JSON object, and
// writes it to --out when given. Not a test (docs/conventions.md: measuring); docs/conntrack.md
// has the figures.
#include <arpa/inet.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/cpu_baseline.h"
#include "dataplane/core/conntrack.hpp"
#include "dataplane/core/flow_hash.hpp"
#include "dataplane/core/maglev.hpp"

namespace {

using namespace vxfed::dataplane;
using Clock = std::chrono::steady_clock;
constexpr std::size_t kBurst = 32;

volatile std::uint64_t g_sink;  // keeps the loops' results alive

// Distinct flows: 10.0.0.0/8 sources by index, a random source port, 64 servers on port 80.
std::vector<FlowTuple> make_flows(std::uint32_t n, std::uint32_t first, std::mt19937_64& rng) {
  std::vector<FlowTuple> v;
  v.reserve(n);
  for (std::uint32_t i = first; i < first + n; ++i)
    v.push_back(FlowTuple{htonl(0x0a000000u | (i & 0xffffff)), htonl(0xc0a80000u | static_cast<std::uint32_t>(rng() & 63)),
                          htons(static_cast<std::uint16_t>(1024 + rng() % 60000)), htons(80), 100 + (i >> 24),
                          6});
  return v;
}

struct Stats {
  double median, min, max;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

nlohmann::json to_json(const Stats& s) { return {{"median", s.median}, {"min", s.min}, {"max", s.max}}; }

template <typename F>
double ns_per_op(std::uint64_t ops, F&& body) {
  const auto t0 = Clock::now();
  body();
  const auto t1 = Clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / double(ops);
}

nlohmann::json bench_table(std::uint32_t flows, int repeat, std::uint64_t ops, std::mt19937_64& rng) {
  // The clock is in ns and advances 1 per packet: the default timeouts (seconds) never expire
  // a flow during a run, but every lookup still checks.
  auto created = ConntrackTable::create(
      {.capacity = flows + flows / 4, .timeouts = ConntrackTimeouts::from_seconds(1000000000)});
  if (!created.ok()) {
    std::fprintf(stderr, "%s\n", created.error().c_str());
    std::exit(1);
  }
  ConntrackTable& ct = **created;
  std::vector<FlowTuple> live = make_flows(flows, 0, rng);
  std::uint64_t now = 1;
  for (const FlowTuple& f : live)
    if (ct.insert(f, nullptr, 0, 0x02, now).status != InsertStatus::Inserted) {
      std::fprintf(stderr, "prefill of %u flows failed at %u\n", flows, ct.size());
      std::exit(1);
    }

  // Packets of live flows in random order, every other one in the reply direction.
  std::vector<FlowTuple> packets;
  packets.reserve(ops);
  std::uniform_int_distribution<std::uint32_t> pick(0, flows - 1);
  for (std::uint64_t i = 0; i < ops; ++i) packets.push_back(i & 1 ? reversed(live[pick(rng)]) : live[pick(rng)]);

  std::vector<double> hit, hit_burst, fresh, fresh_nat, sweep64;
  std::uint64_t missing = 0;                    // hit packets whose flow was not found
  std::map<std::string, std::uint64_t> failed;  // inserts refused, by status
  for (int r = 0; r < repeat; ++r) {
    hit.push_back(ns_per_op(ops, [&] {
      std::uint64_t found = 0;
      for (const FlowTuple& p : packets) {
        ++now;
        ConntrackHit h = ct.find(p, now);
        if (h) {
          ct.track(h, 0x10, now);
          ++found;
        }
      }
      g_sink = found;
      missing += ops - found;
    }));

    // The same packets as a worker would take them: in bursts of 32, every home bucket
    // prefetched first, then looked up.
    hit_burst.push_back(ns_per_op(ops, [&] {
      std::uint64_t found = 0;
      std::uint32_t hashes[kBurst];
      for (std::size_t base = 0; base + kBurst <= packets.size(); base += kBurst) {
        for (std::size_t i = 0; i < kBurst; ++i) hashes[i] = ct.prefetch(packets[base + i]);
        ++now;
        for (std::size_t i = 0; i < kBurst; ++i) {
          ConntrackHit h = ct.find(packets[base + i], hashes[i], now);
          if (h) {
            ct.track(h, 0x10, now);
            ++found;
          }
        }
      }
      g_sink = found;
    }));

    // New flows replace the oldest ones (FIFO over `live`), so the table keeps its size.
    for (const bool nat : {false, true}) {
      std::vector<FlowTuple> incoming = make_flows(static_cast<std::uint32_t>(ops), flows + 1 + r * 2 * ops + nat * ops, rng);
      const NatTarget backend{htonl(0x0af50001), htons(8080)};
      const double ns = ns_per_op(ops, [&] {
        std::size_t oldest = 0;
        for (const FlowTuple& f : incoming) {
          ++now;
          if (!ct.find(f, now)) {
            const InsertStatus st = ct.insert(f, nat ? &backend : nullptr, 0, 0x02, now).status;
            if (st != InsertStatus::Inserted) ++failed[insert_status_name(st)];
          }
          ConntrackHit old = ct.find(live[oldest], now);
          if (old) ct.erase(old.entry);
          live[oldest] = f;
          if (++oldest == live.size()) oldest = 0;
        }
      });
      (nat ? fresh_nat : fresh).push_back(ns);
      // Back to plain flows for the next round's hit figures: the NAT flows stay (they are live
      // flows too; their replies then come from the backend, which `packets` does not have).
    }
    // The expiry sweep as a worker loop calls it: 64 entries per call, nothing expired
    // (the visiting cost; each expired flow adds an erase).
    const std::uint64_t calls = 100000;
    sweep64.push_back(ns_per_op(calls, [&] {
      std::uint64_t expired = 0;
      for (std::uint64_t c = 0; c < calls; ++c) expired += ct.sweep(now, 64).expired;
      g_sink = expired;
    }));

    // Rebuild the hit packets from what is live now.
    for (std::uint64_t i = 0; i < ops; ++i) {
      const FlowTuple& f = live[pick(rng)];
      const ConntrackHit h = ct.find(f, now);
      packets[i] = (i & 1) && h ? h.entry->reply : f;
    }
  }
  return {{"flows", flows},
          {"capacity", ct.capacity()},
          {"buckets", ct.bucket_count()},
          {"ops_per_run", ops},
          {"hit_ns", to_json(stats(hit))},
          {"hit_burst32_ns", to_json(stats(hit_burst))},
          {"new_flow_ns", to_json(stats(fresh))},
          {"new_flow_nat_ns", to_json(stats(fresh_nat))},
          {"sweep64_call_ns", to_json(stats(sweep64))},
          // New flows refused (probe_full: every slot within the bounded probe taken) and the
          // hit packets of those flows, which then miss: over all runs.
          {"inserts_refused", failed},
          {"hit_packets_missed", missing}};
}

nlohmann::json bench_maglev(std::uint32_t n_backends, int repeat, std::uint64_t ops, std::mt19937_64& rng) {
  std::vector<MaglevBackend> backends;
  for (std::uint32_t i = 0; i < n_backends; ++i) backends.push_back({0x0af5000000001f90ull + (std::uint64_t{i} << 16), 1});
  const auto build_start = Clock::now();
  auto table = MaglevTable::build(backends);
  const double build_ms = std::chrono::duration<double, std::milli>(Clock::now() - build_start).count();
  if (!table.ok()) {
    std::fprintf(stderr, "%s\n", table.error().c_str());
    std::exit(1);
  }
  std::vector<FlowTuple> flows = make_flows(static_cast<std::uint32_t>(ops), 0, rng);
  std::vector<std::uint32_t> hashes;
  for (const FlowTuple& f : flows) hashes.push_back(flow_hash(f.src_ip_be, f.dst_ip_be, f.protocol, f.src_port_be, f.dst_port_be));
  std::vector<double> lookup, hash_lookup;
  for (int r = 0; r < repeat; ++r) {
    lookup.push_back(ns_per_op(ops, [&] {
      std::uint64_t sum = 0;
      for (std::uint32_t h : hashes) sum += table->lookup(h);
      g_sink = sum;
    }));
    hash_lookup.push_back(ns_per_op(ops, [&] {
      std::uint64_t sum = 0;
      for (const FlowTuple& f : flows)
        sum += table->lookup(flow_hash(f.src_ip_be, f.dst_ip_be, f.protocol, f.src_port_be, f.dst_port_be));
      g_sink = sum;
    }));
  }
  return {{"backends", n_backends},
          {"table_size", table->size()},
          {"build_ms", build_ms},
          {"maglev_lookup_ns", to_json(stats(lookup))},
          {"maglev_hash_and_lookup_ns", to_json(stats(hash_lookup))}};
}

}  // namespace

int main(int argc, char** argv) {
  vxfed_require_cpu_baseline("vxfed-conntrack-bench");
  CLI::App app{"vxfed conntrack and Maglev microbenchmark"};
  std::vector<std::uint32_t> flow_counts = {1000, 100000, 1000000};
  std::uint64_t ops = 2000000;
  std::uint32_t backends = 100;
  int repeat = 5;
  std::string out;
  app.add_option("--flows", flow_counts, "live flow counts");
  app.add_option("--ops", ops, "operations per run");
  app.add_option("--backends", backends, "Maglev backends");
  app.add_option("--repeat", repeat, "runs per figure (median, min, max)")->check(CLI::PositiveNumber);
  app.add_option("--out", out, "JSON file (also printed)");
  CLI11_PARSE(app, argc, argv);

  std::mt19937_64 rng(20261206);
  nlohmann::json result;
  for (std::uint32_t n : flow_counts) result["conntrack"].push_back(bench_table(n, repeat, ops, rng));
  result["maglev"] = bench_maglev(backends, repeat, ops, rng);
  const std::string text = result.dump(2);
  std::printf("%s\n", text.c_str());
  if (!out.empty()) std::ofstream(out) << text << "\n";
  return 0;
}
