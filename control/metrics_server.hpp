// A minimal HTTP/1.0 server for Prometheus scrapes: GET /metrics on a local TCP address,
// one response per connection. Requests over 8 KiB or slower than 5 s are dropped.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <boost/asio.hpp>
#include <spdlog/logger.h>

#include "common/result.hpp"

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

 private:
  MetricsServer(boost::asio::io_context& io, Render render, std::shared_ptr<spdlog::logger> log);
  void accept();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  Render render_;
  std::shared_ptr<spdlog::logger> log_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace vxfed::control
