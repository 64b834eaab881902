// NodeState's part in global services (docs/services.md, "Serving a VIP"): which backend
// addresses the node reaches (a local endpoint, a route in effect), the reach observer told of
// every route and endpoint that comes or goes, and the Service entries: only those that differ
// published, in tables() for snapshots, none of a VNI without a network.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "control/node/node_state.hpp"
#include "tests/control/recording_sink.hpp"
#include "tests/control/test_support.hpp"

namespace {

using namespace vxfed::control;
using namespace vxfed::control::testing;
using vxfed::RemoteRoute;
using vxfed::RouteUpdate;
namespace net = vxfed::net;

net::Ipv4Addr ip(const char* text) { return *net::Ipv4Addr::parse(text); }
net::Ipv4Prefix prefix(const char* text) { return *net::Ipv4Prefix::parse(text); }

std::unique_ptr<NodeState> open(const Config& c) {
  NodeState::Options o;
  o.state_dir = c.daemon.state_dir;
  auto s = NodeState::open(c, o, nullptr);
  EXPECT_TRUE(s.ok()) << s.error();
  return s.ok() ? std::move(*s) : nullptr;
}

RemoteRoute route(std::uint32_t vni, const char* p) {
  RemoteRoute r;
  r.vni = vni;
  r.prefix = prefix(p);
  r.vteps.push_back(ip("198.18.0.3"));
  r.peer = ip("198.18.0.3");
  return r;
}

dp::Service entry(const char* id, std::uint32_t vni, std::vector<const char*> backends) {
  dp::Service s;
  s.set_id(id);
  s.set_vni(vni);
  s.set_vip("10.96.0.1");
  auto* p = s.add_ports();
  p->set_protocol(6);
  p->set_port(80);
  p->set_target_port(8080);
  for (auto* b : backends) {
    auto* x = s.add_backends();
    x->set_ip(b);
    x->set_weight(1);
  }
  s.set_table_size(16381);
  return s;
}

TEST(NodeServices, ReachesLocalEndpointsAndRoutedAddressesOnly) {
  TempDir dir;
  auto s = open(test_config(dir.path));  // red 10.244.1.0/24 with a static route to 10.245.1.0/24
  const std::uint32_t red = *s->vni_of("red"), blue = *s->vni_of("blue");
  std::vector<std::pair<std::uint32_t, net::Ipv4Prefix>> told;
  s->set_reach_observer([&](std::uint32_t vni, const net::Ipv4Prefix& p) { told.emplace_back(vni, p); });

  EXPECT_TRUE(s->reaches(red, ip("10.245.1.7")));    // the static route
  EXPECT_FALSE(s->reaches(blue, ip("10.245.1.7")));  // another network's
  EXPECT_FALSE(s->reaches(red, ip("10.244.1.5")));   // own subnet, no pod there
  EXPECT_FALSE(s->reaches(red, ip("10.246.0.1")));

  v1::ErrorCode code;
  ASSERT_TRUE(s->attach(endpoint("c1", "red", "10.244.1.5"), &code).ok());
  EXPECT_TRUE(s->reaches(red, ip("10.244.1.5")));
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0], std::make_pair(red, prefix("10.244.1.5/32")));

  RouteUpdate update;
  update.upserts.push_back(route(red, "10.246.0.0/24"));
  s->apply_routes(RouteOrigin::bgp, update);
  EXPECT_TRUE(s->reaches(red, ip("10.246.0.1")));
  ASSERT_EQ(told.size(), 2u);
  EXPECT_EQ(told[1], std::make_pair(red, prefix("10.246.0.0/24")));

  RouteUpdate withdraw;
  withdraw.removals.push_back(vxfed::RouteKey{red, prefix("10.246.0.0/24")});
  s->apply_routes(RouteOrigin::bgp, withdraw);
  EXPECT_FALSE(s->reaches(red, ip("10.246.0.1")));
  ASSERT_EQ(told.size(), 3u);
  EXPECT_EQ(told[2], std::make_pair(red, prefix("10.246.0.0/24")));

  ASSERT_TRUE(s->detach("c1", "net1", &code).ok());
  EXPECT_FALSE(s->reaches(red, ip("10.244.1.5")));
  ASSERT_EQ(told.size(), 4u);
  EXPECT_EQ(told[3], std::make_pair(red, prefix("10.244.1.5/32")));
}

TEST(NodeServices, EntriesPublishedOnlyWhenTheyDifferAndInTheSnapshot) {
  TempDir dir;
  auto s = open(test_config(dir.path));
  RecordingSink sink;
  s->set_sink(&sink);
  const std::uint32_t red = *s->vni_of("red");

  s->set_services({entry("default/web", red, {"10.244.1.5"})}, {});
  ASSERT_EQ(sink.deltas.size(), 1u);
  ASSERT_EQ(sink.deltas[0].upsert().services_size(), 1);
  EXPECT_EQ(sink.deltas[0].upsert().services(0).id(), "default/web");

  s->set_services({entry("default/web", red, {"10.244.1.5"})}, {});  // the same: nothing sent
  EXPECT_EQ(sink.deltas.size(), 1u);

  s->set_services({entry("default/web", red, {"10.245.1.7"})}, {});  // a backend changed
  ASSERT_EQ(sink.deltas.size(), 2u);
  EXPECT_EQ(sink.deltas[1].upsert().services(0).backends(0).ip(), "10.245.1.7");

  s->set_services({entry("default/far", 777, {"10.245.1.7"})}, {});  // no network has VNI 777
  EXPECT_EQ(sink.deltas.size(), 2u);
  const auto tables = s->tables();
  ASSERT_EQ(tables.services_size(), 1);
  EXPECT_EQ(tables.services(0).backends(0).ip(), "10.245.1.7");

  s->set_services({}, {"default/web", "default/far", "default/never"});
  ASSERT_EQ(sink.deltas.size(), 3u);
  ASSERT_EQ(sink.deltas[2].remove_services_size(), 1);  // only what the dataplane was sent
  EXPECT_EQ(sink.deltas[2].remove_services(0), "default/web");
  EXPECT_EQ(s->tables().services_size(), 0);
  EXPECT_TRUE(s->services().empty());
}

TEST(NodeServices, EntriesOfANetworkAddedLaterGoWithIt) {
  TempDir dir;
  auto s = open(test_config(dir.path));
  RecordingSink sink;
  s->set_sink(&sink);
  s->set_services({entry("default/web", 4242, {"10.250.0.5"})}, {});  // e.g. from the cache
  EXPECT_TRUE(sink.deltas.empty());
  v1::ErrorCode code;
  NetworkConfig green;
  green.name = "green";
  green.subnet = "10.244.9.0/24";
  green.pinned_vni = 4242;
  ASSERT_TRUE(s->add_network(green, false, &code).ok());
  ASSERT_FALSE(sink.deltas.empty());
  const auto& d = sink.deltas.back();
  ASSERT_EQ(d.upsert().networks_size(), 1);
  ASSERT_EQ(d.upsert().services_size(), 1);  // in the same Delta, after its network
  EXPECT_EQ(d.upsert().services(0).id(), "default/web");
  EXPECT_EQ(s->tables().services_size(), 1);
}

}  // namespace
