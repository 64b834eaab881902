// The federation model against an in-memory etcd (fake_kv.hpp): VNIs per network across
// nodes, races (a competing node writes between our read and our transaction), pools and
// hold-down, blocks, gone-node release, reconcile after the store was wiped.
#include <gtest/gtest.h>

#include "federation/federation_store.hpp"
#include "tests/federation/fake_kv.hpp"

namespace vxfed::federation {
namespace {

using testing::FakeKv;

constexpr std::uint64_t kHour = 3600 * 1000;

PoolsRecord default_pools() {
  PoolsRecord p;
  p.pools = {vni::PoolSpec{"federation", {vni::Range{1000, 1002}}, {}},
             vni::PoolSpec{"gpu", {vni::Range{3000, 3099}}, {{"tier", "gpu"}}}};
  p.hold_down_ms = 300 * 1000;
  return p;
}

FederationOptions node_options(const std::string& name, const std::string& cluster = "cluster-a") {
  FederationOptions o;
  o.node = name;
  o.vtep = "198.18.0.1";
  o.cluster = cluster;
  o.pools = default_pools();
  o.block_release_after_ms = kHour;
  return o;
}

NetworkRequest red(const std::string& subnet = "10.244.0.0/16") { return NetworkRequest{"red", {}, 0, subnet, 24}; }

TEST(Blocks, PickSkipsTakenAndNamesTheNetworkWhenFull) {
  const Block subnet = *Block::parse("10.244.0.0/23");
  auto a = pick_block("red", subnet, 24, {});
  ASSERT_TRUE(a) << a.error();
  EXPECT_EQ(a->str(), "10.244.0.0/24");
  auto b = pick_block("red", subnet, 24, {*a, *Block::parse("10.245.0.0/24")});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->str(), "10.244.1.0/24");
  auto none = pick_block("red", subnet, 24, {*a, *b});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.code(), Code::exhausted);
  EXPECT_NE(none.error().find("network 'red'"), std::string::npos) << none.error();
  EXPECT_NE(none.error().find("10.244.0.0/23"), std::string::npos) << none.error();
  EXPECT_FALSE(pick_block("red", subnet, 22, {}));  // blocks larger than the subnet
  EXPECT_EQ(parse_block_key("10.244.1.0_24")->str(), "10.244.1.0/24");
  EXPECT_FALSE(Block::parse("10.244.1.1/24"));       // host bits
}

TEST(Blocks, ANodesBlocksAreThoseNamingItAndExhaustionCountsBlocks) {
  const std::vector<KeyValue> range{{"v1/blocks/red/10.244.0.32_28", "node-a1"},
                                    {"v1/blocks/red/10.244.0.16_28", "node-a2"},
                                    {"v1/blocks/red/10.244.0.0_28", "node-a1"},
                                    {"v1/blocks/red/junk", "node-a1"}};
  const auto mine = blocks_owned_by(range, "node-a1");
  ASSERT_EQ(mine.size(), 2u);
  EXPECT_EQ(mine[0].str(), "10.244.0.0/28");  // lowest first
  EXPECT_EQ(mine[1].str(), "10.244.0.32/28");
  EXPECT_TRUE(blocks_owned_by(range, "node-a3").empty());
  // A /26 holds four /28s whoever owns them: one node with all four fills it.
  const Block subnet = *Block::parse("10.244.0.0/26");
  std::vector<Block> taken;
  for (int i = 0; i < 4; ++i) {
    auto b = pick_block("red", subnet, 28, taken);
    ASSERT_TRUE(b) << b.error();
    EXPECT_EQ(b->str(), "10.244.0." + std::to_string(16 * i) + "/28");
    taken.push_back(*b);
  }
  auto none = pick_block("red", subnet, 28, taken);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().find("every /28 block of subnet 10.244.0.0/26 is taken (4 blocks)"), std::string::npos)
      << none.error();
  // A freed block in the middle is the next one picked.
  taken.erase(taken.begin() + 1);
  EXPECT_EQ(pick_block("red", subnet, 28, taken)->str(), "10.244.0.16/28");
}

