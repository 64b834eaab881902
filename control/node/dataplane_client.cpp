#include "control/node/dataplane_client.hpp"

#include <sys/stat.h>
#include <time.h>

#include <algorithm>

#include <spdlog/spdlog.h>

namespace vxfed::control {

namespace asio = boost::asio;
using SteadyClock = std::chrono::steady_clock;

namespace {
double ms_since(SteadyClock::time_point t) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t).count();
}

bool same_endpoint(const dp::Endpoint& a, const dp::Endpoint& b) {
  return a.id() == b.id() && a.vni() == b.vni() && a.ip() == b.ip() && a.mac() == b.mac() && a.iface() == b.iface();
}

const dp::Endpoint* upserted(const dp::Delta& delta, const std::string& id) {
  for (const auto& e : delta.upsert().endpoints())
    if (e.id() == id) return &e;
  return nullptr;
}

std::size_t entries_of(const dp::Delta& d) {
  const auto& u = d.upsert();
  return static_cast<std::size_t>(u.networks_size() + u.endpoints_size() + u.routes_size() + u.vteps_size() +
                                  u.neighbors_size() + u.services_size() + d.remove_networks_size() +
                                  d.remove_endpoints_size() + d.remove_routes_size() + d.remove_services_size() + d.remove_vteps_size() +
                                  u.policies_size() + d.remove_policies_size());
}

// The delta without the upsert of one endpoint (the rest was not at fault).
dp::Delta without_endpoint(const dp::Delta& delta, const std::string& id) {
  dp::Delta rest = delta;
  auto* eps = rest.mutable_upsert()->mutable_endpoints();
  for (int i = eps->size() - 1; i >= 0; --i)
    if (eps->Get(i).id() == id) eps->DeleteSubrange(i, 1);
  return rest;
}
}  // namespace

bool DataplaneClient::carries(const dp::Endpoint& endpoint) const {
  if (!ready_) return false;
  auto it = carried_.find(endpoint.id());
  return it != carried_.end() && same_endpoint(it->second, endpoint);
}

std::optional<std::string> DataplaneClient::refusal(const std::string& endpoint_id) const {
  auto it = refused_.find(endpoint_id);
  if (it == refused_.end()) return std::nullopt;
  return it->second.reason;
}

void DataplaneClient::notify() {
  if (listener_) listener_();
}

void DataplaneClient::carried_apply(const dp::Delta& delta) {
  for (const auto& e : delta.upsert().endpoints()) {
    carried_[e.id()] = e;
    refused_.erase(e.id());  // an attach made after one the dataplane refused: it took this one
  }
  for (auto vni : delta.remove_networks())
    std::erase_if(carried_, [vni](const auto& kv) { return kv.second.vni() == vni; });
  for (const auto& id : delta.remove_endpoints()) carried_.erase(id);
}

bool DataplaneClient::will_carry(const std::string& id) const {
  if (carried_.count(id)) return true;
  for (const auto& p : pending_) {
    if (p.endpoints.count(id)) return true;
    if (upserted(p.delta, id)) return true;
  }
  return queue_.upserts_endpoint(id);
}

double DataplaneClient::oldest_unacked_age_s() const {
  std::optional<SteadyClock::time_point> oldest;
  for (const auto& p : pending_)
    if (p.kind == Kind::delta) {
      oldest = p.queued;  // pending_ is in send order, and deltas are sent in queue order
      break;
    }
  if (!oldest && !queue_.empty()) oldest = queue_.front().queued;
  if (!oldest) return 0;
  return std::chrono::duration<double>(SteadyClock::now() - *oldest).count();
}

// Read off pending_ (at most max_deltas_in_flight deltas and a request or two), so that no
// counter kept beside it can drift from what is really awaiting an answer.
std::size_t DataplaneClient::deltas_in_flight() const {
  return static_cast<std::size_t>(
      std::count_if(pending_.begin(), pending_.end(), [](const Pending& p) { return p.kind == Kind::delta; }));
}

