// The FPM server: a Boost.Asio TCP listener that zebra's dplane_fpm_nl connects to. It
// splits the byte stream into FPM frames, checks the netlink framing and hands every IPv4
// route message to its owner.
//
// Who may connect: whatever this stream says becomes routes and allowed VTEPs, so only zebra
// may: the rule of local_peer_policy.hpp (shared with the BMP station). The listener binds to
// loopback only; an accepted peer must be on loopback and, when the policy names a uid (the
// adapter: the user FRR runs as), its socket must belong to that uid. One zebra at a time:
// while the current connection is healthy a second one is refused. Each refusal is counted by
// reason and logged.
// A frame with a bad version or a length below 4 means the stream cannot be trusted: the
// connection is closed (zebra reconnects and resends everything). Malformed netlink inside a
// well-framed frame is dropped and counted; the stream goes on.
#pragma once

#include <utility>  // before asio: Boost 1.74 awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "bgp/fpm_parser.hpp"
#include "bgp/local_peer_policy.hpp"
#include "common/result.hpp"

namespace vxfed::bgp {

struct FpmStats {
  bool connected = false;
  std::uint64_t connections = 0;
  std::uint64_t bytes = 0;
  std::uint64_t frames = 0;
  std::uint64_t messages = 0;          // netlink messages
  std::uint64_t route_messages = 0;    // IPv4 RTM_NEWROUTE/RTM_DELROUTE handed on
  std::uint64_t skipped = 0;           // other netlink types, non-IPv4, non-netlink frames
  std::uint64_t malformed_frames = 0;  // netlink framing broken: frame dropped
  std::uint64_t malformed_messages = 0;
  std::uint64_t stream_errors = 0;     // bad version/length: connection closed
  std::uint64_t refused_not_loopback = 0;  // peer address not 127.0.0.0/8
  std::uint64_t refused_wrong_user = 0;    // peer's socket owned by another uid (or unknown)
  std::uint64_t refused_busy = 0;          // a healthy zebra connection already exists
};

using FpmAcceptPolicy = LocalPeerPolicy;

class FpmServer {
 public:
  struct Handlers {
    std::function<void()> on_connect;
    std::function<void()> on_disconnect;
    std::function<void(const fpm::RouteMessage&)> on_route;
    std::function<void()> on_batch_end;  // after each read's worth of frames
  };

  static Result<std::unique_ptr<FpmServer>> create(boost::asio::io_context& io,
                                                    const boost::asio::ip::tcp::endpoint& listen,
                                                    Handlers handlers, FpmAcceptPolicy policy = {});
  ~FpmServer();
  void stop();
  const FpmStats& stats() const { return stats_; }
  std::uint16_t port() const { return port_; }

  // Feeds bytes as if they came from the socket (tests, benchmarks); returns false when the
  // stream had to be abandoned.
  bool feed(fpm::Bytes bytes);

 private:
  FpmServer(boost::asio::io_context& io, Handlers handlers, FpmAcceptPolicy policy);
  void accept();
  void read();
  void close_connection();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<boost::asio::ip::tcp::socket> socket_;
  Handlers handlers_;
  FpmAcceptPolicy policy_;
  std::vector<std::uint8_t> buffer_;   // unconsumed bytes
  std::vector<std::uint8_t> chunk_;
  FpmStats stats_;
  std::uint16_t port_ = 0;
  bool stopped_ = false;
};

}  // namespace vxfed::bgp
