// RestartHold: when the adapter holds zebra's deletes because the node's own bgpd restarted.
#include <gtest/gtest.h>

#include "bgp/restart_hold.hpp"

namespace {

using namespace vxfed::bgp;
using namespace std::chrono_literals;
using Clock = RestartHold::Clock;

PeerStatus peer(const char* address, const char* state, bool eor = false, std::uint64_t uptime_s = 0) {
  PeerStatus p;
  p.address = address;
  p.state = state;
  p.end_of_rib_received = eor;
  p.uptime_s = uptime_s;
  return p;
}

struct Fixture : ::testing::Test {
  RestartHold hold{120s, 5s};
  Clock::time_point t0 = Clock::now();
  std::vector<PeerStatus> up{peer("198.18.0.2", "Established", true, 300), peer("198.18.0.3", "Established", true, 300)};
};

TEST_F(Fixture, TheFirstBgpdAndTheSamePidHoldNothing) {
  EXPECT_FALSE(hold.on_pid("100", t0));
  EXPECT_FALSE(hold.on_peers(up, t0, t0));
  EXPECT_FALSE(hold.on_pid("100", t0 + 1s));
  EXPECT_FALSE(hold.on_pid("", t0 + 2s));  // bgpd down, its pid file gone: not a new bgpd yet
  EXPECT_FALSE(hold.holding());
  EXPECT_FALSE(hold.on_peers({peer("198.18.0.2", "Active")}, t0 + 3s, t0 + 3s));  // a peer down: not held
}

TEST_F(Fixture, ANewBgpdHoldsUntilEveryPeerThatWasUpIsBackWithItsEndOfRib) {
  hold.on_pid("100", t0);
  hold.on_peers(up, t0, t0);
  // bgpd killed: a poll it cannot answer leaves what was up as it was.
  hold.on_peers({peer("198.18.0.2", "Unknown"), peer("198.18.0.3", "Unknown")}, t0 + 5s, t0 + 5s);
  EXPECT_TRUE(hold.on_pid("200", t0 + 10s));
  EXPECT_TRUE(hold.holding());
  EXPECT_EQ(hold.awaited().size(), 2u);
  // A poll that started before the new bgpd was seen read the old one: it decides nothing.
  EXPECT_FALSE(hold.on_peers(up, t0 + 9s, t0 + 10s));
  EXPECT_FALSE(hold.on_peers({peer("198.18.0.2", "Active"), peer("198.18.0.3", "Connect")}, t0 + 11s, t0 + 11s));
  EXPECT_FALSE(hold.on_peers({peer("198.18.0.2", "Established", true, 1), peer("198.18.0.3", "Established", false, 1)},
                             t0 + 12s, t0 + 12s));
  EXPECT_TRUE(hold.holding());
  const std::vector<PeerStatus> back{peer("198.18.0.2", "Established", true, 2),
                                     peer("198.18.0.3", "Established", true, 2)};
  // Back, but zebra may not have installed the routes yet: held a little longer.
  EXPECT_FALSE(hold.on_peers(back, t0 + 13s, t0 + 13s));
  EXPECT_TRUE(hold.holding());
  EXPECT_FALSE(hold.on_peers(back, t0 + 13s + 500ms, t0 + 13s + 500ms));
  EXPECT_TRUE(hold.on_peers(back, t0 + 14s, t0 + 14s));
  EXPECT_FALSE(hold.holding());
  EXPECT_EQ(hold.closed_because(), "every peer back with its routes");
}

TEST_F(Fixture, APeerThatSendsNoEndOfRibCountsAsBackOnceSettled) {
  hold.on_pid("100", t0);
  hold.on_peers(up, t0, t0);
  hold.on_pid("200", t0 + 1s);
  const auto no_eor = [](std::uint64_t uptime) {
    return std::vector<PeerStatus>{peer("198.18.0.2", "Established", false, uptime),
                                   peer("198.18.0.3", "Established", true, uptime)};
  };
  EXPECT_FALSE(hold.on_peers(no_eor(4), t0 + 5s, t0 + 5s));
  EXPECT_FALSE(hold.on_peers(no_eor(5), t0 + 6s, t0 + 6s));
  EXPECT_TRUE(hold.on_peers(no_eor(6), t0 + 7s, t0 + 7s));
}

TEST_F(Fixture, APeerThatNeverComesBackEndsTheHoldAtTheRestartTime) {
  hold.on_pid("100", t0);
  hold.on_peers(up, t0, t0);
  hold.on_pid("200", t0 + 1s);
  const std::vector<PeerStatus> one_back{peer("198.18.0.2", "Established", true, 60), peer("198.18.0.3", "Active")};
  EXPECT_FALSE(hold.on_peers(one_back, t0 + 100s, t0 + 100s));
  EXPECT_TRUE(hold.on_peers(one_back, t0 + 121s, t0 + 121s));
  EXPECT_EQ(hold.closed_because(), "restart time over");
}

TEST_F(Fixture, OnlyThePeersUpBeforeTheRestartAreAwaited) {
  hold.on_pid("100", t0);
  hold.on_peers({peer("198.18.0.2", "Established", true, 300), peer("198.18.0.3", "Idle")}, t0, t0);
  hold.on_pid("200", t0 + 1s);
  EXPECT_EQ(hold.awaited(), std::vector<std::string>{"198.18.0.2"});
  const std::vector<PeerStatus> back{peer("198.18.0.2", "Established", true, 1), peer("198.18.0.3", "Idle")};
  EXPECT_FALSE(hold.on_peers(back, t0 + 2s, t0 + 2s));
  EXPECT_TRUE(hold.on_peers(back, t0 + 3s, t0 + 3s));
}

TEST_F(Fixture, APeerThatDropsAgainBeforeTheRoutesSettleRestartsTheWait) {
  hold.on_pid("100", t0);
  hold.on_peers({peer("198.18.0.2", "Established", true, 300)}, t0, t0);
  hold.on_pid("200", t0 + 1s);
  const std::vector<PeerStatus> back{peer("198.18.0.2", "Established", true, 1)};
  EXPECT_FALSE(hold.on_peers(back, t0 + 2s, t0 + 2s));
  EXPECT_FALSE(hold.on_peers({peer("198.18.0.2", "Active")}, t0 + 2s + 500ms, t0 + 2s + 500ms));
  EXPECT_FALSE(hold.on_peers(back, t0 + 3s, t0 + 3s));  // back again: the settle starts over
  EXPECT_FALSE(hold.on_peers(back, t0 + 3s + 500ms, t0 + 3s + 500ms));
  EXPECT_TRUE(hold.on_peers(back, t0 + 4s, t0 + 4s));
}

TEST_F(Fixture, ASecondRestartDuringTheHoldExtendsItAndKeepsTheAwaitedPeers) {
  hold.on_pid("100", t0);
  hold.on_peers(up, t0, t0);
  hold.on_pid("200", t0 + 1s);
  EXPECT_TRUE(hold.on_pid("300", t0 + 100s));
  EXPECT_EQ(hold.awaited().size(), 2u);
  EXPECT_FALSE(hold.on_peers({peer("198.18.0.2", "Active")}, t0 + 150s, t0 + 150s));  // 50 s into the new hold
}

}  // namespace
