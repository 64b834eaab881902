#include "perf/federation/speaker/peer_session.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace vxfed::perf::speaker {
namespace {

constexpr std::uint16_t kBgpPort = 179;
// RFC 4271 8.2.2: the hold timer while waiting for the peer's OPEN ("a large value", 4 min).
constexpr auto kOpenSentHold = std::chrono::minutes(4);
// How long a shut-down session may take to write what is queued and its Cease.
constexpr auto kCloseGrace = std::chrono::seconds(10);
constexpr std::size_t kReadChunk = 256 * 1024;
// RFC 6608 subcodes of a Finite State Machine Error: the state the unexpected message came in.
constexpr std::uint8_t kFsmInOpenSent = 1, kFsmInOpenConfirm = 2, kFsmInEstablished = 3;

double ms_since(Clock::time_point t, Clock::time_point now) {
  return std::chrono::duration<double, std::milli>(now - t).count();
}

}  // namespace

const char* to_string(PeerSession::State s) {
  switch (s) {
    case PeerSession::State::idle: return "Idle";
    case PeerSession::State::connect: return "Connect";
    case PeerSession::State::open_sent: return "OpenSent";
    case PeerSession::State::open_confirm: return "OpenConfirm";
    case PeerSession::State::established: return "Established";
    case PeerSession::State::closing: return "Closing";
    case PeerSession::State::closed: return "Closed";
  }
  return "?";
}

PeerSession::PeerSession(SessionConfig config, Log log)
    : config_(std::move(config)), log_(std::move(log)), retry_at_(Clock::now()) {}

short PeerSession::events() const {
  if (!fd_) return 0;
  if (state_ == State::connect) return POLLOUT;
  return static_cast<short>(POLLIN | (out_sent_ < out_.size() ? POLLOUT : 0));
}

Clock::time_point PeerSession::next_deadline() const {
  switch (state_) {
    case State::idle: return retry_at_;
    case State::closed: return Clock::time_point::max();
    case State::closing: return close_deadline_;
    default: return std::min(hold_deadline_, keepalive_at_);
  }
}

void PeerSession::set_state(State s) {
  if (s != state_) log_(config_.name() + ": " + to_string(state_) + " -> " + to_string(s));
  state_ = s;
}

void PeerSession::on_timer(Clock::time_point now) {
  if (state_ == State::idle && now >= retry_at_) {
    connect(now);
  } else if (state_ == State::closing && now >= close_deadline_) {
    log_(config_.name() + ": " + std::to_string(out_.size() - out_sent_) +
         " bytes still queued after the close grace; closing without them");
    close_socket();
    set_state(State::closed);
  } else if (state_ != State::idle && state_ != State::closed && state_ != State::closing) {
    if (now >= hold_deadline_) {
      fail("hold timer expired (" + std::to_string(hold_s_) + " s without a message)", now,
           encode_notification(ErrorCode::hold_timer_expired, 0));
      return;
    }
    if (now >= keepalive_at_) {
      queue(encode_keepalive());
      keepalive_at_ = now + std::chrono::seconds(std::max(1, hold_s_ / 3));
      flush(now);
    }
  }
}

void PeerSession::connect(Clock::time_point now) {
  fd_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd_) return fail(std::string("socket: ") + std::strerror(errno), now);
  // The burst goes out in large writes; what is left at its end (and every KEEPALIVE) must
  // not wait for an ACK.
  const int one = 1;
  ::setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr.s_addr = config_.local.to_network();
  if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) != 0)
    return fail("bind to " + config_.local.str() + ": " + std::strerror(errno), now);
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(kBgpPort);
  peer.sin_addr.s_addr = config_.peer.to_network();
  if (::connect(fd_.get(), reinterpret_cast<sockaddr*>(&peer), sizeof peer) != 0 && errno != EINPROGRESS)
    return fail("connect: " + std::string(std::strerror(errno)), now);
  in_.clear();
  out_.clear();
  out_sent_ = burst_end_ = 0;
  set_state(State::connect);
}

void PeerSession::connected(Clock::time_point now) {
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return fail("connect: " + std::string(std::strerror(err)), now);
  queue(encode_open(OpenParams{config_.local_as, config_.hold_s, config_.local}));
  hold_deadline_ = now + kOpenSentHold;
  keepalive_at_ = Clock::time_point::max();
  set_state(State::open_sent);
  flush(now);
}

