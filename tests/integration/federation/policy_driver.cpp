// vxfed-policy-driver: one PolicyStore client per process (federation/policy_store.hpp), for
// the integration test of identity numbers on a real etcd and for trying the store by hand:
//   apply --cluster C --file F     applies what `kubectl get -o yaml` printed (policy/parse.hpp)
//                                  as one batch; prints {"revision","attempts","new_identities",
//                                  "pods":[{"namespace","name","identity"}]}
//   race --cluster C --node N --rounds R
//                                  R applies in a row, round i one batch of two pods of
//                                  namespace race: N-shared-i with labels {round: i} (the same
//                                  label set in every process) and N-own-i with {round: i, node:
//                                  N} (this process's alone); prints one apply line per round
//                                  with "round" added
//   list                           prints {"revision","policies":[ns/name@cluster],
//                                  "identities":{N: key},"users":{N: count}}
// Common: --endpoints a:p,b:p [--key-prefix /vxfed] [--timeout-ms T] [--start-at MS]
//         [--first F --last L] (the identity range it seeds the store with)
// Errors: "CODE: sentence" on stderr; exit 3 for UNAVAILABLE, 1 for any other error.
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "federation/etcd_client.hpp"
#include "federation/policy_store.hpp"
#include "policy/parse.hpp"

using namespace vxfed::federation;
using nlohmann::json;

namespace {

std::uint64_t now_ms() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

int fail(const StoreError& e) {
  std::cerr << code_name(e.code) << ": " << e.message << "\n";
  return e.code == Code::unavailable ? 3 : 1;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) out.push_back(part);
  return out;
}

json report_json(const ApplyReport& r) {
  json pods = json::array();
  for (const auto& p : r.pods) pods.push_back({{"namespace", p.namespace_name}, {"name", p.name}, {"identity", p.identity}});
  return {{"revision", r.revision}, {"attempts", r.attempts}, {"new_identities", r.new_identities}, {"pods", pods}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vxfed-policy-driver: a policy-store client for tests"};
  std::string endpoints, key_prefix = "/vxfed", cluster = "cluster-a", file, node;
  std::uint32_t timeout_ms = 2000, rounds = 10, first = 256, last = 65535;
  std::uint64_t start_at = 0;
  app.add_option("--endpoints", endpoints, "etcd members, comma-separated")->required();
  app.add_option("--key-prefix", key_prefix);
  app.add_option("--timeout-ms", timeout_ms);
  app.add_option("--start-at", start_at, "unix ms to wait for before acting");
  app.add_option("--first", first, "first number of the identity range to seed");
  app.add_option("--last", last, "last number of the identity range to seed");
  auto* apply = app.add_subcommand("apply", "apply a YAML file as one batch");
  apply->add_option("--cluster", cluster);
  apply->add_option("--file", file)->required();
  auto* race = app.add_subcommand("race", "apply rounds of one shared and one own label set");
  race->add_option("--cluster", cluster);
  race->add_option("--node", node)->required();
  race->add_option("--rounds", rounds);
  auto* list = app.add_subcommand("list", "print the policy state");
  app.require_subcommand(1);
  CLI11_PARSE(app, argc, argv);

  EtcdOptions options;
  options.endpoints = split(endpoints);
  options.key_prefix = key_prefix;
  options.request_timeout_ms = timeout_ms;
  options.client_name = node.empty() ? "policy-driver" : node;
  auto client = EtcdClient::create(options);
  if (!client) return fail(client.store_error());
  PolicyStoreOptions store_options;
  store_options.identity_range.first = first;
  store_options.identity_range.last = last;
  PolicyStore store(**client, store_options);
  if (start_at > now_ms()) std::this_thread::sleep_for(std::chrono::milliseconds(start_at - now_ms()));

  if (*apply) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    auto objects = vxfed::policy::parse_objects(text.str(), cluster, file);
    if (!objects) {
      std::cerr << "INVALID: " << objects.error() << "\n";
      return 1;
    }
    PolicyBatch batch{cluster, objects->policies, objects->namespaces, objects->pods, {}, {}, {}};
    auto r = store.apply(batch, now_ms());
    if (!r) return fail(r.store_error());
    std::cout << report_json(*r).dump() << std::endl;
    return 0;
  }
  if (*race) {
    for (std::uint32_t i = 0; i < rounds; ++i) {
      const std::string round = std::to_string(i);
      PolicyBatch batch;
      batch.cluster = cluster;
      batch.pods = {vxfed::policy::Pod{cluster, "race", node + "-shared-" + round, {{"round", round}}, {}},
                    vxfed::policy::Pod{cluster, "race", node + "-own-" + round, {{"round", round}, {"node", node}}, {}}};
      auto r = store.apply(batch, now_ms());
      if (!r) return fail(r.store_error());
      json line = report_json(*r);
      line["round"] = i;
      std::cout << line.dump() << std::endl;
    }
    return 0;
  }
  (void)list;
  auto state = store.list();
  if (!state) return fail(state.store_error());
  json policies = json::array(), identities = json::object(), users = json::object();
  for (const auto& p : state->policies) policies.push_back(p.namespace_name + "/" + p.name + "@" + p.cluster);
  for (const auto& [n, r] : state->identities) identities[std::to_string(n)] = r.key;
  for (const auto& [n, count] : state->users) users[std::to_string(n)] = count;
  std::cout << json{{"revision", state->revision}, {"policies", policies}, {"identities", identities}, {"users", users}}.dump()
            << std::endl;
  return 0;
}
