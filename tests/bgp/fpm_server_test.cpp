// FpmServer (bgp/fpm_server.hpp) with a real TCP client on loopback playing zebra: frames
// reassembled across reads, routes handed on in order, what is skipped or dropped and
// counted, and the connection rules (a broken stream is closed, a reconnecting zebra starts
// clean, a second client never replaces a healthy one, stop() closes the listener). The
// io_context runs on the test thread between steps.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "tests/bgp/test_support.hpp"
#include "bgp/fpm_encoder.hpp"
#include "bgp/fpm_server.hpp"

namespace vxfed::bgp {
namespace {

namespace asio = boost::asio;
using Buf = std::vector<std::uint8_t>;
using net::Ipv4Addr, net::Ipv4Prefix;

std::uint32_t ip(const char* s) { return Ipv4Addr::parse(s)->value; }
Ipv4Prefix pfx(const char* s) { return *Ipv4Prefix::parse(s); }

Buf route_frame(const fpm::RouteMessage& r) {
  Buf netlink, frame;
  fpm::append_route_message(netlink, r);
  fpm::append_frame(frame, netlink);
  return frame;
}

Buf cat(std::initializer_list<Buf> parts) {
  Buf out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::string line(const fpm::RouteMessage& r) { return testing::route_line(r); }

// A zebra stand-in: a blocking TCP socket to the server's port.
using Zebra = testing::LoopbackClient;

class FpmServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FpmServer::Handlers h;
    h.on_connect = [this] { ++connects_; };
    h.on_disconnect = [this] { ++disconnects_; };
    h.on_route = [this](const fpm::RouteMessage& r) { routes_.push_back(line(r)); };
    h.on_batch_end = [this] { ++batches_; };
    auto s = FpmServer::create(io_, {asio::ip::make_address("127.0.0.1"), 0}, std::move(h));
    ASSERT_TRUE(s.ok()) << s.error();
    server_ = std::move(*s);
  }

  // Runs the io_context until pred() holds; false after 5 s without it.
  template <typename Pred>
  bool pump(Pred pred) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!pred()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      io_.run_one_for(std::chrono::milliseconds(10));
      if (io_.stopped()) io_.restart();
    }
    return true;
  }
  bool pump_bytes(std::uint64_t n) {
    return pump([&] { return server_->stats().bytes >= n; });
  }

  asio::io_context io_;
  std::unique_ptr<FpmServer> server_;
  int connects_ = 0, disconnects_ = 0, batches_ = 0;
  std::vector<std::string> routes_;
};

TEST_F(FpmServerTest, ListensOnTheEphemeralPortItWasGiven) {
  EXPECT_NE(server_->port(), 0);
  EXPECT_FALSE(server_->stats().connected);
  EXPECT_EQ(server_->stats().connections, 0u);
}

TEST_F(FpmServerTest, APortInUseIsAnErrorThatSaysWhy) {
  asio::io_context other;
  auto s = FpmServer::create(other, {asio::ip::make_address("127.0.0.1"), server_->port()}, {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("127.0.0.1:" + std::to_string(server_->port())), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("another FPM listener"), std::string::npos) << s.error();
}

TEST_F(FpmServerTest, RoutesArriveInOrderWithTheirNextHops) {
  Zebra z(server_->port());
  ASSERT_TRUE(z.connected());
  ASSERT_TRUE(pump([&] { return connects_ == 1; }));
  EXPECT_TRUE(server_->stats().connected);
  const Buf bytes = cat({route_frame(fpm::make_bgp_route(pfx("10.245.1.0/24"), {ip("198.18.0.2")})),
                         route_frame(fpm::make_bgp_route(pfx("10.245.2.0/24"), {ip("198.18.0.2"), ip("198.18.0.3")})),
                         route_frame(fpm::make_bgp_route(pfx("10.245.1.0/24"), {}, true))});
  z.send(bytes);
  ASSERT_TRUE(pump([&] { return routes_.size() == 3; })) << routes_.size();
  EXPECT_EQ(routes_, (std::vector<std::string>{"+10.245.1.0/24 via 198.18.0.2",
                                               "+10.245.2.0/24 via 198.18.0.2,198.18.0.3", "-10.245.1.0/24"}));
  const FpmStats& st = server_->stats();
  EXPECT_EQ(st.bytes, bytes.size());
  EXPECT_EQ(st.frames, 3u);
  EXPECT_EQ(st.messages, 3u);
  EXPECT_EQ(st.route_messages, 3u);
  EXPECT_EQ(st.skipped + st.malformed_frames + st.malformed_messages + st.stream_errors, 0u);
  EXPECT_GE(batches_, 1);
  EXPECT_EQ(disconnects_, 0);
}

TEST_F(FpmServerTest, FramesSplitAcrossReadsAreReassembled) {
  Zebra z(server_->port());
  ASSERT_TRUE(pump([&] { return connects_ == 1; }));
  const Buf bytes = cat({route_frame(fpm::make_bgp_route(pfx("10.245.1.0/24"), {ip("198.18.0.2")})),
                         route_frame(fpm::make_bgp_route(pfx("10.245.3.0/24"), {ip("198.18.0.4")}))});
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    z.send(Buf{bytes[i]});
    ASSERT_TRUE(pump_bytes(i + 1)) << "byte " << i;  // every byte in its own read
  }
  EXPECT_EQ(routes_, (std::vector<std::string>{"+10.245.1.0/24 via 198.18.0.2", "+10.245.3.0/24 via 198.18.0.4"}));
  EXPECT_EQ(server_->stats().frames, 2u);
}

