// vxfedd's BGP wiring without FRR: NodeState + the BGP route source built from the config
// (control/federation/bgp_from_config.hpp) over a fake adapter, connected the way the daemon connects
// them (sink -> apply_routes, NodeState's networks observer -> networks_changed). A network
// added or removed over the API or by a reload changes the routes at once, without a poll.
#include <gtest/gtest.h>

#include "control/federation/bgp_from_config.hpp"
#include "control/node/node_state.hpp"
#include "tests/bgp/fake_adapter.hpp"
#include "tests/control/test_support.hpp"

namespace {

using namespace vxfed::control;
using namespace vxfed::control::testing;
using vxfed::RouteUpdate;
using vxfed::bgp::testing::FakeAdapter;
using vxfed::bgp::testing::fake_factory;

// A bgp section as vxfedd's config reader would have parsed it.
vxfed::bgp::BgpConfig parsed_bgp(const char* yaml) {
  auto parsed = vxfed::bgp::parse_config(YAML::Load(yaml));
  if (!parsed) throw std::runtime_error(parsed.error());
  return std::move(*parsed);
}

constexpr const char* kBgp = R"(
enabled: true
asn: 65001
router_id: 198.18.0.1
clusters: {b: [10.245.0.0/16]}
peers: [{address: 198.18.0.2, remote_asn: 65002, cluster: b, network: green, accept: ["10.245.0.0/16 le 24"]}]
)";

class CountingSink : public TablesSink {
 public:
  void publish(const TablesDelta& delta) override {
    for (const auto& r : delta.routes) upserted.push_back(r.prefix.str() + "@" + std::to_string(r.vni));
    for (const auto& k : delta.removed_routes) removed.push_back(k.prefix.str() + "@" + std::to_string(k.vni));
    ++generation;
  }
  bool ready() const override { return true; }
  bool carries(const dp::Endpoint&) const override { return true; }
  std::optional<std::string> refusal(const std::string&) const override { return std::nullopt; }
  std::vector<std::string> upserted, removed;
  std::uint64_t generation = 0;
};

struct BgpRoutesTest : ::testing::Test {
  TempDir dir;
  boost::asio::io_context io;
  Config config = test_config(dir.path);
  std::unique_ptr<NodeState> state;
  std::unique_ptr<vxfed::bgp::RouteSource> source;
  FakeAdapter* fake = nullptr;
  CountingSink sink;

  void SetUp() override {
    config.bgp = parsed_bgp(kBgp);
    NodeState::Options o;
    o.state_dir = dir.path;
    auto s = NodeState::open(config, o, nullptr);
    ASSERT_TRUE(s.ok()) << s.error();
    state = std::move(*s);
    state->set_sink(&sink);
    auto made = make_bgp_route_source(io, config, *state, nullptr, fake_factory(fake));
    ASSERT_TRUE(made.ok()) << made.error();
    ASSERT_NE(*made, nullptr);
    source = std::move(*made);
    state->set_networks_observer([this] { source->networks_changed(); });
    auto* st = state.get();
    source->start([st](const RouteUpdate& u) { st->apply_routes(RouteOrigin::bgp, u); });
  }
  void TearDown() override {
    if (source) source->stop();
    if (state) state->set_sink(nullptr);
  }
  // The BGP routes vxfedd holds: "network prefix via vtep source peer".
  std::vector<std::string> routes() const {
    std::vector<std::string> out;
    for (const auto& r : state->list_routes())
      if (r.source() == "bgp")  // (the test config's network red has a static route)
        out.push_back(r.network() + " " + r.prefix() + " via " + r.vteps(0) + " " + r.source() + " " + r.peer());
    return out;
  }
};

TEST_F(BgpRoutesTest, BuiltFromTheConfig) {
  EXPECT_EQ(fake->options().vtep.str(), "198.18.0.1");
  ASSERT_EQ(fake->options().advertise.size(), 1u);
  EXPECT_EQ(fake->options().advertise[0].str(), "10.244.0.0/16") << "cluster.pod_cidrs";
  EXPECT_TRUE(fake->started);
}

