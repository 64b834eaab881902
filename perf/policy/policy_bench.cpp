// The policy compiler at federation size (policy/table_compiler.hpp; docs/policy.md, "Compiled
// tables: the benchmark"). One run:
//   identities   pods -> identities (identity_of, canonical keys, numbered from 256): the
//                store's work, reported apart from the compile
//   compile      PolicyCompiler::build() from every policy, every identity and this node's
//                local identities (the pods of one node of cluster-a), wall time
//   rss          peak RSS of the process (getrusage), and its growth during the compile
//   tables       bytes of the tables produced, table and entry counts
//   changes      one policy replaced, one identity added, one removed, one more local
//                identity (add_local): median, min and max of --changes of each; the local
//                set replaced (set_locals, every table rebuilt): of min(5, --changes)
//   decide       ns per call of decide_ingress / decide_egress_at_source / decide_remote_egress
//                over --queries random queries (median of 5 passes)
//   verify       --verify random queries compared with the reference allowed(); any
//                difference fails the run (exit 1)
// Prints one JSON object, and writes it to --out when given. Not a test except in its short
// form (perf/policy/meson.build); the figures are in docs/policy.md.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/cpu_baseline.h"
#include "perf/policy/sized_world.hpp"
#include "policy/compile.hpp"
#include "policy/identity.hpp"
#include "policy/table_compiler.hpp"