TEST(FederationStore, SameNetworkSameVniOnEveryNodeAndABlockEach) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1")), b(kv, node_options("node-a2")),
      c(kv, node_options("node-b1", "cluster-b"));
  auto ja = a.join(red(), 1000);
  ASSERT_TRUE(ja) << ja.error();
  EXPECT_EQ(ja->vni, 1000u);
  EXPECT_EQ(ja->pool, "federation");
  EXPECT_EQ(ja->block, "10.244.0.0/24");
  auto jb = b.join(red(), 1000);
  ASSERT_TRUE(jb) << jb.error();
  EXPECT_EQ(jb->vni, 1000u);
  EXPECT_EQ(jb->block, "10.244.1.0/24");
  auto jc = c.join(red("10.245.0.0/16"), 1000);  // the other cluster's subnet of the network
  ASSERT_TRUE(jc) << jc.error();
  EXPECT_EQ(jc->vni, 1000u);
  EXPECT_EQ(jc->block, "10.245.0.0/24");
  // Same node name, same block; nothing is written.
  const auto before = kv.dump();
  auto again = b.join(red(), 2000);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->block, "10.244.1.0/24");
  EXPECT_EQ(kv.dump(), before);
  auto other = a.join(NetworkRequest{"blue", {}, 0, "10.246.0.0/16", 24}, 1000);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->vni, 1001u);
}

TEST(FederationStore, ANodeCreatingTheSameNetworkFirstWinsTheRace) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1")), b(kv, node_options("node-b1"));
  // a takes VNI 1000 for "other" first, then b's creation of red loses the race for 1000 too:
  // between b's read and b's transaction, a creates red.
  ASSERT_TRUE(a.join(NetworkRequest{"other", {}, 0, "10.250.0.0/16", 24}, 1));
  kv.before_txn = [&] {
    auto won = a.join(red(), 1);
    ASSERT_TRUE(won) << won.error();
    EXPECT_EQ(won->vni, 1001u);
  };
  auto lost = b.join(red(), 1);
  ASSERT_TRUE(lost) << lost.error();
  EXPECT_EQ(lost->vni, 1001u);   // a's VNI: the same network gets the same VNI
  EXPECT_EQ(lost->block, "10.244.1.0/24");
  EXPECT_EQ(kv.dump(keys::vnis()).size(), 2u);
}

TEST(FederationStore, TwoNetworksRacingForOneVniGetTwo) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1")), b(kv, node_options("node-b1"));
  kv.before_txn = [&] { ASSERT_TRUE(a.join(NetworkRequest{"blue", {}, 0, "10.246.0.0/16", 24}, 1)); };
  auto r = b.join(red(), 1);
  ASSERT_TRUE(r) << r.error();
  auto blue = a.join(NetworkRequest{"blue", {}, 0, "10.246.0.0/16", 24}, 1);
  ASSERT_TRUE(blue);
  EXPECT_EQ(blue->vni, 1000u);
  EXPECT_EQ(r->vni, 1001u);
}

TEST(FederationStore, TwoNodesRacingForOneBlockGetTwo) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1")), b(kv, node_options("node-a2"));
  ASSERT_TRUE(a.join(NetworkRequest{"red", {}, 0, "10.244.0.0/16", 24}, 1));
  FederationStore c(kv, node_options("node-a3"));
  // b has read the network and the free blocks; c claims 10.244.1.0/24 first.
  kv.before_txn = [&] { ASSERT_TRUE(c.join(red(), 1)); };
  auto rb = b.join(red(), 1);
  ASSERT_TRUE(rb) << rb.error();
  EXPECT_EQ(rb->block, "10.244.2.0/24");
  EXPECT_EQ(kv.dump(keys::blocks("red")).size(), 3u);
}

