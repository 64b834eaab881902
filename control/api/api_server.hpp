// vxfedd's API socket: a unix stream socket (mode 0600 in a 0700 directory; 0660/0710 when a
// socket group is configured), served with Boost.Asio. Each connection is checked with
// SO_PEERCRED (root, vxfedd's own uid, or a member of the configured group). Frames are
// length-delimited ControlRequests; a malformed, unknown or oversized message is logged and
// ends that connection only. A connection that stops halfway through a frame is dropped after
// the idle timeout. Requests of one connection are answered in order, one response each; a
// request may be answered later (an attach that waits for the dataplane): the connection's
// next request is read only after that answer.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio.hpp>
#include <spdlog/logger.h>

#include "proto/control.pb.h"
#include "common/peer_credentials.hpp"
#include "common/result.hpp"

namespace vxfed::control {

using vxfed::PeerCredentials;

class ApiServer {
 public:
  using Handler = std::function<v1::ControlResponse(const v1::ControlRequest&, const PeerCredentials&)>;
  // Answers by calling Reply once, now or later, on the io_context's thread.
  using Reply = std::function<void(v1::ControlResponse)>;
  using AsyncHandler = std::function<void(const v1::ControlRequest&, const PeerCredentials&, Reply)>;
  struct Options {
    std::string path;
    std::optional<gid_t> group;          // members may connect besides root
    std::uint32_t max_connections = 256;
    std::uint32_t idle_timeout_ms = 30000;
    std::size_t max_message_bytes = 4u << 20;
  };
  struct Stats {
    std::uint64_t connections = 0;
    std::uint64_t active = 0;
    std::uint64_t denied = 0;            // wrong uid/gid
    std::uint64_t refused_busy = 0;      // over max_connections
    std::uint64_t bad_frames = 0;        // garbage, oversized, truncated at idle timeout
    std::uint64_t malformed = 0;         // not a ControlRequest
    std::uint64_t unknown = 0;           // no operation set
  };

  static Result<std::unique_ptr<ApiServer>> create(boost::asio::io_context& io, Options options, AsyncHandler handler,
                                                   std::shared_ptr<spdlog::logger> log);
  static Result<std::unique_ptr<ApiServer>> create(boost::asio::io_context& io, Options options, Handler handler,
                                                   std::shared_ptr<spdlog::logger> log);
  ~ApiServer();
  void stop();
  const Stats& stats() const { return *stats_; }

 private:
  class Session;
  ApiServer(boost::asio::io_context& io, Options options, AsyncHandler handler, std::shared_ptr<spdlog::logger> log);
  void accept();
  bool allowed(const PeerCredentials& peer) const;

  boost::asio::io_context& io_;
  Options options_;
  AsyncHandler handler_;
  std::shared_ptr<spdlog::logger> log_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::shared_ptr<Stats> stats_ = std::make_shared<Stats>();
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

// Creates the socket's directory (0700, or 0710 with a group) when missing; used by tests too.
Status prepare_socket_dir(const std::string& socket_path, std::optional<gid_t> group);

}  // namespace vxfed::control