void PeerSession::on_ready(short revents, Clock::time_point now) {
  if (state_ == State::connect) {
    if (revents & (POLLOUT | POLLERR | POLLHUP)) connected(now);
    return;
  }
  if (revents & POLLOUT) flush(now);
  if (fd_ && (revents & (POLLIN | POLLERR | POLLHUP))) read(now);
}

void PeerSession::read(Clock::time_point now) {
  for (;;) {
    const std::size_t have = in_.size();
    in_.resize(have + kReadChunk);
    const ssize_t n = ::recv(fd_.get(), in_.data() + have, kReadChunk, 0);
    in_.resize(have + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
    if (n == 0) return fail("the peer closed the connection", now);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      return fail("recv: " + std::string(std::strerror(errno)), now);
    }
    // Whole messages off the front; a partial one stays for the next read.
    std::size_t off = 0;
    while (fd_) {
      std::size_t need = 0;
      WireError err;
      const Bytes rest(in_.data() + off, in_.size() - off);
      const auto header = read_header(rest, need, err);
      if (!header) {
        if (!err.why.empty()) return fail(err.why, now, encode_notification(err.code, err.subcode, err.data));
        break;
      }
      handle(rest.first(header->length), header->type, now);
      off += header->length;
    }
    if (!fd_) return;
    in_.erase(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(off));
  }
}

void PeerSession::handle(Bytes m, std::uint8_t type, Clock::time_point now) {
  const auto t = static_cast<MessageType>(type);
  if (t == MessageType::notification) {
    return fail("the peer sent a NOTIFICATION: " + describe_notification(m), now);
  }
  if (state_ == State::closing) return;  // read and dropped: only the Cease is still to go
  if (state_ == State::open_sent && t == MessageType::open) {
    WireError err;
    const auto open = parse_open(m, config_.peer_as, err);
    if (!open) return fail(err.why, now, encode_notification(err.code, err.subcode, err.data));
    hold_s_ = std::min(config_.hold_s, open->hold_s);
    four_byte_as_ = open->four_byte_as;
    if (!four_byte_as_ && config_.local_as > 0xffff)
      log_(config_.name() + ": the peer did not offer 4-octet ASNs; AS_PATH carries AS_TRANS for " +
           std::to_string(config_.local_as));
    queue(encode_keepalive());
    hold_deadline_ = hold_s_ ? now + std::chrono::seconds(hold_s_) : Clock::time_point::max();
    keepalive_at_ = hold_s_ ? now + std::chrono::seconds(std::max(1, hold_s_ / 3)) : Clock::time_point::max();
    log_(config_.name() + ": OPEN from AS " + std::to_string(open->asn) + ", hold " + std::to_string(hold_s_) +
         " s, 4-octet AS " + (four_byte_as_ ? "yes" : "no") + ", IPv4 unicast " + (open->ipv4_unicast ? "yes" : "no"));
    set_state(State::open_confirm);
    return flush(now);
  }
  if (state_ == State::open_confirm && t == MessageType::keepalive) {
    if (hold_s_) hold_deadline_ = now + std::chrono::seconds(hold_s_);
    set_state(State::established);
    return send_burst(now);
  }
  if (state_ == State::established &&
      (t == MessageType::keepalive || t == MessageType::update || t == MessageType::route_refresh)) {
    if (hold_s_) hold_deadline_ = now + std::chrono::seconds(hold_s_);
    if (t == MessageType::update) ++updates_received_;
    if (t == MessageType::route_refresh) {
      log_(config_.name() + ": ROUTE-REFRESH from the peer: every route again");
      send_burst(now);
    }
    return;
  }
  const std::uint8_t sub = state_ == State::open_sent      ? kFsmInOpenSent
                           : state_ == State::open_confirm ? kFsmInOpenConfirm
                                                           : kFsmInEstablished;
  fail("unexpected message of type " + std::to_string(type) + " in " + to_string(state_), now,
       encode_notification(ErrorCode::fsm, sub));
}

