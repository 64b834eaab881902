// vxfedd's global-service operations (ServiceApply, ServiceDelete, ServiceGet; docs/services.md,
// "vxfedctl service"): parsed and validated with services/, written to and read from the
// federation store (services/service_store.hpp) for this node's cluster.
//
// Threads as control/policy/policy_api.hpp: the request is parsed on the io thread, the store
// calls run on a StoreWorker of this object's own and are bounded by kBudget, and the answer
// comes back to the io thread by asio::post, so a slow store holds the service request only.
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
#include "proto/control.pb.h"
#include "services/service_store.hpp"
#include "services/validate.hpp"

namespace vxfed::control {

class ServiceApi {
 public:
  using Reply = std::function<void(v1::ControlResponse)>;
  static constexpr std::chrono::milliseconds kBudget{4000};

  // Needs config.federation.enabled and config.services.range.
  static Result<std::unique_ptr<ServiceApi>> create(boost::asio::io_context& io, const Config& config,
                                                    std::shared_ptr<spdlog::logger> log);
  ~ServiceApi();  // stops the worker first: its work uses the store

  static bool handles(const v1::ControlRequest& request);
  void handle(const v1::ControlRequest& request, Reply reply);

  // What a vxfedd without the federation store or a `services:` range answers.
  static v1::ControlResponse unconfigured(const v1::ControlRequest& request, const Config& config);

  // The clusters' CIDRs this node knows (its own cluster.pod_cidrs and bgp.clusters) and the
  // service range, which applies are validated against.
  static services::FederationView federation_view(const Config& config);

 private:
  ServiceApi(boost::asio::io_context& io, const Config& config, std::unique_ptr<federation::EtcdClient> client,
             std::shared_ptr<spdlog::logger> log);
  void on_worker(const v1::ControlRequest& request, Reply reply,
                 std::function<v1::ControlResponse(services::ServiceStore&)> call);

  boost::asio::io_context& io_;
  std::string cluster_;
  services::FederationView federation_;
  std::unique_ptr<federation::EtcdClient> client_;
  std::unique_ptr<services::ServiceStore> store_;
  std::shared_ptr<spdlog::logger> log_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::unique_ptr<StoreWorker> worker_;  // last: stopped before the rest goes
};

}  // namespace vxfed::control
