// control/policy/policy_compile_worker.hpp: the policy compile runs off the io thread. With a
// slow compiler injected, the io thread answers (a timer fires, as a vxfedctl request or the
// metrics page would be served) while the compile is in progress; the entries reach the sink
// on the io thread, in one call; results arrive in the order posted (an older compile never
// overwrites a newer one); stopping mid-compile delivers nothing and leaves no thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "control/policy/policy_compile_worker.hpp"
#include "policy/identity.hpp"
#include "policy/parse.hpp"

namespace vxfed::control {
namespace {

namespace asio = boost::asio;
namespace fed = ::vxfed::federation;
namespace pol = ::vxfed::policy;
using namespace std::chrono_literals;

constexpr std::uint32_t kRed = 1001;

// prod's pods db-0 (app: db) and web-1 (app: web), numbered 300 and 301, and with `with_policy`
// db's ingress from web.
fed::PolicySnapshot listing(std::int64_t revision, bool with_policy) {
  std::string yaml = "apiVersion: v1\nkind: List\nitems:\n"
                     "- {apiVersion: v1, kind: Namespace, metadata: {name: prod}}\n"
                     "- {apiVersion: v1, kind: Pod, metadata: {name: db-0, namespace: prod, labels: {app: db}}}\n"
                     "- {apiVersion: v1, kind: Pod, metadata: {name: web-1, namespace: prod, labels: {app: web}}}\n";
  if (with_policy)
    yaml += "- apiVersion: k8s.cni.cncf.io/v1beta1\n"
            "  kind: MultiNetworkPolicy\n"
            "  metadata: {name: db, namespace: prod, annotations: {k8s.v1.cni.cncf.io/policy-for: red}}\n"
            "  spec:\n"
            "    podSelector: {matchLabels: {app: db}}\n"
            "    policyTypes: [Ingress]\n"
            "    ingress:\n"
            "    - from: [{podSelector: {matchLabels: {app: web}}}]\n";
  auto objects = pol::parse_objects(yaml, "cluster-a", "test.yaml");
  EXPECT_TRUE(objects) << (objects ? "" : objects.error());
  fed::PolicySnapshot s;
  s.revision = revision;
  s.namespaces = objects->namespaces;
  s.policies = objects->policies;
  std::uint32_t number = 300;
  for (const auto& pod : objects->pods) {
    const auto key = pol::canonical_key(pol::identity_of(pod, &objects->namespaces.at(0)));
    s.pods.push_back({pod.cluster, pod.namespace_name, pod.name, fed::PodRecord{pod.labels, number}});
    s.identities[number] = fed::IdentityRecord{number, key};
    s.users[number] = 1;
    ++number;
  }
  return s;
}

std::vector<LocalPod> pods() {
  return {LocalPod{"red", "prod", "db-0", "c-db/net1", kRed}, LocalPod{"red", "prod", "web-1", "c-web/net1", kRed}};
}

struct SinkCall {
  std::thread::id thread;
  std::vector<std::uint32_t> upserts, removals;
  bool complete = false;
};

struct Bed {
  asio::io_context io;
  std::vector<SinkCall> calls;
  std::vector<std::uint64_t> delivered;     // generations, in the order done() saw them
  std::vector<std::int64_t> revisions;      // the views' revisions, likewise
  std::atomic<int> compiles{0};
  std::thread::id compile_thread;
  std::function<void()> slow;               // the injected slow compiler's wait
  std::unique_ptr<PolicyCompileWorker> worker;