void PeerSession::send_burst(Clock::time_point now) {
  burst_start_ = now;
  const std::size_t before = out_.size() - out_sent_;
  const std::size_t updates =
      append_updates(UpdateParams{config_.ibgp(), config_.local_as, four_byte_as_}, config_.routes, out_);
  append_end_of_rib(out_);
  burst_end_ = out_.size();
  burst_routes_ = config_.routes.size();
  const auto encoded = Clock::now();
  log_(config_.name() + ": Established; " + std::to_string(config_.routes.size()) + " routes in " +
       std::to_string(updates) + " UPDATEs and End-of-RIB, " + std::to_string(out_.size() - out_sent_ - before) +
       " bytes, encoded in " + std::to_string(ms_since(now, encoded)) + " ms");
  flush(now);
}

void PeerSession::queue(const std::vector<std::uint8_t>& bytes) { out_.insert(out_.end(), bytes.begin(), bytes.end()); }

void PeerSession::flush(Clock::time_point now) {
  while (fd_ && out_sent_ < out_.size()) {
    const ssize_t n = ::send(fd_.get(), out_.data() + out_sent_, out_.size() - out_sent_, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      if (errno == EINTR) continue;
      return fail("send: " + std::string(std::strerror(errno)), now);
    }
    out_sent_ += static_cast<std::size_t>(n);
  }
  if (burst_end_ != 0 && out_sent_ >= burst_end_) {
    log_(config_.name() + ": all " + std::to_string(burst_routes_) + " routes handed to the kernel " +
         std::to_string(ms_since(burst_start_, Clock::now())) + " ms after Established");
    burst_end_ = 0;
  }
  if (out_sent_ == out_.size()) {
    out_.clear();
    out_sent_ = 0;
    burst_end_ = 0;
    if (state_ == State::closing) {
      ::shutdown(fd_.get(), SHUT_WR);
      close_socket();
      set_state(State::closed);
    }
  }
}

void PeerSession::announce(const Route& route) {
  auto it = std::find_if(config_.routes.begin(), config_.routes.end(),
                         [&](const Route& r) { return r.prefix == route.prefix; });
  if (it != config_.routes.end()) {
    *it = route;
  } else {
    config_.routes.push_back(route);
  }
  if (state_ != State::established) return;
  append_updates(UpdateParams{config_.ibgp(), config_.local_as, four_byte_as_}, std::span(&route, 1), out_);
  flush(Clock::now());
}

bool PeerSession::withdraw(const net::Ipv4Prefix& prefix) {
  auto it = std::find_if(config_.routes.begin(), config_.routes.end(),
                         [&](const Route& r) { return r.prefix == prefix; });
  if (it == config_.routes.end()) return false;
  config_.routes.erase(it);
  if (state_ == State::established) {
    append_withdrawal(std::span(&prefix, 1), out_);
    flush(Clock::now());
  }
  return true;
}

void PeerSession::shut_down(Clock::time_point now) {
  shutting_down_ = true;
  if (state_ == State::open_sent || state_ == State::open_confirm || state_ == State::established) {
    // After the queued messages: a NOTIFICATION may not cut one in half.
    queue(encode_notification(ErrorCode::cease, kCeaseAdministrativeShutdown));
    close_deadline_ = now + kCloseGrace;
    set_state(State::closing);
    flush(now);
    return;
  }
  close_socket();
  set_state(State::closed);
}

void PeerSession::fail(const std::string& why, Clock::time_point now, const std::vector<std::uint8_t>& notification) {
  log_(config_.name() + ": " + why + (notification.empty() ? "" : " (NOTIFICATION sent)") + "; " +
       std::to_string(updates_received_) + " UPDATEs received in the session");
  // Best effort, without waiting: the session is over either way. Only between messages: with
  // part of a queued message written, a NOTIFICATION would land inside it.
  const bool at_boundary = out_sent_ == 0 || out_sent_ == out_.size();
  if (fd_ && !notification.empty() && at_boundary) {
    ::send(fd_.get(), notification.data(), notification.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  close_socket();
  updates_received_ = 0;
  if (shutting_down_) {
    set_state(State::closed);
    return;
  }
  retry_at_ = now + std::chrono::seconds(config_.connect_retry_s);
  set_state(State::idle);
}

void PeerSession::close_socket() {
  fd_.reset();
  in_.clear();
  out_.clear();
  out_sent_ = burst_end_ = 0;
  hold_deadline_ = keepalive_at_ = Clock::time_point::max();
}

}  // namespace vxfed::perf::speaker