TEST(FederationStore, PoolsLabelsPinsAndExhaustion) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1"));
  auto gpu = a.join(NetworkRequest{"train", {{"tier", "gpu"}}, 0, "10.30.0.0/16", 24}, 1);
  ASSERT_TRUE(gpu) << gpu.error();
  EXPECT_EQ(gpu->vni, 3000u);
  EXPECT_EQ(gpu->pool, "gpu");
  auto pinned = a.join(NetworkRequest{"pinned", {}, 5000, "10.31.0.0/16", 24}, 1);
  ASSERT_TRUE(pinned) << pinned.error();
  EXPECT_EQ(pinned->vni, 5000u);
  EXPECT_EQ(pinned->pool, "");
  auto clash = a.join(NetworkRequest{"clash", {}, 5000, "10.32.0.0/16", 24}, 1);
  ASSERT_FALSE(clash);
  EXPECT_EQ(clash.code(), Code::conflict);
  EXPECT_NE(clash.error().find("pinned"), std::string::npos) << clash.error();
  // Another node pinning "pinned" differently is told, not given a second VNI.
  FederationStore b(kv, node_options("node-b1"));
  auto repin = b.join(NetworkRequest{"pinned", {}, 5001, "10.31.0.0/16", 24}, 1);
  ASSERT_FALSE(repin);
  EXPECT_NE(repin.error().find("has VNI 5000"), std::string::npos) << repin.error();
  for (const char* n : {"n1", "n2", "n3"}) ASSERT_TRUE(a.join(NetworkRequest{n, {}, 0, "10.40.0.0/16", 24}, 1));
  auto full = a.join(NetworkRequest{"n4", {}, 0, "10.40.0.0/16", 24}, 1);
  ASSERT_FALSE(full);
  EXPECT_EQ(full.code(), Code::exhausted);
  EXPECT_NE(full.error().find("pool 'federation' is exhausted"), std::string::npos) << full.error();
}

TEST(FederationStore, BlockLengthIsTheFederationsAndBlocksRunOut) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1")), b(kv, node_options("node-a2")), c(kv, node_options("node-a3"));
  ASSERT_TRUE(a.join(NetworkRequest{"small", {}, 0, "10.50.0.0/23", 24}, 1));
  auto mismatch = b.join(NetworkRequest{"small", {}, 0, "10.50.0.0/23", 25}, 1);
  ASSERT_FALSE(mismatch);
  EXPECT_EQ(mismatch.code(), Code::invalid);
  EXPECT_NE(mismatch.error().find("/24"), std::string::npos) << mismatch.error();
  ASSERT_TRUE(b.join(NetworkRequest{"small", {}, 0, "10.50.0.0/23", 24}, 1));
  auto none = c.join(NetworkRequest{"small", {}, 0, "10.50.0.0/23", 24}, 1);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.code(), Code::exhausted);
  EXPECT_NE(none.error().find("network 'small'"), std::string::npos) << none.error();
}

TEST(FederationStore, TheLastNodeOutReleasesTheVniWithHoldDown) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1")), b(kv, node_options("node-a2"));
  ASSERT_TRUE(a.join(red(), 1000));
  ASSERT_TRUE(b.join(red(), 1000));
  ASSERT_TRUE(a.leave("red", 2000));
  EXPECT_EQ(kv.dump(keys::networks()).size(), 1u);           // b still uses it
  EXPECT_EQ(kv.dump(keys::blocks("red")).size(), 1u);        // a's block is free
  ASSERT_TRUE(b.leave("red", 3000));
  EXPECT_TRUE(kv.dump(keys::networks()).empty());
  ASSERT_EQ(kv.dump(keys::vnis()).count(keys::vni(1000)), 1u);
  EXPECT_NE(kv.dump()[keys::vni(1000)].find("\"held\""), std::string::npos);
  // Held: another network gets the next VNI; the same name gets its own back.
  auto blue = a.join(NetworkRequest{"blue", {}, 0, "10.246.0.0/16", 24}, 4000);
  ASSERT_TRUE(blue);
  EXPECT_EQ(blue->vni, 1001u);
  auto back = b.join(red(), 5000);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->vni, 1000u);
  // After the hold-down a released VNI is free for anyone.
  ASSERT_TRUE(b.leave("red", 6000));
  ASSERT_TRUE(a.expire_hold_downs(6000 + 299 * 1000));
  EXPECT_EQ(kv.dump(keys::vnis()).count(keys::vni(1000)), 1u);
  ASSERT_TRUE(a.expire_hold_downs(6000 + 300 * 1000));
  EXPECT_EQ(kv.dump(keys::vnis()).count(keys::vni(1000)), 0u);
}

TEST(FederationStore, UnavailableNamesTheStore) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1"));
  kv.down = true;
  auto r = a.join(red(), 1);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.code(), Code::unavailable);
  EXPECT_NE(r.error().find("fake etcd"), std::string::npos) << r.error();
  kv.down = false;
  EXPECT_TRUE(a.join(red(), 1));
}

