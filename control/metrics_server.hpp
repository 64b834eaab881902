// A minimal HTTP/1.0 server for Prometheus scrapes: GET /metrics on a TCP address (loopback
// by default, daemon.metrics_listen), one response per connection. Read-only: it has nothing
// that changes state; any other method gets 405, other paths 404. Requests over 8 KiB or
// slower than 5 s are dropped. Every refusal is counted (stats(), vxfedd_metrics_rejected_total).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <boost/asio.hpp>
#include <spdlog/logger.h>

#include "common/result.hpp"
#include "control/metrics_text.hpp"

namespace vxfed::control {

class MetricsServer {
 public:
  using Render = std::function<std::string()>;
  // listen: "127.0.0.1:9472"
  static Result<std::unique_ptr<MetricsServer>> create(boost::asio::io_context& io, const std::string& listen,
                                                       Render render, std::shared_ptr<spdlog::logger> log);
  ~MetricsServer();
  void stop();
  unsigned short port() const;
  const MetricsServerStats& stats() const { return *stats_; }

 private:
  MetricsServer(boost::asio::io_context& io, Render render, std::shared_ptr<spdlog::logger> log);
  void accept();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  Render render_;
  std::shared_ptr<spdlog::logger> log_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  std::shared_ptr<MetricsServerStats> stats_ = std::make_shared<MetricsServerStats>();
};

}  // namespace vxfed::control
