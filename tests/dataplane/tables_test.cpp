// Unit tests of ForwardingTables::create: every invalid entry is refused with an error that
// names the entry and the field; lookups (LPM across VNIs, default routes, ECMP groups,
// allow set) give what the tables say; 130,000 routes build and look up correctly.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "dataplane/core/tables.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

using Tables = dataplane::v1::Tables;

std::uint32_t be(const char* text) { return htonl(ip(text)); }

TEST(Tables, SampleBuilds) {
  VXFED_REQUIRE_EAL();
  Node node;
  auto t = node.build(sample_tables());
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ((*t)->route_count(), 4u);
  EXPECT_EQ((*t)->endpoint_count(), 3u);
  EXPECT_EQ((*t)->vtep_count(), 6u);  // .2 .3 .4 .6 .5 from routes, .9 explicit
  EXPECT_EQ((*t)->pod_port_ids(), (std::vector<std::uint16_t>{1, 2, 3}));
  const auto* a = (*t)->network_by_vni(kVniA);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->mtu, 8950);
  EXPECT_EQ(a->gateway_mac, (Mac{0x02, 0x76, 0x78, 0x00, 0x03, 0xe9})) << "derived: 02:76:78 + VNI 1001";
  EXPECT_EQ((*t)->network_by_vni(4242), nullptr);
  // Allow set: route next hops for their VNI, explicit entries, nothing else.
  const auto ia = (*t)->network_index(*a);
  const auto ib = (*t)->network_index(*(*t)->network_by_vni(kVniB));
  EXPECT_TRUE((*t)->vtep_allowed(*(*t)->vtep_index(be("198.18.0.2")), ia));
  EXPECT_FALSE((*t)->vtep_allowed(*(*t)->vtep_index(be("198.18.0.2")), ib));
  EXPECT_TRUE((*t)->vtep_allowed(*(*t)->vtep_index(be("198.18.0.9")), ia));
  EXPECT_TRUE((*t)->vtep_allowed(*(*t)->vtep_index(be("198.18.0.5")), ib));
  EXPECT_FALSE((*t)->vtep_allowed(*(*t)->vtep_index(be("198.18.0.5")), ia));
  EXPECT_FALSE((*t)->vtep_index(be("198.18.0.77")).has_value());
  // Static neighbours are in the cache; .6 is not.
  EXPECT_EQ(*node.neighbors.lookup(be("198.18.0.3")), neighbor_mac(3));
  EXPECT_FALSE(node.neighbors.lookup(be("198.18.0.6")).has_value());
}

TEST(Tables, LongestPrefixPerVniWithDefaultRoutes) {
  VXFED_REQUIRE_EAL();
  Tables t;
  for (std::uint32_t vni : {10u, 20u, 30u}) {
    auto* n = t.add_networks();
    n->set_vni(vni);
    n->set_gateway_ip("10.244.0.1");
  }
  auto route = [&](std::uint32_t vni, const char* prefix, const char* vtep) {
    auto* r = t.add_routes();
    r->set_vni(vni);
    r->set_prefix(prefix);
    r->add_next_hops()->set_vtep(vtep);
  };
  route(10, "0.0.0.0/0", "198.18.1.1");
  route(10, "10.1.2.3/32", "198.18.1.3");
  route(20, "10.0.0.0/8", "198.18.2.1");
  route(20, "10.1.2.0/25", "198.18.2.2");
  route(30, "10.1.0.0/16", "198.18.3.1");
  Node node;
  auto built = node.build(t);
  ASSERT_TRUE(built.ok()) << built.error();
  const auto& tb = **built;
  auto via = [&](std::uint32_t vni, const char* dst) -> std::string {
    const auto* n = tb.network_by_vni(vni);
    const auto* g = tb.route(tb.network_index(*n), be(dst));
    if (!g) return "none";
    char buf[16];
    const std::uint32_t h = ntohl(tb.vtep(tb.pick(*g, 0)).ip_be);
    std::snprintf(buf, sizeof(buf), "%u.%u", (h >> 8) & 0xff, h & 0xff);
    return buf;
  };
  EXPECT_EQ(via(10, "10.1.2.3"), "1.3");
  EXPECT_EQ(via(10, "10.1.2.4"), "1.1") << "longer prefixes of other VNIs must not hide the default route";
  EXPECT_EQ(via(10, "192.0.2.1"), "1.1");
  EXPECT_EQ(via(20, "10.1.2.3"), "2.2");
  EXPECT_EQ(via(20, "10.1.2.200"), "2.1");
  EXPECT_EQ(via(20, "10.200.0.1"), "2.1");
  EXPECT_EQ(via(20, "11.0.0.1"), "none");
  EXPECT_EQ(via(30, "10.1.2.3"), "3.1");
  EXPECT_EQ(via(30, "10.2.0.1"), "none");
}