bool DataplaneClient::endpoint_delta_in_flight() const {
  return std::any_of(pending_.begin(), pending_.end(),
                     [](const Pending& p) { return p.kind == Kind::delta && p.upserts_endpoints; });
}

bool DataplaneClient::table_request_in_flight() const {
  for (const auto& p : pending_)
    if (p.kind == Kind::snapshot || p.kind == Kind::base_snapshot || p.kind == Kind::endpoint_probe) return true;
  return false;
}

void DataplaneClient::refuse_endpoint(const dp::Endpoint& endpoint, const std::string& reason) {
  ++stats_.endpoints_refused;
  refused_[endpoint.id()] = Refused{endpoint, reason};
  // A removal queued behind it would name an endpoint the dataplane never had.
  queue_.drop_endpoint_removals(endpoint.id());
  log_->error("dataplane refused endpoint {} (iface {}): {}", endpoint.id(), endpoint.iface(), reason);
}

DataplaneClient::DataplaneClient(asio::io_context& io, Options options, NodeState& state,
                                 std::shared_ptr<spdlog::logger> log)
    : io_(io),
      options_(std::move(options)),
      state_(state),
      log_(std::move(log)),
      reconnect_timer_(io),
      tick_timer_(io),
      watch_timer_(io),
      backoff_ms_(options_.reconnect_min_ms),
      queue_(options_.max_delta_entries) {}

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
  // The socket file as this attempt finds it: a dataplane that creates its socket while the
  // attempt fails (or before its failure is handled) must count as new to the watch below,
  // else the client would wait out the whole backoff beside a listening dataplane.
  attempt_socket_ = socket_file();
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
  // A dataplane creates its socket file at bind() and listens a moment later; a connect in
  // between is refused. The file it refused from is then the watched one, so without this the
  // client would wait out its whole backoff (up to reconnect_max_ms) beside a dataplane that
  // listens a millisecond later. A file that young is retried at the watch's pace instead;
  // one that stays refused past kFreshSocketMs falls back to the backoff (no busy loop on a
  // stale file).
  if (socket_is_fresh(attempt_socket_)) {
    reconnect_timer_.expires_after(std::chrono::milliseconds(kSocketWatchMs));
  } else {
    reconnect_timer_.expires_after(std::chrono::milliseconds(backoff_ms_));
    backoff_ms_ = std::min(options_.reconnect_max_ms, backoff_ms_ * 2);
  }
  reconnect_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) connect();
  });
  watched_socket_ = attempt_socket_;
  watch_socket();
}

DataplaneClient::SocketFile DataplaneClient::socket_file() const {
  struct stat st {};
  if (::stat(options_.socket.c_str(), &st) != 0) return {};
  return SocketFile{true, st.st_ino, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
}

bool DataplaneClient::socket_is_fresh(const SocketFile& file) {
  if (!file.exists) return false;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);  // the clock ctime is stamped from
  const std::int64_t age_ms = (now.tv_sec - file.ctime_s) * 1000 + (now.tv_nsec - file.ctime_ns) / 1000000;
  return age_ms >= -kFreshSocketMs && age_ms < kFreshSocketMs;
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
  refused_.clear();  // a new connection (perhaps a new dataplane) gets every endpoint again
  carried_.clear();
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
    // Networks and routes only: what the node needs to forward at all. The services' entries
    // are left out with the endpoints (a forwarder that refuses one must still get the rest);
    // they come back with the next full snapshot, or each with its next change.
    snapshot->mutable_tables()->clear_endpoints();
    snapshot->mutable_tables()->clear_services();
  } else if (!refused_.empty()) {
    // Endpoints this dataplane already refused would only fail the whole snapshot again;
    // they are retried at the next connection or when attached anew.
    auto* endpoints = snapshot->mutable_tables()->mutable_endpoints();
    for (int i = endpoints->size() - 1; i >= 0; --i) {
      auto r = refused_.find(endpoints->Get(i).id());
      if (r != refused_.end() && same_endpoint(r->second.endpoint, endpoints->Get(i))) endpoints->DeleteSubrange(i, 1);
    }
  }
  Pending carried;
  for (const auto& e : snapshot->tables().endpoints()) carried.endpoints[e.id()] = e;
  log_->debug("snapshot generation {}: {} networks, {} endpoints, {} routes, {} services", generation_,
              snapshot->tables().networks_size(), snapshot->tables().endpoints_size(),
              snapshot->tables().routes_size(), snapshot->tables().services_size());
  resync_in_flight_ = true;
  last_snapshot_generation_ = generation_;
  queue_.clear();  // the snapshot carries every change not sent yet
  ++stats_.snapshots_sent;
  send(request, with_endpoints ? Kind::snapshot : Kind::base_snapshot, generation_, std::move(carried));
}

