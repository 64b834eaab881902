// DeltaMerger: merged deltas mean the same as applying them one after another.
#include <gtest/gtest.h>

#include "control/delta_merger.hpp"

namespace {

using vxfed::control::DeltaMerger;
using vxfed::control::TablesDelta;
namespace dp = vxfed::dataplane::v1;
namespace net = vxfed::net;

TablesDelta upsert_endpoint(const std::string& id, std::uint32_t vni) {
  TablesDelta d;
  d.endpoints.emplace_back();
  d.endpoints.back().set_id(id);
  d.endpoints.back().set_vni(vni);
  return d;
}

TablesDelta remove_endpoint(const std::string& id) {
  TablesDelta d;
  d.removed_endpoints.push_back(id);
  return d;
}

vxfed::RemoteRoute route(std::uint32_t vni, const char* prefix, const char* vtep) {
  return {*net::Ipv4Prefix::parse(prefix), vni, {*net::Ipv4Addr::parse(vtep)}, {}};
}

TEST(DeltaMerger, LaterChangesWinPerKey) {
  DeltaMerger m;
  EXPECT_TRUE(m.empty());
  ASSERT_TRUE(m.add(upsert_endpoint("a", 1)));
  ASSERT_TRUE(m.add(remove_endpoint("a")));
  ASSERT_TRUE(m.add(upsert_endpoint("b", 1)));
  ASSERT_TRUE(m.add(remove_endpoint("c")));
  ASSERT_TRUE(m.add(upsert_endpoint("c", 2)));
  auto d = m.build();
  ASSERT_EQ(d.upsert().endpoints_size(), 2);
  EXPECT_EQ(d.upsert().endpoints(0).id(), "b");
  EXPECT_EQ(d.upsert().endpoints(1).id(), "c");
  ASSERT_EQ(d.remove_endpoints_size(), 1);
  EXPECT_EQ(d.remove_endpoints(0), "a");
  EXPECT_EQ(m.changes(), 5u);
}

TEST(DeltaMerger, NetworkRemovalDropsItsPendingEntries) {
  DeltaMerger m;
  TablesDelta network;
  network.networks.emplace_back();
  network.networks.back().set_vni(7);
  network.routes.push_back(route(7, "10.245.0.0/16", "198.18.0.2"));
  network.routes.push_back(route(8, "10.245.0.0/16", "198.18.0.2"));
  ASSERT_TRUE(m.add(network));
  ASSERT_TRUE(m.add(upsert_endpoint("x", 7)));
  ASSERT_TRUE(m.add(upsert_endpoint("y", 8)));
  TablesDelta gone;
  gone.removed_networks.push_back(7);
  ASSERT_TRUE(m.add(gone));
  auto d = m.build();
  EXPECT_EQ(d.upsert().networks_size(), 0);
  ASSERT_EQ(d.upsert().routes_size(), 1);
  EXPECT_EQ(d.upsert().routes(0).vni(), 8u);
  ASSERT_EQ(d.upsert().endpoints_size(), 1);
  EXPECT_EQ(d.upsert().endpoints(0).id(), "y");
  ASSERT_EQ(d.remove_networks_size(), 1);
}

TEST(DeltaMerger, RecreatingARemovedNetworkNeedsASnapshot) {
  DeltaMerger m;
  TablesDelta gone;
  gone.removed_networks.push_back(7);
  ASSERT_TRUE(m.add(gone));
  TablesDelta back;
  back.networks.emplace_back();
  back.networks.back().set_vni(7);
  EXPECT_FALSE(m.add(back));
  m.clear();
  EXPECT_TRUE(m.empty());
}

// Routes stay RemoteRoutes until build() writes the wire's form, once per key.
TEST(DeltaMerger, RoutesMergePerKeyAndBecomeProtobufInBuild) {
  DeltaMerger m;
  TablesDelta first;
  first.routes.push_back(route(7, "10.245.0.0/16", "198.18.0.2"));
  first.routes.push_back(route(7, "10.246.0.0/16", "198.18.0.2"));
  ASSERT_TRUE(m.add(first));
  TablesDelta second;
  second.routes.push_back(route(7, "10.245.0.0/16", "198.18.0.3"));  // replaces
  second.removed_routes.push_back({7, *net::Ipv4Prefix::parse("10.246.0.0/16")});
  ASSERT_TRUE(m.add(second));
  auto d = m.build();
  ASSERT_EQ(d.upsert().routes_size(), 1);
  EXPECT_EQ(d.upsert().routes(0).prefix(), "10.245.0.0/16");
  ASSERT_EQ(d.upsert().routes(0).next_hops_size(), 1);
  EXPECT_EQ(d.upsert().routes(0).next_hops(0).vtep(), "198.18.0.3");
  ASSERT_EQ(d.remove_routes_size(), 1);
  EXPECT_EQ(d.remove_routes(0).vni(), 7u);
  EXPECT_EQ(d.remove_routes(0).prefix(), "10.246.0.0/16");
}

}  // namespace
