// A minimal HTTP/1.0 server for Prometheus scrapes: GET /metrics on a TCP address (loopback
// by default, daemon.metrics_listen), one response per connection. Read-only: it has nothing
// that changes state; any other method gets 405, other paths 404. Requests over 8 KiB or
// slower than 5 s are dropped. Every refusal is counted (stats(), vxfedd_metrics_rejected_total).
//
// Metrics never stop vxfedd from serving the node: when the port cannot be bound (another
// process holds it: any local user can take an unprivileged port while vxfedd restarts), the
// failure is logged as an error naming the holder's uid, and the server tries again every
// kRetry until it has the port (docs/security.md: keeping the endpoint trustworthy).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <boost/asio.hpp>
#include <spdlog/logger.h>

#include "common/result.hpp"
#include "control/metrics/metrics_text.hpp"

namespace vxfed::control {

class MetricsServer {
 public:
  using Render = std::function<std::string()>;
  static constexpr std::chrono::seconds kRetry{2};
  // listen: "127.0.0.1:9472". Only a malformed address is an error; a port that cannot be
  // bound now is retried.
  static Result<std::unique_ptr<MetricsServer>> create(boost::asio::io_context& io, const std::string& listen,
                                                       Render render, std::shared_ptr<spdlog::logger> log);
  ~MetricsServer();
  void stop();
  unsigned short port() const;  // 0 while not listening
  bool listening() const { return listening_; }
  const MetricsServerStats& stats() const { return *stats_; }

 private:
  MetricsServer(boost::asio::io_context& io, Render render, std::shared_ptr<spdlog::logger> log);
  void accept();
  // Binds and listens; on failure logs (the first failure of a run as an error) and arms the retry.
  void try_listen();

  boost::asio::ip::tcp::endpoint endpoint_;
  bool listening_ = false;
  std::chrono::steady_clock::time_point failing_since_{};
  boost::asio::steady_timer retry_;
  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  Render render_;
  std::shared_ptr<spdlog::logger> log_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::shared_ptr<MetricsServerStats> stats_ = std::make_shared<MetricsServerStats>();
};

}  // namespace vxfed::control
