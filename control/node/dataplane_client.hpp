// Keeps vxfed-dataplane in step with the node state: connects to its --api-socket, asks its
// status (the snapshot's generation continues from the dataplane's when that is higher, so
// generations only go forward across a vxfedd restart), sends a complete Snapshot on every
// (re)connect, then a Delta per change, pipelined (the dataplane
// answers in order). The dataplane forwards only after the snapshot is applied, so ready()
// means "the node's tables are in force".
//
// What the dataplane carries is known from its acknowledgements alone: the endpoints of the
// last acknowledged snapshot, changed by every acknowledged delta (a refused request leaves
// its tables as they were). carries() answers from that, never from what was merely sent.
//
// One endpoint the dataplane cannot serve (its interface is gone, every pod port is in use)
// is refused alone: the dataplane names it (DataplaneResponse.refused_endpoint), the client
// marks it refused with the dataplane's reason and sends the same snapshot or delta again
// without it, so no other endpoint's forwarding is disturbed. A refused endpoint is retried
// when it is attached anew or at the next connection; its removal is not sent (the
// dataplane never had it). A refusal that names no endpoint resends the full snapshot; a
// snapshot refused without a name falls back to one with networks and routes only, then
// every endpoint as its own delta (global services' entries come back with their next change
// or the next full snapshot).
// Lost connection: reconnect with exponential backoff (reconnect_min_ms .. reconnect_max_ms),
// or at once when the socket file is created anew (a dataplane that restarted).
//
// Changes flow as they happen: each publish() is queued (DeltaQueue: in order, at most
// max_delta_entries entries per message) and sent at once while fewer than
// max_deltas_in_flight Deltas await their answer (the dataplane applies a Delta in place, in
// microseconds per entry, so there is nothing to gain by holding changes back to merge them).
// Two things stop the pipeline: a snapshot or endpoint probe in flight (what follows must
// rest on its result), and a Delta that upserts endpoints, which goes alone — the dataplane
// may refuse one of its endpoints, and the rest is sent again without it before anything
// queued behind it. A Delta refused for any other reason resends the full snapshot, which
// replaces whatever the Deltas pipelined with it did. Back-pressure is visible: deltas_queued(),
// deltas_in_flight() and oldest_unacked_age_s() (metrics), and each change's time from
// publish() to the dataplane's acknowledgement (delta_latency()).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>  // before asio: boost 1.74 awaitable.hpp needs std::exchange

#include <boost/asio.hpp>
#include <spdlog/logger.h>

#include "proto/dataplane.pb.h"
#include "common/delimited.hpp"
#include "common/metrics/histogram.hpp"
#include "control/node/delta_queue.hpp"
#include "control/node/node_state.hpp"

namespace vxfed::control {

class DataplaneClient : public TablesSink {
 public:
  struct Options {
    std::string socket;
    std::uint32_t reconnect_min_ms = 100;
    std::uint32_t reconnect_max_ms = 5000;
    std::uint32_t counters_interval_ms = 2000;
    std::uint32_t request_timeout_ms = 10000;
    std::size_t max_delta_entries = DeltaQueue::kDefaultMaxEntries;  // per Delta message
    std::uint32_t max_deltas_in_flight = 8;
    // Global services configured: GetServiceCounters with every counters poll (new flows and
    // live flows per service and backend; docs/services.md).
    bool service_counters = false;
  };
  struct Stats {
    std::uint64_t connects = 0;
    std::uint64_t disconnects = 0;
    std::uint64_t snapshots_sent = 0;
    std::uint64_t snapshots_refused = 0;
    std::uint64_t deltas_sent = 0;
    std::uint64_t deltas_queued_peak = 0;     // most Deltas waiting to be sent at once
    std::uint64_t deltas_refused = 0;
    std::uint64_t endpoints_refused = 0;
    double last_sync_ms = 0;            // connect -> snapshot applied, last time
  };

  DataplaneClient(boost::asio::io_context& io, Options options, NodeState& state,
                  std::shared_ptr<spdlog::logger> log);
  ~DataplaneClient() override;

  void start();
  void stop();

  // TablesSink
  void publish(const TablesDelta& delta) override;
  bool ready() const override { return ready_; }
  bool carries(const dp::Endpoint& endpoint) const override;
  std::optional<std::string> refusal(const std::string& endpoint_id) const override;

  std::uint64_t acked_generation() const { return acked_generation_; }
  // Called after anything that may change what the dataplane carries (a response, a lost
  // connection) and on every tick (100 ms): the API's waiting attaches look again.
  void set_listener(std::function<void()> listener) { listener_ = std::move(listener); }

  bool connected() const { return conn_ != nullptr; }
  std::uint64_t generation() const { return generation_; }
  const Stats& stats() const { return stats_; }
  // Last counters the dataplane reported (empty before the first poll) and when.
  const dp::Counters& counters() const { return counters_; }
  std::chrono::steady_clock::time_point counters_time() const { return counters_time_; }
  // Asks for the counters now, ahead of any Delta sent after it (the dataplane answers in
  // order): what they say is the state before that Delta. Returns the request's number (> 0),
  // which the counters listener is given with its answer; 0 when not connected and ready.
  std::uint64_t poll_counters_now();
  // Called with each counters answer as it arrives (counters() is it): the number
  // poll_counters_now() returned for it, 0 for the periodic polls.
  void set_counters_listener(std::function<void(std::uint64_t)> listener) { counters_listener_ = std::move(listener); }
  const dp::DataplaneStatus& status() const { return status_; }
  // Last per-service counters the dataplane reported (Options::service_counters; empty before
  // the first answer) and when.
  const dp::ServiceCountersReport& service_counters() const { return service_counters_; }
  std::chrono::steady_clock::time_point service_counters_time() const { return service_counters_time_; }

