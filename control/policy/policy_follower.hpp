// vxfedd follows network policy in the federation store (docs/policy.md, "vxfedd follows the
// store"), in the shape of the ServiceFollower (control/services/service_follower.hpp): a
// watch on v1/policy/, and on every event (and at start, and after the watch was broken) one
// PolicyStore::list() at one revision, handed to the io thread and fed to the PolicyFeed,
// which gives the compilers only what changed. Events that arrive while a list is on its way
// ask for one more list after it (a burst costs two lists). A list that fails (store away) is
// retried after kRetryMin, doubling to kRetryMax; the compiled tables stay as they are.
//
// The node's attached pods are read every kLocalsInterval on the io thread (a few dozen
// endpoints) and fed when they differ, so a pod attached or detached reaches the compilers
// without a store call.
//
// The identity collector: kMaintainFirst after start, then every kMaintainInterval, this node
// reads v1/collector, and when it is the federation's collector (the one node the
// FederationLink elected, on its lease) it runs PolicyStore::maintain() on the same worker.
// maintain() is guarded and any node may run it; running it on one node keeps its two prefix
// reads (every identity, every identity user) off the other nodes.
//
// Threads: the watch delivers on its own thread, which only posts to the io thread; the list
// and maintain() run on this object's StoreWorker; the compile, the entries' build and their
// comparison with what was sent run on the PolicyCompileWorker's thread
// (policy_compile_worker.hpp), which hands the finished entries and a PolicyView back; results
// come back by asio::post.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/logger.h>

#include "common/result.hpp"
#include "control/daemon/daemon_config.hpp"
#include "control/federation/store_worker.hpp"
#include "control/policy/policy_compile_worker.hpp"
#include "control/policy/policy_feed.hpp"
#include "control/policy/policy_publisher.hpp"
#include "federation/etcd_client.hpp"
#include "federation/policy_store.hpp"
#include "proto/control.pb.h"

namespace vxfed::control {

// The pods among the endpoints attached here: those the CNI named (K8S_POD_NAMESPACE and
// K8S_POD_NAME). An endpoint without them (attached by hand) is no pod a policy can select.
std::vector<LocalPod> local_pods(const std::vector<v1::EndpointInfo>& endpoints);

// The identity number an attached endpoint sends with (dp::Endpoint.identity, the VXLAN-GBP
// group policy ID; docs/policy.md, "Identities on the wire"): a pod's is feed.number_of() it
// (unlabelled, 1, until its number is listed); an endpoint that is no pod has 0 (unknown).
std::uint32_t endpoint_identity(const PolicyFeed& feed, const v1::EndpointInfo& endpoint);
// The same from the io thread's view of the last compile (a pod attached since: 1 until the next).
std::uint32_t endpoint_identity(const PolicyView& view, const v1::EndpointInfo& endpoint);

class PolicyFollower {
 public:
  static constexpr std::chrono::milliseconds kRetryMin{250};
  static constexpr std::chrono::milliseconds kRetryMax{5000};
  static constexpr std::chrono::milliseconds kLocalsInterval{500};
  // The first look soon after start (a collector that restarted finishes what it left), then
  // one a minute: one read of v1/collector per node per minute is the cost for the others.
  static constexpr std::chrono::milliseconds kMaintainFirst{3000};
  static constexpr std::chrono::milliseconds kMaintainInterval{60000};

  struct Stats {
    std::uint64_t listings = 0;       // lists fed to the compilers
    std::uint64_t list_failures = 0;  // store away
    std::uint64_t watch_breaks = 0;
    bool watching = false;
    std::uint64_t updates = 0;            // feeds that changed something (listings and attached pods)
    std::uint64_t records_skipped = 0;    // records left out because they did not read
    std::chrono::nanoseconds last_update{0}, max_update{0}, total_update{0};  // compile/apply durations
    std::uint64_t maintain_runs = 0, maintain_failures = 0, released = 0, forgotten = 0;
    bool collector = false;           // this node held v1/collector at the last look
  };
  using LocalPods = std::function<std::vector<LocalPod>()>;  // io thread
  // Told, on the io thread, after every compiled listing and every look at the attached pods,
  // so that the caller brings each endpoint's Endpoint.identity to view().number_of()
  // (idempotent: an endpoint re-attached under the same pod name is caught at the next look,
  // <= 500 ms, and its compile).
  using Identities = std::function<void(const PolicyView&)>;

  // Needs config.federation.enabled. `publish`: where each network's changed NetworkPolicy
  // entries go (PolicyPublisher), after every feed change; none: compiled, not published.
  static Result<std::unique_ptr<PolicyFollower>> create(boost::asio::io_context& io, const Config& config,
                                                        std::shared_ptr<spdlog::logger> log, LocalPods local_pods,
                                                        Identities identities = {}, PolicyPublisher::Sink publish = {});
  ~PolicyFollower();  // stops the watch and the worker before the client goes

  void start();
  const Stats& stats() const { return stats_; }
  // The last compile as the io thread holds it (the feed and the publisher are the compile
  // thread's): what was compiled and published.
  const PolicyView& view() const { return compile_->view(); }

 private:
  PolicyFollower(boost::asio::io_context& io, const Config& config, std::unique_ptr<federation::EtcdClient> client,
                 std::shared_ptr<spdlog::logger> log, LocalPods local_pods, Identities identities,
                 PolicyPublisher::Sink publish);
  void relist(const char* why);  // io thread
  void listed(federation::StoreResult<federation::PolicySnapshot> snapshot);
  void retry_later();
  void compiled(const PolicyCompileWorker::Result& result);  // io thread
  void watch_locals();
  void maintain_later(std::chrono::milliseconds after);

  boost::asio::io_context& io_;
  std::string node_;
  std::unique_ptr<federation::EtcdClient> client_;
  std::unique_ptr<federation::PolicyStore> store_;
  std::shared_ptr<spdlog::logger> log_;
  LocalPods local_pods_;
  Identities identities_;
  // The first store change not listed yet, and the one behind the listing on its way: the
  // start of the publication latency (PolicyPublisher::Stats).
  std::optional<PolicyPublisher::Clock::time_point> change_seen_, listing_change_;
  bool listed_once_ = false;
  std::vector<LocalPod> pods_;
  boost::asio::steady_timer retry_timer_, locals_timer_, maintain_timer_;
  std::chrono::milliseconds retry_delay_ = kRetryMin;
  bool listing_ = false;
  bool again_ = false;
  bool failing_ = false;
  Stats stats_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::unique_ptr<federation::EtcdWatch> watch_;
  std::unique_ptr<PolicyCompileWorker> compile_;  // stopped before the store worker
  std::unique_ptr<StoreWorker> worker_;  // last: stopped first
};

}  // namespace vxfed::control
