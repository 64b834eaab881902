#include "control/policy/policy_api.hpp"

#include <boost/asio/post.hpp>

#include "control/federation/store_access.hpp"
#include "control/federation/store_requests.hpp"
#include "control/node/node_state.hpp"
#include "control/policy/policy_requests.hpp"

namespace vxfed::control {

namespace asio = boost::asio;
namespace fed = ::vxfed::federation;

bool PolicyApi::handles(const v1::ControlRequest& request) {
  switch (request.op_case()) {
    case v1::ControlRequest::kPolicyApply:
    case v1::ControlRequest::kPolicyDelete:
    case v1::ControlRequest::kPolicyGet:
    case v1::ControlRequest::kPolicyDrops: return true;  // answered by vxfedd itself (daemon.cpp)
    default: return false;
  }
}

v1::ControlResponse PolicyApi::without_store(const v1::ControlRequest& request) {
  auto response = refused(v1::UNAVAILABLE,
                          "network policy needs the federation store: this vxfedd has no 'federation:' section in its "
                          "config (policies, namespace and pod labels and identity numbers live in etcd; docs/policy.md)");
  response.set_request_id(request.request_id());
  return response;
}

Result<std::unique_ptr<PolicyApi>> PolicyApi::create(asio::io_context& io, const Config& config,
                                                     std::shared_ptr<spdlog::logger> log) {
  if (!config.federation.enabled) return make_error("network policy needs the federation store (no federation section)");
  fed::EtcdOptions options = etcd_options(config);
  auto client = fed::EtcdClient::create(options);
  if (!client) return make_error(config.source + ": federation: " + client.error());
  return std::unique_ptr<PolicyApi>(new PolicyApi(io, config, std::move(*client), std::move(log)));
}

PolicyApi::PolicyApi(asio::io_context& io, const Config& config, std::unique_ptr<fed::EtcdClient> client,
                     std::shared_ptr<spdlog::logger> log)
    : io_(io),
      cluster_(config.cluster.name),
      client_(std::move(client)),
      store_(std::make_unique<fed::PolicyStore>(*client_, fed::PolicyStoreOptions{})),
      log_(std::move(log)),
      worker_(std::make_unique<StoreWorker>()) {}

PolicyApi::~PolicyApi() {
  *alive_ = false;
  worker_.reset();
}

void PolicyApi::handle(const v1::ControlRequest& request, Reply reply) {
  const auto answer_now = [&](v1::ControlResponse response) {
    response.set_request_id(request.request_id());
    reply(std::move(response));
  };
  switch (request.op_case()) {
    case v1::ControlRequest::kPolicyApply:
    case v1::ControlRequest::kPolicyDelete: {
      // Parsed here, before the store is asked: a bad file is refused whole, with every field
      // named, and the store never sees any of it.
      const bool apply = request.op_case() == v1::ControlRequest::kPolicyApply;
      auto batch = apply ? batch_to_apply(request.policy_apply(), cluster_) : batch_to_delete(request.policy_delete(), cluster_);
      if (!batch) return answer_now(refused(v1::INVALID_ARGUMENT, batch.error()));
      on_worker(request, std::move(reply), [batch = std::move(*batch), apply, this](fed::PolicyStore& store) {
        auto report = store.apply(batch, system_unix_ms());
        if (!report) {
          auto response = refused(api_code(report.code()), report.error());
          if (report.code() == fed::Code::unavailable)
            response.set_error(report.error() + " (the " + std::string(apply ? "apply" : "delete") +
                               " may or may not have reached the store: check with `vxfedctl policy get`; repeating it is safe)");
          return response;
        }
        v1::ControlResponse response;
        *response.mutable_policy_applied() = applied_message(batch, *report);
        log_->info("policy: {} for cluster {} at revision {}: {} policies, {} namespaces, {} pods, {} deleted, {} new identities",
                   apply ? "applied" : "deleted", cluster_, report->revision, batch.policies.size(), batch.namespaces.size(),
                   batch.pods.size(),
                   batch.delete_policies.size() + batch.delete_namespaces.size() + batch.delete_pods.size(),
                   report->new_identities);
        for (const auto& w : report->warnings) log_->warn("policy: {}", w);
        return response;
      });
      return;
    }
    case v1::ControlRequest::kPolicyGet:
      on_worker(request, std::move(reply), [](fed::PolicyStore& store) {
        auto snapshot = store.list();
        if (!snapshot) return refused(api_code(snapshot.code()), snapshot.error());
        v1::ControlResponse response;
        *response.mutable_policy_listing() = listing_message(*snapshot);
        return response;
      });
      return;
    default:
      return answer_now(refused(v1::INVALID_ARGUMENT, "not a policy request"));
  }
}

void PolicyApi::on_worker(const v1::ControlRequest& request, Reply reply,
                          std::function<v1::ControlResponse(fed::PolicyStore&)> call) {
  run_store_request(*worker_, io_, alive_, request.request_id(), kBudget, "policy", client_->describe(), std::move(reply),
                    [store = store_.get(), call = std::move(call)] { return call(*store); });
}

}  // namespace vxfed::control
