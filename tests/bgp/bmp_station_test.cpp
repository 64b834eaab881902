// BmpStation (bgp/bmp_station.hpp) with real TCP clients on loopback playing bgpd, feeding a
// BmpRib: routes arrive, the accept rule (wrong uid, a second session while the first is up, a
// non-loopback listen address), a framing error closes the connection and the reconnect
// resyncs, 10 MB of garbage neither crashes nor changes a route. The io_context runs on the
// test thread between steps.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/bgp/test_support.hpp"
#include "bgp/bmp_station.hpp"
#include "tests/bgp/bmp_messages.hpp"

namespace vxfed::bgp {
namespace {

namespace asio = boost::asio;
namespace t = bmp::test;
using net::Ipv4Addr;
using Lines = std::vector<std::string>;

constexpr std::uint32_t kPeerA = 0x0a000001;  // 10.0.0.1
constexpr std::uint32_t kNextHop = 0xc6120002;  // 198.18.0.2

t::Buf announce(std::uint32_t peer, std::initializer_list<std::pair<std::uint32_t, unsigned>> nlri,
                std::uint32_t next_hop = kNextHop) {
  t::Buf attrs = t::attribute(1, {0});  // ORIGIN IGP
  t::append(attrs, t::as_path({65002}));
  t::append(attrs, t::next_hop(next_hop));
  return t::route_monitoring(peer, t::update({}, attrs, nlri));
}
t::Buf end_of_rib(std::uint32_t peer) { return t::route_monitoring(peer, t::update({}, {}, {})); }
t::Buf cat(std::initializer_list<t::Buf> parts) {
  t::Buf out;
  for (const auto& p : parts) t::append(out, p);
  return out;
}

std::string line(const fpm::RouteMessage& r) { return testing::route_line(r); }

// A bgpd stand-in: a blocking TCP socket to the station's port.
using Bgpd = testing::LoopbackClient;

class BmpStationTest : public ::testing::Test {
 protected:
  BmpStationTest() : rib_({[this](const fpm::RouteMessage& m) { lines_.push_back(line(m)); }, [this] { ++full_; }}) {}
  void start(LocalPeerPolicy policy = {}) {
    auto s = BmpStation::create(io_, asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), 0), rib_, policy);
    ASSERT_TRUE(s) << s.error();
    station_ = std::move(*s);
  }
  // Runs the io_context until `done` (true) or 5 s (false).
  bool pump(const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until) {
      io_.poll();
      io_.restart();
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
  void run_for(int ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    pump([&] { return std::chrono::steady_clock::now() >= until; });
  }
  Lines take() { return std::exchange(lines_, {}); }
  std::uint64_t routes() const { return rib_.stats().routes; }

  asio::io_context io_;
  Lines lines_;
  int full_ = 0;
  BmpRib rib_;
  std::unique_ptr<BmpStation> station_;
};

TEST_F(BmpStationTest, ListenAddressMustBeLoopback) {
  auto s = BmpStation::create(io_, asio::ip::tcp::endpoint(asio::ip::address_v4::any(), 0), rib_);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("BMP station: listen address 0.0.0.0 is not a loopback address"), std::string::npos)
      << s.error();
}

TEST_F(BmpStationTest, APortInUseIsAnErrorThatSaysWhy) {
  start();
  auto second = BmpStation::create(io_, asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), station_->port()),
                                   rib_);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().find("BMP station cannot listen on 127.0.0.1:"), std::string::npos) << second.error();
}