TEST(FederationStore, GoneNodesKeepTheirBlocksForTheReleaseTime) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1")), b(kv, node_options("node-a2"));
  ASSERT_TRUE(a.register_node(0));
  ASSERT_TRUE(b.register_node(0));
  ASSERT_TRUE(a.join(red(), 0));
  auto jb = b.join(red(), 0);
  ASSERT_TRUE(jb);
  ASSERT_TRUE(b.join(NetworkRequest{"only-b", {}, 0, "10.60.0.0/16", 24}, 0));
  kv.expire_lease(b.lease());   // b stops (its registration's lease runs out)
  auto none = a.collect_gone_nodes(10);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, 0u);
  EXPECT_NE(kv.dump()[keys::node("node-a2")].find("\"gone_since_unix_ms\":10"), std::string::npos);
  ASSERT_TRUE(a.collect_gone_nodes(10 + kHour - 1));
  EXPECT_EQ(kv.dump(keys::blocks("red")).size(), 2u);
  auto released = a.collect_gone_nodes(10 + kHour);
  ASSERT_TRUE(released) << released.error();
  EXPECT_EQ(*released, 1u);
  EXPECT_EQ(kv.dump(keys::blocks("red")).size(), 1u);
  EXPECT_TRUE(kv.dump(keys::node_networks("node-a2")).empty());
  EXPECT_EQ(kv.dump(keys::nodes()).count(keys::node("node-a2")), 0u);
  // only-b had no other user: released, held down.
  EXPECT_EQ(kv.dump(keys::networks()).count(keys::network("only-b")), 0u);
  // A new node gets the freed block.
  FederationStore c(kv, node_options("node-a3"));
  auto jc = c.join(red(), 10 + kHour);
  ASSERT_TRUE(jc);
  EXPECT_EQ(jc->block, jb->block);
}

TEST(FederationStore, OneNodeAtATimeIsTheCollector) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1")), b(kv, node_options("node-a2"));
  auto unregistered = a.collector();
  ASSERT_TRUE(unregistered);
  EXPECT_FALSE(*unregistered);
  ASSERT_TRUE(a.register_node(0));
  ASSERT_TRUE(b.register_node(0));
  EXPECT_TRUE(*a.collector());
  EXPECT_FALSE(*b.collector());
  EXPECT_TRUE(*a.collector());   // keeps it
  kv.expire_lease(a.lease());    // a stops: the role goes with its lease
  EXPECT_TRUE(*b.collector());
  ASSERT_TRUE(a.keep_alive(1));  // a back (a new lease): b keeps the role
  EXPECT_FALSE(*a.collector());
}

TEST(FederationStore, ANodeBackBeforeTheReleaseTimeKeepsEverything) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1")), b(kv, node_options("node-a2"));
  ASSERT_TRUE(a.register_node(0));
  ASSERT_TRUE(b.register_node(0));
  auto jb = b.join(red(), 0);
  ASSERT_TRUE(jb);
  kv.expire_lease(b.lease());
  ASSERT_TRUE(a.collect_gone_nodes(10));
  ASSERT_TRUE(b.keep_alive(20));    // the lease is gone: registers again
  EXPECT_NE(kv.dump()[keys::node("node-a2")].find("\"gone_since_unix_ms\":0"), std::string::npos);
  auto none = a.collect_gone_nodes(10 + 2 * kHour);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, 0u);
  auto again = b.join(red(), 30);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->block, jb->block);
}