TEST_F(FpmServerTest, OtherFrameTypesAndNetlinkMessagesAreSkipped) {
  Zebra z(server_->port());
  ASSERT_TRUE(pump([&] { return connects_ == 1; }));
  Buf protobuf_frame, link_frame;
  fpm::append_frame(protobuf_frame, Buf{1, 2, 3, 4}, fpm::kVersion, 2);  // type 2: protobuf
  // An RTM_NEWLINK (16) message: a bare 16-byte netlink header.
  const Buf newlink{16, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  fpm::append_frame(link_frame, newlink);
  const Buf route = route_frame(fpm::make_bgp_route(pfx("10.245.4.0/24"), {ip("198.18.0.5")}));
  z.send(cat({protobuf_frame, link_frame, route}));
  ASSERT_TRUE(pump([&] { return routes_.size() == 1; }));
  EXPECT_EQ(routes_[0], "+10.245.4.0/24 via 198.18.0.5");
  EXPECT_EQ(server_->stats().frames, 3u);
  EXPECT_EQ(server_->stats().skipped, 2u);
  EXPECT_TRUE(server_->stats().connected);
}

TEST_F(FpmServerTest, BrokenNetlinkInsideAFrameDropsThatFrameOnly) {
  Zebra z(server_->port());
  ASSERT_TRUE(pump([&] { return connects_ == 1; }));
  // Netlink framing broken: the message claims 64 bytes in a 16-byte payload.
  Buf broken_framing;
  fpm::append_frame(broken_framing, Buf{64, 0, 0, 0, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  // Framing fine, route message malformed: RTM_NEWROUTE with 4 bytes where rtmsg needs 12.
  Buf short_route;
  fpm::append_frame(short_route, Buf{20, 0, 0, 0, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 24, 0, 0});
  const Buf route = route_frame(fpm::make_bgp_route(pfx("10.245.5.0/24"), {ip("198.18.0.6")}));
  z.send(cat({broken_framing, short_route, route}));
  ASSERT_TRUE(pump([&] { return routes_.size() == 1; }));
  EXPECT_EQ(routes_[0], "+10.245.5.0/24 via 198.18.0.6");
  EXPECT_EQ(server_->stats().malformed_frames, 1u);
  EXPECT_EQ(server_->stats().malformed_messages, 1u);
  EXPECT_EQ(server_->stats().stream_errors, 0u);
  EXPECT_EQ(disconnects_, 0);
}

TEST_F(FpmServerTest, ABadFrameHeaderClosesTheStreamAndZebraMayReconnect) {
  for (const Buf& bad : {Buf{2, 1, 0, 8, 0, 0, 0, 0},    // version 2
                         Buf{1, 1, 0, 3}}) {              // length below the header's 4
    const int before = disconnects_;
    const auto errors = server_->stats().stream_errors;
    Zebra z(server_->port());
    ASSERT_TRUE(pump([&] { return server_->stats().connected; }));
    // A route in the same write after the bad header must not be taken from an untrusted stream.
    z.send(cat({bad, route_frame(fpm::make_bgp_route(pfx("10.245.9.0/24"), {ip("198.18.0.9")}))}));
    ASSERT_TRUE(pump([&] { return disconnects_ == before + 1; }));
    EXPECT_EQ(server_->stats().stream_errors, errors + 1);
    EXPECT_FALSE(server_->stats().connected);
    EXPECT_TRUE(z.closed_by_peer(5000));
    EXPECT_TRUE(routes_.empty());
  }
  Zebra again(server_->port());
  again.send(route_frame(fpm::make_bgp_route(pfx("10.245.6.0/24"), {ip("198.18.0.7")})));
  ASSERT_TRUE(pump([&] { return routes_.size() == 1; }));
  EXPECT_EQ(routes_[0], "+10.245.6.0/24 via 198.18.0.7");
  EXPECT_EQ(server_->stats().connections, 3u);
}

TEST_F(FpmServerTest, AReconnectedZebraStartsCleanAfterItsOldHalfFrame) {
  Zebra first(server_->port());
  ASSERT_TRUE(pump([&] { return connects_ == 1; }));
  const Buf frame = route_frame(fpm::make_bgp_route(pfx("10.245.7.0/24"), {ip("198.18.0.8")}));
  first.send(Buf(frame.begin(), frame.begin() + 10));
  ASSERT_TRUE(pump_bytes(10));
  first.close();  // zebra died mid-frame and reconnects at once
  Zebra second(server_->port());
  ASSERT_TRUE(pump([&] { return connects_ == 2; }));
  EXPECT_EQ(disconnects_, 1);
  // The rest of the first zebra's frame would be garbage here: the second starts clean.
  second.send(frame);
  ASSERT_TRUE(pump([&] { return routes_.size() == 1; }));
  EXPECT_EQ(routes_[0], "+10.245.7.0/24 via 198.18.0.8");
  EXPECT_EQ(server_->stats().connections, 2u);
  EXPECT_EQ(server_->stats().stream_errors, 0u);
}

TEST_F(FpmServerTest, ASecondClientNeverReplacesAHealthyZebra) {
  Zebra first(server_->port());
  ASSERT_TRUE(pump([&] { return connects_ == 1; }));
  Zebra second(server_->port());
  ASSERT_TRUE(pump([&] { return server_->stats().refused_busy == 1; }));
  EXPECT_TRUE(second.closed_by_peer(5000));
  first.send(route_frame(fpm::make_bgp_route(pfx("10.245.7.0/24"), {ip("198.18.0.8")})));
  ASSERT_TRUE(pump([&] { return routes_.size() == 1; }));
  EXPECT_EQ(disconnects_, 0);
  EXPECT_EQ(server_->stats().connections, 1u);
}

TEST_F(FpmServerTest, ZebraClosingIsADisconnect) {
  Zebra z(server_->port());
  ASSERT_TRUE(pump([&] { return connects_ == 1; }));
  z.close();
  ASSERT_TRUE(pump([&] { return disconnects_ == 1; }));
  EXPECT_FALSE(server_->stats().connected);
}

TEST_F(FpmServerTest, StopClosesTheListenerAndTheConnection) {
  Zebra z(server_->port());
  ASSERT_TRUE(pump([&] { return connects_ == 1; }));
  const std::uint16_t port = server_->port();
  server_->stop();
  EXPECT_EQ(disconnects_, 1);
  EXPECT_TRUE(z.closed_by_peer(5000));
  Zebra late(port);
  EXPECT_FALSE(late.connected());
  EXPECT_EQ(late.connect_errno(), ECONNREFUSED);
}

TEST_F(FpmServerTest, FeedTakesBytesWithoutASocket) {
  const Buf frame = route_frame(fpm::make_bgp_route(pfx("10.245.8.0/24"), {ip("198.18.0.10")}));
  EXPECT_TRUE(server_->feed(fpm::Bytes(frame.data(), 7)));
  EXPECT_TRUE(routes_.empty());
  EXPECT_TRUE(server_->feed(fpm::Bytes(frame.data() + 7, frame.size() - 7)));
  EXPECT_EQ(routes_, std::vector<std::string>{"+10.245.8.0/24 via 198.18.0.10"});
  const Buf bad{1, 1, 0, 2};
  EXPECT_FALSE(server_->feed(fpm::Bytes(bad)));
  EXPECT_EQ(server_->stats().stream_errors, 1u);
}

}  // namespace
}  // namespace vxfed::bgp
