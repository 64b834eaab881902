// The BGP route source (bgp/route_source.hpp) over a fake adapter (tests/bgp/fake_adapter.hpp,
// the real route table without FRR): full tables and deltas reach the sink with their VNIs,
// network changes are acted on the moment the host reports them (no timer involved), the
// route cache is replayed after a restart, reconfigure re-resolves, a failing start is retried.
#include <gtest/gtest.h>

#include <map>

#include "bgp/route_cache.hpp"
#include "bgp/route_source.hpp"
#include "tests/bgp/fake_adapter.hpp"
#include "tests/bgp/test_support.hpp"

namespace {

using namespace vxfed::bgp;
using vxfed::RouteUpdate;
using vxfed::bgp::testing::FakeAdapter;
using vxfed::bgp::testing::fake_factory;
using vxfed::bgp::testing::TempDir;
using vxfed::bgp::testing::update_text;

BgpConfig config(const char* fed_peer_extra = "network: fed") {
  auto c = parse_config(YAML::Load(std::string(R"(
enabled: true
asn: 65001
router_id: 198.18.0.1
restart_time: 1
clusters: {b: [10.245.0.0/16], c: [10.246.0.0/16]}
peers:
  - {address: 198.18.0.2, remote_asn: 65002, cluster: b, accept: ["10.245.0.0/16 le 24"], )") + fed_peer_extra + R"(}
  - {address: 198.18.0.3, remote_asn: 65003, cluster: c, vni: 2000}
)"));
  EXPECT_TRUE(c.ok()) << c.error();
  return *c;
}

struct RouteSourceTest : ::testing::Test {
  boost::asio::io_context io;
  std::map<std::string, std::uint32_t> vnis{{"fed", 1500}};  // the host's networks
  std::vector<std::string> updates;                          // what the sink got, as update_text()
  FakeAdapter* fake = nullptr;
  TempDir dir;

  RouteSourceOptions options(BgpConfig c = config()) {
    RouteSourceOptions o;
    o.config = std::move(c);
    o.vtep = *vxfed::net::Ipv4Addr::parse("198.18.0.1");
    o.advertise = {*vxfed::net::Ipv4Prefix::parse("10.244.0.0/16")};
    o.vni_of = [this](const std::string& n) -> std::optional<std::uint32_t> {
      auto it = vnis.find(n);
      if (it == vnis.end()) return std::nullopt;
      return it->second;
    };
    o.cache_path = (dir.path / "bgp-routes.json").string();
    o.start_retry = std::chrono::milliseconds(10);
    o.save_interval = std::chrono::milliseconds(20);
    return o;
  }
  std::unique_ptr<RouteSource> started(RouteSourceOptions o) {
    auto s = RouteSource::create(io, std::move(o), fake_factory(fake), nullptr);
    EXPECT_TRUE(s.ok()) << s.error();
    if (!s.ok()) return nullptr;
    (*s)->start([this](const RouteUpdate& u) { updates.push_back(update_text(u)); });
    return std::move(*s);
  }
  std::vector<std::string> take() { return std::exchange(updates, {}); }
};

TEST_F(RouteSourceTest, DeltasAndFullTablesReachTheSinkWithVniAndPeer) {
  auto source = started(options());
  ASSERT_TRUE(fake->started);
  EXPECT_TRUE(source->connected());
  EXPECT_TRUE(take().empty()) << "no cache: nothing before the adapter's first routes";
  fake->learn("10.245.1.0/24", {"198.18.0.12"});
  fake->learn("10.246.0.0/16", {"198.18.0.14", "198.18.0.13"});
  fake->withdraw("10.245.1.0/24");
  EXPECT_EQ(take(), (std::vector<std::string>{"delta +10.245.1.0/24@1500[198.18.0.12]198.18.0.2",
                                              "delta +10.246.0.0/16@2000[198.18.0.13,198.18.0.14]198.18.0.3",
                                              "delta -10.245.1.0/24@1500"}));
  fake->resync({{"10.245.2.0/24", "198.18.0.12"}});  // 10.246.0.0/16 not re-sent: swept
  EXPECT_EQ(take(), std::vector<std::string>{"full +10.245.2.0/24@1500[198.18.0.12]198.18.0.2"});
  ASSERT_EQ(source->peers().size(), 2u);
  EXPECT_EQ(source->peers()[0].address, "198.18.0.2");
}

// The host calls networks_changed() when its networks change; the source acts at once.
TEST_F(RouteSourceTest, RouteLearnedBeforeItsNetworkIsInstalledTheMomentTheNetworkExists) {
  vnis.clear();
  auto source = started(options());
  fake->learn("10.245.1.0/24", {"198.18.0.12"});
  EXPECT_TRUE(take().empty()) << "network 'fed' has no VNI yet: the route is held back";
  EXPECT_EQ(source->stats().routes, 1u);
  source->networks_changed();  // some other network changed: nothing to re-resolve
  EXPECT_EQ(fake->reresolves, 0);
  vnis["fed"] = 1500;
  source->networks_changed();
  EXPECT_EQ(fake->reresolves, 1);
  // Delivered inside networks_changed(): the io_context never ran.
  EXPECT_EQ(take(), std::vector<std::string>{"delta +10.245.1.0/24@1500[198.18.0.12]198.18.0.2"});
}

TEST_F(RouteSourceTest, NetworkRemovedWithdrawsAndRenumberedMovesItsRoutes) {
  auto source = started(options());
  fake->learn("10.245.1.0/24", {"198.18.0.12"});
  fake->learn("10.246.0.0/16", {"198.18.0.13"});  // fixed VNI: never affected
  take();
  vnis["fed"] = 1600;  // removed and added again with another VNI
  source->networks_changed();
  EXPECT_EQ(take(), std::vector<std::string>{"delta +10.245.1.0/24@1600[198.18.0.12]198.18.0.2 -10.245.1.0/24@1500"});
  vnis.erase("fed");
  source->networks_changed();
  EXPECT_EQ(take(), std::vector<std::string>{"delta -10.245.1.0/24@1600"});
  EXPECT_EQ(fake->routes().size(), 1u) << "only the fixed-VNI route is given out";
}

TEST_F(RouteSourceTest, RestartReplaysTheCacheUntilTheFirstFullTable) {
  {
    auto first = started(options());
    fake->learn("10.245.1.0/24", {"198.18.0.12"});
    fake->learn("10.245.2.0/24", {"198.18.0.12"});
    fake->learn("10.246.0.0/16", {"198.18.0.13"});
    first->stop();  // writes the cache
  }
  updates.clear();
  vnis["fed"] = 1700;  // the network got another VNI while vxfedd was down
  auto second = started(options());
  EXPECT_TRUE(second->preserving());
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0],
            "delta +10.245.1.0/24@1700[198.18.0.12]198.18.0.2 +10.245.2.0/24@1700[198.18.0.12]198.18.0.2 "
            "+10.246.0.0/16@2000[198.18.0.13]198.18.0.3")
      << "replayed before the adapter has anything, with the VNIs of now";
  take();
  fake->learn("10.245.3.0/24", {"198.18.0.12"});  // deltas flow meanwhile
  EXPECT_EQ(take(), std::vector<std::string>{"delta +10.245.3.0/24@1700[198.18.0.12]198.18.0.2"});
  // zebra's resync: the full table replaces the replayed routes (10.245.2.0/24 was withdrawn).
  fake->resync({{"10.245.1.0/24", "198.18.0.12"}, {"10.245.3.0/24", "198.18.0.12"}, {"10.246.0.0/16", "198.18.0.13"}});
  EXPECT_FALSE(second->preserving());
  EXPECT_EQ(take(), std::vector<std::string>{"full +10.245.1.0/24@1700[198.18.0.12]198.18.0.2 "
                                             "+10.245.3.0/24@1700[198.18.0.12]198.18.0.2 "
                                             "+10.246.0.0/16@2000[198.18.0.13]198.18.0.3"});
  // The cache follows (at most one write per save_interval).
  io.run_for(std::chrono::milliseconds(100));
  auto cached = load_route_cache(options().cache_path);
  ASSERT_TRUE(cached.ok()) << cached.error();
  EXPECT_EQ(cached->size(), 3u);
}

TEST_F(RouteSourceTest, ReplayedRoutesWithoutPeerOrNetworkNowAreNotReplayed) {
  {
    auto first = started(options());
    fake->learn("10.245.1.0/24", {"198.18.0.12"});
    fake->learn("10.246.0.0/16", {"198.18.0.13"});
    first->stop();
  }
  updates.clear();
  vnis.clear();  // 'fed' is gone
  auto second = started(options());
  EXPECT_EQ(take(), std::vector<std::string>{"delta +10.246.0.0/16@2000[198.18.0.13]198.18.0.3"});
}

TEST_F(RouteSourceTest, ReplayedRoutesAreDroppedWhenNoFullTableComesWithinRestartTime) {
  {
    auto first = started(options());
    fake->learn("10.245.1.0/24", {"198.18.0.12"});
    first->stop();
  }
  updates.clear();
  auto second = started(options());  // restart_time: 1 s
  take();
  io.run_for(std::chrono::milliseconds(600));
  EXPECT_TRUE(second->preserving());
  EXPECT_TRUE(take().empty());
  io.run_for(std::chrono::milliseconds(700));
  EXPECT_FALSE(second->preserving());
  EXPECT_EQ(take(), std::vector<std::string>{"full"}) << "the adapter has learned nothing this run";
}

TEST_F(RouteSourceTest, ReconfigureReResolvesUnderTheNewPeers) {
  auto source = started(options());
  fake->learn("10.245.1.0/24", {"198.18.0.12"});
  take();
  ASSERT_TRUE(source->reconfigure(config("vni: 3000"), {*vxfed::net::Ipv4Prefix::parse("10.244.0.0/15")}).ok());
  EXPECT_EQ(fake->reconfigures, 1);
  ASSERT_EQ(fake->options().advertise.size(), 1u);
  EXPECT_EQ(fake->options().advertise[0].str(), "10.244.0.0/15");
  EXPECT_EQ(take(), std::vector<std::string>{"delta +10.245.1.0/24@3000[198.18.0.12]198.18.0.2 -10.245.1.0/24@1500"});
  vnis["fed"] = 1600;  // no peer uses 'fed' any more
  source->networks_changed();
  EXPECT_EQ(fake->reresolves, 0);
  EXPECT_TRUE(take().empty());
}

TEST_F(RouteSourceTest, AFailingAdapterStartIsRetried) {
  RouteSourceOptions o = options();
  auto s = RouteSource::create(io, std::move(o),
                               [this](AdapterOptions a) -> vxfed::Result<std::unique_ptr<AdapterInterface>> {
                                 auto adapter = std::make_unique<FakeAdapter>(std::move(a));
                                 adapter->failures_before_start = 2;
                                 fake = adapter.get();
                                 return std::unique_ptr<AdapterInterface>(std::move(adapter));
                               },
                               nullptr);
  ASSERT_TRUE(s.ok()) << s.error();
  (*s)->start([this](const RouteUpdate& u) { updates.push_back(update_text(u)); });
  EXPECT_EQ(fake->starts, 1);
  EXPECT_FALSE(fake->started);
  io.run_for(std::chrono::milliseconds(200));
  EXPECT_EQ(fake->starts, 3);
  EXPECT_TRUE(fake->started);
  (*s)->stop();
  EXPECT_EQ(fake->stops, 1);
}

TEST_F(RouteSourceTest, TheAdapterStartsOnlyOnceTheGateOpensOrItsWaitIsOver) {
  auto s = RouteSource::create(io, options(), fake_factory(fake), nullptr);
  ASSERT_TRUE(s.ok()) << s.error();
  bool open = false;
  (*s)->start([this](const RouteUpdate& u) { updates.push_back(update_text(u)); }, [&open] { return open; },
              std::chrono::seconds(5));
  io.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(fake->starts, 0) << "started before the dataplane had its tables";
  open = true;
  io.run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(fake->starts, 1);
  EXPECT_TRUE(fake->started);
  (*s)->stop();

  io.restart();
  auto t = RouteSource::create(io, options(), fake_factory(fake), nullptr);
  ASSERT_TRUE(t.ok()) << t.error();
  (*t)->start([this](const RouteUpdate& u) { updates.push_back(update_text(u)); }, [] { return false; },
              std::chrono::milliseconds(100));
  EXPECT_EQ(fake->starts, 0);
  io.run_for(std::chrono::milliseconds(300));
  EXPECT_EQ(fake->starts, 1) << "a dataplane that never gets ready must not keep BGP from starting";
  (*t)->stop();
}

TEST(RouteSourceRetry, QuickAtFirstThenEveryCap) {
  using std::chrono::milliseconds;
  const milliseconds cap(5000);
  EXPECT_EQ(vxfed::bgp::start_retry_delay(1, cap), milliseconds(250));
  EXPECT_EQ(vxfed::bgp::start_retry_delay(2, cap), milliseconds(500));
  EXPECT_EQ(vxfed::bgp::start_retry_delay(3, cap), milliseconds(1000));
  EXPECT_EQ(vxfed::bgp::start_retry_delay(4, cap), milliseconds(2000));
  EXPECT_EQ(vxfed::bgp::start_retry_delay(5, cap), milliseconds(4000));
  EXPECT_EQ(vxfed::bgp::start_retry_delay(6, cap), cap);
  EXPECT_EQ(vxfed::bgp::start_retry_delay(1000, cap), cap);
  EXPECT_EQ(vxfed::bgp::start_retry_delay(1, milliseconds(10)), milliseconds(10)) << "never above the cap";
}

}  // namespace