void DataplaneClient::publish(const TablesDelta& given) {
  if (!conn_ || hello_in_flight_) return;  // the snapshot at the next connect carries it
  TablesDelta delta = given;
  // An endpoint attached anew gets a new chance; the removal of one the dataplane never took
  // (it refused it) is not sent: the dataplane would refuse "not present".
  for (const auto& e : delta.endpoints) refused_.erase(e.id());
  std::erase_if(delta.removed_endpoints, [this](const std::string& id) {
    if (will_carry(id)) return false;
    refused_.erase(id);
    return true;
  });
  if (delta.empty()) return;
  queue_.push(delta, SteadyClock::now());
  try_send_delta();
  stats_.deltas_queued_peak = std::max<std::uint64_t>(stats_.deltas_queued_peak, queue_.size());
}

void DataplaneClient::try_send_delta() {
  if (!conn_ || resync_in_flight_ || table_request_in_flight()) return;
  while (!queue_.empty() && !endpoint_delta_in_flight() && deltas_in_flight() < options_.max_deltas_in_flight) {
    if (queue_.front().entries == 0) {  // emptied by a refusal's clean-up
      queue_.pop_front();
      continue;
    }
    if (queue_.front().upserts_endpoints && deltas_in_flight() > 0) return;  // goes alone
    send_delta(queue_.pop_front());
  }
}

void DataplaneClient::send_delta(DeltaQueue::Item item) {
  dp::DataplaneRequest request;
  item.delta.set_generation(++generation_);
  *request.mutable_delta() = item.delta;
  ++stats_.deltas_sent;
  Pending carried;
  carried.queued = item.queued;
  carried.upserts_endpoints = item.upserts_endpoints;
  carried.delta = std::move(item.delta);
  send(request, Kind::delta, generation_, std::move(carried));
}

void DataplaneClient::request_resync() {
  if (resync_in_flight_) {
    resync_again_ = true;
    return;
  }
  send_snapshot(true);
}

