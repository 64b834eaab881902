// DeltaQueue: changes split into bounded Deltas that, applied one after another, mean what the
// whole change meant; endpoint upserts marked (they go alone); a refused endpoint's queued
// removals dropped, but not past a later attach of it; services after their network and routes.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "control/node/delta_queue.hpp"

namespace {

using vxfed::control::DeltaQueue;
using vxfed::control::TablesDelta;
namespace dp = vxfed::dataplane::v1;
namespace net = vxfed::net;

vxfed::RemoteRoute route(std::uint32_t vni, int i) {
  const std::string prefix = "10.245." + std::to_string(i) + ".0/24";
  return {*net::Ipv4Prefix::parse(prefix), vni, {*net::Ipv4Addr::parse("198.18.0.2")}, {}};
}

dp::Endpoint endpoint(const std::string& id, std::uint32_t vni) {
  dp::Endpoint e;
  e.set_id(id);
  e.set_vni(vni);
  return e;
}

// Tables as keys only, applied the way the dataplane applies a Delta.
struct Keys {
  std::set<std::uint32_t> networks;
  std::set<std::string> endpoints;
  std::set<std::string> routes;
  void apply(const dp::Delta& d) {
    for (const auto& n : d.upsert().networks()) networks.insert(n.vni());
    for (const auto& e : d.upsert().endpoints()) endpoints.insert(e.id());
    for (const auto& r : d.upsert().routes()) routes.insert(std::to_string(r.vni()) + "/" + r.prefix());
    for (auto v : d.remove_networks()) networks.erase(v);
    for (const auto& id : d.remove_endpoints()) endpoints.erase(id);
    for (const auto& k : d.remove_routes()) routes.erase(std::to_string(k.vni()) + "/" + k.prefix());
  }
  bool operator==(const Keys&) const = default;
};

TablesDelta big_change() {
  TablesDelta d;
  d.networks.emplace_back().set_vni(7);
  d.endpoints.push_back(endpoint("a", 7));
  for (int i = 0; i < 10; ++i) d.routes.push_back(route(7, i));
  d.removed_endpoints.push_back("old");
  d.removed_routes.push_back(route(7, 200).key());
  return d;
}

TEST(DeltaQueue, SplitsAChangeIntoBoundedDeltasInApplyOrder) {
  DeltaQueue q(4);
  const auto now = DeltaQueue::TimePoint::clock::now();
  const TablesDelta change = big_change();
  q.push(change, now);
  // 1 network + 1 endpoint + 10 routes + 2 removals = 14 entries: 4 + 4 + 4 + 2.
  ASSERT_EQ(q.size(), 4u);

  Keys whole, pieces;
  whole.endpoints.insert("old");
  whole.routes.insert("7/10.245.200.0/24");
  pieces = whole;
  whole.apply(vxfed::control::to_wire(change));
  std::size_t total = 0;
  std::vector<bool> endpoint_marks;
  while (!q.empty()) {
    auto item = q.pop_front();
    EXPECT_LE(item.entries, 4u);
    EXPECT_EQ(item.queued, now);
    total += item.entries;
    endpoint_marks.push_back(item.upserts_endpoints);
    pieces.apply(item.delta);
  }
  EXPECT_EQ(total, 14u);
  EXPECT_EQ(pieces, whole);
  // Only the first piece carries the endpoint upsert.
  EXPECT_EQ(endpoint_marks, (std::vector<bool>{true, false, false, false}));
}

TEST(DeltaQueue, ServicesComeAfterTheirNetworkAndRoutesAndCountAsEntries) {
  DeltaQueue q(3);
  const auto now = DeltaQueue::TimePoint::clock::now();
  TablesDelta d;
  d.networks.emplace_back().set_vni(7);
  d.routes.push_back(route(7, 1));
  for (const char* id : {"default/a", "default/b"}) {
    auto& s = d.services.emplace_back();
    s.set_id(id);
    s.set_vni(7);
  }
  d.removed_routes.push_back(route(7, 2).key());
  d.removed_services.push_back("default/old");
  q.push(d, now);
  ASSERT_EQ(q.size(), 2u);  // 6 entries, 3 a piece
  const auto first = q.pop_front(), second = q.pop_front();
  EXPECT_EQ(first.entries, 3u);
  ASSERT_EQ(first.delta.upsert().networks_size(), 1);
  EXPECT_EQ(first.delta.upsert().routes_size(), 1);
  ASSERT_EQ(first.delta.upsert().services_size(), 1);  // the network comes in the same or an earlier piece
  EXPECT_EQ(first.delta.upsert().services(0).id(), "default/a");
  EXPECT_EQ(second.entries, 3u);
  ASSERT_EQ(second.delta.upsert().services_size(), 1);
  EXPECT_EQ(second.delta.upsert().services(0).id(), "default/b");
  EXPECT_EQ(second.delta.remove_routes_size(), 1);
  ASSERT_EQ(second.delta.remove_services_size(), 1);
  EXPECT_EQ(second.delta.remove_services(0), "default/old");
  // to_wire of the whole change says the same.
  const auto whole = vxfed::control::to_wire(d);
  EXPECT_EQ(whole.upsert().services_size(), 2);
  EXPECT_EQ(whole.remove_services_size(), 1);
}

TEST(DeltaQueue, EachChangeIsQueuedOnItsOwnNeverMerged) {
  DeltaQueue q;
  const auto now = DeltaQueue::TimePoint::clock::now();
  TablesDelta add, remove;
  add.routes.push_back(route(7, 1));
  remove.removed_routes.push_back(route(7, 1).key());
  q.push(add, now);
  q.push(remove, now);
  q.push(TablesDelta{}, now);  // nothing to send
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q.pop_front().delta.upsert().routes_size(), 1);
  EXPECT_EQ(q.pop_front().delta.remove_routes_size(), 1);
}

TEST(DeltaQueue, RefusedEndpointsRemovalsDroppedUpToALaterAttach) {
  DeltaQueue q;
  const auto now = DeltaQueue::TimePoint::clock::now();
  TablesDelta remove, attach_again;
  remove.removed_endpoints.push_back("a");
  attach_again.endpoints.push_back(endpoint("a", 7));
  q.push(remove, now);        // removal of the refused attach: the dataplane never had it
  q.push(attach_again, now);  // a new attach of the same id
  q.push(remove, now);        // its removal must still go
  EXPECT_TRUE(q.upserts_endpoint("a"));
  EXPECT_FALSE(q.upserts_endpoint("b"));
  q.drop_endpoint_removals("a");
  ASSERT_EQ(q.size(), 3u);
  auto first = q.pop_front();
  EXPECT_EQ(first.entries, 0u);
  EXPECT_EQ(first.delta.remove_endpoints_size(), 0);
  EXPECT_TRUE(q.pop_front().upserts_endpoints);
  EXPECT_EQ(q.pop_front().delta.remove_endpoints_size(), 1);
}

}  // namespace