TEST(FederationStore, AWipedStoreIsRebuiltFromTheNodesLocalCopies) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1")), b(kv, node_options("node-b1", "cluster-b"));
  std::vector<Membership> local_a, local_b;
  for (const char* n : {"red", "blue"}) {
    auto m = a.join(NetworkRequest{n, {}, 0, std::string(n) == "red" ? "10.244.0.0/16" : "10.246.0.0/16", 24}, 1);
    ASSERT_TRUE(m);
    local_a.push_back(*m);
  }
  ASSERT_TRUE(a.join(NetworkRequest{"pinned", {}, 5000, "10.31.0.0/16", 26}, 1));
  local_a.push_back(*a.join(NetworkRequest{"pinned", {}, 5000, "10.31.0.0/16", 26}, 1));
  for (const char* n : {"blue", "red"}) {
    auto m = b.join(NetworkRequest{n, {}, 0, std::string(n) == "red" ? "10.245.0.0/16" : "10.247.0.0/16", 24}, 1);
    ASSERT_TRUE(m);
    local_b.push_back(*m);
  }
  auto relevant = [&] {
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : kv.dump()) {
      if (k.rfind(keys::nodes(), 0) == 0 || k.rfind(keys::alives(), 0) == 0) continue;
      if (k.rfind(keys::networks(), 0) == 0) {  // who re-created it and when may differ
        auto r = decode_network(KeyValue{k, v});
        EXPECT_TRUE(r);
        std::string labels;
        for (const auto& [lk, lv] : r->labels) labels += lk + "=" + lv + ",";
        out[k] = std::to_string(r->vni) + " " + r->pool + " /" + std::to_string(r->block_len) + " " + labels;
        continue;
      }
      out[k] = v;
    }
    return out;
  };
  const auto before = relevant();
  kv.wipe();
  auto ra = a.reconcile(local_a, 100);
  ASSERT_TRUE(ra) << ra.error();
  EXPECT_TRUE(ra->conflicts.empty()) << ra->conflicts.front();
  auto rb = b.reconcile(local_b, 100);
  ASSERT_TRUE(rb) << rb.error();
  EXPECT_TRUE(rb->conflicts.empty()) << rb->conflicts.front();
  EXPECT_EQ(relevant(), before);
  // And it keeps working: a new network does not reuse a rebuilt VNI.
  auto next = a.join(NetworkRequest{"green", {}, 0, "10.248.0.0/16", 24}, 200);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->vni, 1002u);
  local_a.push_back(*next);
  // Reconciling again changes nothing.
  const auto settled = kv.dump();
  auto quiet = a.reconcile(local_a, 300);
  ASSERT_TRUE(quiet);
  EXPECT_EQ(quiet->restored, 0u);
  EXPECT_EQ(kv.dump(), settled);
}

TEST(FederationStore, ReconcileReportsDisagreementAndNeverOverwrites) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1"));
  auto m = a.join(red(), 1);
  ASSERT_TRUE(m);
  Membership stale = *m;
  stale.vni = 1002;   // the node's copy says otherwise (e.g. the store was restored from an old backup)
  const auto before = kv.dump();
  auto r = a.reconcile({stale}, 2);
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->conflicts.size(), 1u);
  EXPECT_NE(r->conflicts[0].find("VNI 1000 in the federation store but VNI 1002"), std::string::npos) << r->conflicts[0];
  EXPECT_EQ(kv.dump(), before);
  // A block of the node's copy that another node owns in the store.
  FederationStore b(kv, node_options("node-a2"));
  ASSERT_TRUE(b.join(red(), 1));
  Membership wrong = *m;
  wrong.block = "10.244.1.0/24";
  FederationStore a2(kv, node_options("node-a9"));
  auto r2 = a2.reconcile({wrong}, 3);
  ASSERT_TRUE(r2);
  ASSERT_EQ(r2->conflicts.size(), 1u);
  EXPECT_NE(r2->conflicts[0].find("belongs to node 'node-a2'"), std::string::npos) << r2->conflicts[0];
}

TEST(FederationStore, ReconcileLeavesNetworksTheNodeDroppedWhileTheStoreWasAway) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1"));
  auto red_m = a.join(red(), 1);
  ASSERT_TRUE(red_m);
  ASSERT_TRUE(a.join(NetworkRequest{"blue", {}, 0, "10.246.0.0/16", 24}, 1));
  auto r = a.reconcile({*red_m}, 2);   // blue was removed locally
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->left, 1u);
  EXPECT_EQ(kv.dump(keys::networks()).count(keys::network("blue")), 0u);
  EXPECT_TRUE(kv.dump(keys::blocks("blue")).empty());
  EXPECT_EQ(kv.dump(keys::networks()).count(keys::network("red")), 1u);
}

TEST(FederationStore, DamagedRecordsAreReportedByKey) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1"));
  kv.put(keys::network("red"), "{not json");
  auto r = a.join(red(), 1);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("v1/networks/red is damaged"), std::string::npos) << r.error();
  kv.put(keys::pools(), R"({"pools":[{"name":"p","ranges":["5-1"]}]})");
  auto p = a.pools();
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().find("v1/pools"), std::string::npos) << p.error();
}