TEST_F(BmpStationTest, BgpdsTableArrivesWithItsNextHopsAndEndOfRibCompletesIt) {
  start();
  Bgpd bgpd(station_->port());
  ASSERT_TRUE(bgpd.connected());
  // Split at an odd place: the session reassembles.
  const auto bytes = cat({t::initiation(), t::peer_up(kPeerA), announce(kPeerA, {{0x0af50100, 24}, {0x0af50200, 24}}),
                          t::statistics(kPeerA), end_of_rib(kPeerA)});
  bgpd.send(t::Buf(bytes.begin(), bytes.begin() + 77));
  bgpd.send(t::Buf(bytes.begin() + 77, bytes.end()));
  ASSERT_TRUE(pump([&] { return full_ == 1; }));
  EXPECT_EQ(take(), (Lines{"+10.245.1.0/24 via 198.18.0.2", "+10.245.2.0/24 via 198.18.0.2"}));
  const auto s = station_->stats();
  EXPECT_TRUE(s.connected);
  EXPECT_EQ(s.connections, 1u);
  EXPECT_EQ(s.bytes, bytes.size());
  EXPECT_EQ(s.messages[static_cast<std::size_t>(bmp::MessageType::initiation)], 1u);
  EXPECT_EQ(s.messages[static_cast<std::size_t>(bmp::MessageType::peer_up)], 1u);
  EXPECT_EQ(s.messages[static_cast<std::size_t>(bmp::MessageType::route_monitoring)], 2u);
  EXPECT_EQ(s.messages[static_cast<std::size_t>(bmp::MessageType::statistics_report)], 1u);
  EXPECT_EQ(rib_.stats().peers_up, 1u);
}

TEST_F(BmpStationTest, ASocketOfAnotherUidIsRefusedAndCounted) {
  // Our own process connects; the policy names another uid: what zebra's or bgpd's uid check
  // does to any other local user.
  start(LocalPeerPolicy{::geteuid() + 1});
  Bgpd intruder(station_->port());
  ASSERT_TRUE(intruder.connected());  // the kernel accepts; the station closes it
  intruder.send(cat({t::initiation(), t::peer_up(kPeerA), announce(kPeerA, {{0x0af50100, 24}})}));
  ASSERT_TRUE(pump([&] { return station_->stats().refused_wrong_user == 1; }));
  run_for(100);
  EXPECT_TRUE(intruder.closed_by_peer(0));
  EXPECT_EQ(station_->stats().connections, 0u);
  EXPECT_EQ(station_->stats().bytes, 0u);
  EXPECT_TRUE(take().empty());
}

TEST_F(BmpStationTest, TheNamedUidIsAccepted) {
  start(LocalPeerPolicy{::geteuid()});
  Bgpd bgpd(station_->port());
  bgpd.send(cat({t::initiation(), t::peer_up(kPeerA), announce(kPeerA, {{0x0af50100, 24}})}));
  ASSERT_TRUE(pump([&] { return routes() == 1; }));
  EXPECT_EQ(station_->stats().refused_wrong_user, 0u);
}

TEST_F(BmpStationTest, ASecondSessionNeverReplacesAHealthyOne) {
  start();
  Bgpd bgpd(station_->port());
  bgpd.send(cat({t::initiation(), t::peer_up(kPeerA), announce(kPeerA, {{0x0af50100, 24}})}));
  ASSERT_TRUE(pump([&] { return routes() == 1; }));
  Bgpd second(station_->port());
  second.send(cat({t::initiation(), t::peer_up(kPeerA), announce(kPeerA, {{0x0a630000, 16}})}));
  ASSERT_TRUE(pump([&] { return station_->stats().refused_busy == 1; }));
  run_for(100);
  EXPECT_TRUE(second.closed_by_peer(0));
  EXPECT_FALSE(bgpd.closed_by_peer(0));
  EXPECT_EQ(take(), (Lines{"+10.245.1.0/24 via 198.18.0.2"}));
  EXPECT_EQ(rib_.stats().sessions, 1u) << "the refused client's Initiation must never be read";
  // The first session still delivers.
  bgpd.send(announce(kPeerA, {{0x0af50200, 24}}));
  ASSERT_TRUE(pump([&] { return routes() == 2; }));
}

