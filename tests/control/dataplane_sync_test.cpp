// The dataplane sync logic against a fake vxfed-dataplane (unit level; the real one is
// exercised by tests/integration/control): a full snapshot first on every (re)connect, then
// deltas; reconnect with backoff; an endpoint the dataplane refuses is refused alone (the same
// snapshot or delta again without it); a refusal naming no endpoint falls back to per-endpoint
// deltas.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "control/node/dataplane_client.hpp"
#include "control/node/node_state.hpp"
#include "spdlog/sinks/null_sink.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "tests/control/test_support.hpp"

namespace {

using namespace vxfed::control;
using namespace vxfed::control::testing;
namespace asio = boost::asio;

// Canonical, order-independent view of a Tables for comparison.
std::map<std::string, std::string> canonical(const dp::Tables& t) {
  std::map<std::string, std::string> out;
  for (const auto& n : t.networks()) out["n/" + std::to_string(n.vni())] = n.SerializeAsString();
  for (const auto& e : t.endpoints()) out["e/" + e.id()] = e.SerializeAsString();
  for (const auto& r : t.routes()) out["r/" + std::to_string(r.vni()) + "/" + r.prefix()] = r.SerializeAsString();
  return out;
}

// Speaks the dataplane API over a unix socket with blocking I/O in its own thread; applies
// snapshots and deltas the way the real one does; refuses anything with an endpoint whose
// iface is "gone" (like a dataplane that cannot find the interface), naming it in
// refused_endpoint unless told not to (an older dataplane).
class FakeDataplane {
 public:
  explicit FakeDataplane(std::string path) : path_(std::move(path)) {}
  ~FakeDataplane() { stop(); }

  // bind_to_listen: how long the socket file exists before it listens (a real server binds,
  // then listens; connects in between are refused).
  void start(std::chrono::milliseconds bind_to_listen = std::chrono::milliseconds(0)) {
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    ::unlink(path_.c_str());
    ASSERT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    std::this_thread::sleep_for(bind_to_listen);
    ASSERT_EQ(::listen(listener_, 4), 0);
    running_ = true;
    thread_ = std::thread([this] { serve(); });
  }

  // Simulates the dataplane going away (crash/restart): its tables are lost.
  void stop() {
    if (!running_) return;
    running_ = false;
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    if (conn_ >= 0) ::shutdown(conn_, SHUT_RDWR);
    thread_.join();
    ::unlink(path_.c_str());
    std::lock_guard lock(mu_);
    tables_.Clear();
    ready_ = false;
    generation_ = 0;
  }

  // A dataplane that outlived an earlier vxfedd: it runs that vxfedd's generation.
  void set_generation(std::uint64_t g) {
    std::lock_guard lock(mu_);
    generation_ = g;
  }
  // The generation of every snapshot and delta applied, in order.
  std::vector<std::uint64_t> generations() {
    std::lock_guard lock(mu_);
    return generations_;
  }

  std::map<std::string, std::string> tables() {
    std::lock_guard lock(mu_);
    return canonical(tables_);
  }
  bool ready() {
    std::lock_guard lock(mu_);
    return ready_;
  }
  std::vector<std::string> log() {
    std::lock_guard lock(mu_);
    return log_;
  }

 private:
  static const dp::Endpoint* gone(const dp::Tables& t) {
    for (const auto& e : t.endpoints())
      if (e.iface() == "gone") return &e;
    return nullptr;
  }

 public:
  std::atomic<bool> names_refused{true};
  std::atomic<bool> paused{false};  // a dataplane busy elsewhere: requests wait unanswered

 private:

