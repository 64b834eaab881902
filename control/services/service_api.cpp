#include "control/services/service_api.hpp"

#include <boost/asio/post.hpp>

#include "control/federation/store_access.hpp"
#include "control/federation/store_requests.hpp"
#include "control/node/node_state.hpp"
#include "control/services/service_requests.hpp"

namespace vxfed::control {

namespace asio = boost::asio;
namespace fed = ::vxfed::federation;
namespace svc = ::vxfed::services;

bool ServiceApi::handles(const v1::ControlRequest& request) {
  switch (request.op_case()) {
    case v1::ControlRequest::kServiceApply:
    case v1::ControlRequest::kServiceDelete:
    case v1::ControlRequest::kServiceGet: return true;
    default: return false;
  }
}

v1::ControlResponse ServiceApi::unconfigured(const v1::ControlRequest& request, const Config& config) {
  auto response = refused(v1::UNAVAILABLE,
                          !config.federation.enabled
                              ? "global services need the federation store: this vxfedd has no 'federation:' section in "
                                "its config (services and VIPs live in etcd; docs/services.md)"
                              : "global services need a VIP range: this vxfedd's config has no 'services: {range: ...}' "
                                "(docs/vxfedd.example.yaml)");
  response.set_request_id(request.request_id());
  return response;
}

svc::FederationView ServiceApi::federation_view(const Config& config) {
  svc::FederationView view;
  for (const auto& text : config.cluster.pod_cidrs)
    if (auto p = net::Ipv4Prefix::parse(text)) view.cluster_cidrs[config.cluster.name].push_back(*p);
  for (const auto& [cluster, cidrs] : config.bgp.clusters)
    for (const auto& p : cidrs) view.cluster_cidrs[cluster].push_back(p);
  if (config.services.range) view.service_range = *config.services.range;
  return view;
}

Result<std::unique_ptr<ServiceApi>> ServiceApi::create(asio::io_context& io, const Config& config,
                                                       std::shared_ptr<spdlog::logger> log) {
  if (!config.federation.enabled) return make_error("global services need the federation store (no federation section)");
  if (!config.services.range) return make_error("global services need services.range");
  fed::EtcdOptions options = etcd_options(config);
  auto client = fed::EtcdClient::create(options);
  if (!client) return make_error(config.source + ": federation: " + client.error());
  return std::unique_ptr<ServiceApi>(new ServiceApi(io, config, std::move(*client), std::move(log)));
}

ServiceApi::ServiceApi(asio::io_context& io, const Config& config, std::unique_ptr<fed::EtcdClient> client,
                       std::shared_ptr<spdlog::logger> log)
    : io_(io),
      cluster_(config.cluster.name),
      federation_(federation_view(config)),
      client_(std::move(client)),
      store_(std::make_unique<svc::ServiceStore>(*client_, svc::ServiceStoreOptions{*config.services.range})),
      log_(std::move(log)),
      worker_(std::make_unique<StoreWorker>()) {}

ServiceApi::~ServiceApi() {
  *alive_ = false;
  worker_.reset();
}

void ServiceApi::handle(const v1::ControlRequest& request, Reply reply) {
  const auto answer_now = [&](v1::ControlResponse response) {
    response.set_request_id(request.request_id());
    reply(std::move(response));
  };
  switch (request.op_case()) {
    case v1::ControlRequest::kServiceApply:
    case v1::ControlRequest::kServiceDelete: {
      // Parsed and validated here, before the store is asked: a bad file is refused whole,
      // with every field named, and the store never sees any of it.
      const bool apply = request.op_case() == v1::ControlRequest::kServiceApply;
      auto batch = apply ? service_apply_of(request.service_apply(), cluster_, federation_)
                         : service_delete_of(request.service_delete(), cluster_, federation_);
      if (!batch) return answer_now(refused(v1::INVALID_ARGUMENT, batch.error()));
      on_worker(request, std::move(reply), [batch = std::move(*batch), apply, this](svc::ServiceStore& store) {
        auto report = store.apply(batch, system_unix_ms());
        if (!report) {
          auto response = refused(api_code(report.code()), report.error());
          if (report.code() == fed::Code::unavailable)
            response.set_error(report.error() + " (the " + std::string(apply ? "apply" : "delete") +
                               " may or may not have reached the store: check with `vxfedctl service get`; repeating it is safe)");
          return response;
        }
        v1::ControlResponse response;
        *response.mutable_service_applied() = service_applied_message(cluster_, *report);
        log_->info("services: {} for cluster {} at revision {}: {} written, {} deleted, {} VIPs allocated, {} released",
                   apply ? "applied" : "deleted", cluster_, report->revision, report->written.size(),
                   report->deleted.size(), report->allocated.size(), report->released.size());
        return response;
      });
      return;
    }
    case v1::ControlRequest::kServiceGet:
      on_worker(request, std::move(reply), [](svc::ServiceStore& store) {
        auto snapshot = store.list();
        if (!snapshot) return refused(api_code(snapshot.code()), snapshot.error());
        auto listing = service_listing_message(*snapshot);
        if (!listing) return refused(v1::INTERNAL, listing.error());
        v1::ControlResponse response;
        *response.mutable_service_listing() = std::move(*listing);
        return response;
      });
      return;
    default:
      return answer_now(refused(v1::INVALID_ARGUMENT, "not a service request"));
  }
}

void ServiceApi::on_worker(const v1::ControlRequest& request, Reply reply,
                           std::function<v1::ControlResponse(svc::ServiceStore&)> call) {
  run_store_request(*worker_, io_, alive_, request.request_id(), kBudget, "service", client_->describe(), std::move(reply),
                    [store = store_.get(), call = std::move(call)] { return call(*store); });
}

}  // namespace vxfed::control
