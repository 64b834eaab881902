// Unit tests of merging exports (services/federate.hpp) and of VIP allocation
// (services/vip_pool.hpp): one service per namespace/name across clusters, the oldest export
// winning a disagreement with a Conflict condition on the others, backends only from exports
// in force; VIPs stable, idempotent, held down after release, reused only after every fresh
// address, pinned VIPs honoured or refused.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "services/federate.hpp"
#include "services/vip_pool.hpp"

namespace {

using namespace vxfed::services;
using vxfed::net::Ipv4Addr;
using vxfed::net::Ipv4Prefix;

Ipv4Addr ip(const char* text) { return *Ipv4Addr::parse(text); }

// One cluster's apply: Service default/web with `ports`, its export created at `created_s`,
// and one slice with `addresses` (all ready unless listed in `not_ready`).
Objects apply(const std::string& cluster, std::int64_t created_s, std::vector<ServicePort> ports,
              std::vector<const char*> addresses, StrategySpec strategy = {}, std::set<std::string> not_ready = {}) {
  Objects o;
  Service s;
  s.cluster = cluster;
  s.key = {"default", "web"};
  s.ports = ports;
  s.strategy = strategy;
  o.services.push_back(s);
  EndpointSlice e;
  e.cluster = cluster;
  e.namespace_name = "default";
  e.name = "web-" + cluster;
  e.service_name = "web";
  for (const ServicePort& p : ports) e.ports.push_back({p.name, p.protocol, p.target_port});
  for (const char* a : addresses) e.endpoints.push_back({{ip(a)}, !not_ready.contains(a)});
  o.slices.push_back(e);
  o.exports.push_back({cluster, {"default", "web"}, created_s, "t" + std::to_string(created_s), ""});
  return o;
}

const std::vector<ServicePort> kHttp = {{"http", Protocol::Tcp, 80, 8080}};

TEST(ServicesFederate, SameNamespaceNameIsOneServiceWithOneBackendSet) {
  auto set = federate({apply("cluster-b", 200, kHttp, {"10.245.0.7", "10.245.0.3"}),
                       apply("cluster-a", 100, kHttp, {"10.244.0.5"}, {}, {"10.244.0.5"})});
  ASSERT_TRUE(set.ok()) << set.error();
  ASSERT_EQ(set->services.size(), 1u);
  const FederatedService& fs = set->services.at({"default", "web"});
  EXPECT_EQ(fs.ports, kHttp);
  EXPECT_EQ(fs.clusters, (std::vector<std::string>{"cluster-a", "cluster-b"})) << "oldest export first";
  ASSERT_EQ(fs.backends.size(), 3u);
  EXPECT_EQ(fs.backends[0], (Backend{"cluster-a", ip("10.244.0.5"), false})) << "not ready is kept, as not ready";
  EXPECT_EQ(fs.backends[1], (Backend{"cluster-b", ip("10.245.0.3"), true}));
  EXPECT_EQ(fs.backends[2], (Backend{"cluster-b", ip("10.245.0.7"), true}));
  ASSERT_EQ(set->conditions.size(), 2u);
  for (const auto& c : set->conditions) {
    EXPECT_FALSE(c.conflict) << c.cluster << ": " << c.message;
    EXPECT_EQ(c.reason, "NoConflicts") << "the MCS API's reason";
  }
}

TEST(ServicesFederate, OldestExportWinsAndTheOtherGetsAConflict) {
  const std::vector<ServicePort> other_ports = {{"http", Protocol::Tcp, 80, 9090}};
  // The newer export (cluster-a) disagrees on ports: cluster-b's Service is in force.
  auto set = federate({apply("cluster-a", 300, other_ports, {"10.244.0.5"}), apply("cluster-b", 100, kHttp, {"10.245.0.3"})});
  ASSERT_TRUE(set.ok()) << set.error();
  const FederatedService& fs = set->services.at({"default", "web"});
  EXPECT_EQ(fs.ports, kHttp);
  EXPECT_EQ(fs.clusters, (std::vector<std::string>{"cluster-b"}));
  ASSERT_EQ(fs.backends.size(), 1u) << "the conflicting export's backends are left out";
  EXPECT_EQ(fs.backends[0].cluster, "cluster-b");
  ASSERT_EQ(set->conditions.size(), 2u);
  const ExportCondition& a = set->conditions[0];
  EXPECT_EQ(a.cluster, "cluster-a");
  EXPECT_TRUE(a.conflict);
  EXPECT_EQ(a.reason, "PortConflict");
  EXPECT_EQ(a.message, "ports http:80/TCP->9090 differ from http:80/TCP->8080 than the oldest export, cluster "
                       "cluster-b's (created t100), which is in force; this cluster's backends are left out until "
                       "its Service agrees");
  EXPECT_FALSE(set->conditions[1].conflict);

  // Ages swapped: cluster-a is now the oldest and wins.
  auto swapped = federate({apply("cluster-a", 50, other_ports, {"10.244.0.5"}), apply("cluster-b", 100, kHttp, {"10.245.0.3"})});
  ASSERT_TRUE(swapped.ok());
  EXPECT_EQ(swapped->services.at({"default", "web"}).ports, other_ports);
  EXPECT_TRUE(swapped->conditions[1].conflict);
  EXPECT_EQ(swapped->conditions[1].cluster, "cluster-b");
}

TEST(ServicesFederate, StrategyDisagreementIsAConflictAndPortOrderIsNot) {
  StrategySpec local{Strategy::LocalFirst, {}, {}};
  const std::vector<ServicePort> two = {{"http", Protocol::Tcp, 80, 8080}, {"dns", Protocol::Udp, 53, 5353}};
  const std::vector<ServicePort> two_reversed = {two[1], two[0]};
  auto set = federate({apply("cluster-a", 100, two, {"10.244.0.5"}), apply("cluster-b", 200, two_reversed, {"10.245.0.3"}, local)});
  ASSERT_TRUE(set.ok());
  const ExportCondition& b = set->conditions[1];
  EXPECT_TRUE(b.conflict);
  EXPECT_EQ(b.reason, "StrategyConflict") << b.message;
  EXPECT_EQ(b.message.rfind("strategy LocalFirst differs from WeightedRoundRobin", 0), 0u) << b.message;

  auto same = federate({apply("cluster-a", 100, two, {"10.244.0.5"}), apply("cluster-b", 200, two_reversed, {"10.245.0.3"})});
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->conditions[1].conflict) << "ports are a set: " << same->conditions[1].message;
  EXPECT_EQ(same->services.at({"default", "web"}).backends.size(), 2u);
}

