// vxfedd's network-policy compile off the io thread (docs/policy.md, "Publishing to the
// forwarder"; docs/control.md, "Threads"). At 62,000 identities one change costs 25-45 ms of
// compile, conversion and serialization per network: on the io thread that held every
// vxfedctl request, the dataplane link, the metrics page and the BGP feeds as long. Here the
// PolicyFeed (the compilers) and the PolicyPublisher (what was last sent) live on a thread of
// their own; the io thread posts each listing or change of the attached pods, and gets back,
// by asio::post, the finished entries (handed to the sink there: one call, one Delta, only the
// changed entries) and a PolicyView, the little the io thread reads (metrics, each endpoint's
// identity number).
//
// Order: one thread runs the compiles in the order posted and posts each result in that
// order to the io thread, so results arrive oldest first; each carries its generation and a
// result not newer than the last delivered is dropped, so an older compile never overwrites a
// newer one. Stop (the destructor): the compile in progress finishes, the ones queued are
// dropped, the thread is joined, and no result is delivered after it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "control/federation/store_worker.hpp"
#include "control/policy/policy_feed.hpp"
#include "control/policy/policy_publisher.hpp"
#include "federation/policy_store.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::control {

// What the io thread holds of the compiled policy, as of one compile: copied out on the
// compile thread, read-only after.
struct PolicyView {
  struct Local {  // a local identity and what its two tables say
    std::uint16_t number = 0;
    std::string namespace_name;
    bool ingress_isolated = false, egress_isolated = false;
    std::size_t ingress_peers = 0, egress_peers = 0;
    // The policies isolating it ("namespace/name", PolicyCompiler::isolating): those a refusal
    // by its table counts for (docs/policy.md, "Drops per policy").
    std::vector<std::string> ingress_policies, egress_policies;
  };
  // A pod of the compile by its endpoint: where the forwarder's per-pod drops belong.
  struct Pod {
    std::string network, namespace_name, name;
    std::optional<std::size_t> local;  // its LocalIndex in networks[network].locals
  };
  struct Network {
    std::size_t table_bytes = 0;
    std::vector<Local> locals;
  };
  std::uint64_t generation = 0;  // the compile it comes from; 0: none yet
  std::size_t policies = 0, identities = 0;
  std::int64_t revision = 0;
  std::map<std::string, Network> networks;  // one per compiler
  // The identity number of each pod given with the compile, (namespace, name) -> number.
  std::map<std::pair<std::string, std::string>, std::uint16_t> numbers;
  std::map<std::string, Pod> pods_by_endpoint;  // by dp::Endpoint.id
  std::map<std::string, PolicyPublisher::Published> published;  // by network
  PolicyPublisher::Stats publication;                          // latency: the worker's io side fills it in

  // PolicyFeed::number_of() for the pods of the compile; another pod (attached since) is
  // unlabelled (1) until the next compile, which the follower's look at the pods brings.
  std::uint16_t number_of(const LocalPod& pod) const;
};

// Copies out what PolicyView holds; `pods`: the pods the feed was given.
PolicyView view_of(const PolicyFeed& feed, const PolicyPublisher& publisher, const std::vector<LocalPod>& pods);

class PolicyCompileWorker {
 public:
  struct Result {
    std::uint64_t generation = 0;
    bool listing = false;   // a listing (else a change of the attached pods)
    FeedReport report;      // what the compile changed
    std::string summary;    // the compilers' sizes, for the debug log (empty unless asked)
    std::shared_ptr<const PolicyView> view;
  };
  // On the io thread, after the sink had the result's entries.
  using Done = std::function<void(const Result&)>;
  // Tests only: runs on the compile thread before each compile (a slow compiler).
  using BeforeCompile = std::function<void()>;

  PolicyCompileWorker(boost::asio::io_context& io, std::string cluster, PolicyPublisher::Sink sink, Done done,
                      bool summaries = false, BeforeCompile before = {},
                      ClusterCidrs clusters = {});  // the GBP trust check's (PolicyPublisher)
  ~PolicyCompileWorker();  // see "Stop" above
  PolicyCompileWorker(const PolicyCompileWorker&) = delete;
  PolicyCompileWorker& operator=(const PolicyCompileWorker&) = delete;

  // io thread. A store listing with the attached pods; `publish_always`: publish even when the
  // compile changed nothing (the first listing, whose publication is the complete one).
  // `change_seen`: when the store change behind it was seen (the publication latency's start).
  void listing(federation::PolicySnapshot snapshot, std::vector<LocalPod> pods, bool publish_always,
               std::optional<PolicyPublisher::Clock::time_point> change_seen);
  // io thread. Only the attached pods changed.
  void locals(std::vector<LocalPod> pods);

  const PolicyView& view() const { return *view_; }  // io thread
  bool busy() const { return posted_ > delivered_; }  // io thread: a compile not delivered yet

 private:
  struct Outcome;  // a result and its entries, on their way to the io thread
  void compile(std::uint64_t generation, std::optional<federation::PolicySnapshot> snapshot,
               std::vector<LocalPod> pods, bool publish_always,
               std::optional<PolicyPublisher::Clock::time_point> change_seen);  // compile thread
  void deliver(Outcome& outcome);                                                // io thread

  boost::asio::io_context& io_;
  PolicyPublisher::Sink sink_;
  Done done_;
  bool summaries_;
  BeforeCompile before_;
  // Compile thread only.
  PolicyFeed feed_;
  PolicyPublisher publisher_;
  struct Sent {
    std::vector<dp::NetworkPolicy> upserts;
    std::vector<std::uint32_t> removals;
    bool complete = false;
    bool called = false;
  } sent_;
  // io thread only.
  std::uint64_t posted_ = 0, delivered_ = 0;
  std::shared_ptr<const PolicyView> view_ = std::make_shared<PolicyView>();
  std::chrono::nanoseconds last_latency_{0}, max_latency_{0};
  std::uint64_t latency_samples_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::unique_ptr<StoreWorker> thread_;  // last: stopped first
};

}  // namespace vxfed::control
