#include "control/services/service_follower.hpp"

#include <boost/asio/post.hpp>

#include "control/federation/store_access.hpp"

namespace vxfed::control {

namespace asio = boost::asio;
namespace fed = ::vxfed::federation;
namespace svc = ::vxfed::services;

Result<std::unique_ptr<ServiceFollower>> ServiceFollower::create(asio::io_context& io, const Config& config,
                                                                 std::shared_ptr<spdlog::logger> log,
                                                                 OnListing on_listing) {
  if (!config.federation.enabled) return make_error("global services need the federation store (no federation section)");
  if (!config.services.range) return make_error("global services need services.range");
  auto client = fed::EtcdClient::create(etcd_options(config));
  if (!client) return make_error(config.source + ": federation: " + client.error());
  return std::unique_ptr<ServiceFollower>(
      new ServiceFollower(io, config, std::move(*client), std::move(log), std::move(on_listing)));
}

ServiceFollower::ServiceFollower(asio::io_context& io, const Config& config, std::unique_ptr<fed::EtcdClient> client,
                                 std::shared_ptr<spdlog::logger> log, OnListing on_listing)
    : io_(io),
      client_(std::move(client)),
      store_(std::make_unique<svc::ServiceStore>(*client_, svc::ServiceStoreOptions{*config.services.range})),
      log_(std::move(log)),
      on_listing_(std::move(on_listing)),
      retry_timer_(io),
      worker_(std::make_unique<StoreWorker>()) {}

ServiceFollower::~ServiceFollower() {
  *alive_ = false;
  retry_timer_.cancel();
  watch_.reset();   // its thread uses the client
  worker_.reset();  // likewise the list in progress
}

void ServiceFollower::start() {
  auto alive = alive_;
  // The watch first, then the list: a change between the two is both listed and an event
  // (one list too many), never missed.
  watch_ = client_->watch_prefix(
      svc::store_keys::root(), 0,
      [this, alive](const std::vector<fed::WatchEvent>&, std::int64_t) {
        asio::post(io_, [this, alive] {
          if (*alive) relist("a change under v1/services/");
        });
      },
      [this, alive](bool connected, const std::string& detail) {
        asio::post(io_, [this, alive, connected, detail] {
          if (!*alive) return;
          if (connected) {
            // Events may have been missed while it was broken (or the watch restarted from now
            // after a compaction): the list says what is there.
            if (!stats_.watching) relist("the watch is (re)established");
            stats_.watching = true;
            return;
          }
          if (stats_.watching) {
            ++stats_.watch_breaks;
            log_->warn("services: the watch of v1/services/ broke ({}); it is re-established by itself", detail);
          }
          stats_.watching = false;
        });
      });
  relist("start");
}

void ServiceFollower::relist(const char* why) {
  if (listing_) {
    again_ = true;
    return;
  }
  listing_ = true;
  again_ = false;
  log_->debug("services: listing the store ({})", why);
  auto alive = alive_;
  worker_->post([this, alive] {
    auto snapshot = store_->list();
    asio::post(io_, [this, alive, snapshot = std::move(snapshot)]() mutable {
      if (*alive) listed(std::move(snapshot));
    });
  });
}

void ServiceFollower::listed(fed::StoreResult<svc::ServiceSnapshot> snapshot) {
  listing_ = false;
  Result<svc::FederatedSet> set = snapshot ? svc::federated(*snapshot)
                                           : Result<svc::FederatedSet>(make_error(snapshot.store_error().message));
  if (!set) {
    ++stats_.list_failures;
    if (!failing_) log_->warn("services: cannot list the store ({}); the entries programmed stay, retrying", set.error());
    failing_ = true;
    retry_later();
    return;
  }
  if (failing_) log_->info("services: the store answers again");
  failing_ = false;
  retry_delay_ = kRetryMin;
  ++stats_.listings;
  stats_.revision = snapshot->revision;
  stats_.range = snapshot->range;
  on_listing_(*set, snapshot->revision);
  if (again_) relist("changes during the last list");
}

void ServiceFollower::retry_later() {
  retry_timer_.expires_after(retry_delay_);
  retry_delay_ = std::min(retry_delay_ * 2, std::chrono::duration_cast<std::chrono::milliseconds>(kRetryMax));
  auto alive = alive_;
  retry_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (!ec && *alive) relist("retry");
  });
}

}  // namespace vxfed::control