namespace {

using namespace vxfed::policy;
using vxfed::net::Ipv4Addr;
using Clock = std::chrono::steady_clock;

volatile std::uint64_t g_sink;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

double current_rss_mb() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return double(resident) * double(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

nlohmann::json spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {{"median", v[v.size() / 2]}, {"min", v.front()}, {"max", v.back()}};
}

struct Query {
  std::uint32_t local;
  std::uint16_t peer;
  Ipv4Addr address;
  std::uint8_t protocol;
  std::uint16_t port;
};

struct Derived {
  vxfed::perf::SizedWorld world;
  std::vector<NumberedIdentity> identities;
};

// Makes the world, its pods one at a time turned into identities as the store numbers them
// (the pods are not kept). The pods at `local_pod_indexes` are this node's: their distinct
// identities are appended to `locals`. `ms` gets the identity work's time.
Derived derive(const vxfed::perf::WorldSize& size, std::uint64_t seed, const std::set<std::size_t>& local_pod_indexes,
               std::vector<LocalIdentity>& locals, double& ms) {
  Derived d;
  std::unordered_map<std::string, std::uint16_t> numbers;
  std::set<std::uint16_t> local_numbers;
  std::size_t pod_index = 0;
  d.world = vxfed::perf::make_world(size, seed, [&](const Pod& pod, const Namespace& ns) {
    const auto t = Clock::now();
    Identity id = identity_of(pod, &ns);
    if (d.identities.size() == 65536 - 256) {
      std::fprintf(stderr, "vxfed-policy-bench: more than 65,280 identities: fewer --statefulsets\n");
      std::exit(2);
    }
    auto [it, fresh] = numbers.try_emplace(canonical_key(id), static_cast<std::uint16_t>(256 + d.identities.size()));
    if (fresh) d.identities.push_back({it->second, std::move(id)});
    if (local_pod_indexes.count(pod_index++) && local_numbers.insert(it->second).second)
      locals.push_back(d.identities[it->second - 256]);
    ms += ms_since(t);
  });
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  vxfed_require_cpu_baseline("vxfed-policy-bench");
  CLI::App app{"vxfed policy compiler benchmark"};
  vxfed::perf::WorldSize size;
  int local_pods = 30, changes = 20;
  std::size_t queries = 1'000'000, verify = 100'000;
  std::uint64_t seed = 20261206;
  std::string out;
  app.add_option("--pods", size.pods, "pods over every cluster");
  app.add_option("--policies", size.policies, "policies over every cluster");
  app.add_option("--namespaces", size.namespaces, "namespace names (each in every cluster)");
  app.add_option("--statefulsets", size.statefulsets, "StatefulSets per namespace that has them (one identity per member)");
  app.add_option("--statefulset-every", size.statefulset_every, "every Nth namespace has StatefulSets")
      ->check(CLI::PositiveNumber);
  app.add_option("--local-pods", local_pods, "pods on this node (of cluster-a)");
  app.add_option("--changes", changes, "incremental changes of each kind")->check(CLI::PositiveNumber);
  app.add_option("--queries", queries, "decide() calls per pass")->check(CLI::PositiveNumber);
  app.add_option("--verify", verify, "queries compared with the reference allowed()");
  app.add_option("--seed", seed, "world seed");
  app.add_option("--out", out, "JSON file (also printed)");
  CLI11_PARSE(app, argc, argv);

  nlohmann::json result;
  result["size"] = {{"pods", size.pods}, {"policies", size.policies}, {"namespaces", size.namespaces * size.clusters},
                    {"statefulsets", size.statefulsets}, {"statefulset_every", size.statefulset_every},
                    {"clusters", size.clusters}, {"local_pods", local_pods}};
  // This node: --local-pods pods of cluster-a drawn with the seed.
  std::mt19937_64 rng(seed + 1);
  const std::size_t cluster_a_pods = static_cast<std::size_t>(size.pods / size.clusters);
  std::set<std::size_t> local_pod_indexes;
  while (local_pod_indexes.size() < static_cast<std::size_t>(local_pods) && local_pod_indexes.size() < cluster_a_pods)
    local_pod_indexes.insert(rng() % cluster_a_pods);
  std::vector<LocalIdentity> locals;
  double identities_ms = 0;
  auto t0 = Clock::now();
  Derived derived = derive(size, seed, local_pod_indexes, locals, identities_ms);
  result["generate_ms"] = ms_since(t0) - identities_ms;
  result["identities_ms"] = identities_ms;
  result["identities"] = derived.identities.size();
  result["local_identities"] = locals.size();
  const vxfed::perf::SizedWorld& world = derived.world;

  // What the queries and changes need, kept aside: the identities themselves go to the
  // compiler, so that the process holds one copy of them, as vxfedd would.
  const std::size_t identity_count = derived.identities.size();
  std::vector<std::uint16_t> all_numbers;
  std::map<std::string, std::vector<std::uint16_t>> by_namespace;
  for (const auto& n : derived.identities) {
    all_numbers.push_back(n.number);
    by_namespace[n.identity.namespace_name].push_back(n.number);
  }
  std::vector<NumberedIdentity> samples;
  for (int i = 0; i < 2 * changes; ++i) samples.push_back(derived.identities[rng() % identity_count]);

  std::vector<Policy> policies = world.policies;  // the copy build() takes, made before the clock starts
  std::vector<LocalIdentity> locals_copy = locals;
  const double rss_before = current_rss_mb();
  PolicyCompiler compiler(vxfed::perf::kBenchNetwork);
  t0 = Clock::now();
  compiler.build(std::move(policies), std::move(derived.identities), std::move(locals_copy));
  result["compile_ms"] = ms_since(t0);
  result["rss_mb"] = {{"before_compile", rss_before}, {"after_compile", current_rss_mb()}, {"peak", peak_rss_mb()}};

  const PolicyTables& tables = compiler.tables();
  std::size_t peer_entries = 0, address_spans = 0, remote_tables = 0;
  for (const auto* v : {&tables.local_ingress, &tables.local_egress, &tables.remote_egress_tables})
    for (const DirectionTable& t : *v) {
      peer_entries += t.peers.size();
      address_spans += t.addresses.size();
    }
  for (std::uint32_t slot : tables.remote_egress_of) remote_tables += slot != PolicyTables::kNoTable;
  result["tables"] = {{"bytes", tables.bytes()},
                      {"local_tables", tables.local_ingress.size() + tables.local_egress.size()},
                      {"identities_with_remote_egress", remote_tables},
                      {"remote_egress_tables", tables.remote_egress_tables.size()},
                      {"peer_entries", peer_entries},
                      {"address_spans", address_spans},
                      {"port_sets", tables.port_sets.size()}};

  // Incremental changes, each timed alone.
  std::vector<double> policy_ms, add_ms, remove_ms, local_ms;
  std::vector<std::size_t> rebuilt;
  for (int i = 0; i < changes; ++i) {
    // A policy of a local identity's namespace, replaced by another kind under its name.
    const Identity& local = locals[static_cast<std::size_t>(i) % locals.size()].identity;
    std::vector<const Policy*> of_namespace;
    for (const Policy& q : world.policies)
      if (q.cluster == local.cluster && q.namespace_name == local.namespace_name) of_namespace.push_back(&q);
    const Policy& existing = *of_namespace[rng() % of_namespace.size()];
    Policy p = vxfed::perf::make_policy(local.cluster, local.namespace_name, static_cast<int>(rng() % 20), seed + i);
    p.name = existing.name;
    t0 = Clock::now();
    const ChangeCost cost = compiler.apply_policy(p);
    policy_ms.push_back(ms_since(t0));
    rebuilt.push_back(cost.tables_rebuilt);

    // A new identity: a pod with a new label set in a random namespace, then its release.
    // A number above every allocated one (the bench numbers from 256 up, without gaps).
    NumberedIdentity fresh{static_cast<std::uint16_t>(std::min<std::size_t>(65535, 256 + identity_count + i)),
                           samples[static_cast<std::size_t>(i)].identity};
    fresh.identity.pod_labels["version"] = "canary-" + std::to_string(i);
    t0 = Clock::now();
    compiler.add_identity(fresh);
    add_ms.push_back(ms_since(t0));
    t0 = Clock::now();
    compiler.remove_identity(fresh.number);
    remove_ms.push_back(ms_since(t0));
  }
  std::vector<double> set_locals_ms;
  for (int i = 0; i < changes; ++i) {  // a pod of an identity new to this node
    t0 = Clock::now();
    compiler.add_local(samples[static_cast<std::size_t>(changes + i)]);
    local_ms.push_back(ms_since(t0));
  }
  for (int i = 0; i < std::min(changes, 5); ++i) {  // the local set replaced: every table rebuilt
    std::vector<LocalIdentity> again = locals;
    again.push_back(samples[static_cast<std::size_t>(i)]);
    t0 = Clock::now();
    compiler.set_locals(std::move(again));
    set_locals_ms.push_back(ms_since(t0));
  }
  compiler.set_locals(locals);
  std::sort(rebuilt.begin(), rebuilt.end());
  result["changes_ms"] = {{"policy_replaced", spread(policy_ms)}, {"identity_added", spread(add_ms)},
                          {"identity_removed", spread(remove_ms)}, {"local_identity_added", spread(local_ms)},
                          {"locals_replaced", spread(set_locals_ms)},
                          {"policy_tables_rebuilt_median", rebuilt[rebuilt.size() / 2]}};

  // Queries: peers drawn from every identity and the reserved numbers, addresses from the pod
  // range, the load balancers' range (ipBlocks) and the internet, ports around the rules'.
  auto random_query = [&] {
    Query q;
    q.local = static_cast<std::uint32_t>(rng() % tables.local_ingress.size());
    const std::uint32_t r = static_cast<std::uint32_t>(rng() % 100);
    if (r < 3) {
      q.peer = static_cast<std::uint16_t>(r);
    } else if (r < 50) {  // from the local pod's own namespace (in any cluster), where most rules point
      const auto& near = by_namespace.at(compiler.locals()[q.local].identity.namespace_name);
      q.peer = near[rng() % near.size()];
    } else {
      q.peer = all_numbers[rng() % all_numbers.size()];
    }
    const std::uint32_t a = static_cast<std::uint32_t>(rng() % 3);
    const auto bits = static_cast<std::uint32_t>(rng());
    q.address = Ipv4Addr{a == 0 ? 0x0a000000u | (bits & 0xffffff) : a == 1 ? 0xc0a80000u | (bits & 0xffff) : bits};
    static const std::uint16_t kPorts[] = {53, 80, 443, 5432, 6379, 7050, 8000, 8050, 8081, 8085, 9090, 9100, 22};
    q.protocol = rng() % 10 == 0 ? 17 : 6;
    q.port = kPorts[rng() % std::size(kPorts)];
    return q;
  };
  std::vector<Query> qs(queries);
  for (Query& q : qs) q = random_query();
  std::vector<double> in_ns, src_ns, remote_ns;
  for (int pass = 0; pass < 5; ++pass) {
    std::uint64_t sink = 0;
    t0 = Clock::now();
    for (const Query& q : qs) sink += decide_ingress(tables, q.local, q.peer, q.address, q.protocol, q.port);
    in_ns.push_back(ms_since(t0) * 1e6 / double(qs.size()));
    t0 = Clock::now();
    for (const Query& q : qs)
      sink += static_cast<int>(decide_egress_at_source(tables, q.local, q.address, q.protocol, q.port));
    src_ns.push_back(ms_since(t0) * 1e6 / double(qs.size()));
    t0 = Clock::now();
    for (const Query& q : qs)
      sink += decide_remote_egress(tables, q.peer, compiler.locals()[q.local].number, q.address, q.protocol, q.port);
    remote_ns.push_back(ms_since(t0) * 1e6 / double(qs.size()));
    g_sink = sink;
  }
  result["decide_ns"] = {{"ingress", spread(in_ns)}, {"egress_at_source", spread(src_ns)},
                         {"remote_egress", spread(remote_ns)}};

  // Verification against the reference.
  std::size_t mismatches = 0, allowed_count = 0;
  // The identities again, for the reference (the same seed makes the same world).
  std::vector<LocalIdentity> unused;
  double unused_ms = 0;
  const std::vector<NumberedIdentity> identities =
      verify > 0 ? derive(size, seed, {}, unused, unused_ms).identities : std::vector<NumberedIdentity>{};
  std::map<std::uint16_t, const Identity*> by_number;
  for (const auto& n : identities) by_number[n.number] = &n.identity;
  const Identity unlabelled = Identity::make_unlabelled();
  auto peer_of = [&](std::uint16_t n) -> std::optional<Identity> {
    if (n == kPeerUnlabelled) return unlabelled;
    const auto it = by_number.find(n);
    return it == by_number.end() ? std::nullopt : std::optional<Identity>(*it->second);
  };
  result["verified"] = verify;
  if (verify > 0) {
    // The compiler was changed above: rebuild from the world as generated so the reference and
    // the tables see the same policies.
    compiler.build(world.policies, identities, locals);
    std::vector<CompiledRules> local_rules;
    for (const auto& l : locals) local_rules.push_back(compile(l.identity, vxfed::perf::kBenchNetwork, world.policies));
    std::map<std::uint16_t, CompiledRules> remote_rules;
    for (std::size_t i = 0; i < verify; ++i) {
      const Query q = random_query();
      const PeerRef peer{peer_of(q.peer), q.address};
      const bool in = allowed(local_rules[q.local], Direction::Ingress, peer, q.protocol, q.port);
      mismatches += decide_ingress(compiler.tables(), q.local, q.peer, q.address, q.protocol, q.port) != in;
      const bool out = allowed(local_rules[q.local], Direction::Egress, peer, q.protocol, q.port);
      mismatches += decide_local_egress(compiler.tables(), q.local, q.peer, q.address, q.protocol, q.port) != out;
      allowed_count += in + out;
      if (q.peer >= 256) {  // the peer as a remote source toward this local pod
        auto it = remote_rules.find(q.peer);
        if (it == remote_rules.end())
          it = remote_rules.emplace(q.peer, compile(*by_number.at(q.peer), vxfed::perf::kBenchNetwork, world.policies))
                   .first;
        const PeerRef local_peer{peer_of(locals[q.local].number), q.address};
        mismatches += decide_remote_egress(compiler.tables(), q.peer, locals[q.local].number, q.address, q.protocol,
                                           q.port) != allowed(it->second, Direction::Egress, local_peer, q.protocol,
                                                              q.port);
      }
    }
  }
  result["verify_mismatches"] = mismatches;
  result["verify_allowed_share"] = verify ? double(allowed_count) / double(2 * verify) : 0.0;
  result["rss_mb"]["peak_at_end"] = peak_rss_mb();

  const std::string text = result.dump(2);
  std::printf("%s\n", text.c_str());
  if (!out.empty()) std::ofstream(out) << text << "\n";
  if (mismatches) {
    std::fprintf(stderr, "vxfed-policy-bench: %zu decisions differ from the reference allowed()\n", mismatches);
    return 1;
  }
  return 0;
}
