// DeltaMerger: merged deltas mean the same as applying them one after another.
#include <gtest/gtest.h>

#include "control/delta_merger.hpp"

namespace {

using vxfed::control::DeltaMerger;
namespace dp = vxfed::dataplane::v1;

dp::Delta upsert_endpoint(const std::string& id, std::uint32_t vni) {
  dp::Delta d;
  auto* e = d.mutable_upsert()->add_endpoints();
  e->set_id(id);
  e->set_vni(vni);
  return d;
}

dp::Delta remove_endpoint(const std::string& id) {
  dp::Delta d;
  d.add_remove_endpoints(id);
  return d;
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
  dp::Delta net;
  net.mutable_upsert()->add_networks()->set_vni(7);
  auto* r = net.mutable_upsert()->add_routes();
  r->set_vni(7);
  r->set_prefix("10.245.0.0/16");
  ASSERT_TRUE(m.add(net));
  ASSERT_TRUE(m.add(upsert_endpoint("x", 7)));
  ASSERT_TRUE(m.add(upsert_endpoint("y", 8)));
  dp::Delta gone;
  gone.add_remove_networks(7);
  ASSERT_TRUE(m.add(gone));
  auto d = m.build();
  EXPECT_EQ(d.upsert().networks_size(), 0);
  EXPECT_EQ(d.upsert().routes_size(), 0);
  ASSERT_EQ(d.upsert().endpoints_size(), 1);
  EXPECT_EQ(d.upsert().endpoints(0).id(), "y");
  ASSERT_EQ(d.remove_networks_size(), 1);
}

TEST(DeltaMerger, RecreatingARemovedNetworkNeedsASnapshot) {
  DeltaMerger m;
  dp::Delta gone;
  gone.add_remove_networks(7);
  ASSERT_TRUE(m.add(gone));
  dp::Delta back;
  back.mutable_upsert()->add_networks()->set_vni(7);
  EXPECT_FALSE(m.add(back));
  m.clear();
  EXPECT_TRUE(m.empty());
}

}  // namespace
