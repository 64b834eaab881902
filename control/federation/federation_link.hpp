// vxfedd's link to the federation store (federation/, docs/federation.md): the
// NetworkAllocator NodeState asks for a new network's VNI and this node's block, plus the
// node's side of the store's life: registration and its keep-alive, and at every reconnect
// (and every reconcile interval) re-asserting the node's local copy, releasing gone nodes'
// blocks, forgetting ended hold-downs. It also retries the config networks that waited for the
// store.
//
// Fail static: networks the node has work from its local copy; only something new needs the
// store, and gets UNAVAILABLE naming it while it is away. Threads: the store calls run on a
// StoreWorker, never on the io thread, so a store without quorum cannot hold the API; their
// results come back to the io thread. An API AddNetwork is prepare()d there (refused with
// UNAVAILABLE naming the store once api_budget() has passed), and its join() takes the grant
// fetched. join() without a prepare() (config networks at start, reload, the retry after a
// reconnect) and left() call the store from the io thread, one store user at a time with the
// worker, within api_budget() for the wait and the calls together (left() does not wait).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/logger.h>

#include "control/daemon/daemon_config.hpp"
#include "control/node/network_allocator.hpp"
#include "control/federation/store_worker.hpp"
#include "federation/etcd_client.hpp"
#include "federation/federation_store.hpp"

namespace vxfed::control {

class NodeState;

class FederationLink final : public NetworkAllocator {
 public:
  struct Stats {
    std::uint64_t unavailable = 0;      // calls that found the store unreachable
    std::uint64_t reconnects = 0;       // store back after being unreachable
    std::uint64_t reconciles = 0;
    std::uint64_t restored = 0;         // records put back from the local copy
    std::uint64_t conflicts = 0;        // store and local copy disagreed (kept local)
    std::uint64_t nodes_released = 0;   // gone nodes whose blocks were released
    std::uint64_t blocks_claimed = 0;   // further blocks claimed because the node's were full
    std::uint64_t blocks_released = 0;  // further blocks given back after staying empty
  };

  static Result<std::unique_ptr<FederationLink>> create(boost::asio::io_context& io, const Config& config,
                                                        std::shared_ptr<spdlog::logger> log);
  ~FederationLink() override;

  void attach(NodeState* state) { state_ = state; }
  void start();   // registers (or notes the store is away) and starts the timers
  void stop();

  Result<NetworkGrant> join(const NetworkConfig& network, v1::ErrorCode* code) override;
  void left(const std::string& network) override;
  // The store's join on the worker; `done` on the io thread with its outcome, or UNAVAILABLE
  // once api_budget() has passed (the worker busy with a call that does not come back).
  void prepare(const NetworkConfig& network, Prepared done) override;
  // The store's claim_more on the worker; `done` on the io thread (UNAVAILABLE once
  // api_budget() has passed). Until the node has saved the block, reconciles count it as the
  // node's, so none gives it back meanwhile.
  void claim_more(const NetworkConfig& network, MoreClaimed done) override;

  bool available() const { return available_; }
  std::string describe() const { return client_->describe(); }
  const Stats& stats() const { return stats_; }

  // The block length a network asks for: its block_prefix_len, else /24 (or the subnet itself
  // when it is smaller than a /24).
  static unsigned block_length_of(const NetworkConfig& network);

  // How long an API request may wait for the store: request_timeout_ms, at most
  // kMaxApiBudgetMs, so that a refusal reaches the CNI plugin well within its 5 s.
  static constexpr std::uint32_t kMaxApiBudgetMs = 3000;
  std::chrono::milliseconds api_budget() const;

  // A join or leave on the io thread while a reconcile's snapshot of the node's networks is
  // on its way to the store: the reconcile applies them to its snapshot, so it neither leaves
  // a network just joined nor re-asserts one just left.
  struct Change {
    bool joined = false;
    federation::Membership membership;   // joined: what the store granted; left: the name
    bool pending = false;                // joined by prepare(), not in the node's copy yet
    std::uint64_t id = 0;
  };
  static std::vector<federation::Membership> apply_changes(std::vector<federation::Membership> snapshot,
                                                           const std::vector<Change>& changes);

 private:
  FederationLink(boost::asio::io_context& io, const Config& config, std::unique_ptr<federation::EtcdClient> client,
                 std::shared_ptr<spdlog::logger> log);
  // A call's outcome as the io thread's bookkeeping needs it (nullopt: it succeeded).
  using Outcome = std::optional<federation::StoreError>;
  template <typename T>
  static Outcome outcome_of(const federation::StoreResult<T>& result) {
    return result ? Outcome{} : Outcome{result.store_error()};
  }
  void saw(const federation::StoreError* error);  // availability bookkeeping after each call (io thread)
  void saw(const Outcome& outcome) { saw(outcome ? &*outcome : nullptr); }
  void reconcile(const char* why);
  void schedule_keep_alive();
  void schedule_reconcile();
  std::uint64_t note_change(Change change);
  void settle_change(std::uint64_t id);   // a pending join is in the node's copy, or never will be
  std::string needs_store(const std::string& network, const std::string& why) const;
  // Logs how long an API request's store call waited before it could start (any thread).
  void note_wait(const char* what, const std::string& network, std::chrono::steady_clock::time_point asked);

  boost::asio::io_context& io_;
  Config::Federation settings_;
  std::string node_;
  std::unique_ptr<federation::EtcdClient> client_;
  std::unique_ptr<federation::FederationStore> store_;
  std::shared_ptr<spdlog::logger> log_;
  NodeState* state_ = nullptr;
  boost::asio::steady_timer keep_alive_timer_;
  boost::asio::steady_timer reconcile_timer_;
  // io thread only:
  bool available_ = true;
  bool stopped_ = false;
  bool reconciling_ = false;               // a reconcile is on the worker
  const char* reconcile_again_ = nullptr;  // asked for meanwhile: runs when it is done
  std::uint64_t cluster_id_ = 0;
  Stats stats_;
  // Grants prepare() fetched, for the join() of the same network that follows.
  struct Prefetched {
    NetworkConfig ask;
    NetworkGrant grant;
    std::uint64_t change = 0;
  };
  std::map<std::string, Prefetched> prefetched_;
  // One user of store_ at a time (it is not thread-safe, and a reconcile must not interleave
  // with a join), API requests first: the workers, or join/left on the io thread.
  StoreGate store_gate_;
  std::mutex changes_mutex_;
  std::vector<Change> changes_;            // since the last reconcile's snapshot, and pending joins
  // Further blocks claimed since the last reconcile's snapshot of the node's copy (settled:
  // the node has saved it, or never will): a reconcile counts them as the node's.
  struct Claimed {
    std::string network, block;
    bool settled = false;
  };
  std::vector<Claimed> claimed_;
  std::uint64_t next_change_ = 1;
  // API requests (prepare, claim_more) run on their own worker, the background (registration,
  // keep-alive, reconcile) on the other, so that a request never waits in a queue behind
  // background calls; last: stopped before the rest goes.
  std::unique_ptr<StoreWorker> api_worker_;
  std::unique_ptr<StoreWorker> worker_;
};

}  // namespace vxfed::control
