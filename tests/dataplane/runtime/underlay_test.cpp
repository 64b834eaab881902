// The underlay's shape (dataplane/runtime/underlay.cpp): which address is ARPed to reach a
// VTEP, for the flat, the routed and the overridden cases, and the refusals a person sees.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dataplane/runtime/underlay.hpp"

namespace vxfed::dataplane {
namespace {

net::Ipv4Addr ip(const char* text) { return *net::Ipv4Addr::parse(text); }

Underlay make(const std::string& subnet, const std::string& gateway, const std::vector<std::string>& routes = {}) {
  auto u = Underlay::parse(subnet, gateway, routes);
  EXPECT_TRUE(u.ok()) << u.error();
  return u.ok() ? *u : Underlay{};
}

std::string refusal(const std::string& subnet, const std::string& gateway, const std::vector<std::string>& routes = {}) {
  auto u = Underlay::parse(subnet, gateway, routes);
  return u.ok() ? std::string("(accepted)") : u.error();
}

TEST(Underlay, FlatByDefault) {
  const Underlay u = make("", "");
  EXPECT_FALSE(u.routed());
  EXPECT_EQ(u.next_hop(ip("198.18.0.2")), ip("198.18.0.2"));
  EXPECT_EQ(u.next_hop(ip("10.9.9.9")), ip("10.9.9.9"));
  EXPECT_TRUE(u.routers().empty());
}

TEST(Underlay, GatewayForVtepsOffTheSubnet) {
  const Underlay u = make("198.18.0.0/24", "198.18.0.254");
  EXPECT_TRUE(u.routed());
  EXPECT_EQ(u.next_hop(ip("198.18.0.7")), ip("198.18.0.7"));      // on-link
  EXPECT_EQ(u.next_hop(ip("198.18.1.7")), ip("198.18.0.254"));    // behind the router
  EXPECT_EQ(u.next_hop(ip("198.18.0.254")), ip("198.18.0.254"));  // the router itself
  ASSERT_EQ(u.routers().size(), 1u);
  EXPECT_EQ(u.routers()[0], ip("198.18.0.254"));
}

TEST(Underlay, GatewayWithoutSubnetRoutesEveryVtep) {
  const Underlay u = make("", "198.18.0.254");
  EXPECT_EQ(u.next_hop(ip("198.18.0.7")), ip("198.18.0.254"));
  EXPECT_EQ(u.next_hop(ip("198.18.0.254")), ip("198.18.0.254"));
}

TEST(Underlay, PerVtepAndPerPrefixOverridesLongestFirst) {
  const Underlay u = make("198.18.0.0/24", "198.18.0.254",
                          {"198.18.2.0/24=198.18.0.253", "198.18.2.9=direct", "198.18.0.50=198.18.0.253"});
  EXPECT_EQ(u.next_hop(ip("198.18.2.8")), ip("198.18.0.253"));   // the /24 override
  EXPECT_EQ(u.next_hop(ip("198.18.2.9")), ip("198.18.2.9"));     // the /32 wins: on-link
  EXPECT_EQ(u.next_hop(ip("198.18.0.50")), ip("198.18.0.253"));  // an on-link address sent to a router
  EXPECT_EQ(u.next_hop(ip("198.18.3.1")), ip("198.18.0.254"));   // the default gateway
  EXPECT_EQ(u.routers().size(), 2u);
  ASSERT_EQ(u.routes().size(), 3u);
  EXPECT_EQ(u.routes()[2].prefix.len, 24);  // longest first
}

TEST(Underlay, Refusals) {
  EXPECT_EQ(refusal("198.18.0.1/24", ""),
            "--underlay-subnet: '198.18.0.1/24' has host bits set (did you mean 198.18.0.0/24?)");
  EXPECT_NE(refusal("", "198.18.0.256").find("--underlay-gateway: "), std::string::npos);
  EXPECT_EQ(refusal("198.18.0.0/24", "198.18.1.1"),
            "--underlay-gateway: next hop 198.18.1.1 is not on-link: it is outside --underlay-subnet 198.18.0.0/24");
  EXPECT_NE(refusal("", "", {"198.18.2.0/24"}).find("expected VTEP=NEXTHOP"), std::string::npos);
  EXPECT_NE(refusal("", "", {"198.18.2.0/24=router"}).find("or 'direct' for on-link"), std::string::npos);
  EXPECT_NE(refusal("", "", {"198.18.2.0/24=direct", "198.18.2.0/24=198.18.0.1"}).find("is given twice"),
            std::string::npos);
  // A router that the rules themselves route elsewhere would never be ARPed for.
  EXPECT_NE(refusal("", "", {"198.18.0.0/16=198.18.0.1", "198.18.0.1=198.18.9.9"}).find("is itself routed"),
            std::string::npos);
  EXPECT_EQ(refusal("", "198.18.0.254", {"198.18.0.254=direct"}), "(accepted)");
}

}  // namespace
}  // namespace vxfed::dataplane