// resolve() (one LPM over routes and endpoints, PrefixInfo for one-network prefixes) must
// give exactly what endpoint() then route() give, also where VNIs share prefixes, an
// endpoint's /32 equals a route of its own or another VNI, and default routes cover all.
TEST(Tables, ResolveAgreesWithEndpointThenRoute) {
  VXFED_REQUIRE_EAL();
  Tables t;
  for (std::uint32_t vni : {10u, 20u, 30u}) {
    auto* n = t.add_networks();
    n->set_vni(vni);
    n->set_gateway_ip("10.244.0.1");
  }
  auto route = [&](std::uint32_t vni, const char* prefix, const char* vtep) {
    auto* r = t.add_routes();
    r->set_vni(vni);
    r->set_prefix(prefix);
    r->add_next_hops()->set_vtep(vtep);
  };
  int port = 10;
  auto endpoint = [&](std::uint32_t vni, const char* ip) {
    auto* e = t.add_endpoints();
    e->set_id("ep" + std::to_string(port));
    e->set_vni(vni);
    e->set_ip(ip);
    e->set_mac("02:aa:00:00:00:" + std::to_string(port));
    e->set_iface("port" + std::to_string(port++));
  };
  route(10, "0.0.0.0/0", "198.18.1.1");
  route(10, "10.1.2.3/32", "198.18.1.3");
  route(20, "10.0.0.0/8", "198.18.2.1");
  route(20, "10.1.2.0/25", "198.18.2.2");
  route(30, "10.1.0.0/16", "198.18.3.1");
  route(30, "10.1.2.0/25", "198.18.3.2");     // shared with VNI 20
  endpoint(10, "10.1.2.3");                   // same /32 as VNI 10's own route: endpoint wins
  endpoint(30, "10.1.2.3");                   // same /32 in another VNI
  endpoint(20, "10.1.2.5");                   // inside VNI 20's /25, alone at its /32
  endpoint(20, "10.9.9.9");                   // inside VNI 20's /8 and VNI 10's default
  endpoint(30, "172.16.0.1");                 // outside every route of VNI 30
  Node node;
  auto built = node.build(t);
  ASSERT_TRUE(built.ok()) << built.error();
  const auto& tb = **built;
  const char* dsts[] = {"10.1.2.3", "10.1.2.4", "10.1.2.5", "10.1.2.200", "10.1.3.1", "10.9.9.9",
                        "10.9.9.8", "172.16.0.1", "172.16.0.2", "192.0.2.1", "11.0.0.1", "0.0.0.1"};
  int endpoints = 0, groups = 0, none = 0;
  for (std::uint32_t vni : {10u, 20u, 30u}) {
    const auto net = tb.network_index(*tb.network_by_vni(vni));
    for (const char* dst : dsts) {
      const auto d = tb.resolve(net, be(dst));
      const auto ep = tb.endpoint(net, be(dst));
      ASSERT_EQ(d.endpoint != nullptr, ep.has_value()) << "vni " << vni << " dst " << dst;
      if (ep) {
        EXPECT_EQ(d.endpoint->port, ep->port) << "vni " << vni << " dst " << dst;
        EXPECT_EQ(d.endpoint->mac, ep->mac) << "vni " << vni << " dst " << dst;
      }
      EXPECT_EQ(d.group, ep ? nullptr : tb.route(net, be(dst))) << "vni " << vni << " dst " << dst;
      endpoints += d.endpoint != nullptr;
      groups += d.group != nullptr;
      none += !d.endpoint && !d.group;
    }
  }
  // The cases above really cover all three answers.
  EXPECT_EQ(endpoints, 5);
  EXPECT_GT(groups, 10);
  EXPECT_GT(none, 3);
  EXPECT_EQ(tb.resolve(tb.network_index(*tb.network_by_vni(30)), be("10.1.2.3")).endpoint->port, 11);
  EXPECT_EQ(tb.resolve(tb.network_index(*tb.network_by_vni(10)), be("10.1.2.3")).endpoint->port, 10);
}