  // Back-pressure: Deltas waiting to be sent, Deltas sent and not answered yet, and the age of
  // the oldest change not acknowledged yet (0 when everything published is acknowledged).
  std::size_t deltas_queued() const { return queue_.size(); }
  std::size_t deltas_in_flight() const;
  double oldest_unacked_age_s() const;
  // Per acknowledged Delta: publish() of its change -> the dataplane's acknowledgement.
  const metrics::Histogram& delta_latency() const { return delta_latency_; }

 private:
  enum class Kind { hello, snapshot, base_snapshot, delta, endpoint_probe, counters, status, service_counters };
  struct Pending {
    std::uint64_t request_id;
    Kind kind;
    std::uint64_t generation;
    std::chrono::steady_clock::time_point sent;
    std::chrono::steady_clock::time_point queued;  // delta: when its change was published
    bool upserts_endpoints = false;                // delta: sent alone (see above)
    dp::Delta delta;                               // delta, endpoint_probe: what it carried
    std::map<std::string, dp::Endpoint> endpoints; // snapshot, base_snapshot: its endpoints
  };
  struct Connection {
    explicit Connection(boost::asio::io_context& io) : socket(io) {}
    boost::asio::local::stream_protocol::socket socket;
    DelimitedDecoder decoder{64u << 20};   // dumps and counters can be large
    std::array<char, 65536> buffer{};
    std::deque<std::string> out;
    bool writing = false;
  };

  void connect();
  void schedule_reconnect();
  struct SocketFile {
    bool exists = false;
    std::uint64_t ino = 0;
    std::int64_t ctime_s = 0, ctime_ns = 0;
    bool operator==(const SocketFile&) const = default;
  };
  SocketFile socket_file() const;
  void watch_socket();
  static constexpr int kSocketWatchMs = 20;
  // A socket file younger than this may be bound but not listening yet (refused connects are
  // retried every kSocketWatchMs), older ones are retried after the backoff.
  static constexpr int kFreshSocketMs = 1000;
  static bool socket_is_fresh(const SocketFile& file);
  void on_connected();
  void read(std::shared_ptr<Connection> conn);
  void on_response(const dp::DataplaneResponse& response);
  void send(dp::DataplaneRequest& request, Kind kind, std::uint64_t generation, Pending carried);
  void send(dp::DataplaneRequest& request, Kind kind, std::uint64_t generation) {
    send(request, kind, generation, Pending{});
  }
  void flush(std::shared_ptr<Connection> conn);
  void drop_connection(const std::string& why);
  void send_snapshot(bool with_endpoints);
  void request_resync();
  void try_send_delta();
  void send_delta(DeltaQueue::Item item);
  void tick();
  void notify();
  void carried_apply(const dp::Delta& delta);
  bool will_carry(const std::string& endpoint_id) const;  // carried, or in a request not answered yet
  void refuse_endpoint(const dp::Endpoint& endpoint, const std::string& reason);
  bool table_request_in_flight() const;
  bool endpoint_delta_in_flight() const;  // a Delta that upserts endpoints is out: it goes alone

  boost::asio::io_context& io_;
  Options options_;
  NodeState& state_;
  std::shared_ptr<spdlog::logger> log_;
  std::shared_ptr<Connection> conn_;
  boost::asio::steady_timer reconnect_timer_;
  boost::asio::steady_timer tick_timer_;
  boost::asio::steady_timer watch_timer_;   // the socket file, while disconnected
  SocketFile watched_socket_;                // as it was when the last failed connect began
  SocketFile attempt_socket_;                // as it was when the connect in progress began
  bool connecting_ = false;
  std::uint32_t backoff_ms_;
  bool stopped_ = true;
  bool ready_ = false;
  bool hello_in_flight_ = false;      // the connection's first GetStatus (its generation) is out
  bool resync_in_flight_ = false;
  bool resync_again_ = false;        // another resync was asked for while one was in flight
  DeltaQueue queue_;                 // changes not sent yet, in order
  std::uint64_t last_snapshot_generation_ = 0;  // a delta sent before it needs no resync of its own
  metrics::Histogram delta_latency_;
  std::uint64_t next_request_id_ = 1;
  std::uint64_t generation_ = 0;
  std::uint64_t acked_generation_ = 0;
  std::deque<Pending> pending_;
  std::map<std::string, dp::Endpoint> carried_;      // the dataplane's endpoints, as acknowledged
  struct Refused {
    dp::Endpoint endpoint;
    std::string reason;
  };
  std::map<std::string, Refused> refused_;           // by endpoint id, until attached anew or reconnect
  std::function<void()> listener_;
  std::chrono::steady_clock::time_point connected_at_;
  std::chrono::steady_clock::time_point last_counters_poll_;
  bool first_connect_logged_ = false;
  std::chrono::steady_clock::time_point last_unreachable_log_{};
  Stats stats_;
  dp::Counters counters_;
  std::chrono::steady_clock::time_point counters_time_;
  std::function<void(std::uint64_t)> counters_listener_;
  std::uint64_t counters_polls_now_ = 0;  // poll_counters_now() requests sent
  dp::DataplaneStatus status_;
  dp::ServiceCountersReport service_counters_;
  std::chrono::steady_clock::time_point service_counters_time_;
};

}  // namespace vxfed::control
