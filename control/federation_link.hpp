// vxfedd's link to the federation store (federation/, docs/federation.md): the
// NetworkAllocator NodeState asks for a new network's VNI and this node's block, plus the
// node's side of the store's life on the io thread: registration and its keep-alive, and at
// every reconnect (and every reconcile interval) re-asserting the node's local copy, releasing
// gone nodes' blocks, forgetting ended hold-downs. It also retries the config networks that
// waited for the store.
//
// Fail static: networks the node has work from its local copy; only something new needs the
// store, and gets UNAVAILABLE naming it while it is away. Store calls block the io thread for
// at most federation.request_timeout_ms per member tried (an unreachable member refuses at
// once; only a silent one costs the timeout).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/logger.h>

#include "control/daemon_config.hpp"
#include "control/network_allocator.hpp"
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
  };

  static Result<std::unique_ptr<FederationLink>> create(boost::asio::io_context& io, const Config& config,
                                                        std::shared_ptr<spdlog::logger> log);
  ~FederationLink() override;

  void attach(NodeState* state) { state_ = state; }
  void start();   // registers (or notes the store is away) and starts the timers
  void stop();

  Result<NetworkGrant> join(const NetworkConfig& network, v1::ErrorCode* code) override;
  void left(const std::string& network) override;

  bool available() const { return available_; }
  std::string describe() const { return client_->describe(); }
  const Stats& stats() const { return stats_; }

  // The block length a network asks for: its block_prefix_len, else /24 (or the subnet itself
  // when it is smaller than a /24).
  static unsigned block_length_of(const NetworkConfig& network);

 private:
  FederationLink(boost::asio::io_context& io, const Config& config, std::unique_ptr<federation::EtcdClient> client,
                 std::shared_ptr<spdlog::logger> log);
  void saw(const federation::StoreError* error);  // availability bookkeeping after each call
  void reconcile(const char* why);
  void schedule_keep_alive();
  void schedule_reconcile();

  boost::asio::io_context& io_;
  Config::Federation settings_;
  std::string node_;
  std::unique_ptr<federation::EtcdClient> client_;
  std::unique_ptr<federation::FederationStore> store_;
  std::shared_ptr<spdlog::logger> log_;
  NodeState* state_ = nullptr;
  boost::asio::steady_timer keep_alive_timer_;
  boost::asio::steady_timer reconcile_timer_;
  bool available_ = true;
  bool stopped_ = false;
  std::uint64_t cluster_id_ = 0;
  Stats stats_;
};

}  // namespace vxfed::control