void DataplaneClient::send(dp::DataplaneRequest& request, Kind kind, std::uint64_t generation, Pending carried) {
  if (!conn_) return;
  request.set_request_id(next_request_id_++);
  carried.request_id = request.request_id();
  carried.kind = kind;
  carried.generation = generation;
  carried.sent = SteadyClock::now();
  pending_.push_back(std::move(carried));
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
  const Pending p = std::move(pending_.front());
  pending_.pop_front();
  const std::string& refused_id = response.refused_endpoint();
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
    case Kind::base_snapshot: {
      resync_in_flight_ = false;
      if (!response.ok()) {
        ++stats_.snapshots_refused;
        auto named = p.endpoints.find(refused_id);
        if (!refused_id.empty() && named != p.endpoints.end()) {
          // One endpoint the dataplane cannot serve: the same snapshot again without it.
          refuse_endpoint(named->second, response.error());
          resync_again_ = false;
          send_snapshot(true);
        } else if (p.kind == Kind::snapshot) {
          log_->error("dataplane refused snapshot {}: {}; retrying without endpoints, then each endpoint alone",
                      p.generation, response.error());
          resync_again_ = false;
          send_snapshot(false);
        } else {
          log_->error("dataplane refused snapshot {} even without endpoints: {}; reconnecting",
                      p.generation, response.error());
          drop_connection("snapshot refused");
          return;
        }
        notify();
        return;
      }
      ready_ = true;
      carried_ = p.endpoints;
      acked_generation_ = std::max(acked_generation_, p.generation);
      backoff_ms_ = options_.reconnect_min_ms;
      stats_.last_sync_ms = ms_since(connected_at_);
      log_->info("dataplane applied snapshot {} ({:.1f} ms after connecting); forwarding", p.generation,
                 stats_.last_sync_ms);
      if (resync_again_) {
        resync_again_ = false;
        send_snapshot(true);
        notify();
        return;
      }
      if (p.kind == Kind::base_snapshot) {
        // Find out which endpoints the dataplane cannot take, one at a time.
        dp::Tables all = state_.tables();
        for (const auto& endpoint : all.endpoints()) {
          dp::DataplaneRequest request;
          auto* delta = request.mutable_delta();
          delta->set_generation(++generation_);
          *delta->mutable_upsert()->add_endpoints() = endpoint;
          Pending carried;
          carried.delta = *delta;
          send(request, Kind::endpoint_probe, generation_, std::move(carried));
        }
      }
      try_send_delta();
      notify();
      return;
    }
    case Kind::endpoint_probe:
      if (response.ok()) {
        acked_generation_ = std::max(acked_generation_, p.generation);
        carried_apply(p.delta);
      } else if (p.delta.upsert().endpoints_size() == 1) {
        refuse_endpoint(p.delta.upsert().endpoints(0), response.error());
      }
      try_send_delta();
      notify();
      return;
    case Kind::delta: {
      // Sent before the last snapshot: that snapshot replaces whatever this delta did or not.
      const bool superseded = p.generation < last_snapshot_generation_;
      if (response.ok()) {
        acked_generation_ = std::max(acked_generation_, p.generation);
        carried_apply(p.delta);
        delta_latency_.observe(std::chrono::duration<double>(SteadyClock::now() - p.queued).count());
      } else if (const dp::Endpoint* named = refused_id.empty() ? nullptr : upserted(p.delta, refused_id)) {
        // Refused alone: the rest of the delta goes again, without it, before anything queued.
        ++stats_.deltas_refused;
        refuse_endpoint(*named, response.error());
        DeltaQueue::Item rest;
        rest.delta = without_endpoint(p.delta, refused_id);
        rest.entries = entries_of(rest.delta);
        rest.upserts_endpoints = rest.delta.upsert().endpoints_size() > 0;
        rest.queued = p.queued;
        if (!superseded && rest.entries > 0) queue_.push_front(std::move(rest));
      } else {
        ++stats_.deltas_refused;
        if (superseded) {
          log_->warn("dataplane refused delta {} (sent before snapshot {}): {}", p.generation,
                     last_snapshot_generation_, response.error());
        } else {
          log_->error("dataplane refused delta {}: {}; resending the full snapshot", p.generation, response.error());
          request_resync();
        }
      }
      try_send_delta();
      notify();
      return;
    }
    case Kind::counters:
      if (response.ok() && response.has_counters()) {
        counters_ = response.counters();
        counters_time_ = SteadyClock::now();
        if (counters_listener_) counters_listener_(p.generation);  // the poll_counters_now() number, or 0
      }
      return;
    case Kind::status:
      if (response.ok() && response.has_status()) status_ = response.status();
      return;
    case Kind::service_counters:
      if (response.ok() && response.has_service_counters()) {
        service_counters_ = response.service_counters();
        service_counters_time_ = SteadyClock::now();
      }
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
  queue_.clear();
  carried_.clear();
  schedule_reconnect();
  notify();
}

std::uint64_t DataplaneClient::poll_counters_now() {
  if (!conn_ || !ready_) return 0;
  dp::DataplaneRequest counters;
  counters.mutable_get_counters();
  send(counters, Kind::counters, ++counters_polls_now_);
  return counters_polls_now_;
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
      if (options_.service_counters) {
        dp::DataplaneRequest services;
        services.mutable_get_service_counters();
        send(services, Kind::service_counters, 0);
      }
    }
  }
  notify();  // deadlines of waiting attaches
  tick_timer_.expires_after(std::chrono::milliseconds(100));
  tick_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) tick();
  });
}

}  // namespace vxfed::control
