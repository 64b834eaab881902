// control/services/service_programmer.hpp: federated services + what this node reaches + its
// cluster -> the dataplane's Service entries (docs/services.md, "Serving a VIP").
#include "control/services/service_programmer.hpp"

#include <gtest/gtest.h>

#include <set>

#include "dataplane/core/service_entry.hpp"

namespace vxfed::control {
namespace {

namespace svc = ::vxfed::services;

net::Ipv4Addr ip(const char* text) { return *net::Ipv4Addr::parse(text); }
net::Ipv4Prefix prefix(const char* text) { return *net::Ipv4Prefix::parse(text); }

constexpr std::uint32_t kVni = 4097;

svc::FederatedService service(const char* name, svc::Strategy strategy, std::vector<svc::Backend> backends,
                              const char* vip = "10.96.0.1") {
  svc::FederatedService s;
  s.key = {"default", name};
  s.ports = {svc::ServicePort{"http", svc::Protocol::Tcp, 80, 8080}, svc::ServicePort{"dns", svc::Protocol::Udp, 53, 0}};
  s.strategy.strategy = strategy;
  if (vip) s.vip = ip(vip);
  s.clusters = {"cluster-a", "cluster-b"};
  s.backends = std::move(backends);
  return s;
}

// Backends of cluster-a in 10.244.1.0/24 (node a1) and 10.244.2.0/24 (node a2), cluster-b's
// in 10.245.1.0/24: sorted by cluster, then address, as federate() gives them.
std::vector<svc::Backend> two_clusters() {
  return {{"cluster-a", ip("10.244.1.5"), true}, {"cluster-a", ip("10.244.2.5"), true},
          {"cluster-b", ip("10.245.1.5"), true}, {"cluster-b", ip("10.245.1.6"), true}};
}

// This node's view: the blocks it has a route for (or serves itself).
struct Reach {
  std::set<net::Ipv4Prefix> blocks{prefix("10.244.1.0/24"), prefix("10.244.2.0/24"), prefix("10.245.1.0/24")};
  ServiceNode node(const std::string& cluster = "cluster-a", std::optional<std::uint32_t> vni = kVni) const {
    ServiceNode n;
    n.cluster = cluster;
    n.vni = vni;
    n.reaches = [this](std::uint32_t v, net::Ipv4Addr a) {
      if (v != kVni) return false;
      for (const auto& b : blocks)
        if (b.contains(a)) return true;
      return false;
    };
    return n;
  }
};

// The entry's backends that take new flows (weight above 0).
std::vector<std::string> backend_ips(const dp::Service& entry) {
  std::vector<std::string> out;
  for (const auto& b : entry.backends())
    if (b.weight() > 0) out.push_back(b.ip());
  return out;
}

// The entry's backends kept for the flows they have (weight 0).
std::vector<std::string> kept_ips(const dp::Service& entry) {
  std::vector<std::string> out;
  for (const auto& b : entry.backends())
    if (b.weight() == 0) out.push_back(b.ip());
  return out;
}

TEST(ServiceCompile, LocalFirstGivesTheLocalClusterWithPortsVipAndTable) {
  Reach reach;
  const auto view = compile_service(service("web", svc::Strategy::LocalFirst, two_clusters()), reach.node());
  ASSERT_TRUE(view.entry) << view.not_programmed;
  const auto& e = *view.entry;
  EXPECT_EQ(e.id(), "default/web");
  EXPECT_EQ(e.vni(), kVni);
  EXPECT_EQ(e.vip(), "10.96.0.1");
  // The forwarder's size for all 4 backends (not the 2 allowed now): pinned across failovers.
  EXPECT_EQ(e.table_size(), vxfed::dataplane::default_service_table_size(4));
  ASSERT_EQ(e.ports_size(), 2);
  EXPECT_EQ(e.ports(0).protocol(), 6u);
  EXPECT_EQ(e.ports(0).port(), 80u);
  EXPECT_EQ(e.ports(0).target_port(), 8080u);
  EXPECT_EQ(e.ports(1).protocol(), 17u);
  EXPECT_EQ(e.ports(1).target_port(), 53u);  // targetPort defaulted: the port itself, never 0 from us
  EXPECT_EQ(backend_ips(e), (std::vector<std::string>{"10.244.1.5", "10.244.2.5"}));
  EXPECT_EQ(kept_ips(e), (std::vector<std::string>{"10.245.1.5", "10.245.1.6"}));  // ready remote: weight 0
  ASSERT_EQ(view.backends.size(), 4u);
  EXPECT_TRUE(view.backends[0].allowed);
  EXPECT_FALSE(view.backends[2].allowed);  // cluster-b's: ready, but not allowed from cluster-a
  EXPECT_EQ(view.backends[2].state, BackendState::ready);
}

TEST(ServiceCompile, WithdrawnBlockTakesItsBackendOutAndLocalFirstFallsOver) {
  Reach reach;
  reach.blocks.erase(prefix("10.244.1.0/24"));  // node a1's block withdrawn (BGP/BFD)
  auto view = compile_service(service("web", svc::Strategy::LocalFirst, two_clusters()), reach.node());
  ASSERT_TRUE(view.entry);
  EXPECT_EQ(backend_ips(*view.entry), (std::vector<std::string>{"10.244.2.5"}));
  EXPECT_EQ(view.backends[0].state, BackendState::node_down);
  EXPECT_FALSE(view.backends[0].allowed);

  reach.blocks.erase(prefix("10.244.2.0/24"));  // the last local backend's node too
  view = compile_service(service("web", svc::Strategy::LocalFirst, two_clusters()), reach.node());
  ASSERT_TRUE(view.entry);
  EXPECT_EQ(backend_ips(*view.entry), (std::vector<std::string>{"10.245.1.5", "10.245.1.6"}));

  // A not-ready local backend does not hold the local side either.
  reach = Reach{};
  auto backends = two_clusters();
  backends[0].ready = false;
  backends[1].ready = false;
  view = compile_service(service("web", svc::Strategy::LocalFirst, backends), reach.node());
  EXPECT_EQ(backend_ips(*view.entry), (std::vector<std::string>{"10.245.1.5", "10.245.1.6"}));
  EXPECT_EQ(view.backends[0].state, BackendState::not_ready);
}

TEST(ServiceCompile, FailoverOnlyFollowsTheOrder) {
  Reach reach;
  auto s = service("ckpt", svc::Strategy::FailoverOnly, two_clusters());
  s.strategy.failover_order = {"cluster-b", "cluster-a"};
  auto view = compile_service(s, reach.node("cluster-a"));
  EXPECT_EQ(backend_ips(*view.entry), (std::vector<std::string>{"10.245.1.5", "10.245.1.6"}));  // primary, though remote
  reach.blocks.erase(prefix("10.245.1.0/24"));  // the primary's node gone
  view = compile_service(s, reach.node("cluster-a"));
  EXPECT_EQ(backend_ips(*view.entry), (std::vector<std::string>{"10.244.1.5", "10.244.2.5"}));
  EXPECT_EQ(view.backends[2].state, BackendState::node_down);
  reach.blocks.insert(prefix("10.245.1.0/24"));  // the primary's node back: back to it
  view = compile_service(s, reach.node("cluster-a"));
  EXPECT_EQ(backend_ips(*view.entry), (std::vector<std::string>{"10.245.1.5", "10.245.1.6"}));
  reach.blocks.clear();  // nothing left: an entry with no backend (the forwarder drops, counted)
  view = compile_service(s, reach.node("cluster-a"));
  ASSERT_TRUE(view.entry);
  EXPECT_EQ(view.entry->backends_size(), 0);
}

TEST(ServiceCompile, WeightsSplitPerCluster) {
  Reach reach;
  auto s = service("batch", svc::Strategy::WeightedRoundRobin, two_clusters());
  s.strategy.weights = {{"cluster-a", 3}, {"cluster-b", 1}};
  const auto view = compile_service(s, reach.node());
  ASSERT_EQ(view.entry->backends_size(), 4);
  // cluster-a's 3 over 2 backends against cluster-b's 1 over 2: 3:1 per backend, reduced.
  EXPECT_EQ(view.entry->backends(0).weight(), 3u);
  EXPECT_EQ(view.entry->backends(1).weight(), 3u);
  EXPECT_EQ(view.entry->backends(2).weight(), 1u);
  EXPECT_EQ(view.entry->table_size(), vxfed::dataplane::default_service_table_size(4));
}

TEST(ServiceCompile, WeightsFitTheForwardersSixteenBits) {
  // 1000 over 17 backends against 1 over 1: the split does not divide evenly, and reduced by
  // the common divisor the weights are still beyond 65535: scaled down, none to 0.
  std::vector<svc::Backend> backends;
  for (int i = 0; i < 17; ++i)
    backends.push_back({"cluster-a", net::Ipv4Addr{ip("10.244.1.10").value + static_cast<std::uint32_t>(i)}, true});
  backends.push_back({"cluster-b", ip("10.245.1.5"), true});
  auto s = service("batch", svc::Strategy::WeightedRoundRobin, backends);
  s.strategy.weights = {{"cluster-a", 1000}, {"cluster-b", 1}};
  Reach reach;
  const auto view = compile_service(s, reach.node());
  ASSERT_TRUE(view.entry);
  ASSERT_EQ(view.entry->backends_size(), 18);
  std::uint32_t top = 0;
  for (const auto& b : view.entry->backends()) {
    EXPECT_GE(b.weight(), 1u);
    EXPECT_LE(b.weight(), 65535u);
    top = std::max(top, b.weight());
  }
  const double ratio = double(view.entry->backends(0).weight()) / view.entry->backends(17).weight();
  EXPECT_NEAR(ratio, 1000.0 / 17, 1000.0 / 17 * 0.02) << view.entry->backends(0).weight() << " : "
                                                       << view.entry->backends(17).weight();
  EXPECT_GT(top, 60000u);  // scaled to use the range, not crushed
}

TEST(ServiceCompile, TooManyBackendsForTheForwarderIsNotProgrammed) {
  std::vector<svc::Backend> backends;
  for (std::uint32_t i = 0; i < vxfed::dataplane::kMaxServiceBackends + 1; ++i)
    backends.push_back({"cluster-a", net::Ipv4Addr{ip("10.244.0.0").value + 1 + i}, true});
  Reach reach;
  reach.blocks = {prefix("10.244.0.0/16")};
  const auto view = compile_service(service("huge", svc::Strategy::LocalFirst, backends), reach.node());
  EXPECT_FALSE(view.entry);
  EXPECT_NE(view.not_programmed.find("more than the forwarder's"), std::string::npos) << view.not_programmed;
}

TEST(ServiceCompile, NotProgrammedWithoutVipOrNetwork) {
  Reach reach;
  auto view = compile_service(service("web", svc::Strategy::LocalFirst, two_clusters(), nullptr), reach.node());
  EXPECT_FALSE(view.entry);
  EXPECT_EQ(view.not_programmed, "no VIP allocated");
  view = compile_service(service("web", svc::Strategy::LocalFirst, two_clusters()), reach.node("cluster-a", std::nullopt));
  EXPECT_FALSE(view.entry);
  EXPECT_NE(view.not_programmed.find("network"), std::string::npos);
  EXPECT_EQ(view.backends[0].state, BackendState::ready);  // not "node down": the node cannot tell
}

// Issue 36 item 3, "flows that moved stay where they are": a backend alive and ready that the
// strategy no longer gives new flows stays in the entry at weight 0 (the forwarder keeps a
// tracked flow while its backend is in the entry); one that is gone leaves it.
TEST(ServiceCompile, LocalFirstFailbackKeepsTheOtherClusterAtWeightZero) {
  Reach reach;
  auto backends = two_clusters();
  backends[0].ready = false;
  backends[1].ready = false;
  // No local backend ready: cluster-b's take new flows, nothing kept.
  auto view = compile_service(service("web", svc::Strategy::LocalFirst, backends), reach.node());
  ASSERT_TRUE(view.entry);
  EXPECT_EQ(backend_ips(*view.entry), (std::vector<std::string>{"10.245.1.5", "10.245.1.6"}));
  EXPECT_TRUE(kept_ips(*view.entry).empty());
  // A local backend ready again: new flows to it, cluster-b's kept at weight 0.
  backends[1].ready = true;
  view = compile_service(service("web", svc::Strategy::LocalFirst, backends), reach.node());
  ASSERT_TRUE(view.entry);
  EXPECT_EQ(backend_ips(*view.entry), (std::vector<std::string>{"10.244.2.5"}));
  EXPECT_EQ(kept_ips(*view.entry), (std::vector<std::string>{"10.245.1.5", "10.245.1.6"}));
  EXPECT_EQ(view.entry->backends_size(), 3);  // the not-ready local one is not in it at all
  EXPECT_FALSE(view.backends[2].allowed);
  EXPECT_TRUE(view.backends[2].kept);
  EXPECT_EQ(view.backends[2].weight, 0u);
  EXPECT_TRUE(view.backends[1].allowed);
  EXPECT_FALSE(view.backends[1].kept);
  EXPECT_FALSE(view.backends[0].kept);  // not ready: neither allowed nor kept
  EXPECT_TRUE(view.kept_left_out.empty());
  // The table size stays the service's (4 backends), kept ones or not.
  EXPECT_EQ(view.entry->table_size(), vxfed::dataplane::default_service_table_size(4));

  // A kept backend that goes away leaves: marked not ready,
  auto gone = backends;
  gone[2].ready = false;
  view = compile_service(service("web", svc::Strategy::LocalFirst, gone), reach.node());
  EXPECT_EQ(kept_ips(*view.entry), (std::vector<std::string>{"10.245.1.6"}));
  EXPECT_EQ(view.backends[2].state, BackendState::not_ready);
  EXPECT_FALSE(view.backends[2].kept);
  // its pod deleted (gone from the slice),
  gone = backends;
  gone.erase(gone.begin() + 2);
  view = compile_service(service("web", svc::Strategy::LocalFirst, gone), reach.node());
  EXPECT_EQ(kept_ips(*view.entry), (std::vector<std::string>{"10.245.1.6"}));
  // its node down (the block withdrawn): every cluster-b backend leaves.
  Reach down;
  down.blocks.erase(prefix("10.245.1.0/24"));
  view = compile_service(service("web", svc::Strategy::LocalFirst, backends), down.node());
  EXPECT_EQ(backend_ips(*view.entry), (std::vector<std::string>{"10.244.2.5"}));
  EXPECT_TRUE(kept_ips(*view.entry).empty());
  EXPECT_EQ(view.backends[2].state, BackendState::node_down);
  EXPECT_FALSE(view.backends[2].kept);
}

TEST(ServiceCompile, FailoverOnlyPrimaryBackKeepsTheStandbyAtWeightZero) {
  Reach reach;
  auto s = service("ckpt", svc::Strategy::FailoverOnly, two_clusters());
  s.strategy.failover_order = {"cluster-a", "cluster-b"};
  s.backends[0].ready = false;
  s.backends[1].ready = false;
  auto view = compile_service(s, reach.node("cluster-b"));
  EXPECT_EQ(backend_ips(*view.entry), (std::vector<std::string>{"10.245.1.5", "10.245.1.6"}));  // the standby
  EXPECT_TRUE(kept_ips(*view.entry).empty());
  s.backends[0].ready = true;  // the primary returns
  view = compile_service(s, reach.node("cluster-b"));
  EXPECT_EQ(backend_ips(*view.entry), (std::vector<std::string>{"10.244.1.5"}));
  EXPECT_EQ(kept_ips(*view.entry), (std::vector<std::string>{"10.245.1.5", "10.245.1.6"}));
  // A cluster outside the order is never allowed, but a ready one is kept like the standby (a
  // flow it could have: the order changed under it).
  s.backends.push_back({"cluster-c", ip("10.246.1.5"), true});
  reach.blocks.insert(prefix("10.246.1.0/24"));
  view = compile_service(s, reach.node("cluster-b"));
  EXPECT_EQ(kept_ips(*view.entry), (std::vector<std::string>{"10.245.1.5", "10.245.1.6", "10.246.1.5"}));
}

TEST(ServiceCompile, WeightsChangeNobodyLeaves) {
  Reach reach;
  auto s = service("batch", svc::Strategy::WeightedRoundRobin, two_clusters());
  s.strategy.weights = {{"cluster-a", 3}, {"cluster-b", 1}};
  auto view = compile_service(s, reach.node());
  EXPECT_EQ(view.entry->backends_size(), 4);
  EXPECT_TRUE(kept_ips(*view.entry).empty());
  s.strategy.weights = {{"cluster-a", 1}, {"cluster-b", 5}};
  view = compile_service(s, reach.node());
  ASSERT_EQ(view.entry->backends_size(), 4);
  EXPECT_EQ(view.entry->backends(0).weight() * 5, view.entry->backends(2).weight());
  // cluster-b weighted out (left out of the weights): its backends kept at weight 0.
  s.strategy.weights = {{"cluster-a", 1}};
  view = compile_service(s, reach.node());
  EXPECT_EQ(backend_ips(*view.entry), (std::vector<std::string>{"10.244.1.5", "10.244.2.5"}));
  EXPECT_EQ(kept_ips(*view.entry), (std::vector<std::string>{"10.245.1.5", "10.245.1.6"}));
}

TEST(ServiceCompile, KeptBackendsGiveWayToTheForwardersLimit) {
  // 4096 allowed local backends fill the forwarder's limit: the one ready remote backend is not
  // kept (said in the view), and the entry is still programmed.
  std::vector<svc::Backend> backends;
  for (std::uint32_t i = 0; i < vxfed::dataplane::kMaxServiceBackends; ++i)
    backends.push_back({"cluster-a", net::Ipv4Addr{ip("10.244.0.0").value + 1 + i}, true});
  backends.push_back({"cluster-b", ip("10.245.1.5"), true});
  Reach reach;
  reach.blocks = {prefix("10.244.0.0/16"), prefix("10.245.1.0/24")};
  const auto view = compile_service(service("huge", svc::Strategy::LocalFirst, backends), reach.node());
  ASSERT_TRUE(view.entry) << view.not_programmed;
  EXPECT_EQ(view.entry->backends_size(), static_cast<int>(vxfed::dataplane::kMaxServiceBackends));
  EXPECT_FALSE(view.backends.back().kept);
  EXPECT_NE(view.kept_left_out.find("1 backends not allowed now left out"), std::string::npos) << view.kept_left_out;
}

svc::FederatedSet set_of(std::vector<svc::FederatedService> list) {
  svc::FederatedSet set;
  for (auto& s : list) set.services[s.key] = std::move(s);
  return set;
}

TEST(ServiceProgrammer, RouteChangeRecompilesOnlyTheServicesBehindIt) {
  Reach reach;
  std::optional<std::uint32_t> vni = kVni;
  ServiceProgrammer programmer([&] { return reach.node("cluster-a", vni); });
  auto web = service("web", svc::Strategy::LocalFirst, two_clusters());
  auto other = service("other", svc::Strategy::LocalFirst, {{"cluster-b", ip("10.245.1.9"), true}}, "10.96.0.2");
  auto changes = programmer.set_federated(set_of({web, other}));
  EXPECT_EQ(changes.upserts.size(), 2u);
  EXPECT_TRUE(changes.removals.empty());
  EXPECT_EQ(programmer.compiles(), 2u);

  // The same listing again: nothing compiled.
  changes = programmer.set_federated(set_of({web, other}));
  EXPECT_TRUE(changes.empty());
  EXPECT_EQ(programmer.compiles(), 2u);

  // a1's block withdrawn: only web has a backend there.
  reach.blocks.erase(prefix("10.244.1.0/24"));
  changes = programmer.reach_changed(kVni, prefix("10.244.1.0/24"));
  EXPECT_EQ(programmer.compiles(), 3u);
  ASSERT_EQ(changes.upserts.size(), 1u);
  EXPECT_EQ(changes.upserts[0].id(), "default/web");
  EXPECT_EQ(backend_ips(changes.upserts[0]), (std::vector<std::string>{"10.244.2.5"}));
  EXPECT_EQ(programmer.views().at({"default", "web"}).backends[0].state, BackendState::node_down);

  // Another network's route, or a prefix with no backend: nothing compiled.
  EXPECT_TRUE(programmer.reach_changed(kVni + 1, prefix("10.244.0.0/16")).empty());
  EXPECT_TRUE(programmer.reach_changed(kVni, prefix("10.250.0.0/16")).empty());
  EXPECT_EQ(programmer.compiles(), 3u);

  // A covering /16 reaches both services' backends... only those inside it: web's and other's
  // cluster-b backends sit in 10.245/16.
  changes = programmer.reach_changed(kVni, prefix("10.245.0.0/16"));
  EXPECT_EQ(programmer.compiles(), 5u);

  // A backend marked not ready: the listing changes web only.
  web.backends[1].ready = false;
  changes = programmer.set_federated(set_of({web, other}));
  EXPECT_EQ(programmer.compiles(), 6u);
  ASSERT_EQ(changes.upserts.size(), 1u);
  EXPECT_EQ(backend_ips(changes.upserts[0]), (std::vector<std::string>{"10.245.1.5", "10.245.1.6"}));  // fell over

  // web's backend moves: its old address no longer leads to it.
  web.backends[0].address = ip("10.244.3.5");
  programmer.set_federated(set_of({web, other}));
  const auto before = programmer.compiles();
  EXPECT_TRUE(programmer.reach_changed(kVni, prefix("10.244.1.0/24")).empty());
  EXPECT_EQ(programmer.compiles(), before);

  // other deleted from the store: its entry removed.
  changes = programmer.set_federated(set_of({web}));
  EXPECT_EQ(changes.removals, (std::vector<std::string>{"default/other"}));
  EXPECT_FALSE(programmer.views().count({"default", "other"}));

  // The network gone from this node: web's entry removed; back: programmed again.
  vni.reset();
  changes = programmer.recompile_all();
  EXPECT_EQ(changes.removals, (std::vector<std::string>{"default/web"}));
  EXPECT_TRUE(changes.upserts.empty());
  vni = kVni;
  changes = programmer.recompile_all();
  EXPECT_EQ(changes.upserts.size(), 1u);
}

}  // namespace
}  // namespace vxfed::control