TEST(Tables, HundredThirtyThousandRoutes) {
  VXFED_REQUIRE_EAL();
  Tables t;
  for (std::uint32_t vni : {1001u, 1002u}) {
    auto* n = t.add_networks();
    n->set_vni(vni);
    n->set_gateway_ip("10.244.0.1");
  }
  // 130,000 /24s spread over 2 VNIs, 1,000 VTEPs, pairs of next hops.
  for (std::uint32_t i = 0; i < 130000; ++i) {
    auto* r = t.add_routes();
    r->set_vni(i % 2 ? 1002 : 1001);
    const std::uint32_t net = (11u << 24) + (i << 8);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%u.%u.%u.0/24", net >> 24, (net >> 16) & 0xff, (net >> 8) & 0xff);
    r->set_prefix(buf);
    for (std::uint32_t k = 0; k < 2; ++k) {
      const std::uint32_t v = (i + k * 7) % 1000;
      std::snprintf(buf, sizeof(buf), "198.18.%u.%u", 10 + v / 250, 1 + v % 250);
      r->add_next_hops()->set_vtep(buf);
    }
  }
  Node node(4096);
  auto built = node.build(t);
  ASSERT_TRUE(built.ok()) << built.error();
  const auto& tb = **built;
  EXPECT_EQ(tb.route_count(), 130000u);
  EXPECT_EQ(tb.vtep_count(), 1000u);
  for (std::uint32_t i : {0u, 1u, 4711u, 129999u}) {
    const std::uint32_t dst = (11u << 24) + (i << 8) + 9;
    const auto* n = tb.network_by_vni(i % 2 ? 1002 : 1001);
    const auto* other = tb.network_by_vni(i % 2 ? 1001 : 1002);
    const auto* g = tb.route(tb.network_index(*n), htonl(dst));
    ASSERT_NE(g, nullptr) << i;
    EXPECT_EQ(g->count, 2u);
    EXPECT_EQ(tb.route(tb.network_index(*other), htonl(dst)), nullptr) << "route of the other VNI";
  }
}

// Each case: a change to the valid sample, and text the error must contain.
struct Invalid {
  const char* name;
  std::function<void(Tables&)> mutate;
  const char* expected;
};

class TablesInvalid : public ::testing::TestWithParam<Invalid> {};

TEST_P(TablesInvalid, RefusedWithEntryAndField) {
  VXFED_REQUIRE_EAL();
  Tables t = sample_tables();
  GetParam().mutate(t);
  Node node;
  auto built = node.build(t);
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.error().find(GetParam().expected), std::string::npos)
      << "error: " << built.error() << "\nexpected to contain: " << GetParam().expected;
}