// This node's own CIDRs overlapping a peer cluster's: FRR would prefer our `network`
// statement and the node would lose its route to that cluster. Refused, naming both.
TEST_F(BgpRoutesTest, OwnPodCidrsOverlappingAPeerClusterAreRefused) {
  Config clash = config;
  clash.bgp = parsed_bgp(R"(
enabled: true
asn: 65001
router_id: 198.18.0.1
clusters: {b: [10.244.128.0/17]}
peers: [{address: 198.18.0.2, remote_asn: 65002, cluster: b, network: green}]
)");
  FakeAdapter* other = nullptr;
  auto made = make_bgp_route_source(io, clash, *state, nullptr, fake_factory(other));
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().find("this node's prefix '10.244.0.0/16' overlaps '10.244.128.0/17' of cluster 'b'"),
            std::string::npos)
      << made.error();
  EXPECT_FALSE(reconfigure_bgp_route_source(*source, clash, *state).ok()) << "a reload with the clash is refused too";
}

TEST_F(BgpRoutesTest, ApiNetworkAddedInstallsRoutesLearnedBeforeAndRemovedWithdrawsThem) {
  const std::size_t static_routes = state->route_count();
  fake->learn("10.245.9.0/24", {"198.18.0.12"});
  EXPECT_TRUE(routes().empty()) << "network 'green' does not exist yet";
  v1::ErrorCode code;
  NetworkConfig green;
  green.name = "green";
  green.subnet = "10.244.7.0/24";
  auto added = state->add_network(green, /*from_config=*/false, &code);
  ASSERT_TRUE(added.ok()) << added.error();
  const std::string vni = std::to_string(added->vni());
  // No io_context turn, no timer: the route is there when add_network returns.
  EXPECT_EQ(routes(), std::vector<std::string>{"green 10.245.9.0/24 via 198.18.0.12 bgp 198.18.0.2"});
  EXPECT_EQ(sink.upserted, std::vector<std::string>{"10.245.9.0/24@" + vni});
  EXPECT_EQ(state->route_count(), static_routes + 1);

  ASSERT_TRUE(state->remove_network("green", &code).ok());
  EXPECT_TRUE(routes().empty()) << "the source withdrew the route of the removed network";
  EXPECT_EQ(state->route_count(), static_routes);
}

TEST_F(BgpRoutesTest, NetworkAddedByAReloadInstallsTheRoutesToo) {
  fake->learn("10.245.9.0/24", {"198.18.0.12"});
  auto next = test_config(dir.path, "  - {name: green, subnet: 10.244.7.0/24}\n");
  next.bgp = parsed_bgp(kBgp);
  std::vector<std::string> notes;
  ASSERT_TRUE(state->reconfigure(next, &notes).ok());
  EXPECT_EQ(routes(), std::vector<std::string>{"green 10.245.9.0/24 via 198.18.0.12 bgp 198.18.0.2"});
  ASSERT_TRUE(reconfigure_bgp_route_source(*source, next, *state).ok());
  EXPECT_EQ(fake->reconfigures, 1);
  EXPECT_EQ(routes().size(), 1u) << "the same peers: nothing moves";
}

