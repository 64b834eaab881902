// One BGP session of the speaker (RFC 4271 8: the finite state machine, reduced to what a
// speaker that only connects out needs): Idle -> Connect -> OpenSent -> OpenConfirm ->
// Established, with a NOTIFICATION for every error it detects, the hold and keepalive timers,
// and a reconnect after connect_retry when the session ends. Once Established it queues every
// route's UPDATE (pre-encoded into one buffer) and End-of-RIB, and writes them with as few
// send() calls as the socket takes. What it receives (the reflector's own UPDATEs) is read and
// counted, never kept.
//
// Non-blocking: the owner polls fd() for events() and calls on_ready(), and calls on_timer()
// at next_deadline().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "perf/federation/speaker/bgp_wire.hpp"
#include "perf/federation/speaker/speaker_config.hpp"

namespace vxfed::perf::speaker {

using Clock = std::chrono::steady_clock;
using Log = std::function<void(const std::string&)>;

class PeerSession {
 public:
  enum class State { idle, connect, open_sent, open_confirm, established, closing, closed };

  PeerSession(SessionConfig config, Log log);

  const SessionConfig& config() const { return config_; }
  State state() const { return state_; }
  int fd() const { return fd_.get(); }
  short events() const;  // for poll(): 0 when there is no socket
  Clock::time_point next_deadline() const;

  void on_ready(short revents, Clock::time_point now);
  void on_timer(Clock::time_point now);

  // A route more (or a new next hop for a prefix it has): sent at once when Established, and
  // with the rest after any reconnect.
  void announce(const Route& route);
  // The prefix withdrawn and forgotten; false when the session never announced it.
  bool withdraw(const net::Ipv4Prefix& prefix);
  // Cease (administrative shutdown) after whatever is queued, then the socket closed; no
  // reconnect. The peer then withdraws every route of the session.
  void shut_down(Clock::time_point now);

 private:
  void connect(Clock::time_point now);
  void connected(Clock::time_point now);
  void read(Clock::time_point now);
  void handle(Bytes message, std::uint8_t type, Clock::time_point now);
  void flush(Clock::time_point now);
  void queue(const std::vector<std::uint8_t>& bytes);
  void send_burst(Clock::time_point now);
  // Ends the session: a NOTIFICATION first when there is one to send, then a reconnect after
  // connect_retry (none once shut down).
  void fail(const std::string& why, Clock::time_point now, const std::vector<std::uint8_t>& notification = {});
  void close_socket();
  void set_state(State s);

  SessionConfig config_;
  Log log_;
  State state_ = State::idle;
  UniqueFd fd_;
  std::vector<std::uint8_t> in_;
  std::vector<std::uint8_t> out_;
  std::size_t out_sent_ = 0;
  std::size_t burst_end_ = 0;     // out_ offset where the burst ends (0: none pending)
  std::size_t burst_routes_ = 0;
  Clock::time_point burst_start_;
  Clock::time_point retry_at_;
  Clock::time_point hold_deadline_ = Clock::time_point::max();
  Clock::time_point keepalive_at_ = Clock::time_point::max();
  Clock::time_point close_deadline_ = Clock::time_point::max();
  std::uint16_t hold_s_ = 0;      // negotiated
  bool four_byte_as_ = true;      // negotiated
  bool shutting_down_ = false;
  std::uint64_t updates_received_ = 0;
};

const char* to_string(PeerSession::State s);

}  // namespace vxfed::perf::speaker