  void apply(const dp::Delta& d) {
    std::map<std::uint32_t, dp::Network> nets;
    std::map<std::string, dp::Endpoint> eps;
    std::map<std::pair<std::uint32_t, std::string>, dp::Route> routes;
    for (const auto& n : tables_.networks()) nets[n.vni()] = n;
    for (const auto& e : tables_.endpoints()) eps[e.id()] = e;
    for (const auto& r : tables_.routes()) routes[{r.vni(), r.prefix()}] = r;
    for (const auto& n : d.upsert().networks()) nets[n.vni()] = n;
    for (const auto& e : d.upsert().endpoints()) eps[e.id()] = e;
    for (const auto& r : d.upsert().routes()) routes[{r.vni(), r.prefix()}] = r;
    for (auto vni : d.remove_networks()) {
      nets.erase(vni);
      std::erase_if(eps, [vni](const auto& kv) { return kv.second.vni() == vni; });
      std::erase_if(routes, [vni](const auto& kv) { return kv.first.first == vni; });
    }
    for (const auto& id : d.remove_endpoints()) eps.erase(id);
    for (const auto& k : d.remove_routes()) routes.erase({k.vni(), k.prefix()});
    tables_.Clear();
    for (auto& [k, v] : nets) *tables_.add_networks() = v;
    for (auto& [k, v] : eps) *tables_.add_endpoints() = v;
    for (auto& [k, v] : routes) *tables_.add_routes() = v;
  }

  void serve() {
    while (running_) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      conn_ = fd;
      // vxfedd pipelines requests: keep one decoder for the whole connection.
      vxfed::DelimitedDecoder decoder(64u << 20);
      char chunk[65536];
      for (;;) {
        auto frame = decoder.next();
        if (!frame) break;
        if (!frame->has_value()) {
          const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
          if (n <= 0) break;
          decoder.feed(std::string_view(chunk, static_cast<std::size_t>(n)));
          continue;
        }
        while (paused && running_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        dp::DataplaneRequest request;
        if (!request.ParseFromString(**frame)) break;
        dp::DataplaneResponse response;
        response.set_request_id(request.request_id());
        response.set_ok(true);
        {
          std::lock_guard lock(mu_);
          if (request.has_snapshot()) {
            log_.push_back(request.snapshot().tables().endpoints_size() ? "snapshot" : "snapshot-without-endpoints");
            if (const auto* bad = gone(request.snapshot().tables())) {
              response.set_ok(false);
              response.set_error("endpoints[0]: iface \"gone\" does not exist");
              if (names_refused) response.set_refused_endpoint(bad->id());
            } else {
              tables_ = request.snapshot().tables();
              ready_ = true;
              generation_ = request.snapshot().generation();
              generations_.push_back(generation_);
            }
          } else if (request.has_delta()) {
            log_.push_back("delta");
            if (const auto* bad = gone(request.delta().upsert())) {
              response.set_ok(false);
              response.set_error("iface \"gone\" does not exist");
              if (names_refused) response.set_refused_endpoint(bad->id());
            } else {
              apply(request.delta());
              generation_ = request.delta().generation();
              generations_.push_back(generation_);
            }
          } else if (request.has_get_status()) {
            response.mutable_status()->set_ready(ready_);
            response.mutable_status()->set_generation(generation_);
          } else if (request.has_get_counters()) {
            auto* drop = response.mutable_counters()->add_drops();
            drop->set_reason("unknown_vni");
            drop->set_packets(3);
            response.mutable_counters()->set_deltas_applied(
                static_cast<std::uint64_t>(std::count(log_.begin(), log_.end(), "delta")));  // the Deltas before it
          }
        }
        if (!vxfed::write_delimited(fd, response, 1000)) break;
      }
      ::close(fd);
      conn_ = -1;
    }
  }