// Many nodes per cluster: a node advertises its blocks, not the cluster's CIDRs (the other
// nodes own the rest of the subnet), and a network added with a block adds it at once.
TEST_F(BgpRoutesTest, AdvertisesTheNodesBlocksAndFollowsNetworkChanges) {
  auto prefixes = [this] {
    std::vector<std::string> out;
    for (const auto& p : fake->options().advertise) out.push_back(p.str());
    return out;
  };
  EXPECT_EQ(prefixes(), std::vector<std::string>{"10.244.0.0/16"}) << "red and blue have no block: the cluster";
  v1::ErrorCode code;
  NetworkConfig green;
  green.name = "green";
  green.subnet = "10.246.0.0/16";
  green.block = "10.246.3.0/24";
  ASSERT_TRUE(state->add_network(green, /*from_config=*/false, &code).ok());
  EXPECT_EQ(prefixes(), (std::vector<std::string>{"10.244.0.0/16", "10.246.3.0/24"}));
  EXPECT_EQ(fake->readvertises, 1) << "FRR's config re-applied once, from add_network";
  EXPECT_EQ(source->advertised().size(), 2u);

  NetworkConfig other = green;  // a second network without a block adds nothing new
  other.name = "other";
  other.subnet = "10.244.9.0/24";
  other.block.clear();
  ASSERT_TRUE(state->add_network(other, false, &code).ok());
  EXPECT_EQ(fake->readvertises, 1);

  ASSERT_TRUE(state->remove_network("green", &code).ok());
  EXPECT_EQ(prefixes(), std::vector<std::string>{"10.244.0.0/16"});
  EXPECT_EQ(fake->readvertises, 2);
  EXPECT_EQ(fake->reconfigures, 0);
}

TEST(AdvertisedPrefixes, OnlyBlocksWhenEveryNetworkHasOne) {
  TempDir dir;
  Config config = test_config(dir.path);
  config.networks[0].block = "10.244.1.0/26";
  config.networks[1].block = "10.244.2.64/26";
  NodeState::Options o;
  o.state_dir = dir.path;
  auto s = NodeState::open(config, o, nullptr);
  ASSERT_TRUE(s.ok()) << s.error();
  std::vector<std::string> out;
  for (const auto& p : advertised_prefixes(config, **s)) out.push_back(p.str());
  EXPECT_EQ(out, (std::vector<std::string>{"10.244.1.0/26", "10.244.2.64/26"})) << "not the cluster's 10.244.0.0/16";
  TempDir other;
  config.daemon.state_dir = o.state_dir = other.path;
  config.cluster.pod_cidrs.clear();
  config.networks[1].block.clear();
  auto t = NodeState::open(config, o, nullptr);
  ASSERT_TRUE(t.ok()) << t.error();
  out.clear();
  for (const auto& p : advertised_prefixes(config, **t)) out.push_back(p.str());
  EXPECT_EQ(out, (std::vector<std::string>{"10.244.1.0/26", "10.244.2.0/24"})) << "no pod_cidrs: blue's subnet";

  TempDir empty;
  Config lone = test_config(empty.path);
  lone.networks.clear();
  o.state_dir = empty.path;
  auto u = NodeState::open(lone, o, nullptr);
  ASSERT_TRUE(u.ok()) << u.error();
  ASSERT_EQ(advertised_prefixes(lone, **u).size(), 1u);
  EXPECT_EQ(advertised_prefixes(lone, **u)[0].str(), "10.244.0.0/16") << "a lone node without networks: its cluster";
  lone.federation.enabled = true;
  EXPECT_TRUE(advertised_prefixes(lone, **u).empty()) << "federated: only blocks from the store";
}

// Whether the forwarder takes VXLAN-GBP, from its version (docs/bgp.md, "The GBP mark"): the
// previous release (0.1.0) does not; this one (0.2.0) and later do; unknown means no.
TEST(DataplaneGbp, FromTheForwardersVersion) {
  EXPECT_FALSE(dataplane_takes_gbp("0.1.0"));
  EXPECT_FALSE(dataplane_takes_gbp(""));
  EXPECT_FALSE(dataplane_takes_gbp("dev"));
  EXPECT_FALSE(dataplane_takes_gbp("0"));
  EXPECT_TRUE(dataplane_takes_gbp("0.2.0"));
  EXPECT_TRUE(dataplane_takes_gbp("0.2.0-rc1"));
  EXPECT_TRUE(dataplane_takes_gbp("0.10.1"));
  EXPECT_TRUE(dataplane_takes_gbp("1.0.0"));
}

}  // namespace
