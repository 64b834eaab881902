#include "control/dataplane_client.hpp"

#include <sys/stat.h>

#include <spdlog/spdlog.h>

namespace vxfed::control {

namespace asio = boost::asio;
using SteadyClock = std::chrono::steady_clock;

namespace {
double ms_since(SteadyClock::time_point t) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t).count();
}
}  // namespace

DataplaneClient::DataplaneClient(asio::io_context& io, Options options, NodeState& state,
                                 std::shared_ptr<spdlog::logger> log)
    : io_(io),
      options_(std::move(options)),
      state_(state),
      log_(std::move(log)),
      reconnect_timer_(io),
      tick_timer_(io),
      watch_timer_(io),
      backoff_ms_(options_.reconnect_min_ms) {}

DataplaneClient::~DataplaneClient() { stop(); }

void DataplaneClient::start() {
  stopped_ = false;
  state_.set_sink(this);
  connect();
  tick();
}

void DataplaneClient::stop() {
  if (stopped_) return;
  stopped_ = true;
  reconnect_timer_.cancel();
  tick_timer_.cancel();
  watch_timer_.cancel();
  if (conn_) {
    boost::system::error_code ignored;
    conn_->socket.close(ignored);
    conn_.reset();
  }
  ready_ = false;
  hello_in_flight_ = false;
  state_.set_sink(nullptr);
}

void DataplaneClient::connect() {
  if (stopped_ || connecting_) return;
  connecting_ = true;
  auto conn = std::make_shared<Connection>(io_);
  conn->socket.async_connect(asio::local::stream_protocol::endpoint(options_.socket),
                             [this, conn](const boost::system::error_code& ec) {
                               connecting_ = false;
                               if (stopped_) return;
                               if (ec) {
                                 // The first failure, then one line a minute: a dataplane that
                                 // stays away must not flood the log at the backoff rate.
                                 const auto now = SteadyClock::now();
                                 if (!first_connect_logged_ || now - last_unreachable_log_ >= std::chrono::seconds(60)) {
                                   log_->warn("dataplane {} not reachable ({}); retrying every {} ms at most",
                                              options_.socket, ec.message(), options_.reconnect_max_ms);
                                   last_unreachable_log_ = now;
                                 }
                                 first_connect_logged_ = true;
                                 schedule_reconnect();
                                 return;
                               }
                               conn_ = conn;
                               on_connected();
                               read(conn);
                             });
}

void DataplaneClient::schedule_reconnect() {
  reconnect_timer_.expires_after(std::chrono::milliseconds(backoff_ms_));
  backoff_ms_ = std::min(options_.reconnect_max_ms, backoff_ms_ * 2);
  reconnect_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) connect();
  });
  watched_socket_ = socket_file();
  watch_socket();
}

DataplaneClient::SocketFile DataplaneClient::socket_file() const {
  struct stat st {};
  if (::stat(options_.socket.c_str(), &st) != 0) return {};
  return SocketFile{true, st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
}

// While the backoff runs, a (re)created socket file means a dataplane that just started
// listening: connect at once instead of waiting out the backoff (a restarted dataplane would
// otherwise forward nothing for up to reconnect_max_ms after it is up). One stat() per
// interval, only while disconnected.
void DataplaneClient::watch_socket() {
  watch_timer_.expires_after(std::chrono::milliseconds(kSocketWatchMs));
  watch_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_ || conn_ || connecting_) return;
    const SocketFile now = socket_file();
    if (now.exists && !(now == watched_socket_)) {
      reconnect_timer_.cancel();
      connect();
      return;
    }
    if (!now.exists) watched_socket_ = now;
    watch_socket();
  });
}

void DataplaneClient::on_connected() {
  ++stats_.connects;
  connected_at_ = SteadyClock::now();
  first_connect_logged_ = false;
  log_->info("connected to dataplane {}; asking its generation, then sending the full snapshot", options_.socket);
  refused_.clear();
  state_.mark_refused({});
  // Generations only go forward: a dataplane that outlived a vxfedd restart runs a generation
  // this process has not counted to yet. Its status comes first; the snapshot continues from it.
  hello_in_flight_ = true;
  dp::DataplaneRequest status;
  status.mutable_get_status();
  send(status, Kind::hello, 0);
}

