// ARP resolution on the control thread (dataplane/runtime/arp_resolver.cpp) with a recording
// sender: on-link VTEPs are ARPed for themselves, VTEPs behind a router get the router's MAC
// (also after it changes), routers are resolved before any tables, retries back off.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "dataplane/runtime/arp_resolver.hpp"

namespace vxfed::dataplane {
namespace {

using namespace std::chrono_literals;

std::uint32_t be(const char* text) { return net::Ipv4Addr::parse(text)->to_network(); }

struct Bed {
  NeighborCache cache{64};
  std::vector<std::uint32_t> sent;
  std::unique_ptr<ArpResolver> arp;
  ArpResolver::Clock::time_point t0 = ArpResolver::Clock::now();

  explicit Bed(const std::string& subnet, const std::string& gateway, std::vector<std::string> routes = {}) {
    auto u = Underlay::parse(subnet, gateway, routes);
    EXPECT_TRUE(u.ok()) << u.error();
    auto r = ArpResolver::create(cache, *u, [this](std::uint32_t ip) {
      sent.push_back(ip);
      return true;
    });
    EXPECT_TRUE(r.ok()) << r.error();
    arp = std::move(*r);
  }
  // What the forwarding tables do for their VTEPs.
  void table_vteps(const std::vector<std::uint32_t>& ips) {
    for (auto ip : ips) ASSERT_TRUE(cache.slot_for(ip).ok());
    arp->watch(ips);
  }
  std::size_t sent_to(std::uint32_t ip) const { return static_cast<std::size_t>(std::count(sent.begin(), sent.end(), ip)); }
};

const wire::MacAddress kMacA{0x02, 0, 0, 0, 0, 0xa};
const wire::MacAddress kMacB{0x02, 0, 0, 0, 0, 0xb};
const wire::MacAddress kMacV{0x02, 0, 0, 0, 0, 0x2};

TEST(ArpResolver, FlatUnderlayArpsForTheVtep) {
  Bed b("", "");
  b.table_vteps({be("198.18.0.2")});
  b.arp->tick(b.t0);
  EXPECT_EQ(b.sent_to(be("198.18.0.2")), 1u);
  b.cache.learn(be("198.18.0.2"), kMacV);  // a worker saw the reply
  b.arp->tick(b.t0 + 1s);
  EXPECT_EQ(b.sent_to(be("198.18.0.2")), 1u);
  EXPECT_EQ(b.arp->pending(), 0u);
}

TEST(ArpResolver, RoutedVtepsTakeTheRoutersMacAndFollowItsChanges) {
  Bed b("198.18.0.0/24", "198.18.0.254");
  const std::uint32_t gw = be("198.18.0.254"), local = be("198.18.0.2"), remote = be("198.18.1.2");
  // The router is resolved from the start, before any tables.
  b.arp->tick(b.t0);
  EXPECT_EQ(b.sent_to(gw), 1u);
  b.table_vteps({local, remote});
  b.arp->tick(b.t0 + 1ms);
  EXPECT_EQ(b.sent_to(local), 1u);
  EXPECT_EQ(b.sent_to(remote), 0u);  // never ARPed: it is not on our link
  EXPECT_FALSE(b.cache.lookup(remote));

  // The workers learn the router's reply (NeighborCache::router_slot).
  const std::uint32_t* slot = b.cache.router_slot(gw);
  ASSERT_NE(slot, nullptr);
  b.cache.learn_slot(*slot, kMacA);
  b.arp->tick(b.t0 + 2ms);
  ASSERT_TRUE(b.cache.lookup(remote));
  EXPECT_EQ(*b.cache.lookup(remote), kMacA);

  // A failover: the router's address moves to another MAC (a gratuitous ARP).
  b.cache.learn_slot(*slot, kMacB);
  b.arp->tick(b.t0 + 3ms);
  EXPECT_EQ(*b.cache.lookup(remote), kMacB);
  EXPECT_EQ(b.sent_to(gw), 1u);
  EXPECT_EQ(b.sent_to(remote), 0u);
}

TEST(ArpResolver, PerVtepOverride) {
  Bed b("198.18.0.0/24", "198.18.0.254", {"198.18.5.5=direct", "198.18.0.9=198.18.0.253"});
  b.table_vteps({be("198.18.5.5"), be("198.18.0.9")});
  b.arp->tick(b.t0);
  EXPECT_EQ(b.sent_to(be("198.18.5.5")), 1u);    // off the subnet, but declared on-link
  EXPECT_EQ(b.sent_to(be("198.18.0.9")), 0u);    // on the subnet, but behind .253
  EXPECT_EQ(b.sent_to(be("198.18.0.253")), 1u);
  b.cache.learn_slot(*b.cache.router_slot(be("198.18.0.253")), kMacB);
  b.arp->tick(b.t0 + 1ms);
  EXPECT_EQ(*b.cache.lookup(be("198.18.0.9")), kMacB);
}

TEST(ArpResolver, WantedVtepsAndBackoff) {
  Bed b("", "");
  const std::uint32_t v = be("198.18.0.3");
  auto slot = b.cache.slot_for(v);
  ASSERT_TRUE(slot.ok());
  b.cache.want(*slot);  // a worker met it unresolved
  b.arp->tick(b.t0);
  EXPECT_EQ(b.sent_to(v), 1u);
  b.arp->tick(b.t0 + 50ms);
  EXPECT_EQ(b.sent_to(v), 1u);  // not yet due
  b.arp->tick(b.t0 + 100ms);
  EXPECT_EQ(b.sent_to(v), 2u);  // 100 ms later
  b.arp->tick(b.t0 + 250ms);
  EXPECT_EQ(b.sent_to(v), 2u);  // the next is 200 ms after that
  b.arp->tick(b.t0 + 300ms);
  EXPECT_EQ(b.sent_to(v), 3u);
}

TEST(ArpResolver, AtMostSixteenRouters) {
  NeighborCache cache(64);
  std::vector<std::uint32_t> many;
  for (int i = 1; i <= 17; ++i) many.push_back(be(("198.18.0." + std::to_string(i)).c_str()));
  auto st = cache.set_routers(many);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("at most 16 underlay routers"), std::string::npos);
}

}  // namespace
}  // namespace vxfed::dataplane