const Invalid kInvalid[] = {
    {"vni_zero", [](Tables& t) { t.mutable_networks(0)->set_vni(0); }, "networks[0] (vni 0): vni must be 1..16777214"},
    {"vni_too_big", [](Tables& t) { t.mutable_networks(1)->set_vni(16777215); }, "networks[1] (vni 16777215): vni must be"},
    {"vni_twice", [](Tables& t) { *t.add_networks() = t.networks(0); }, "networks[2] (vni 1001): vni listed twice"},
    {"gateway_ip", [](Tables& t) { t.mutable_networks(0)->set_gateway_ip("10.244.0"); }, "networks[0] (vni 1001): gateway_ip \"10.244.0\""},
    {"gateway_mac_multicast", [](Tables& t) { t.mutable_networks(0)->set_gateway_mac("01:00:5e:00:00:01"); }, "gateway_mac \"01:00:5e:00:00:01\""},
    {"gateway_mac_text", [](Tables& t) { t.mutable_networks(0)->set_gateway_mac("02:00:00:00:00"); }, "gateway_mac \"02:00:00:00:00\""},
    {"mtu_over_tunnel", [](Tables& t) { t.mutable_networks(0)->set_mtu(8951); }, "networks[0] (vni 1001): mtu 8951 must be 68..8950"},
    {"endpoint_vni", [](Tables& t) { t.mutable_endpoints(0)->set_vni(77); }, "endpoints[0] (id \"pod1/net1\"): vni 77 is not a configured network"},
    {"endpoint_ip", [](Tables& t) { t.mutable_endpoints(1)->set_ip("10.244.1.300"); }, "endpoints[1] (id \"pod2/net1\"): ip \"10.244.1.300\""},
    {"endpoint_mac", [](Tables& t) { t.mutable_endpoints(0)->set_mac("zz:aa:00:00:00:10"); }, "endpoints[0] (id \"pod1/net1\"): mac \"zz:aa:00:00:00:10\""},
    {"endpoint_iface_unknown", [](Tables& t) { t.mutable_endpoints(0)->set_iface("nope"); }, "iface \"nope\" has no dataplane port"},
    {"endpoint_iface_empty", [](Tables& t) { t.mutable_endpoints(0)->set_iface(""); }, "endpoints[0] (id \"pod1/net1\"): iface is empty"},
    {"endpoint_on_uplink", [](Tables& t) { t.mutable_endpoints(0)->set_iface("port0"); }, "which is the uplink"},
    {"endpoint_id_twice", [](Tables& t) { t.mutable_endpoints(1)->set_id("pod1/net1"); }, "endpoints[1] (id \"pod1/net1\"): id already used by endpoints[0]"},
    {"endpoint_id_empty", [](Tables& t) { t.mutable_endpoints(1)->set_id(""); }, "endpoints[1] (id \"\"): id is empty"},
    {"endpoint_ip_twice", [](Tables& t) { t.mutable_endpoints(1)->set_ip("10.244.1.10"); }, "ip 10.244.1.10 already used by another endpoint in vni 1001"},
    {"endpoint_port_twice", [](Tables& t) { t.mutable_endpoints(1)->set_iface("pod1"); }, "(port 1) already carries endpoints[0]"},
    {"endpoint_is_gateway", [](Tables& t) { t.mutable_endpoints(0)->set_ip("10.244.0.1"); }, "is the gateway of vni 1001"},
    {"route_prefix_len", [](Tables& t) { t.mutable_routes(0)->set_prefix("10.245.0.0/33"); }, "routes[0] (vni 1001, prefix \"10.245.0.0/33\"): prefix: '10.245.0.0/33' has an invalid prefix length (expected 0..32)"},
    {"route_prefix_host_bits", [](Tables& t) { t.mutable_routes(0)->set_prefix("10.245.0.1/16"); }, "prefix: '10.245.0.1/16' has host bits set (did you mean 10.245.0.0/16?)"},
    {"route_prefix_no_len", [](Tables& t) { t.mutable_routes(2)->set_prefix("10.246.0.0"); }, "routes[2] (vni 1001, prefix \"10.246.0.0\"): prefix: '10.246.0.0' is not an IPv4 CIDR (expected a.b.c.d/len"},
    {"route_vni", [](Tables& t) { t.mutable_routes(3)->set_vni(5); }, "routes[3] (vni 5, prefix \"10.245.0.0/16\"): vni 5 is not a configured network"},
    {"route_no_next_hops", [](Tables& t) { t.mutable_routes(0)->clear_next_hops(); }, "routes[0] (vni 1001, prefix \"10.245.0.0/16\"): next_hops is empty"},
    {"route_next_hop_text", [](Tables& t) { t.mutable_routes(1)->mutable_next_hops(1)->set_vtep("300.1.1.1"); }, "routes[1] (vni 1001, prefix \"10.245.7.0/24\"): next_hops[1].vtep \"300.1.1.1\" is not a unicast IPv4 address"},
    {"route_next_hop_multicast", [](Tables& t) { t.mutable_routes(0)->mutable_next_hops(0)->set_vtep("239.1.1.1"); }, "next_hops[0].vtep \"239.1.1.1\" is not a unicast"},
    {"route_next_hop_self", [](Tables& t) { t.mutable_routes(0)->mutable_next_hops(0)->set_vtep("198.18.0.1"); }, "next_hops[0].vtep \"198.18.0.1\" is this node's own VTEP"},
    {"route_next_hop_twice", [](Tables& t) { t.mutable_routes(1)->mutable_next_hops(1)->set_vtep("198.18.0.3"); }, "next_hops[1].vtep \"198.18.0.3\" listed twice"},
    {"route_twice", [](Tables& t) { *t.add_routes() = t.routes(0); }, "routes[4] (vni 1001, prefix \"10.245.0.0/16\"): same vni and prefix as routes[0]"},
    {"vtep_vni", [](Tables& t) { t.mutable_vteps(0)->add_vnis(99); }, "vteps[0] (ip \"198.18.0.9\"): vnis[1]: vni 99 is not a configured network"},
    {"vtep_ip", [](Tables& t) { t.mutable_vteps(0)->set_ip("198.18.0.x"); }, "vteps[0] (ip \"198.18.0.x\"): ip \"198.18.0.x\" is not a unicast IPv4 address"},
    {"vtep_twice", [](Tables& t) { *t.add_vteps() = t.vteps(0); }, "vteps[1] (ip \"198.18.0.9\"): listed twice"},
    {"neighbor_mac", [](Tables& t) { t.mutable_neighbors(0)->set_mac("ff:ff:ff:ff:ff:ff"); }, "neighbors[0] (ip \"198.18.0.2\"): mac \"ff:ff:ff:ff:ff:ff\" is not a unicast MAC"},
    {"neighbor_ip", [](Tables& t) { t.mutable_neighbors(1)->set_ip(""); }, "neighbors[1] (ip \"\"): ip is not a unicast IPv4 address"},
    {"neighbor_twice", [](Tables& t) { *t.add_neighbors() = t.neighbors(0); }, "neighbors[5] (ip \"198.18.0.2\"): listed twice"},
    {"several_errors_reported", [](Tables& t) { t.mutable_networks(0)->set_mtu(1); t.mutable_routes(0)->clear_next_hops(); }, "mtu 1 must be 68..8950 (underlay MTU 9000 - 50), or 0 for the maximum; routes[0]"},
};