  std::string path_;
  int listener_ = -1;
  std::atomic<int> conn_{-1};
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::mutex mu_;
  dp::Tables tables_;
  bool ready_ = false;
  std::uint64_t generation_ = 0;
  std::vector<std::uint64_t> generations_;
  std::vector<std::string> log_;
};

class SyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = test_config(dir_.path + "/state");
    NodeState::Options o;
    o.state_dir = config.daemon.state_dir;
    auto state = NodeState::open(config, o, nullptr);
    ASSERT_TRUE(state.ok()) << state.error();
    state_ = std::move(*state);
    v1::ErrorCode code;
    ASSERT_TRUE(state_->attach(endpoint("c1", "red", "10.244.1.5", "vxf1"), &code).ok());
    ASSERT_TRUE(state_->attach(endpoint("c2", "blue", "10.244.2.5", "vxf2"), &code).ok());
    socket_ = dir_.path + "/dp.sock";
    fake_ = std::make_unique<FakeDataplane>(socket_);
    auto log = std::getenv("VXFED_TEST_LOG") ? spdlog::stderr_color_mt("sync")
                                              : std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
    log_ = log;
    client_ = make_client();
    work_ = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(io_.get_executor());
    thread_ = std::thread([this] { io_.run(); });
  }
  std::unique_ptr<DataplaneClient> make_client(std::size_t max_delta_entries = DeltaQueue::kDefaultMaxEntries,
                                               std::uint32_t max_in_flight = 8) {
    DataplaneClient::Options o{socket_, 20, 200, 100, 2000};
    o.max_delta_entries = max_delta_entries;
    o.max_deltas_in_flight = max_in_flight;
    return std::make_unique<DataplaneClient>(io_, o, *state_, log_);
  }
  template <typename F>
  auto on_io(F fn) {
    std::packaged_task<decltype(fn())()> task(fn);
    auto future = task.get_future();
    asio::post(io_, [&task] { task(); });
    return future.get();
  }
  // Replaces the client with one whose reconnect backoff is 10 s, and lets its first connect
  // (no dataplane yet) fail: a reconnect within seconds must then come from the socket watch.
  void restart_client_with_long_backoff() {
    on_io([this] {
      client_->stop();
      client_ = std::make_unique<DataplaneClient>(io_, DataplaneClient::Options{socket_, 10000, 10000, 100, 2000},
                                                  *state_, log_);
      client_->start();
      return 0;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  void TearDown() override {
    on_io([this] {
      client_->stop();
      return 0;
    });
    work_.reset();
    io_.stop();
    thread_.join();
  }
  // Waits until the fake's tables equal the node's (minus `except` endpoints) and it is ready.
  bool converged(const std::set<std::string>& except = {}, int timeout_ms = 5000) {
    for (int waited = 0; waited < timeout_ms; waited += 10) {
      auto want = canonical(on_io([this] { return state_->tables(); }));
      for (const auto& id : except) want.erase("e/" + id);
      if (fake_->ready() && fake_->tables() == want && on_io([this] { return client_->ready(); })) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  TempDir dir_;
  std::string socket_;
  asio::io_context io_;
  std::unique_ptr<NodeState> state_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<DataplaneClient> client_;
  std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::unique_ptr<FakeDataplane> fake_;
};

TEST_F(SyncTest, SnapshotFirstThenDeltasAndReplayAfterDataplaneRestart) {
  on_io([this] {
    client_->start();
    return 0;
  });
  // The dataplane is not there yet: the client retries with backoff.
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(on_io([this] { return client_->ready(); }));
  fake_->start();
  ASSERT_TRUE(converged()) << "no snapshot applied";
  ASSERT_FALSE(fake_->log().empty());
  EXPECT_EQ(fake_->log().front(), "snapshot");
  v1::ErrorCode code;
  // Changes flow as deltas.
  on_io([&] { return state_->attach(endpoint("c3", "red", "10.244.1.6", "vxf3"), &code).ok(); });
  on_io([&] { return state_->detach("c1", "net1", &code).ok(); });
  ASSERT_TRUE(converged());
  auto log = fake_->log();
  EXPECT_EQ(std::count(log.begin(), log.end(), "snapshot"), 1);
  EXPECT_GE(std::count(log.begin(), log.end(), "delta"), 2);
  EXPECT_TRUE(on_io([&] { return state_->check("c3", "net1", &code)->in_dataplane(); }));
  // The dataplane restarts with empty tables; a change happens while it is away.
  fake_->stop();
  on_io([&] { return state_->attach(endpoint("c4", "blue", "10.244.2.6", "vxf4"), &code).ok(); });
  EXPECT_FALSE(on_io([&] { return state_->check("c4", "net1", &code)->in_dataplane(); }));
  fake_->start();
  ASSERT_TRUE(converged()) << "tables not replayed after the dataplane restarted";
  EXPECT_TRUE(on_io([&] { return state_->check("c4", "net1", &code)->in_dataplane(); }));
  EXPECT_EQ(on_io([this] { return client_->stats().connects; }), 2u);
  fake_->stop();
}

vxfed::RouteUpdate one_route(int i, std::size_t count = 1) {
  vxfed::RouteUpdate u;
  for (std::size_t k = 0; k < count; ++k) {
    const std::string prefix = "10.246." + std::to_string(i + static_cast<int>(k)) + ".0/24";
    u.upserts.push_back({*vxfed::net::Ipv4Prefix::parse(prefix), 5000, {*vxfed::net::Ipv4Addr::parse("198.18.0.9")}, {}});
  }
  return u;
}

// Changes go out as they happen, several Deltas in flight, none merged; while the dataplane
// does not answer, the queue and the age of the oldest change show it.
TEST_F(SyncTest, ChangesArePipelinedAndBackPressureIsVisible) {
  client_ = make_client(/*max_delta_entries=*/2, /*max_in_flight=*/3);
  on_io([this] {
    client_->start();
    return 0;
  });
  fake_->start();
  ASSERT_TRUE(converged());
  const auto deltas_before = on_io([this] { return client_->stats().deltas_sent; });
  fake_->paused = true;
  for (int i = 0; i < 10; ++i) on_io([&] {
      state_->apply_routes(RouteOrigin::bgp, one_route(i));
      return 0;
    });
  on_io([&] {
    state_->apply_routes(RouteOrigin::bgp, one_route(100, 5));  // 5 routes: 3 Deltas of <= 2
    return 0;
  });
  v1::ErrorCode code;
  on_io([&] { return state_->attach(endpoint("c5", "blue", "10.244.2.9", "vxf5"), &code).ok(); });
  EXPECT_EQ(on_io([this] { return client_->deltas_in_flight(); }), 3u);
  EXPECT_EQ(on_io([this] { return client_->deltas_queued(); }), 10u + 3u + 1u - 3u);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  EXPECT_GE(on_io([this] { return client_->oldest_unacked_age_s(); }), 0.1);
  EXPECT_FALSE(on_io([&] { return state_->check("c5", "net1", &code)->in_dataplane(); }));
  fake_->paused = false;
  ASSERT_TRUE(converged()) << "queued changes not applied in order";
  EXPECT_EQ(on_io([this] { return client_->deltas_queued(); }), 0u);
  EXPECT_EQ(on_io([this] { return client_->deltas_in_flight(); }), 0u);
  EXPECT_EQ(on_io([this] { return client_->oldest_unacked_age_s(); }), 0.0);
  EXPECT_EQ(on_io([this] { return client_->stats().deltas_sent; }) - deltas_before, 14u);
  EXPECT_GE(on_io([this] { return client_->stats().deltas_queued_peak; }), 11u);
  const auto latency = on_io([this] { return client_->delta_latency(); });
  EXPECT_GE(latency.count(), 14u);
  EXPECT_GE(latency.sum(), 14 * 0.1);  // every one of them waited out the pause
  EXPECT_TRUE(on_io([&] { return state_->check("c5", "net1", &code)->in_dataplane(); }));
  fake_->stop();
}

TEST_F(SyncTest, AnEndpointTheDataplaneRefusesIsRefusedAlone) {
  v1::ErrorCode code;
  ASSERT_TRUE(state_->attach(endpoint("bad", "red", "10.244.1.66", "gone"), &code).ok());
  fake_->start();
  on_io([this] {
    client_->start();
    return 0;
  });
  ASSERT_TRUE(converged({"bad/net1"})) << "good endpoints must reach the dataplane";
  auto log = fake_->log();
  ASSERT_EQ(std::count(log.begin(), log.end(), "snapshot"), 2) << "the snapshot again without the refused one";
  EXPECT_EQ(std::count(log.begin(), log.end(), "snapshot-without-endpoints"), 0) << "nobody else may lose forwarding";
  auto bad = on_io([&] { return *state_->check("bad", "net1", &code); });
  EXPECT_FALSE(bad.in_dataplane());
  EXPECT_EQ(bad.dataplane(), v1::DP_REFUSED);
  EXPECT_NE(bad.dataplane_error().find("gone"), std::string::npos) << bad.dataplane_error();
  EXPECT_EQ(on_io([&] { return state_->check("c1", "net1", &code)->dataplane(); }), v1::DP_CARRIED);
  // A delta with a refused endpoint and a good one: the good one goes again alone, no snapshot.
  const auto snapshots = on_io([this] { return client_->stats().snapshots_sent; });
  on_io([&] {
    (void)state_->attach(endpoint("bad2", "red", "10.244.1.67", "gone"), &code);
    return state_->attach(endpoint("c9", "red", "10.244.1.69", "vxf9"), &code).ok();
  });
  ASSERT_TRUE(converged({"bad/net1", "bad2/net1"}));
  EXPECT_EQ(on_io([this] { return client_->stats().snapshots_sent; }), snapshots) << "a refused endpoint resynced";
  EXPECT_EQ(on_io([&] { return state_->check("bad2", "net1", &code)->dataplane(); }), v1::DP_REFUSED);
  EXPECT_EQ(on_io([&] { return state_->check("c9", "net1", &code)->dataplane(); }), v1::DP_CARRIED);
  // Detaching a refused endpoint sends nothing the dataplane would refuse ("not present").
  const auto refused_before = on_io([this] { return client_->stats().deltas_refused; });
  on_io([&] { return state_->detach("bad2", "net1", &code).ok(); });
  on_io([&] { return state_->detach("c9", "net1", &code).ok(); });
  ASSERT_TRUE(converged({"bad/net1"}));
  EXPECT_EQ(on_io([this] { return client_->stats().deltas_refused; }), refused_before);
  EXPECT_EQ(on_io([this] { return client_->stats().snapshots_sent; }), snapshots);
  fake_->stop();
}

TEST_F(SyncTest, RefusedSnapshotWithoutANameFallsBackToEndpointsOneByOne) {
  fake_->names_refused = false;
  v1::ErrorCode code;
  ASSERT_TRUE(state_->attach(endpoint("bad", "red", "10.244.1.66", "gone"), &code).ok());
  fake_->start();
  on_io([this] {
    client_->start();
    return 0;
  });
  ASSERT_TRUE(converged({"bad/net1"})) << "good endpoints must reach the dataplane";
  auto log = fake_->log();
  ASSERT_GE(log.size(), 2u);
  EXPECT_EQ(log[0], "snapshot");
  EXPECT_EQ(log[1], "snapshot-without-endpoints");
  for (int i = 0; i < 100 && on_io([this] { return client_->stats().endpoints_refused; }) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(on_io([&] { return state_->check("bad", "net1", &code)->in_dataplane(); }));
  EXPECT_TRUE(on_io([&] { return state_->check("c1", "net1", &code)->in_dataplane(); }));
  // A refused delta (a new endpoint the dataplane cannot take) triggers a resync, and the
  // rest keeps flowing.
  on_io([&] { return state_->attach(endpoint("bad2", "red", "10.244.1.67", "gone"), &code).ok(); });
  on_io([&] { return state_->attach(endpoint("c9", "red", "10.244.1.69", "vxf9"), &code).ok(); });
  ASSERT_TRUE(converged({"bad/net1", "bad2/net1"}));
  EXPECT_GE(on_io([this] { return client_->stats().deltas_refused; }), 1u);
  EXPECT_TRUE(on_io([&] { return state_->check("c9", "net1", &code)->in_dataplane(); }));
  fake_->stop();
}

TEST_F(SyncTest, CountersArePolledOnceReady) {
  fake_->start();
  on_io([this] {
    client_->start();
    return 0;
  });
  ASSERT_TRUE(converged());
  for (int i = 0; i < 200 && on_io([this] { return client_->counters().drops_size(); }) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto counters = on_io([this] { return client_->counters(); });
  ASSERT_EQ(counters.drops_size(), 1);
  EXPECT_EQ(counters.drops(0).packets(), 3u);
  fake_->stop();
}

// poll_counters_now() (docs/policy.md, "Drops per policy"): its answer reaches the listener
// with its number and says what the dataplane had before the Delta of a change made right
// after it; the periodic polls come with 0; not connected, there is nothing to ask.
TEST_F(SyncTest, CountersAskedNowAnswerBeforeTheChangesAfterThem) {
  client_ = make_client();
  EXPECT_EQ(on_io([this] { return client_->poll_counters_now(); }), 0u) << "not connected";
  std::vector<std::pair<std::uint64_t, std::uint64_t>> answers;  // (number, Deltas the fake had applied)
  on_io([this, &answers] {
    client_->set_counters_listener(
        [this, &answers](std::uint64_t n) { answers.emplace_back(n, client_->counters().deltas_applied()); });
    client_->start();
    return 0;
  });
  fake_->start();
  ASSERT_TRUE(converged());
  const auto deltas = [this] {
    const auto log = fake_->log();
    return static_cast<std::uint64_t>(std::count(log.begin(), log.end(), "delta"));
  };
  const std::uint64_t before = deltas();
  const std::uint64_t n = on_io([this] {
    const std::uint64_t asked = client_->poll_counters_now();
    state_->apply_routes(RouteOrigin::bgp, one_route(1));  // a Delta, sent after the request
    return asked;
  });
  ASSERT_GT(n, 0u);
  std::optional<std::uint64_t> seen;
  for (int i = 0; i < 300 && !seen; ++i) {
    seen = on_io([&] {
      for (const auto& [number, applied] : answers)
        if (number == n) return std::optional<std::uint64_t>(applied);
      return std::optional<std::uint64_t>();
    });
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(seen) << "no answer to poll_counters_now()";
  EXPECT_EQ(*seen, before) << "the counters were taken before the change's Delta";
  ASSERT_TRUE(converged());
  EXPECT_EQ(deltas(), before + 1);
  for (int i = 0; i < 300 && on_io([&] { return answers.size(); }) < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(on_io([&] {
    return std::any_of(answers.begin(), answers.end(), [](const auto& a) { return a.first == 0; });
  })) << "the periodic polls";
  fake_->stop();
}

TEST_F(SyncTest, GenerationsOnlyGoForwardAcrossRestartsOfEitherSide) {
  // The dataplane outlived an earlier vxfedd that had reached generation 41.
  fake_->start();
  fake_->set_generation(41);
  on_io([this] {
    client_->start();
    return 0;
  });
  ASSERT_TRUE(converged());
  v1::ErrorCode code;
  on_io([&] { return state_->attach(endpoint("c3", "red", "10.244.1.6", "vxf3"), &code).ok(); });
  ASSERT_TRUE(converged());
  // vxfedd restarts (a new client, as after kill -9); the dataplane keeps its tables.
  on_io([this] {
    client_->stop();
    client_ = make_client();
    client_->start();
    return 0;
  });
  for (int i = 0; i < 500 && fake_->log().size() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(converged());
  on_io([&] { return state_->detach("c3", "net1", &code).ok(); });
  ASSERT_TRUE(converged());
  // The dataplane restarts: it starts from 0, vxfedd goes on counting.
  fake_->stop();
  fake_->start();
  ASSERT_TRUE(converged());
  const auto g = fake_->generations();
  ASSERT_GE(g.size(), 5u);
  EXPECT_GT(g.front(), 41u);
  for (std::size_t i = 1; i < g.size(); ++i) EXPECT_GT(g[i], g[i - 1]) << "generation " << i << " went back";
  fake_->stop();
}

TEST_F(SyncTest, ReconnectsAsSoonAsTheDataplaneSocketIsCreatedAgain) {
  // A backoff of 10 s: without watching the socket file the client would wait it out.
  restart_client_with_long_backoff();
  EXPECT_FALSE(on_io([this] { return client_->ready(); }));
  const auto t0 = std::chrono::steady_clock::now();
  fake_->start();
  ASSERT_TRUE(converged({}, 3000)) << "the client waited for its backoff instead of the new socket";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  // The dataplane goes away (its socket file with it) and comes back: a new socket file again.
  fake_->stop();
  for (int i = 0; i < 300 && on_io([this] { return client_->connected(); }); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto t1 = std::chrono::steady_clock::now();
  fake_->start();
  ASSERT_TRUE(converged({}, 3000)) << "no reconnect after the dataplane restarted";
  EXPECT_LT(std::chrono::steady_clock::now() - t1, std::chrono::seconds(3));
  EXPECT_EQ(on_io([this] { return client_->stats().connects; }), 2u);
  fake_->stop();
}

TEST_F(SyncTest, ARefusedConnectToASocketFileJustCreatedIsRetriedAtOnce) {
  // The watch sees the new file at bind() and connects before the server listens: refused.
  // The client must not then wait out its 10 s backoff (it did; CI saw the test above fail
  // whenever its connect fell into that gap).
  restart_client_with_long_backoff();
  const auto t0 = std::chrono::steady_clock::now();
  fake_->start(std::chrono::milliseconds(300));
  ASSERT_TRUE(converged({}, 3000)) << "a connect refused between bind() and listen() waited for the backoff";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(on_io([this] { return client_->stats().connects; }), 1u);
  fake_->stop();
}
}  // namespace
