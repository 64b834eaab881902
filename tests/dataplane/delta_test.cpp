// Unit tests of apply_delta: upserts by key, removals (with the cascade of a network), and
// removals of absent keys refused with the entry named.
#include <gtest/gtest.h>

#include "dataplane/core/tables.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

using dataplane::v1::Delta;

TEST(Delta, UpsertReplacesByKeyAndAppendsNew) {
  Delta d;
  auto* n = d.mutable_upsert()->add_networks();
  n->set_vni(kVniA);
  n->set_gateway_ip("10.244.0.254");
  auto* r = d.mutable_upsert()->add_routes();
  r->set_vni(kVniA);
  r->set_prefix("10.247.0.0/16");
  r->add_next_hops()->set_vtep("198.18.0.7");
  auto* r2 = d.mutable_upsert()->add_routes();
  r2->set_vni(kVniA);
  r2->set_prefix("10.245.0.0/16");
  r2->add_next_hops()->set_vtep("198.18.0.8");
  auto out = dp::apply_delta(sample_tables(), d);
  ASSERT_TRUE(out.ok()) << out.error();
  ASSERT_EQ(out->networks_size(), 2);
  EXPECT_EQ(out->networks(0).gateway_ip(), "10.244.0.254");
  ASSERT_EQ(out->routes_size(), 5);
  EXPECT_EQ(out->routes(0).next_hops(0).vtep(), "198.18.0.8");
  EXPECT_EQ(out->routes(4).prefix(), "10.247.0.0/16");
}

TEST(Delta, RemovingANetworkTakesItsEntriesWithIt) {
  Delta d;
  d.add_remove_networks(kVniA);
  auto out = dp::apply_delta(sample_tables(), d);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->networks_size(), 1);
  EXPECT_EQ(out->endpoints_size(), 1);
  EXPECT_EQ(out->endpoints(0).id(), "pod3/net1");
  EXPECT_EQ(out->routes_size(), 1);
  EXPECT_EQ(out->vteps(0).vnis_size(), 0);
  EXPECT_EQ(out->neighbors_size(), 5) << "underlay neighbours do not belong to a network";
}

TEST(Delta, RemovalsByKey) {
  Delta d;
  d.add_remove_endpoints("pod2/net1");
  auto* k = d.add_remove_routes();
  k->set_vni(kVniA);
  k->set_prefix("10.245.7.0/24");
  d.add_remove_vteps("198.18.0.9");
  d.add_remove_neighbors("198.18.0.3");
  auto out = dp::apply_delta(sample_tables(), d);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->endpoints_size(), 2);
  EXPECT_EQ(out->routes_size(), 3);
  EXPECT_EQ(out->vteps_size(), 0);
  EXPECT_EQ(out->neighbors_size(), 4);
  EXPECT_EQ(out->routes(1).prefix(), "10.246.0.0/16") << "order kept";
}

TEST(Delta, RemovingWhatIsAbsentIsRefusedNamingIt) {
  Delta d;
  auto* k = d.add_remove_routes();
  k->set_vni(kVniA);
  k->set_prefix("10.245.0.0/16");
  k = d.add_remove_routes();
  k->set_vni(kVniB);
  k->set_prefix("10.99.0.0/16");
  auto out = dp::apply_delta(sample_tables(), d);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error(), "remove_routes[1] (vni 2002, prefix \"10.99.0.0/16\"): not present");
  Delta e;
  e.add_remove_endpoints("ghost");
  EXPECT_EQ(dp::apply_delta(sample_tables(), e).error(), "remove_endpoints[0] (id \"ghost\"): not present");
}

TEST(Delta, UpsertThenRemoveInOneDelta) {
  Delta d;
  auto* e = d.mutable_upsert()->add_endpoints();
  e->set_id("pod4/net1");
  d.add_remove_endpoints("pod4/net1");
  auto out = dp::apply_delta(sample_tables(), d);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->endpoints_size(), 3);
}

}  // namespace
}  // namespace vxfed::test
