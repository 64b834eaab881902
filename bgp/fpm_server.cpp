#include "bgp/fpm_server.hpp"

#include <spdlog/spdlog.h>

namespace vxfed::bgp {

namespace asio = boost::asio;
using asio::ip::tcp;

FpmServer::FpmServer(asio::io_context& io, Handlers handlers, FpmAcceptPolicy policy)
    : io_(io), acceptor_(io), handlers_(std::move(handlers)), policy_(policy), chunk_(256 * 1024) {}

FpmServer::~FpmServer() { stop(); }

Result<std::unique_ptr<FpmServer>> FpmServer::create(asio::io_context& io, const tcp::endpoint& listen,
                                                     Handlers handlers, FpmAcceptPolicy policy) {
  std::unique_ptr<FpmServer> s(new FpmServer(io, std::move(handlers), policy));
  if (auto st = listen_on_loopback(s->acceptor_, listen, "FPM server", "zebra",
                                   "is another FPM listener, e.g. a second vxfedd, running?");
      !st)
    return make_error(st.error());
  s->port_ = s->acceptor_.local_endpoint().port();
  s->accept();
  return s;
}

void FpmServer::stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ec;
  acceptor_.close(ec);
  close_connection();
}

void FpmServer::accept() {
  auto sock = std::make_shared<tcp::socket>(io_);
  acceptor_.async_accept(*sock, [this, sock](boost::system::error_code ec) {
    if (stopped_ || ec == asio::error::operation_aborted) return;
    if (ec) {
      spdlog::warn("fpm: accept failed: {}", ec.message());
    } else if (!admit_local_peer(*sock, policy_, socket_.get(), "zebra", "fpm", stats_)) {
      boost::system::error_code ignored;
      sock->close(ignored);
    } else {
      if (socket_) {  // the old connection is dead (admit_local_peer() looked): zebra reconnected
        spdlog::info("fpm: zebra reconnected; its old connection had closed");
        close_connection();
      }
      boost::system::error_code ignored;
      auto peer = sock->remote_endpoint(ignored);
      socket_ = sock;
      socket_->set_option(tcp::no_delay(true), ignored);
      buffer_.clear();
      stats_.connected = true;
      ++stats_.connections;
      spdlog::info("fpm: zebra connected from {}:{}", peer.address().to_string(), peer.port());
      if (handlers_.on_connect) handlers_.on_connect();
      read();
    }
    accept();
  });
}

void FpmServer::read() {
  auto sock = socket_;
  sock->async_read_some(asio::buffer(chunk_), [this, sock](boost::system::error_code ec, std::size_t n) {
    if (stopped_ || sock != socket_) return;  // replaced or stopped meanwhile
    if (ec) {
      if (ec != asio::error::operation_aborted) {
        spdlog::info("fpm: zebra disconnected ({})", ec == asio::error::eof ? "closed" : ec.message());
      }
      close_connection();
      return;
    }
    if (!feed(fpm::Bytes(chunk_.data(), n))) {
      close_connection();
      return;
    }
    read();
  });
}

bool FpmServer::feed(fpm::Bytes bytes) {
  stats_.bytes += bytes.size();
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  fpm::Bytes rest(buffer_);
  bool ok = true;
  fpm::Frame f;
  while (true) {
    auto st = fpm::parse_frame(rest, f);
    if (st == fpm::FrameStatus::kNeedMore) break;
    if (st == fpm::FrameStatus::kBadVersion || st == fpm::FrameStatus::kBadLength) {
      ++stats_.stream_errors;
      spdlog::warn("fpm: {} in frame header (version {}, length {}): closing the connection, zebra will resync",
                   fpm::to_string(st), f.version, f.length);
      ok = false;
      break;
    }
    rest = rest.subspan(f.length);
    ++stats_.frames;
    if (st == fpm::FrameStatus::kBadType) {
      ++stats_.skipped;
      continue;
    }
    if (!fpm::netlink_framing_ok(f.payload)) {
      ++stats_.malformed_frames;
      spdlog::warn("fpm: frame of {} bytes with broken netlink framing dropped", f.length);
      continue;
    }
    fpm::NetlinkIterator it(f.payload);
    fpm::Bytes msg;
    std::uint16_t type;
    fpm::RouteMessage route;
    while (it.next(msg, type)) {
      ++stats_.messages;
      const char* why = "";
      switch (fpm::parse_route(msg, route, &why)) {
        case fpm::RouteStatus::kRoute:
          ++stats_.route_messages;
          if (handlers_.on_route) handlers_.on_route(route);
          break;
        case fpm::RouteStatus::kMalformed:
          ++stats_.malformed_messages;
          spdlog::warn("fpm: malformed route message dropped: {}", why);
          break;
        default:
          ++stats_.skipped;
      }
    }
  }
  if (ok) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + (rest.data() - buffer_.data()));
  } else {
    buffer_.clear();
  }
  if (handlers_.on_batch_end) handlers_.on_batch_end();
  return ok;
}

void FpmServer::close_connection() {
  if (!socket_) return;
  boost::system::error_code ec;
  socket_->shutdown(tcp::socket::shutdown_both, ec);
  socket_->close(ec);
  socket_.reset();
  buffer_.clear();
  stats_.connected = false;
  if (handlers_.on_disconnect) handlers_.on_disconnect();
}

}  // namespace vxfed::bgp
