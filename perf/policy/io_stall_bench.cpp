// How long one policy change holds vxfedd's io thread (docs/policy.md, "Publishing to the
// forwarder", "Cost on the io thread"), before and after the compile moved to its own thread.
// The sized world of vxfed-policy-bench (perf/policy/sized_world.hpp) as a store listing, this
// node's pods on one network, the first listing compiled and published; then each run adds
// one policy for that network (a new listing) and, while an io thread ticks every millisecond
// (the stand-in for a vxfedctl request or a metrics scrape waiting to be served), either
//   inline: PolicyFeed::update + PolicyPublisher::update inside one io handler (the way
//           vxfedd ran them before), or
//   worker: PolicyCompileWorker::listing (the compile thread; the io thread only hands the
//           finished entries to the sink and swaps the view),
// and reports the longest a tick waited past its time (the io thread's stall) and the change's
// end to end time. The sink copies the entries as NodeState::set_policies would into a Delta.
// Prints JSON:
//   build/perf/policy/vxfed-policy-io-stall-bench [--statefulsets 6 --statefulset-every 1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "control/policy/policy_compile_worker.hpp"
#include "perf/policy/sized_world.hpp"
#include "policy/identity.hpp"

namespace asio = boost::asio;
namespace fed = vxfed::federation;
using namespace vxfed::policy;
using vxfed::control::LocalPod;
using Clock = std::chrono::steady_clock;

namespace {

// Ticks every millisecond on `io` and keeps the longest lateness of a tick.
struct Ticker {
  asio::steady_timer timer;
  Clock::time_point due;
  Clock::duration worst{};
  bool running = false;  // a tick already queued when stop() cancels still runs: it must not re-arm
  explicit Ticker(asio::io_context& io) : timer(io) {}
  void start() {
    worst = {};
    running = true;
    due = Clock::now() + std::chrono::milliseconds(1);
    arm();
  }
  void arm() {
    timer.expires_at(due);
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (ec || !running) return;
      worst = std::max(worst, Clock::now() - due);
      due = std::max(due + std::chrono::milliseconds(1), Clock::now());
      arm();
    });
  }
  void stop() {
    running = false;
    timer.cancel();
  }
};

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vxfedd io thread stall during a policy change"};
  vxfed::perf::WorldSize size;
  int local_pods = 30, runs = 5;
  std::uint64_t seed = 20261206;
  app.add_option("--pods", size.pods, "pods over every cluster");
  app.add_option("--policies", size.policies, "policies over every cluster");
  app.add_option("--statefulsets", size.statefulsets, "StatefulSets per namespace that has them");
  app.add_option("--statefulset-every", size.statefulset_every, "every Nth namespace has StatefulSets")
      ->check(CLI::PositiveNumber);
  app.add_option("--local-pods", local_pods, "pods on this node (of cluster-a)");
  app.add_option("--runs", runs, "changes timed each way")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::mt19937_64 rng(seed + 1);
  std::set<std::size_t> local_indexes;
  while (local_indexes.size() < static_cast<std::size_t>(local_pods)) local_indexes.insert(rng() % (size.pods / 2));
  fed::PolicySnapshot listing;
  std::vector<LocalPod> pods;
  std::unordered_map<std::string, std::uint32_t> numbers;
  std::size_t pod_index = 0;
  auto world = vxfed::perf::make_world(size, seed, [&](const Pod& pod, const Namespace& ns) {
    const std::string key = canonical_key(identity_of(pod, &ns));
    auto [it, fresh] = numbers.try_emplace(key, static_cast<std::uint32_t>(256 + numbers.size()));
    if (fresh) listing.identities[it->second] = fed::IdentityRecord{it->second, key};
    if (!local_indexes.count(pod_index++)) return;
    listing.pods.push_back({pod.cluster, pod.namespace_name, pod.name, fed::PodRecord{pod.labels, it->second}});
    pods.push_back(LocalPod{vxfed::perf::kBenchNetwork, pod.namespace_name, pod.name,
                            "container-" + std::to_string(pods.size()) + "/net1", 4097});
  });
  std::sort(pods.begin(), pods.end());
  listing.policies = world.policies;
  listing.namespaces = world.namespaces;
  listing.revision = 1;

  // The next change: one more policy of the first local pod's namespace, for the network.
  int added = 0;
  auto next_listing = [&] {
    listing.policies.push_back(vxfed::perf::make_policy("cluster-a", pods.front().namespace_name, 90000 + added++, seed));
    ++listing.revision;
    return listing;
  };

  asio::io_context io;
  std::size_t sent_bytes = 0, sink_calls = 0;
  auto sink = [&](const std::vector<vxfed::control::dp::NetworkPolicy>& upserts, const std::vector<std::uint32_t>&, bool) {
    ++sink_calls;
    std::vector<vxfed::control::dp::NetworkPolicy> delta(upserts.begin(), upserts.end());  // the Delta's copy
    for (const auto& p : delta) sent_bytes = p.ByteSizeLong();
  };
  Ticker ticker(io);
  nlohmann::json out;

  // Inline: the compile and the build inside one io handler.
  {
    vxfed::control::PolicyFeed feed("cluster-a");
    vxfed::control::PolicyPublisher publisher(sink);
    const auto t0 = Clock::now();
    feed.update(listing, pods);
    publisher.update(feed, pods, std::nullopt);
    out["first_compile_ms"] = ms(Clock::now() - t0);
    out["identities"] = feed.identities();
    out["policies"] = feed.policies();
    std::vector<double> stall, total;
    for (int r = 0; r < runs; ++r) {
      auto snapshot = next_listing();
      ticker.start();
      Clock::time_point start, end;
      asio::steady_timer go(io, std::chrono::milliseconds(5)), settle(io);
      go.async_wait([&](const boost::system::error_code&) {
        start = Clock::now();
        feed.update(snapshot, pods);
        publisher.update(feed, pods, std::nullopt);
        end = Clock::now();
        settle.expires_after(std::chrono::milliseconds(5));  // the ticks held back run meanwhile
        settle.async_wait([&](const boost::system::error_code&) { ticker.stop(); });
      });
      io.restart();
      io.run();
      stall.push_back(ms(ticker.worst));
      total.push_back(ms(end - start));
    }
    out["inline"] = {{"io_stall_ms", stall}, {"change_ms", total}};
  }

  // Worker: the same changes through PolicyCompileWorker.
  {
    bool delivered = false;
    vxfed::control::PolicyCompileWorker worker(io, "cluster-a", sink,
                                               [&](const vxfed::control::PolicyCompileWorker::Result&) { delivered = true; });
    listing.revision = 1;
    listing.policies.resize(world.policies.size());
    added = 0;
    worker.listing(listing, pods, true, std::nullopt);
    io.restart();
    while (!delivered) io.run_one();
    std::vector<double> stall, total, handler;
    for (int r = 0; r < runs; ++r) {
      auto snapshot = next_listing();
      delivered = false;
      ticker.start();
      Clock::time_point start, end;
      asio::steady_timer go(io, std::chrono::milliseconds(5));
      go.async_wait([&](const boost::system::error_code&) {
        start = Clock::now();
        worker.listing(std::move(snapshot), pods, false, std::nullopt);
      });
      io.restart();
      while (!delivered) io.run_one();
      end = Clock::now();
      ticker.stop();
      io.run_for(std::chrono::milliseconds(5));
      stall.push_back(ms(ticker.worst));
      total.push_back(ms(end - start));
    }
    out["worker"] = {{"io_stall_ms", stall}, {"change_ms", total}};
  }
  out["entry_bytes"] = sent_bytes;
  out["sink_calls"] = sink_calls;
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
