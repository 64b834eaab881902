// What vxfedd's policy publication costs on its io thread at federation size (docs/policy.md,
// "Publishing to the forwarder"): the sized world of vxfed-policy-bench (perf/policy/
// sized_world.hpp) compiled for one node's pods, then its NetworkPolicy entry built
// (control/policy/policy_wire.hpp) and serialized, as PolicyPublisher::update() does for each
// network after a change, and the entry's bytes. Prints JSON:
//   build/perf/policy/vxfed-policy-publish-bench [--statefulsets 6 --statefulset-every 1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "control/policy/policy_wire.hpp"
#include "perf/policy/sized_world.hpp"
#include "policy/identity.hpp"
#include "policy/table_compiler.hpp"

using namespace vxfed::policy;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  CLI::App app{"vxfed policy publication benchmark"};
  vxfed::perf::WorldSize size;
  int local_pods = 30, runs = 5;
  std::uint64_t seed = 20261206;
  app.add_option("--pods", size.pods, "pods over every cluster");
  app.add_option("--policies", size.policies, "policies over every cluster");
  app.add_option("--statefulsets", size.statefulsets, "StatefulSets per namespace that has them");
  app.add_option("--statefulset-every", size.statefulset_every, "every Nth namespace has StatefulSets")
      ->check(CLI::PositiveNumber);
  app.add_option("--local-pods", local_pods, "pods on this node (of cluster-a)");
  app.add_option("--runs", runs, "builds timed")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::mt19937_64 rng(seed + 1);
  std::set<std::size_t> local_indexes;
  while (local_indexes.size() < static_cast<std::size_t>(local_pods)) local_indexes.insert(rng() % (size.pods / 2));
  std::vector<NumberedIdentity> identities;
  std::vector<LocalIdentity> locals;
  std::unordered_map<std::string, std::uint16_t> numbers;
  std::set<std::uint16_t> local_numbers;
  std::size_t pod_index = 0;
  auto world = vxfed::perf::make_world(size, seed, [&](const Pod& pod, const Namespace& ns) {
    Identity id = identity_of(pod, &ns);
    auto [it, fresh] = numbers.try_emplace(canonical_key(id), static_cast<std::uint16_t>(256 + identities.size()));
    if (fresh) identities.push_back({it->second, std::move(id)});
    if (local_indexes.count(pod_index++) && local_numbers.insert(it->second).second)
      locals.push_back(identities[it->second - 256]);
  });
  PolicyCompiler compiler(vxfed::perf::kBenchNetwork);
  const std::size_t identity_count = identities.size();
  compiler.build(world.policies, std::move(identities), locals);

  std::vector<vxfed::control::EndpointLocal> endpoints;
  for (std::size_t i = 0; i < static_cast<std::size_t>(local_pods); ++i)
    endpoints.push_back({"container-" + std::to_string(i) + "/net1", static_cast<std::uint32_t>(i % locals.size())});
  std::vector<double> build_ms, serialize_ms;
  std::size_t bytes = 0, groups = 0;
  for (int r = 0; r < runs; ++r) {
    auto t0 = Clock::now();
    auto entry = vxfed::control::network_policy_to_wire(4097, compiler.tables(), endpoints);
    auto t1 = Clock::now();
    const std::string wire = entry.SerializeAsString();
    auto t2 = Clock::now();
    build_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    serialize_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    bytes = wire.size();
    groups = static_cast<std::size_t>(entry.remote_egress_size());
  }
  auto spread = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return nlohmann::json{{"median", v[v.size() / 2]}, {"min", v.front()}, {"max", v.back()}};
  };
  nlohmann::json out = {{"identities", identity_count},
                        {"local_identities", locals.size()},
                        {"policies", world.policies.size()},
                        {"tables_bytes", compiler.tables().bytes()},
                        {"entry_bytes", bytes},
                        {"remote_egress_groups", groups},
                        {"build_ms", spread(build_ms)},
                        {"serialize_ms", spread(serialize_ms)}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