INSTANTIATE_TEST_SUITE_P(Entries, TablesInvalid, ::testing::ValuesIn(kInvalid),
                         [](const ::testing::TestParamInfo<Invalid>& i) { return std::string(i.param.name); });

TEST(Tables, BadContextRefused) {
  VXFED_REQUIRE_EAL();
  Node node;
  auto ctx = node.context();
  ctx.underlay_mtu = 100;
  auto t = dp::ForwardingTables::create(sample_tables(), ctx);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("underlay MTU 100 must be 576..65471"), std::string::npos) << t.error();
  ctx = node.context();
  ctx.neighbors = nullptr;
  EXPECT_FALSE(dp::ForwardingTables::create(sample_tables(), ctx).ok());
}

TEST(Tables, RefusedTablesLeaveStaticNeighboursAlone) {
  VXFED_REQUIRE_EAL();
  Node node;
  ASSERT_TRUE(node.build(sample_tables()).ok());
  Tables t = sample_tables();
  t.mutable_neighbors(0)->set_mac("02:00:00:00:99:99");
  t.mutable_routes(0)->clear_next_hops();
  ASSERT_FALSE(node.build(t).ok());
  EXPECT_EQ(*node.neighbors.lookup(be("198.18.0.2")), neighbor_mac(2));
  // Accepted tables without the static entry turn it back into an ARP-resolved one.
  t = sample_tables();
  t.mutable_neighbors()->erase(t.mutable_neighbors()->begin());
  ASSERT_TRUE(node.build(t).ok());
  EXPECT_FALSE(node.neighbors.lookup(be("198.18.0.2")).has_value());
}

TEST(Tables, EmptyTablesBuild) {
  VXFED_REQUIRE_EAL();
  Node node;
  auto t = node.build(Tables{});
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ((*t)->route_count(), 0u);
  EXPECT_EQ((*t)->pod_port(1), nullptr);
}

}  // namespace
}  // namespace vxfed::test
