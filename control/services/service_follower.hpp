// vxfedd follows the global services in the federation store (docs/services.md, "Serving a
// VIP"): a watch on v1/services/, and on every event (and at start, and after the watch was
// broken) one list() at one revision, federated() over it and handed to the io thread. A list
// that fails (store away) is retried after kRetryMin, doubling to kRetryMax, as the federation
// link's calls are: fail static, the entries already programmed stay until the store answers.
//
// Threads: the etcd watch delivers on its own thread, which only posts to the io thread; the
// list runs on this object's own StoreWorker (never on the io thread), and its result comes
// back by asio::post. Events arriving while a list is on its way ask for one more list after
// it, so a burst of applies costs two lists, not one per event.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/logger.h>

#include "common/net/ipv4.hpp"
#include "common/result.hpp"
#include "control/daemon/daemon_config.hpp"
#include "control/federation/store_worker.hpp"
#include "federation/etcd_client.hpp"
#include "services/federate.hpp"
#include "services/service_store.hpp"

namespace vxfed::control {

class ServiceFollower {
 public:
  static constexpr std::chrono::milliseconds kRetryMin{250};
  static constexpr std::chrono::milliseconds kRetryMax{5000};

  struct Stats {
    std::uint64_t listings = 0;       // lists that reached the io thread
    std::uint64_t list_failures = 0;  // store away, or a record that did not read
    std::uint64_t watch_breaks = 0;
    std::int64_t revision = 0;        // of the last listing
    std::optional<net::Ipv4Prefix> range;  // the store's service range at that listing
    bool watching = false;
  };
  using OnListing = std::function<void(const services::FederatedSet& set, std::int64_t revision)>;

  // Needs config.federation.enabled and config.services.range. `on_listing` runs on the io thread.
  static Result<std::unique_ptr<ServiceFollower>> create(boost::asio::io_context& io, const Config& config,
                                                         std::shared_ptr<spdlog::logger> log, OnListing on_listing);
  ~ServiceFollower();  // stops the watch and the worker before the client goes

  void start();
  const Stats& stats() const { return stats_; }

 private:
  ServiceFollower(boost::asio::io_context& io, const Config& config, std::unique_ptr<federation::EtcdClient> client,
                  std::shared_ptr<spdlog::logger> log, OnListing on_listing);
  void relist(const char* why);  // io thread
  void listed(federation::StoreResult<services::ServiceSnapshot> snapshot);
  void retry_later();

  boost::asio::io_context& io_;
  std::unique_ptr<federation::EtcdClient> client_;
  std::unique_ptr<services::ServiceStore> store_;
  std::shared_ptr<spdlog::logger> log_;
  OnListing on_listing_;
  boost::asio::steady_timer retry_timer_;
  std::chrono::milliseconds retry_delay_ = kRetryMin;
  bool listing_ = false;   // a list is on the worker
  bool again_ = false;     // something changed meanwhile: list once more after it
  bool failing_ = false;   // the last list failed (logged once until one succeeds)
  Stats stats_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::unique_ptr<federation::EtcdWatch> watch_;
  std::unique_ptr<StoreWorker> worker_;  // last: stopped first
};

}  // namespace vxfed::control