TEST(ServicesFederate, EqualAgesAreBrokenByClusterNameAndDoubleExportsRefused) {
  const std::vector<ServicePort> other_ports = {{"http", Protocol::Tcp, 81, 8080}};
  auto set = federate({apply("cluster-b", 100, other_ports, {"10.245.0.3"}), apply("cluster-a", 100, kHttp, {"10.244.0.5"})});
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->services.at({"default", "web"}).ports, kHttp) << "cluster-a sorts first on a tie";
  auto twice = federate({apply("cluster-a", 100, kHttp, {"10.244.0.5"}), apply("cluster-a", 200, kHttp, {"10.244.0.6"})});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error(), "ServiceExport default/web: cluster cluster-a exports it twice");
}

TEST(ServicesFederate, AnAddressInTwoSlicesIsOneBackendReadyIfEitherIs) {
  Objects a = apply("cluster-a", 100, kHttp, {"10.244.0.5", "10.244.0.6"}, {}, {"10.244.0.5"});
  EndpointSlice moved = a.slices[0];
  moved.name = "web-cluster-a-2";
  moved.endpoints = {{{ip("10.244.0.5")}, true}};
  a.slices.push_back(moved);
  auto set = federate({a});
  ASSERT_TRUE(set.ok());
  const auto& backends = set->services.at({"default", "web"}).backends;
  ASSERT_EQ(backends.size(), 2u);
  EXPECT_EQ(backends[0], (Backend{"cluster-a", ip("10.244.0.5"), true}));
}

TEST(ServicesVip, StableIdempotentAndOnePerService) {
  auto pool = VipPool::create(*Ipv4Prefix::parse("10.100.0.0/29"));
  ASSERT_TRUE(pool.ok()) << pool.error();
  EXPECT_EQ(pool->capacity(), 6u) << "network and broadcast addresses are not handed out";
  auto web = pool->allocate({"default", "web"}, std::nullopt, 0);
  ASSERT_TRUE(web.ok());
  EXPECT_EQ(web->vip, ip("10.100.0.1"));
  EXPECT_EQ(pool->allocate({"default", "web"}, std::nullopt, 10)->vip, web->vip) << "asking again gives the same VIP";
  auto db = pool->allocate({"prod", "web"}, std::nullopt, 20);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(db->vip, ip("10.100.0.2")) << "same name, other namespace: another service";
  auto pinned = pool->allocate({"prod", "db"}, ip("10.100.0.6"), 30);
  ASSERT_TRUE(pinned.ok()) << pinned.error();
  EXPECT_EQ(pinned->vip, ip("10.100.0.6"));
  auto taken = pool->allocate({"prod", "cache"}, ip("10.100.0.6"), 30);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error(), "VIP 10.100.0.6 for prod/cache is in use by prod/db");
  auto outside = pool->allocate({"prod", "cache"}, ip("10.100.0.7"), 30);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error(), "VIP 10.100.0.7 for prod/cache is outside the service range 10.100.0.0/29");
  auto other = pool->allocate({"default", "web"}, ip("10.100.0.5"), 30);
  ASSERT_FALSE(other.ok()) << "a service keeps its VIP until it is released";
}

