// The BMP station: a Boost.Asio TCP listener that bgpd's BMP module connects to
// (`bmp connect 127.0.0.1 port P min-retry 100 max-retry 1000` in a view's `bmp targets`),
// feeding one bmp::Session per connection (bmp_session.hpp) and handing on what it reports.
//
// Who may connect: the FPM server's rule (local_peer_policy.hpp): listens on loopback only, a
// peer on 127.0.0.0/8 whose socket belongs to the policy's uid (FRR's user) when one is named,
// one session at a time (a second is refused while the first is healthy). Refusals are counted
// by reason and logged. The port should be below net.ipv4.ip_unprivileged_port_start
// (privileged_port.hpp): bgpd connects out, and whoever holds the port gets its table.
//
// A framing error (bad version or length: the stream cannot be resynchronised) closes the
// connection; bgpd reconnects within its min-retry and sends Initiation, Peer Ups and its
// whole table again. Unknown or malformed messages inside a well-framed stream are counted by
// the session and change nothing.
//
// Use with a BmpRib (bmp_rib.hpp): BmpStation::create(io, endpoint, rib, policy) wires the
// session's events to the RIB (Initiation -> session_started, disconnect -> session_lost, peer
// up/down, routes).
#pragma once

#include <utility>  // before asio: Boost 1.74 awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bgp/bmp_rib.hpp"
#include "bgp/bmp_session.hpp"
#include "bgp/local_peer_policy.hpp"
#include "common/result.hpp"

namespace vxfed::bgp {

struct BmpStats {
  bool connected = false;
  std::uint64_t connections = 0;   // sessions accepted
  std::uint64_t bytes = 0;         // read from accepted sessions
  // BMP messages by type (bmp::MessageType: route monitoring, statistics, peer down, peer up,
  // initiation, termination, route mirroring) and ignored by reason (bmp::Ignored, named by
  // bmp::to_string): every session's counters added up.
  std::array<std::uint64_t, static_cast<std::size_t>(bmp::MessageType::route_mirroring) + 1> messages{};
  std::array<std::uint64_t, static_cast<std::size_t>(bmp::Ignored::count_)> ignored{};
  std::uint64_t implied_peer_ups = 0;  // peers taken as up from their first route (no Peer Up: bmp_session.hpp)
  std::uint64_t framing_errors = 0;        // bad version/length: connection closed
  std::uint64_t refused_not_loopback = 0;  // peer address not 127.0.0.0/8
  std::uint64_t refused_wrong_user = 0;    // peer's socket owned by another uid (or unknown)
  std::uint64_t refused_busy = 0;          // a healthy bgpd session already exists
};

class BmpStation {
 public:
  struct Handlers {
    std::function<void()> on_connect;                        // a session was accepted
    std::function<void(const std::string& why)> on_disconnect;  // closed, framing error, replaced, stop()
    bmp::Session::Handlers session;                          // the session's events
    std::function<void()> on_batch_end;                      // after each read's worth of messages
  };

  static Result<std::unique_ptr<BmpStation>> create(boost::asio::io_context& io,
                                                     const boost::asio::ip::tcp::endpoint& listen, Handlers handlers,
                                                     LocalPeerPolicy policy = {});
  // The same, feeding `rib` (which must outlive the station): rib_handlers(rib).
  static Result<std::unique_ptr<BmpStation>> create(boost::asio::io_context& io,
                                                     const boost::asio::ip::tcp::endpoint& listen, BmpRib& rib,
                                                     LocalPeerPolicy policy = {});
  ~BmpStation();
  void stop();
  BmpStats stats() const;
  std::uint16_t port() const { return port_; }

  // Feeds bytes as if they came from an accepted connection (tests): starts a session when none
  // is open; returns false when the stream broke (the session is closed, as a socket's would be).
  bool feed(bmp::Bytes bytes);

 private:
  BmpStation(boost::asio::io_context& io, Handlers handlers, LocalPeerPolicy policy);
  void accept();
  void start_session();
  void read();
  void close_connection(const std::string& why);
  void end_session();

  boost::asio::io_context& io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<boost::asio::ip::tcp::socket> socket_;
  std::unique_ptr<bmp::Session> session_;
  Handlers handlers_;
  LocalPeerPolicy policy_;
  std::vector<std::uint8_t> chunk_;
  BmpStats stats_;                     // without the open session's counters
  bmp::SessionCounters closed_;        // the sessions already closed, added up
  std::uint16_t port_ = 0;
  bool stopped_ = false;
};

// The station's handlers that feed `rib` (what create(io, ep, rib, policy) uses), reading
// the time from `now` at Initiation.
BmpStation::Handlers rib_handlers(BmpRib& rib, std::function<BmpRib::Clock::time_point()> now = BmpRib::Clock::now);

}  // namespace vxfed::bgp