TEST(FederationStore, ThePoolsAreSeededOnceAndTheStoresWin) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1"));
  ASSERT_TRUE(a.pools());
  FederationOptions other = node_options("node-b1");
  other.pools.pools = {vni::PoolSpec{"elsewhere", {vni::Range{7000, 7001}}, {}}};
  FederationStore b(kv, other);
  auto p = b.pools();
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, default_pools());
  auto m = b.join(red(), 1);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->vni, 1000u);
}

TEST(FederationStore, ANodeWithFullBlocksClaimsMoreAndGivesThemBack) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1")), b(kv, node_options("node-a2"));
  const NetworkRequest small{"red", {}, 0, "10.244.0.0/26", 28};
  auto ja = a.join(small, 1);
  ASSERT_TRUE(ja) << ja.error();
  EXPECT_EQ(ja->block, "10.244.0.0/28");
  ASSERT_TRUE(b.join(small, 1));                       // 10.244.0.16/28
  auto more = a.claim_more("red", "10.244.0.0/26");
  ASSERT_TRUE(more) << more.error();
  EXPECT_EQ(*more, "10.244.0.32/28");
  EXPECT_EQ(kv.dump()["v1/blocks/red/10.244.0.32_28"], "node-a1");
  EXPECT_EQ(kv.dump()[keys::node_network("node-a1", "red")], "10.244.0.0/28");  // the first block stays the membership's
  // b has read the free blocks; a claims the last one first: b's transaction fails, it reads
  // again and finds the subnet full.
  kv.before_txn = [&] { ASSERT_TRUE(a.claim_more("red", "10.244.0.0/26")); };
  auto full = b.claim_more("red", "10.244.0.0/26");
  ASSERT_FALSE(full);
  EXPECT_EQ(full.code(), Code::exhausted);
  EXPECT_NE(full.error().find("network 'red'"), std::string::npos) << full.error();
  EXPECT_NE(full.error().find("10.244.0.0/26"), std::string::npos) << full.error();
  EXPECT_EQ(kv.dump()["v1/blocks/red/10.244.0.48_28"], "node-a1");
  // Given back (a's copy no longer has it): the next reconcile releases it, b can claim it.
  auto ma = *a.join(small, 1);
  ma.more_blocks = {"10.244.0.48/28"};
  auto back = a.reconcile({ma}, 2);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->released, 1u);
  EXPECT_EQ(kv.dump(keys::blocks("red")).count("v1/blocks/red/10.244.0.32_28"), 0u);
  EXPECT_EQ(kv.dump()["v1/blocks/red/10.244.0.16_28"], "node-a2");  // b's: untouched
  auto again = b.claim_more("red", "10.244.0.0/26");
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(*again, "10.244.0.32/28");
  // Not a member: nothing to claim more of.
  FederationStore c(kv, node_options("node-a3"));
  auto outsider = c.claim_more("red", "10.244.0.0/26");
  ASSERT_FALSE(outsider);
  EXPECT_EQ(outsider.code(), Code::not_found);
  // Leaving frees every block the node has; the network stays b's.
  ASSERT_TRUE(a.leave("red", 2));
  const auto left = kv.dump(keys::blocks("red"));
  ASSERT_EQ(left.size(), 2u);
  for (const auto& [k, v] : left) EXPECT_EQ(v, "node-a2") << k;
}