TEST(ServicesVip, ReleasedVipsAreHeldDownAndReusedLast) {
  auto pool = VipPool::create(*Ipv4Prefix::parse("10.100.0.0/30"), 1000);  // two usable addresses
  ASSERT_TRUE(pool.ok());
  const ServiceKey a{"ns", "a"}, b{"ns", "b"}, c{"ns", "c"};
  const Ipv4Addr va = pool->allocate(a, std::nullopt, 0)->vip;
  const Ipv4Addr vb = pool->allocate(b, std::nullopt, 0)->vip;
  EXPECT_NE(va, vb);
  auto full = pool->allocate(c, std::nullopt, 0);
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error(), "service range 10.100.0.0/30 is exhausted (2 VIPs allocated or held down): no VIP for ns/c");

  auto released = pool->release(a, 100);
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(released->state, VipState::held);
  EXPECT_EQ(released->held_until_ms, 1100u);
  EXPECT_FALSE(pool->allocate(c, std::nullopt, 500).ok()) << "held down: not handed to another service";
  EXPECT_TRUE(pool->expire(1099).empty());
  EXPECT_EQ(pool->allocate(a, std::nullopt, 600)->vip, va) << "the service gets its held VIP back";
  ASSERT_TRUE(pool->release(a, 700).ok());
  EXPECT_EQ(pool->expire(1700), std::vector<Ipv4Addr>{va});
  EXPECT_EQ(pool->allocate(c, std::nullopt, 1800)->vip, va) << "free again after its hold-down";
  EXPECT_FALSE(pool->release(a, 1900).ok()) << "a has no VIP any more";

  // Next fit: a freed address comes back only after every address never used.
  auto big = VipPool::create(*Ipv4Prefix::parse("10.100.1.0/24"), 0);
  const Ipv4Addr first = big->allocate({"ns", "x"}, std::nullopt, 0)->vip;
  ASSERT_TRUE(big->release({"ns", "x"}, 0).ok());
  big->expire(0);
  EXPECT_NE(big->allocate({"ns", "y"}, std::nullopt, 0)->vip, first);
}

TEST(ServicesVip, RestoreRefusesInconsistentRecordsAndAllocatorAssignsVips) {
  auto pool = VipPool::create(*Ipv4Prefix::parse("10.100.0.0/24"));
  const VipRecord r1{ip("10.100.0.1"), {"ns", "a"}, VipState::allocated, 0};
  EXPECT_TRUE(pool->restore({r1, {ip("10.100.0.2"), {"ns", "b"}, VipState::held, 99}}).ok());
  EXPECT_EQ(pool->allocate({"ns", "b"}, std::nullopt, 0)->vip, ip("10.100.0.2"));
  EXPECT_FALSE(pool->restore({r1, {ip("10.100.0.1"), {"ns", "b"}, VipState::allocated, 0}}).ok()) << "one VIP twice";
  EXPECT_FALSE(pool->restore({r1, {ip("10.100.0.3"), {"ns", "a"}, VipState::allocated, 0}}).ok()) << "two live VIPs";
  EXPECT_FALSE(pool->restore({{ip("10.101.0.3"), {"ns", "c"}, VipState::allocated, 0}}).ok()) << "outside the range";

  // assign_vips through the interface: pinned honoured, the rest allocated, stable on a rerun.
  InMemoryVipAllocator allocator(*VipPool::create(*Ipv4Prefix::parse("10.100.0.0/24")));
  Objects a = apply("cluster-a", 100, kHttp, {"10.244.0.5"});
  a.services[0].pinned_vip = ip("10.100.0.77");
  auto set = federate({a});
  ASSERT_TRUE(assign_vips(*set, allocator, 0).ok());
  EXPECT_EQ(set->services.at({"default", "web"}).vip, ip("10.100.0.77"));
  ASSERT_TRUE(assign_vips(*set, allocator, 1).ok());
  EXPECT_EQ(set->services.at({"default", "web"}).vip, ip("10.100.0.77"));
  EXPECT_EQ(allocator.find({"default", "web"})->vip, ip("10.100.0.77"));
}

}  // namespace