TEST_F(BmpStationTest, AFramingErrorClosesTheConnectionKeepsTheRoutesAndTheReconnectResyncs) {
  start();
  std::string disconnect_why;
  {
    Bgpd bgpd(station_->port());
    bgpd.send(cat({t::initiation(), t::peer_up(kPeerA), announce(kPeerA, {{0x0af50100, 24}, {0x0af50200, 24}}),
                   end_of_rib(kPeerA)}));
    ASSERT_TRUE(pump([&] { return full_ == 1; }));
    take();
    // Version 4, then a route that must never be read.
    bgpd.send(cat({t::message(4, {}, 4), announce(kPeerA, {{0x0af50300, 24}})}));
    ASSERT_TRUE(pump([&] { return station_->stats().framing_errors == 1; }));
    EXPECT_FALSE(station_->stats().connected);
    ASSERT_TRUE(pump([&] { return bgpd.closed_by_peer(0); }));
  }
  EXPECT_TRUE(take().empty()) << "a lost session keeps every route";
  EXPECT_EQ(routes(), 2u);

  // bgpd reconnects and resends its table without 10.245.2.0/24: its End-of-RIB sweeps it.
  Bgpd again(station_->port());
  again.send(cat({t::initiation(), t::peer_up(kPeerA), announce(kPeerA, {{0x0af50100, 24}}), end_of_rib(kPeerA)}));
  ASSERT_TRUE(pump([&] { return full_ == 2; }));
  EXPECT_EQ(take(), (Lines{"-10.245.2.0/24"}));
  EXPECT_EQ(station_->stats().connections, 2u);
  EXPECT_EQ(station_->stats().messages[static_cast<std::size_t>(bmp::MessageType::initiation)], 2u);
  EXPECT_EQ(rib_.stats().stale_swept, 1u);
}

TEST_F(BmpStationTest, BgpdClosingIsALostSessionNotAWithdrawal) {
  start();
  {
    Bgpd bgpd(station_->port());
    bgpd.send(cat({t::initiation(), t::peer_up(kPeerA), announce(kPeerA, {{0x0af50100, 24}})}));
    ASSERT_TRUE(pump([&] { return routes() == 1; }));
  }
  ASSERT_TRUE(pump([&] { return !station_->stats().connected; }));
  EXPECT_EQ(take(), (Lines{"+10.245.1.0/24 via 198.18.0.2"}));
  EXPECT_EQ(rib_.stats().peers_up, 0u);
  EXPECT_EQ(routes(), 1u);
}

TEST_F(BmpStationTest, StopClosesTheListenerAndTheConnection) {
  start();
  const auto port = station_->port();
  Bgpd bgpd(port);
  ASSERT_TRUE(pump([&] { return station_->stats().connected; }));
  station_->stop();
  EXPECT_FALSE(station_->stats().connected);
  run_for(20);
  EXPECT_TRUE(bgpd.closed_by_peer(0));
  Bgpd late(port);
  EXPECT_FALSE(late.connected());
}

// 10 MB of garbage: half raw bytes, half well-framed BMP messages of random types and bodies
// (so the parsers behind the framing see them), between a real session's routes. Nothing
// crashes, nothing the garbage says changes a route.
TEST_F(BmpStationTest, TenMegabytesOfGarbageNeverCrashNorChangeARoute) {
  start();
  ASSERT_TRUE(station_->feed(cat({t::initiation(), t::peer_up(kPeerA), announce(kPeerA, {{0x0af50100, 24}})})));
  ASSERT_EQ(take(), (Lines{"+10.245.1.0/24 via 198.18.0.2"}));
  std::mt19937 rng(33);
  std::size_t fed = 0, failures = 0;
  while (fed < 10u * 1024 * 1024) {
    t::Buf chunk;
    if (fed < 5u * 1024 * 1024) {
      chunk.resize(1 + rng() % 4096);
      for (auto& b : chunk) b = static_cast<std::uint8_t>(rng());
    } else {
      t::Buf body(rng() % 600);
      for (auto& b : body) b = static_cast<std::uint8_t>(rng());
      chunk = t::message(static_cast<std::uint8_t>(rng() % 9), body);
    }
    if (!station_->feed(chunk)) ++failures;
    fed += chunk.size();
  }
  EXPECT_GT(failures, 0u);  // the raw half breaks framing again and again
  EXPECT_TRUE(take().empty());
  EXPECT_EQ(routes(), 1u);
  EXPECT_EQ(rib_.routes_of({0, Ipv4Addr{kPeerA}}), 1u);
  const auto s = station_->stats();
  EXPECT_EQ(s.framing_errors, failures);
  std::uint64_t ignored = 0;
  for (auto n : s.ignored) ignored += n;
  EXPECT_GT(ignored, 0u);
}

}  // namespace
}  // namespace vxfed::bgp