void DataplaneClient::send_snapshot(bool with_endpoints) {
  dp::DataplaneRequest request;
  auto* snapshot = request.mutable_snapshot();
  snapshot->set_generation(++generation_);
  *snapshot->mutable_tables() = state_.tables();
  if (!with_endpoints) {
    snapshot->mutable_tables()->clear_endpoints();
  } else if (!refused_.empty()) {
    // Endpoints this dataplane already refused would only fail the whole snapshot again;
    // they are retried at the next connection.
    auto* endpoints = snapshot->mutable_tables()->mutable_endpoints();
    for (int i = endpoints->size() - 1; i >= 0; --i)
      if (refused_.count(endpoints->Get(i).id())) endpoints->DeleteSubrange(i, 1);
  }
  log_->debug("snapshot generation {}: {} networks, {} endpoints, {} routes", generation_,
              snapshot->tables().networks_size(), snapshot->tables().endpoints_size(),
              snapshot->tables().routes_size());
  resync_in_flight_ = true;
  merger_.clear();  // the snapshot carries every pending change
  ++stats_.snapshots_sent;
  send(request, with_endpoints ? Kind::snapshot : Kind::base_snapshot, generation_);
}

std::uint64_t DataplaneClient::publish(const TablesDelta& delta) {
  if (!conn_ || hello_in_flight_) return 0;  // the snapshot at the next connect carries it
  if (merger_.empty()) merged_generation_ = ++generation_;
  const std::uint64_t generation = merged_generation_;
  if (!merger_.add(delta)) {
    merger_.clear();
    request_resync();
    return generation;  // the snapshot's generation is higher
  }
  try_send_delta();
  return generation;
}

void DataplaneClient::try_send_delta() {
  if (!conn_ || delta_in_flight_ || merger_.empty()) return;
  dp::DataplaneRequest request;
  *request.mutable_delta() = merger_.build();
  request.mutable_delta()->set_generation(merged_generation_);
  merger_.clear();
  delta_in_flight_ = true;
  ++stats_.deltas_sent;
  send(request, Kind::delta, merged_generation_);
}

void DataplaneClient::request_resync() {
  if (resync_in_flight_) {
    resync_again_ = true;
    return;
  }
  send_snapshot(true);
}

void DataplaneClient::send(dp::DataplaneRequest& request, Kind kind, std::uint64_t generation,
                           std::string endpoint_id) {
  if (!conn_) return;
  request.set_request_id(next_request_id_++);
  pending_.push_back(Pending{request.request_id(), kind, generation, std::move(endpoint_id), SteadyClock::now()});
  std::string bytes;
  append_delimited(request, bytes);
  conn_->out.push_back(std::move(bytes));
  flush(conn_);
}

void DataplaneClient::flush(std::shared_ptr<Connection> conn) {
  if (conn->writing || conn->out.empty()) return;
  conn->writing = true;
  asio::async_write(conn->socket, asio::buffer(conn->out.front()),
                    [this, conn](const boost::system::error_code& ec, std::size_t) {
                      conn->writing = false;
                      if (conn != conn_) return;
                      if (ec) {
                        drop_connection("write failed: " + ec.message());
                        return;
                      }
                      conn->out.pop_front();
                      flush(conn);
                    });
}

void DataplaneClient::read(std::shared_ptr<Connection> conn) {
  conn->socket.async_read_some(asio::buffer(conn->buffer), [this, conn](const boost::system::error_code& ec,
                                                                        std::size_t n) {
    if (conn != conn_) return;
    if (ec) {
      drop_connection(ec == asio::error::eof ? "the dataplane closed the connection" : ec.message());
      return;
    }
    conn->decoder.feed(std::string_view(conn->buffer.data(), n));
    for (;;) {
      auto frame = conn->decoder.next();
      if (!frame) {
        drop_connection("bad frame from the dataplane: " + frame.error());
        return;
      }
      if (!frame->has_value()) break;
      dp::DataplaneResponse response;
      if (!response.ParseFromString(**frame)) {
        drop_connection("malformed response from the dataplane");
        return;
      }
      on_response(response);
      if (conn != conn_) return;
    }
    read(conn);
  });
}

