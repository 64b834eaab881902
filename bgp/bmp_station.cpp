#include "bgp/bmp_station.hpp"

#include <spdlog/spdlog.h>

namespace vxfed::bgp {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

void add(bmp::SessionCounters& into, const bmp::SessionCounters& c) {
  for (std::size_t i = 0; i < into.messages.size(); ++i) into.messages[i] += c.messages[i];
  for (std::size_t i = 0; i < into.ignored.size(); ++i) into.ignored[i] += c.ignored[i];
  into.bytes += c.bytes;
  into.implied_peer_ups += c.implied_peer_ups;
}

}  // namespace

BmpStation::Handlers rib_handlers(BmpRib& rib, std::function<BmpRib::Clock::time_point()> now) {
  BmpStation::Handlers h;
  h.on_disconnect = [&rib](const std::string&) { rib.session_lost(); };
  h.session.initiation = [&rib, now] { rib.session_started(now()); };
  h.session.peer_up = [&rib, now](const bmp::PeerKey& key, const bmp::PeerHeader&, const bmp::PeerUp& up) {
    rib.peer_up(key, up, now());
  };
  h.session.peer_down = [&rib, now](const bmp::PeerKey& key, const bmp::PeerDown& down) {
    rib.peer_down(key, down, now());
  };
  h.session.routes = [&rib](const bmp::PeerKey& key, const bmp::Update& u) { rib.update(key, u); };
  return h;
}

BmpStation::BmpStation(asio::io_context& io, Handlers handlers, LocalPeerPolicy policy)
    : io_(io), acceptor_(io), handlers_(std::move(handlers)), policy_(policy), chunk_(256 * 1024) {}

BmpStation::~BmpStation() { stop(); }

Result<std::unique_ptr<BmpStation>> BmpStation::create(asio::io_context& io, const tcp::endpoint& listen,
                                                       Handlers handlers, LocalPeerPolicy policy) {
  std::unique_ptr<BmpStation> s(new BmpStation(io, std::move(handlers), policy));
  if (auto st = listen_on_loopback(s->acceptor_, listen, "BMP station", "bgpd",
                                   "is another BMP station, e.g. a second vxfedd, running?");
      !st)
    return make_error(st.error());
  s->port_ = s->acceptor_.local_endpoint().port();
  s->accept();
  return s;
}

Result<std::unique_ptr<BmpStation>> BmpStation::create(asio::io_context& io, const tcp::endpoint& listen, BmpRib& rib,
                                                       LocalPeerPolicy policy) {
  return create(io, listen, rib_handlers(rib), policy);
}

void BmpStation::stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ec;
  acceptor_.close(ec);
  close_connection("station stopped");
}

BmpStats BmpStation::stats() const {
  BmpStats s = stats_;
  bmp::SessionCounters all = closed_;
  if (session_) add(all, session_->counters());
  s.messages = all.messages;
  s.ignored = all.ignored;
  s.implied_peer_ups = all.implied_peer_ups;
  return s;
}

void BmpStation::accept() {
  auto sock = std::make_shared<tcp::socket>(io_);
  acceptor_.async_accept(*sock, [this, sock](boost::system::error_code ec) {
    if (stopped_ || ec == asio::error::operation_aborted) return;
    if (ec) {
      spdlog::warn("bmp: accept failed: {}", ec.message());
    } else if (!admit_local_peer(*sock, policy_, socket_.get(), "bgpd", "bmp", stats_)) {
      boost::system::error_code ignored;
      sock->close(ignored);
    } else {
      // An old connection still here is dead (admit_local_peer() peeked): bgpd reconnected
      // before we read its EOF.
      if (socket_) close_connection("bgpd reconnected; its old connection had closed");
      boost::system::error_code ignored;
      const auto peer = sock->remote_endpoint(ignored);
      socket_ = sock;
      socket_->set_option(tcp::no_delay(true), ignored);
      spdlog::info("bmp: bgpd connected from {}:{}", peer.address().to_string(), peer.port());
      start_session();
      read();
    }
    accept();
  });
}

void BmpStation::start_session() {
  session_ = std::make_unique<bmp::Session>(handlers_.session);
  stats_.connected = true;
  ++stats_.connections;
  if (handlers_.on_connect) handlers_.on_connect();
}

void BmpStation::read() {
  auto sock = socket_;
  sock->async_read_some(asio::buffer(chunk_), [this, sock](boost::system::error_code ec, std::size_t n) {
    if (stopped_ || sock != socket_) return;  // replaced or stopped meanwhile
    if (ec) {
      close_connection(ec == asio::error::eof ? "bgpd closed the connection" : "read failed: " + ec.message());
      return;
    }
    if (!feed(bmp::Bytes(chunk_.data(), n))) return;  // feed() closed it
    read();
  });
}

bool BmpStation::feed(bmp::Bytes bytes) {
  if (!session_) start_session();
  stats_.bytes += bytes.size();
  const bool ok = session_->feed(bytes);
  if (handlers_.on_batch_end) handlers_.on_batch_end();
  if (!ok) {
    ++stats_.framing_errors;
    // The stream cannot be resynchronised: close it; bgpd reconnects and resends its table.
    close_connection("framing error: " + session_->framing_error());
  }
  return ok;
}

void BmpStation::close_connection(const std::string& why) {
  if (!socket_ && !session_) return;
  if (socket_) {
    boost::system::error_code ec;
    socket_->shutdown(tcp::socket::shutdown_both, ec);
    socket_->close(ec);
    socket_.reset();
  }
  end_session();
  spdlog::info("bmp: session closed: {}", why);
  if (handlers_.on_disconnect) handlers_.on_disconnect(why);
}

void BmpStation::end_session() {
  if (session_) add(closed_, session_->counters());
  session_.reset();
  stats_.connected = false;
}

}  // namespace vxfed::bgp
