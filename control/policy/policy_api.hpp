// vxfedd's network-policy operations (PolicyApply, PolicyDelete, PolicyGet; docs/policy.md,
// "Applying policy"): parsed with policy/, written to and read from the federation store's
// policy half (federation/policy_store.hpp) for this node's cluster.
//
// Threads: the request is parsed on the io thread (pure, bounded by the 4 MiB message), the
// store calls run on a StoreWorker of this object's own, and the answer comes back to the io
// thread by asio::post, so a slow store or one without quorum holds the policy request only,
// never the rest of the API. Each store call is bounded by kBudget (CallDeadline): the answer
// reaches vxfedctl within its default 5 s timeout. The policy half has its own etcd client: it
// shares nothing with the FederationLink's store user (FederationStore), so it needs none of
// its gate. Not a second connection to etcd: both clients' channels have the same target and
// arguments, and gRPC's global subchannel pool gives them one TCP connection (`ss -tnp` during
// control_policy: one connection per vxfedd throughout, policy requests included).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <spdlog/logger.h>

#include "common/result.hpp"
#include "control/daemon/daemon_config.hpp"
#include "control/federation/store_worker.hpp"
#include "federation/etcd_client.hpp"
#include "federation/policy_store.hpp"
#include "proto/control.pb.h"

namespace vxfed::control {

class PolicyApi {
 public:
  using Reply = std::function<void(v1::ControlResponse)>;
  static constexpr std::chrono::milliseconds kBudget{4000};

  // Needs config.federation.enabled; the client connects lazily (creating it does not wait
  // for etcd).
  static Result<std::unique_ptr<PolicyApi>> create(boost::asio::io_context& io, const Config& config,
                                                   std::shared_ptr<spdlog::logger> log);
  ~PolicyApi();  // stops the worker first: its work uses the store

  static bool handles(const v1::ControlRequest& request);
  // Answers a policy request through `reply` on the io thread. request_id is set.
  void handle(const v1::ControlRequest& request, Reply reply);

  // Applies refused because the identity numbers ran out (a metric).
  std::uint64_t exhausted_refusals() const { return store_->exhausted_refusals(); }

  // What a vxfedd without a `federation:` section answers to every policy request.
  static v1::ControlResponse without_store(const v1::ControlRequest& request);

 private:
  PolicyApi(boost::asio::io_context& io, const Config& config, std::unique_ptr<federation::EtcdClient> client,
            std::shared_ptr<spdlog::logger> log);
  // Runs `call` on the worker within kBudget and posts its response back to the io thread.
  void on_worker(const v1::ControlRequest& request, Reply reply,
                 std::function<v1::ControlResponse(federation::PolicyStore&)> call);

  boost::asio::io_context& io_;
  std::string cluster_;
  std::unique_ptr<federation::EtcdClient> client_;
  std::unique_ptr<federation::PolicyStore> store_;
  std::shared_ptr<spdlog::logger> log_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // io thread: answers after destruction are dropped
  std::unique_ptr<StoreWorker> worker_;  // last: stopped before the rest goes
};

}  // namespace vxfed::control