void DataplaneClient::on_response(const dp::DataplaneResponse& response) {
  if (pending_.empty() || pending_.front().request_id != response.request_id()) {
    drop_connection("response " + std::to_string(response.request_id()) + " does not match the oldest request");
    return;
  }
  const Pending p = pending_.front();
  pending_.pop_front();
  switch (p.kind) {
    case Kind::hello:
      hello_in_flight_ = false;
      if (response.ok() && response.has_status()) {
        status_ = response.status();
        if (status_.generation() > generation_) {
          log_->info("dataplane runs generation {}; continuing from there (this vxfedd was at {})",
                     status_.generation(), generation_);
          generation_ = status_.generation();
        }
      } else {
        log_->warn("dataplane did not report its status ({}); sending the snapshot anyway", response.error());
      }
      send_snapshot(/*with_endpoints=*/true);
      return;
    case Kind::snapshot:
    case Kind::base_snapshot:
      resync_in_flight_ = false;
      if (resync_again_ && response.ok()) {
        resync_again_ = false;
        send_snapshot(true);
        return;
      }
      if (!response.ok()) {
        ++stats_.snapshots_refused;
        if (p.kind == Kind::snapshot) {
          log_->error("dataplane refused snapshot {}: {}; retrying without endpoints, then each endpoint alone",
                      p.generation, response.error());
          send_snapshot(false);
        } else {
          log_->error("dataplane refused snapshot {} even without endpoints: {}; reconnecting",
                      p.generation, response.error());
          drop_connection("snapshot refused");
        }
        return;
      }
      ready_ = true;
      acked_generation_ = std::max(acked_generation_, p.generation);
      backoff_ms_ = options_.reconnect_min_ms;
      state_.snapshot_applied(p.generation);
      stats_.last_sync_ms = ms_since(connected_at_);
      log_->info("dataplane applied snapshot {} ({:.1f} ms after connecting); forwarding", p.generation,
                 stats_.last_sync_ms);
      if (p.kind == Kind::base_snapshot) {
        // Find out which endpoints the dataplane cannot take, one at a time.
        dp::Tables all = state_.tables();
        for (const auto& endpoint : all.endpoints()) {
          dp::DataplaneRequest request;
          auto* delta = request.mutable_delta();
          delta->set_generation(++generation_);
          *delta->mutable_upsert()->add_endpoints() = endpoint;
          send(request, Kind::endpoint_probe, generation_, endpoint.id());
        }
      }
      return;
    case Kind::endpoint_probe:
      if (response.ok()) {
        acked_generation_ = std::max(acked_generation_, p.generation);
      } else {
        ++stats_.endpoints_refused;
        refused_.insert(p.endpoint_id);
        state_.mark_refused(refused_);
        log_->error("dataplane refused endpoint {}: {}", p.endpoint_id, response.error());
      }
      return;
    case Kind::delta:
      delta_in_flight_ = false;
      if (response.ok()) {
        acked_generation_ = std::max(acked_generation_, p.generation);
      } else {
        ++stats_.deltas_refused;
        log_->error("dataplane refused delta {}: {}; resending the full snapshot", p.generation, response.error());
        request_resync();
      }
      try_send_delta();
      return;
    case Kind::counters:
      if (response.ok() && response.has_counters()) {
        counters_ = response.counters();
        counters_time_ = SteadyClock::now();
      }
      return;
    case Kind::status:
      if (response.ok() && response.has_status()) status_ = response.status();
      return;
  }
}

void DataplaneClient::drop_connection(const std::string& why) {
  if (!conn_) return;
  log_->warn("dataplane connection lost: {}; reconnecting (tables are replayed in full)", why);
  ++stats_.disconnects;
  boost::system::error_code ignored;
  conn_->socket.close(ignored);
  conn_.reset();
  pending_.clear();
  ready_ = false;
  hello_in_flight_ = false;
  resync_in_flight_ = false;
  resync_again_ = false;
  delta_in_flight_ = false;
  merger_.clear();
  schedule_reconnect();
}

void DataplaneClient::tick() {
  if (stopped_) return;
  if (conn_) {
    if (!pending_.empty() && ms_since(pending_.front().sent) > options_.request_timeout_ms) {
      drop_connection("no answer within " + std::to_string(options_.request_timeout_ms) + " ms");
    } else if (ready_ && ms_since(last_counters_poll_) >= options_.counters_interval_ms) {
      last_counters_poll_ = SteadyClock::now();
      dp::DataplaneRequest counters;
      counters.mutable_get_counters();
      send(counters, Kind::counters, 0);
      dp::DataplaneRequest status;
      status.mutable_get_status();
      send(status, Kind::status, 0);
    }
  }
  tick_timer_.expires_after(std::chrono::milliseconds(100));
  tick_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) tick();
  });
}

}  // namespace vxfed::control
