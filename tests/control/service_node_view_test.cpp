// control/services/service_node_view.hpp: the store's listing + this node's compiled views ->
// `vxfedctl service get`'s per-node fields (programmed, each backend's state, allowed, weight).
#include "control/services/service_node_view.hpp"

#include <gtest/gtest.h>

#include <set>

namespace vxfed::control {
namespace {

namespace svc = ::vxfed::services;

net::Ipv4Addr ip(const char* text) { return *net::Ipv4Addr::parse(text); }
net::Ipv4Prefix prefix(const char* text) { return *net::Ipv4Prefix::parse(text); }

constexpr std::uint32_t kVni = 4097;

svc::FederatedService service(const char* name, std::vector<svc::Backend> backends, bool with_vip = true) {
  svc::FederatedService s;
  s.key = {"default", name};
  s.ports = {svc::ServicePort{"http", svc::Protocol::Tcp, 80, 8080}};
  s.strategy.strategy = svc::Strategy::LocalFirst;
  if (with_vip) s.vip = ip("10.96.0.1");
  s.clusters = {"cluster-a", "cluster-b"};
  s.backends = std::move(backends);
  return s;
}

// Node of cluster-a reaching the given blocks on kVni.
ServiceNode node(std::set<net::Ipv4Prefix> blocks) {
  ServiceNode n;
  n.cluster = "cluster-a";
  n.vni = kVni;
  n.reaches = [blocks](std::uint32_t vni, net::Ipv4Addr a) {
    if (vni != kVni) return false;
    for (const auto& b : blocks)
      if (b.contains(a)) return true;
    return false;
  };
  return n;
}

// The listing as ServiceGet gives it before the node's fields: names and backends only.
v1::ServiceInfo* add_info(v1::ServiceListing& listing, const char* name,
                          std::vector<std::pair<const char*, const char*>> backends) {
  auto* info = listing.add_services();
  info->set_namespace_("default");
  info->set_name(name);
  for (const auto& [cluster, address] : backends) {
    auto* b = info->add_backends();
    b->set_cluster(cluster);
    b->set_address(address);
    b->set_ready(true);
  }
  return info;
}

TEST(ServiceNodeView, EachBackendsStateAllowedAndWeightFromTheNodesView) {
  std::vector<svc::Backend> backends{{"cluster-a", ip("10.244.1.5"), false},  // not ready in the store
                                     {"cluster-a", ip("10.244.2.5"), true},   // its block withdrawn
                                     {"cluster-b", ip("10.245.1.5"), true},
                                     {"cluster-b", ip("10.245.1.6"), true}};
  std::map<svc::ServiceKey, ServiceView> views;
  const auto s = service("web", backends);
  views[s.key] = compile_service(s, node({prefix("10.244.1.0/24"), prefix("10.245.1.0/24")}));
  ASSERT_TRUE(views[s.key].entry) << views[s.key].not_programmed;

  v1::ServiceListing listing;
  add_info(listing, "web", {{"cluster-a", "10.244.1.5"}, {"cluster-a", "10.244.2.5"}, {"cluster-b", "10.245.1.5"},
                            {"cluster-b", "10.245.1.6"}, {"cluster-b", "10.245.1.7"}});  // the last: newer than the node's listing
  add_info(listing, "new", {{"cluster-a", "10.244.1.9"}});                               // the node has not seen it
  add_node_view(listing, views, 42);

  EXPECT_EQ(listing.node_revision(), 42);
  const auto& web = listing.services(0);
  EXPECT_TRUE(web.in_node_view());
  EXPECT_TRUE(web.programmed());
  EXPECT_EQ(web.not_programmed(), "");
  ASSERT_EQ(web.backends_size(), 5);
  EXPECT_EQ(web.backends(0).state(), "not-ready");
  EXPECT_FALSE(web.backends(0).allowed());
  EXPECT_EQ(web.backends(0).weight(), 0u);
  EXPECT_EQ(web.backends(1).state(), "node-down");
  EXPECT_FALSE(web.backends(1).allowed());
  // LocalFirst with no local backend left: cluster-b's two, equal weights.
  for (int i : {2, 3}) {
    EXPECT_EQ(web.backends(i).state(), "ready") << i;
    EXPECT_TRUE(web.backends(i).allowed()) << i;
    EXPECT_GT(web.backends(i).weight(), 0u) << i;
  }
  EXPECT_EQ(web.backends(2).weight(), web.backends(3).weight());
  EXPECT_EQ(web.backends(4).state(), "");  // unknown to the node: blank, not guessed
  EXPECT_FALSE(web.backends(4).allowed());

  const auto& fresh = listing.services(1);
  EXPECT_FALSE(fresh.in_node_view());
  EXPECT_FALSE(fresh.programmed());
  EXPECT_EQ(fresh.backends(0).state(), "");
}

TEST(ServiceNodeView, KeptForOpenFlowsIsShown) {
  // A local backend ready (LocalFirst takes new flows to it), cluster-b's ready and reached:
  // kept at weight 0 for the flows they have; a not-ready one neither allowed nor kept.
  std::map<svc::ServiceKey, ServiceView> views;
  const auto s = service("web", {{"cluster-a", ip("10.244.1.5"), true},
                                 {"cluster-b", ip("10.245.1.5"), true},
                                 {"cluster-b", ip("10.245.1.6"), false}});
  views[s.key] = compile_service(s, node({prefix("10.244.1.0/24"), prefix("10.245.1.0/24")}));
  v1::ServiceListing listing;
  add_info(listing, "web", {{"cluster-a", "10.244.1.5"}, {"cluster-b", "10.245.1.5"}, {"cluster-b", "10.245.1.6"}});
  add_node_view(listing, views, 3);
  const auto& web = listing.services(0);
  EXPECT_TRUE(web.backends(0).allowed());
  EXPECT_FALSE(web.backends(0).kept());
  EXPECT_EQ(web.backends(1).state(), "ready");
  EXPECT_FALSE(web.backends(1).allowed());
  EXPECT_TRUE(web.backends(1).kept());
  EXPECT_EQ(web.backends(1).weight(), 0u);
  EXPECT_EQ(web.backends(2).state(), "not-ready");
  EXPECT_FALSE(web.backends(2).kept());
}

TEST(ServiceNodeView, NotProgrammedSaysWhy) {
  std::map<svc::ServiceKey, ServiceView> views;
  const auto s = service("novip", {{"cluster-a", ip("10.244.1.5"), true}}, false);
  views[s.key] = compile_service(s, node({prefix("10.244.1.0/24")}));
  v1::ServiceListing listing;
  add_info(listing, "novip", {{"cluster-a", "10.244.1.5"}});
  add_node_view(listing, views, 7);
  const auto& info = listing.services(0);
  EXPECT_TRUE(info.in_node_view());
  EXPECT_FALSE(info.programmed());
  EXPECT_EQ(info.not_programmed(), "no VIP allocated");
  EXPECT_EQ(info.backends(0).state(), "ready");
  EXPECT_FALSE(info.backends(0).allowed());  // nothing is programmed, so nothing gets flows
  EXPECT_FALSE(info.backends(0).kept());
}

TEST(ServiceNodeView, EachBackendsFlowsFromTheForwardersCounters) {
  std::vector<svc::Backend> backends{{"cluster-a", ip("10.244.1.5"), true}, {"cluster-b", ip("10.245.1.5"), true}};
  std::map<svc::ServiceKey, ServiceView> views;
  const auto s = service("web", backends);
  views[s.key] = compile_service(s, node({prefix("10.244.1.0/24"), prefix("10.245.1.0/24")}));
  dp::ServiceCountersReport counters;
  counters.set_flows_counted(true);
  auto* sc = counters.add_services();
  sc->set_id("default/web");
  auto* b = sc->add_backends();
  b->set_ip("10.244.1.5");
  b->set_flows(17);
  b->set_new_flows(5002);
  // Without the forwarder's figures: not known.
  {
    v1::ServiceListing listing;
    add_info(listing, "web", {{"cluster-a", "10.244.1.5"}});
    add_node_view(listing, views, 3);
    EXPECT_FALSE(listing.services(0).backends(0).flows_known());
  }
  v1::ServiceListing listing;
  add_info(listing, "web", {{"cluster-a", "10.244.1.5"}, {"cluster-b", "10.245.1.5"}});
  add_info(listing, "other", {{"cluster-a", "10.244.1.9"}});
  add_node_view(listing, views, 3, &counters);
  const auto& web = listing.services(0);
  EXPECT_TRUE(web.backends(0).flows_known());
  EXPECT_EQ(web.backends(0).flows(), 17u);
  EXPECT_EQ(web.backends(0).new_flows(), 5002u);
  // A backend of the service the forwarder has no figure for: none.
  EXPECT_TRUE(web.backends(1).flows_known());
  EXPECT_EQ(web.backends(1).flows(), 0u);
  EXPECT_EQ(web.backends(1).new_flows(), 0u);
  // A service not in the node's view gets nothing.
  EXPECT_FALSE(listing.services(1).backends(0).flows_known());
  EXPECT_EQ(BackendFlows(counters).find("default/nope", "10.244.1.5"), std::nullopt);
  // Flows not counted (the census did not finish): not known.
  counters.set_flows_counted(false);
  v1::ServiceListing again;
  add_info(again, "web", {{"cluster-a", "10.244.1.5"}});
  add_node_view(again, views, 3, &counters);
  EXPECT_FALSE(again.services(0).backends(0).flows_known());
}

}  // namespace
}  // namespace vxfed::control
