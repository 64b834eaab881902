// Keeps vxfed-dataplane in step with the node state: connects to its --api-socket, asks its
// status (the snapshot's generation continues from the dataplane's when that is higher, so
// generations only go forward across a vxfedd restart), sends a complete Snapshot on every
// (re)connect, then a Delta per change, pipelined (the dataplane
// answers in order). The dataplane forwards only after the snapshot is applied, so ready()
// means "the node's tables are in force".
//
// When the dataplane refuses a snapshot (an entry it cannot take, typically an endpoint
// whose interface vanished while vxfedd was down), the client falls back: a snapshot with
// networks and routes only, then every endpoint as its own delta; those refused are marked
// (not in_dataplane) and retried at the next resync. A refused delta triggers a resync.
// Lost connection: reconnect with exponential backoff (reconnect_min_ms .. reconnect_max_ms),
// or at once when the socket file is created anew (a dataplane that restarted).
// At most one Delta is in flight: changes made meanwhile are merged into the next one
// (DeltaMerger), because each Delta costs the dataplane a table rebuild.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <utility>  // before asio: boost 1.74 awaitable.hpp needs std::exchange

#include <boost/asio.hpp>
#include <spdlog/logger.h>

#include "proto/dataplane.pb.h"
#include "common/delimited.hpp"
#include "control/delta_merger.hpp"
#include "control/node_state.hpp"

namespace vxfed::control {

class DataplaneClient : public TablesSink {
 public:
  struct Options {
    std::string socket;
    std::uint32_t reconnect_min_ms = 100;
    std::uint32_t reconnect_max_ms = 5000;
    std::uint32_t counters_interval_ms = 2000;
    std::uint32_t request_timeout_ms = 10000;
  };
  struct Stats {
    std::uint64_t connects = 0;
    std::uint64_t disconnects = 0;
    std::uint64_t snapshots_sent = 0;
    std::uint64_t snapshots_refused = 0;
    std::uint64_t deltas_sent = 0;
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
  std::uint64_t publish(const TablesDelta& delta) override;
  bool ready() const override { return ready_; }
  std::uint64_t acked_generation() const override { return acked_generation_; }

  bool connected() const { return conn_ != nullptr; }
  std::uint64_t generation() const { return generation_; }
  const Stats& stats() const { return stats_; }
  // Last counters the dataplane reported (empty before the first poll) and when.
  const dp::Counters& counters() const { return counters_; }
  std::chrono::steady_clock::time_point counters_time() const { return counters_time_; }
  const dp::DataplaneStatus& status() const { return status_; }

 private:
  enum class Kind { hello, snapshot, base_snapshot, delta, endpoint_probe, counters, status };
  struct Pending {
    std::uint64_t request_id;
    Kind kind;
    std::uint64_t generation;
    std::string endpoint_id;           // endpoint_probe
    std::chrono::steady_clock::time_point sent;
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
  void on_connected();
  void read(std::shared_ptr<Connection> conn);
  void on_response(const dp::DataplaneResponse& response);
  void send(dp::DataplaneRequest& request, Kind kind, std::uint64_t generation, std::string endpoint_id = {});
  void flush(std::shared_ptr<Connection> conn);
  void drop_connection(const std::string& why);
  void send_snapshot(bool with_endpoints);
  void request_resync();
  void try_send_delta();
  void tick();

  boost::asio::io_context& io_;
  Options options_;
  NodeState& state_;
  std::shared_ptr<spdlog::logger> log_;
  std::shared_ptr<Connection> conn_;
  boost::asio::steady_timer reconnect_timer_;
  boost::asio::steady_timer tick_timer_;
  boost::asio::steady_timer watch_timer_;   // the socket file, while disconnected
  SocketFile watched_socket_;                // as it was when the last connect failed
  bool connecting_ = false;
  std::uint32_t backoff_ms_;
  bool stopped_ = true;
  bool ready_ = false;
  bool hello_in_flight_ = false;      // the connection's first GetStatus (its generation) is out
  bool resync_in_flight_ = false;
  bool resync_again_ = false;        // another resync was asked for while one was in flight
  DeltaMerger merger_;               // changes waiting for the in-flight delta's answer
  std::uint64_t merged_generation_ = 0;
  bool delta_in_flight_ = false;
  std::uint64_t next_request_id_ = 1;
  std::uint64_t generation_ = 0;
  std::uint64_t acked_generation_ = 0;
  std::deque<Pending> pending_;
  std::set<std::string> refused_;
  std::chrono::steady_clock::time_point connected_at_;
  std::chrono::steady_clock::time_point last_counters_poll_;
  bool first_connect_logged_ = false;
  std::chrono::steady_clock::time_point last_unreachable_log_{};
  Stats stats_;
  dp::Counters counters_;
  std::chrono::steady_clock::time_point counters_time_;
  dp::DataplaneStatus status_;
};

}  // namespace vxfed::control