TEST(FederationStore, AGoneNodeLosesEveryBlockAndReconcileKeepsTheCopysBlocks) {
  FakeKv kv;
  FederationStore a(kv, node_options("node-a1")), b(kv, node_options("node-a2"));
  ASSERT_TRUE(a.register_node(0));
  ASSERT_TRUE(b.register_node(0));
  const NetworkRequest small{"red", {}, 0, "10.244.0.0/24", 28};
  auto ja = a.join(small, 0);
  ASSERT_TRUE(ja);
  ASSERT_TRUE(b.join(small, 0));
  ASSERT_TRUE(b.claim_more("red", "10.244.0.0/24"));
  ASSERT_TRUE(b.claim_more("red", "10.244.0.0/24"));
  auto a_more = a.claim_more("red", "10.244.0.0/24");   // 10.244.0.64/28
  ASSERT_TRUE(a_more);
  auto a_crashed = a.claim_more("red", "10.244.0.0/24");  // claimed, then a crashed before saving it
  ASSERT_TRUE(a_crashed);
  EXPECT_EQ(kv.dump(keys::blocks("red")).size(), 6u);
  // The store wiped: a's copy (its first block and the one further block it kept) comes back
  // as it is; the block it never saved is not in the store to begin with.
  kv.wipe();
  Membership local = *ja;
  local.more_blocks = {*a_more};
  auto rebuilt = a.reconcile({local}, 1);
  ASSERT_TRUE(rebuilt) << rebuilt.error();
  EXPECT_TRUE(rebuilt->conflicts.empty());
  EXPECT_EQ(kv.dump()["v1/blocks/red/10.244.0.0_28"], "node-a1");
  EXPECT_EQ(kv.dump()["v1/blocks/red/10.244.0.64_28"], "node-a1");
  // A further block the store gives a and its copy lacks is released at the next reconcile.
  ASSERT_TRUE(a.claim_more("red", "10.244.0.0/24"));
  auto cleaned = a.reconcile({local}, 2);
  ASSERT_TRUE(cleaned) << cleaned.error();
  EXPECT_EQ(cleaned->released, 1u);
  EXPECT_EQ(blocks_owned_by([&] {
              std::vector<KeyValue> r;
              for (const auto& [k, v] : kv.dump(keys::blocks("red"))) r.push_back(KeyValue{k, v});
              return r;
            }(), "node-a1").size(), 2u);
  // b (not in the rebuilt store yet) re-asserts its three; then it goes away for good.
  ASSERT_TRUE(b.register_node(3));
  ASSERT_TRUE(b.join(small, 3));
  ASSERT_TRUE(b.claim_more("red", "10.244.0.0/24"));
  ASSERT_TRUE(a.register_node(3));
  kv.expire_lease(b.lease());
  ASSERT_TRUE(a.collect_gone_nodes(10));
  auto released = a.collect_gone_nodes(10 + kHour);
  ASSERT_TRUE(released) << released.error();
  EXPECT_EQ(*released, 1u);
  for (const auto& [k, v] : kv.dump(keys::blocks("red"))) EXPECT_EQ(v, "node-a1") << k;
  EXPECT_EQ(kv.dump(keys::blocks("red")).size(), 2u);
}

}  // namespace
// The registration says whether the node takes VXLAN-GBP (docs/federation.md, "Nodes"); the
// previous release's records have no such field and read as false; a wrong type is refused.
TEST(FederationStore, RegistrationRecordsWhetherTheNodeTakesGbp) {
  FakeKv kv;
  auto with_gbp = node_options("node-a1");
  with_gbp.gbp = true;
  FederationStore a(kv, with_gbp), b(kv, node_options("node-a2"));
  ASSERT_TRUE(a.register_node(5));
  ASSERT_TRUE(b.register_node(5));
  const auto dump = kv.dump();
  auto a_record = decode_node(KeyValue{keys::node("node-a1"), dump.at(keys::node("node-a1"))});
  ASSERT_TRUE(a_record) << a_record.error();
  EXPECT_TRUE(a_record->gbp);
  EXPECT_NE(dump.at(keys::node("node-a1")).find("\"gbp\":true"), std::string::npos);
  auto b_record = decode_node(KeyValue{keys::node("node-a2"), dump.at(keys::node("node-a2"))});
  ASSERT_TRUE(b_record) << b_record.error();
  EXPECT_FALSE(b_record->gbp);
  // A gone node's record keeps the field when the collector rewrites it.
  kv.expire_lease(a.lease());
  ASSERT_TRUE(b.collect_gone_nodes(10));
  auto gone = decode_node(KeyValue{keys::node("node-a1"), kv.dump().at(keys::node("node-a1"))});
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->gone_since_unix_ms, 10u);
  EXPECT_TRUE(gone->gbp);
  // The previous release's record: no field, no GBP.
  auto old = decode_node(KeyValue{"v1/nodes/old",
                                  R"({"vtep":"198.18.0.9","cluster":"c","registered_unix_ms":1,"gone_since_unix_ms":0})"});
  ASSERT_TRUE(old) << old.error();
  EXPECT_FALSE(old->gbp);
  auto bad = decode_node(KeyValue{"v1/nodes/bad",
                                  R"({"vtep":"198.18.0.9","cluster":"c","registered_unix_ms":1,"gone_since_unix_ms":0,"gbp":"yes"})"});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("gbp"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("v1/nodes/bad"), std::string::npos) << bad.error();
}

}  // namespace vxfed::federation