  Bed() {
    worker = std::make_unique<PolicyCompileWorker>(
        io, "cluster-a",
        [this](const std::vector<dp::NetworkPolicy>& u, const std::vector<std::uint32_t>& r, bool complete) {
          SinkCall c{std::this_thread::get_id(), {}, r, complete};
          for (const auto& p : u) c.upserts.push_back(p.vni());
          calls.push_back(std::move(c));
        },
        [this](const PolicyCompileWorker::Result& r) {
          delivered.push_back(r.generation);
          revisions.push_back(r.view->revision);
        },
        false, [this] {
          compile_thread = std::this_thread::get_id();
          ++compiles;
          if (slow) slow();
        });
  }
  // Runs the io thread until `n` results were delivered (at most 10 s).
  void run_until(std::size_t n) {
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (delivered.size() < n && std::chrono::steady_clock::now() < end) {
      io.restart();
      io.run_for(5ms);
    }
  }
};

TEST(PolicyCompileWorker, TheIoThreadAnswersWhileASlowCompileIsInProgress) {
  Bed bed;
  std::promise<void> release;
  auto released = release.get_future().share();
  // The compiler waits until the io thread has answered, at most 5 s: were the compile on the
  // io thread, nothing would answer meanwhile and the results below would show it.
  bed.slow = [released] { released.wait_for(5s); };

  bool answered_during_compile = false;
  std::chrono::steady_clock::duration answer_delay{};
  const auto posted = std::chrono::steady_clock::now();
  bed.worker->listing(listing(1, true), pods(), true, std::nullopt);
  EXPECT_TRUE(bed.worker->busy());
  asio::steady_timer request(bed.io, 20ms);  // the "request" the io thread serves
  request.async_wait([&](const boost::system::error_code&) {
    answer_delay = std::chrono::steady_clock::now() - posted;
    answered_during_compile = bed.compiles.load() == 1 && bed.delivered.empty();
    release.set_value();
  });
  const auto io_thread = std::this_thread::get_id();
  bed.run_until(1);

  EXPECT_TRUE(answered_during_compile);
  EXPECT_LT(answer_delay, 2s);  // the timer's 20 ms, not the compiler's 5 s
  EXPECT_NE(bed.compile_thread, io_thread);
  ASSERT_EQ(bed.delivered.size(), 1u);
  EXPECT_FALSE(bed.worker->busy());
  // The entries reached the sink on the io thread, in one call: red's, the complete first one.
  ASSERT_EQ(bed.calls.size(), 1u);
  EXPECT_EQ(bed.calls[0].thread, io_thread);
  EXPECT_EQ(bed.calls[0].upserts, std::vector<std::uint32_t>{kRed});
  EXPECT_TRUE(bed.calls[0].complete);
  // The io thread's view: what was compiled and published.
  const auto& view = bed.worker->view();
  EXPECT_EQ(view.revision, 1);
  EXPECT_EQ(view.policies, 1u);
  EXPECT_EQ(view.number_of(pods()[0]), 300);
  EXPECT_EQ(view.number_of(LocalPod{"red", "prod", "not-compiled", "", kRed}), pol::kPeerUnlabelled);
  ASSERT_EQ(view.published.count("red"), 1u);
  EXPECT_EQ(view.published.at("red").vni, kRed);
  ASSERT_EQ(view.networks.count("red"), 1u);
  EXPECT_EQ(view.networks.at("red").locals.size(), 2u);
}

TEST(PolicyCompileWorker, ResultsArriveInOrderAndOnlyChangesAreSent) {
  Bed bed;
  bed.slow = [] { std::this_thread::sleep_for(30ms); };
  // Three changes posted at once, the io thread busy elsewhere: the policy, the same again
  // (nothing changed, nothing sent), then its deletion (a removal).
  bed.worker->listing(listing(1, true), pods(), true, std::nullopt);
  bed.worker->listing(listing(2, true), pods(), false, std::chrono::steady_clock::now());
  bed.worker->listing(listing(3, false), pods(), false, std::chrono::steady_clock::now());
  bed.run_until(3);
  EXPECT_EQ(bed.delivered, (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(bed.revisions, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(bed.worker->view().revision, 3);
  ASSERT_EQ(bed.calls.size(), 2u);
  EXPECT_EQ(bed.calls[0].upserts, std::vector<std::uint32_t>{kRed});
  EXPECT_TRUE(bed.calls[1].upserts.empty());
  EXPECT_EQ(bed.calls[1].removals, std::vector<std::uint32_t>{kRed});
  EXPECT_TRUE(bed.worker->view().published.empty());
  // The removal was caused by a store change: its latency was taken on the io thread.
  EXPECT_EQ(bed.worker->view().publication.latency_samples, 1u);
  EXPECT_EQ(bed.worker->view().publication.removals, 1u);
}

TEST(PolicyCompileWorker, APodAttachedIsCompiledFromTheAttachedPodsAlone) {
  Bed bed;
  auto two = pods();
  bed.worker->listing(listing(1, true), {two[0]}, true, std::nullopt);
  bed.worker->locals(two);
  bed.run_until(2);
  ASSERT_EQ(bed.calls.size(), 2u);
  EXPECT_EQ(bed.calls[1].upserts, std::vector<std::uint32_t>{kRed});  // web-1 mapped now
  EXPECT_FALSE(bed.calls[1].complete);
  EXPECT_EQ(bed.worker->view().number_of(two[1]), 301);
  EXPECT_EQ(bed.worker->view().published.at("red").endpoints, 2u);
}

TEST(PolicyCompileWorker, StoppedMidCompileDeliversNothingAndJoins) {
  Bed bed;
  std::atomic<bool> finished{false};
  bed.slow = [&] {
    std::this_thread::sleep_for(200ms);
    finished = true;
  };
  bed.worker->listing(listing(1, true), pods(), true, std::nullopt);
  bed.worker->listing(listing(2, false), pods(), false, std::nullopt);  // queued: dropped at the stop
  while (bed.compiles.load() == 0) std::this_thread::sleep_for(1ms);
  bed.worker.reset();  // waits for the compile in progress, joins
  EXPECT_TRUE(finished);
  EXPECT_EQ(bed.compiles.load(), 1);
  bed.io.restart();
  bed.io.run_for(50ms);  // the posted result finds the worker gone
  EXPECT_TRUE(bed.delivered.empty());
  EXPECT_TRUE(bed.calls.empty());
}

}  // namespace
}  // namespace vxfed::control
