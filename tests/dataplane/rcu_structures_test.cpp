// The in-place structures under the forwarding tables: RcuMap64 and LpmTable against plain
// references over random operations, and the rule that makes concurrent readers safe — what
// a reader may still hold (an erased map slot, a second-level LPM group, a table entry) is not
// reused before the Reclaimer's grace period. A "reader" here is the test holding the pointers
// while it makes the writer change things; a Reclaimer that only frees when told stands for
// the grace period.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <unordered_map>
#include <vector>

#include "dataplane/core/lpm_table.hpp"
#include "dataplane/core/rcu_map.hpp"
#include "dataplane/core/tables.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

// Frees only when end_grace_period() is called: until then, every reader is "still reading".
class HeldReclaimer final : public dp::Reclaimer {
 public:
  void defer(std::function<void()> f) override { pending_.push_back(std::move(f)); }
  void synchronize() override { end_grace_period(); }
  void end_grace_period() {
    auto due = std::move(pending_);
    pending_.clear();
    for (auto& f : due) f();
  }
  std::size_t pending() const { return pending_.size(); }

 private:
  std::vector<std::function<void()>> pending_;
};

TEST(RcuMap, MatchesAHashMapOverRandomOperations) {
  std::mt19937 rng(5);
  dp::RcuMap64<std::uint64_t> map;
  std::unordered_map<std::uint64_t, std::uint64_t> ref;
  dp::ImmediateReclaimer r;
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t key = rng() % 3000;
    if (rng() % 3 == 0) {
      EXPECT_EQ(map.erase(key), ref.erase(key) == 1);
    } else {
      const std::uint64_t v = rng();
      map.assign(key, v, r);
      ref[key] = v;
    }
    if (i % 97 == 0) map.retire(r);
  }
  EXPECT_EQ(map.size(), ref.size());
  for (std::uint64_t key = 0; key < 3000; ++key) {
    auto it = ref.find(key);
    ASSERT_EQ(map.get(key).has_value(), it != ref.end()) << key;
    if (it != ref.end()) {
      EXPECT_EQ(*map.get(key), it->second);
    }
  }
  std::size_t n = 0;
  map.for_each([&](std::uint64_t k, std::uint64_t v) {
    EXPECT_EQ(ref.at(k), v);
    ++n;
  });
  EXPECT_EQ(n, ref.size());
  EXPECT_LE(map.capacity(), 4 * 2 * ref.size() + 16) << "erased slots are reused: the map does not grow without end";
}

TEST(RcuMap, ErasedSlotsAreReusedOnlyAfterTheGracePeriod) {
  HeldReclaimer r;
  dp::RcuMap64<std::uint32_t> map;  // 16 slots, rebuilt beyond 8 used
  for (std::uint64_t k = 0; k < 7; ++k) map.assign(k, 1, r);
  for (std::uint64_t k = 0; k < 7; ++k) map.erase(k);
  map.retire(r);
  EXPECT_EQ(r.pending(), 1u);
  // Readers may still be on the 7 erased slots: new keys must not take them, so the map is
  // rebuilt into a new slot array instead (the old one freed after the grace period).
  for (std::uint64_t k = 0; k < 7; ++k) map.assign(k, 2, r);
  EXPECT_EQ(r.pending(), 2u) << "a rebuild: the old slot array waits for the grace period";
  r.end_grace_period();
  for (std::uint64_t k = 0; k < 7; ++k) EXPECT_EQ(map.get(k), 2u);
  // After a grace period the keys take their erased slots again: no rebuild.
  for (std::uint64_t k = 0; k < 7; ++k) map.erase(k);
  map.retire(r);
  r.end_grace_period();
  for (std::uint64_t k = 0; k < 7; ++k) map.assign(k, 3, r);
  EXPECT_EQ(r.pending(), 0u);
  for (std::uint64_t k = 0; k < 7; ++k) EXPECT_EQ(map.get(k), 3u);
}

// Longest-prefix match by brute force over a rule list.
std::uint32_t brute_lpm(const std::map<std::pair<std::uint32_t, int>, std::uint32_t>& rules, std::uint32_t ip) {
  int best = -1;
  std::uint32_t value = dp::LpmTable::kNone;
  for (const auto& [p, v] : rules) {
    const std::uint32_t mask = p.second == 0 ? 0 : ~0u << (32 - p.second);
    if ((ip & mask) == p.first && p.second > best) {
      best = p.second;
      value = v;
    }
  }
  return value;
}

// Every change is checked by brute force: the prefix id each address resolves to and the
// answer its entry carries (each prefix's current answer, which set_answer changes).
TEST(LpmTable, InsertEraseAndAnswersMatchBruteForce) {
  std::mt19937 rng(11);
  dp::LpmTable lpm;
  dp::ImmediateReclaimer r;
  std::vector<std::uint8_t> depth(4096);
  std::vector<std::uint32_t> answer(4096);
  std::map<std::pair<std::uint32_t, int>, std::uint32_t> rules;  // (addr, len) -> value
  const int lens[] = {8, 12, 16, 20, 23, 24, 25, 26, 28, 30, 31, 32};
  std::uint32_t next_value = 0;
  auto longest_shorter = [&](std::uint32_t addr, int len) {
    for (int l = len - 1; l >= 0; --l) {
      const std::uint32_t mask = l == 0 ? 0 : ~0u << (32 - l);
      if (auto it = rules.find({addr & mask, l}); it != rules.end()) return it->second;
    }
    return dp::LpmTable::kNone;
  };
  for (int i = 0; i < 3000; ++i) {
    const int len = lens[rng() % 12];
    const std::uint32_t mask = ~0u << (32 - len);
    const std::uint32_t addr = ((10u << 24) | (rng() & 0x0003ffff)) & mask;  // 10.0.0.0/14: overlaps
    if (auto it = rules.find({addr, len}); it != rules.end()) {
      const std::uint32_t v = it->second;
      if (rng() % 3 == 0) {  // the prefix's answer changes (a route's next hops, an endpoint)
        answer[v] = static_cast<std::uint32_t>(rng());
        lpm.set_answer(addr, static_cast<std::uint8_t>(len), v, answer[v]);
        continue;
      }
      rules.erase(it);
      const std::uint32_t parent = longest_shorter(addr, len);
      lpm.erase(addr, static_cast<std::uint8_t>(len), v, parent, parent == dp::LpmTable::kNone ? 0 : answer[parent], r);
    } else {
      const std::uint32_t v = next_value++;
      depth[v] = static_cast<std::uint8_t>(len);
      answer[v] = static_cast<std::uint32_t>(rng());
      ASSERT_TRUE(lpm.insert(addr, static_cast<std::uint8_t>(len), v, answer[v], depth.data()));
      rules[{addr, len}] = v;
    }
    if (i % 50 == 0)
      for (int k = 0; k < 200; ++k) {
        const std::uint32_t ip = (10u << 24) | (rng() & 0x0003ffff);
        const std::uint32_t want = brute_lpm(rules, ip);
        const std::uint64_t e = dp::LpmTable::lookup_in(lpm.tbl24(), lpm.tbl8(), ip);
        ASSERT_EQ(dp::LpmTable::value_of(e), want) << "after " << i << " changes, ip " << std::hex << ip;
        ASSERT_EQ(dp::LpmTable::answer_of(e), want == dp::LpmTable::kNone ? 0 : answer[want])
            << "after " << i << " changes, ip " << std::hex << ip;
        // The first level's mirror: the answer where the first level holds a prefix, 0 where
        // it points at a group (the burst loop then reads the entry).
        const std::uint64_t first = lpm.tbl24()[ip >> 8];
        const bool group = static_cast<std::uint32_t>(first) & (1u << 31);
        ASSERT_EQ(dp::LpmTable::answer_in(lpm.answers24(), ip), group ? 0 : dp::LpmTable::answer_of(e))
            << "after " << i << " changes, ip " << std::hex << ip;
      }
  }
  for (const auto& [p, v] : rules)
    lpm.erase(p.first, static_cast<std::uint8_t>(p.second), v, dp::LpmTable::kNone, 0, r);
  EXPECT_EQ(lpm.groups(), 0u) << "every second-level group is released once no prefix needs it";
  for (std::uint32_t b = (10u << 16); b < (10u << 16) + (1u << 10); ++b)
    ASSERT_EQ(lpm.answers24()[b], 0u) << "an emptied table mirrors no answer: block " << std::hex << b;
}

TEST(LpmTable, ASecondLevelGroupIsReusedOnlyAfterTheGracePeriod) {
  dp::LpmTable lpm;
  HeldReclaimer r;
  std::uint8_t depth[8] = {24, 32, 32};
  ASSERT_TRUE(lpm.insert(0x0a010200, 24, 0, 100, depth));
  ASSERT_TRUE(lpm.insert(0x0a010201, 32, 1, 101, depth));
  // A reader holds the group of 10.1.2.0/24 (it read the first level before the erase).
  const std::uint64_t first = lpm.tbl24()[0x0a0102];
  ASSERT_TRUE(first & (1u << 31));
  const std::uint64_t* group = lpm.tbl8() + ((static_cast<std::uint32_t>(first) & ~(1u << 31)) << 8);
  lpm.erase(0x0a010201, 32, 1, 0, 100, r);
  EXPECT_EQ(lpm.lookup(0x0a010201), 0u);
  EXPECT_EQ(lpm.tbl24()[0x0a0102], (std::uint64_t{100} << 32) | 1u)
      << "the first level holds the cover again, with its answer";
  // Another block needs a group now: not the one the reader holds.
  ASSERT_TRUE(lpm.insert(0x0a050501, 32, 2, 102, depth));
  EXPECT_NE(lpm.tbl24()[0x0a0505], first) << "the held group is not handed to another block yet";
  for (int i = 0; i < 256; ++i)
    ASSERT_EQ(group[i], (std::uint64_t{100} << 32) | 1u) << "the held group answers for 10.1.2.0/24 still: " << i;
  r.end_grace_period();
  EXPECT_EQ(lpm.groups(), 1u);
}

// The forwarding tables: what a worker holds while a Delta removes it stays intact until the
// grace period ends, and no index it holds is handed to a new entry before then.
TEST(TablesInPlace, WhatAReaderHoldsOutlivesTheDeltaThatRemovesIt) {
  VXFED_REQUIRE_EAL();
  Node node;
  auto ctx = node.context();
  auto built = node.build(sample_tables());
  ASSERT_TRUE(built.ok()) << built.error();
  auto& t = **built;
  HeldReclaimer r;
  // The reader's view: pod1's port entry and network, the route to 10.246.0.0/16's group and
  // VTEP, the endpoint answer for pod2.
  const dp::PodPortEntry* pod = t.pod_port(kPod1);
  ASSERT_NE(pod, nullptr);
  const dp::PodPortEntry pod_copy = *pod;
  const dp::NetworkEntry* net = &t.network(pod->network);
  const dp::NetworkEntry net_copy = *net;
  const auto d = t.resolve(pod->network, htonl(ip("10.246.1.1")));
  ASSERT_NE(d.group, nullptr);
  const dp::NextHopGroup group_copy = *d.group;
  const std::uint32_t vtep_index = t.pick(*d.group, 0);
  const std::uint32_t vtep_ip = t.vtep(vtep_index).ip_be;
  // Remove network A (its endpoints and routes go with it), then add new ones.
  dataplane::v1::Delta gone;
  gone.add_remove_networks(kVniA);
  ASSERT_TRUE(t.apply(gone, ctx, r).ok());
  EXPECT_EQ(t.pod_port(kPod1), nullptr);
  EXPECT_EQ(t.network_by_vni(kVniA), nullptr);
  dataplane::v1::Delta fresh;
  auto* n = fresh.mutable_upsert()->add_networks();
  n->set_vni(3003);
  n->set_gateway_ip("10.77.0.1");
  for (int i = 0; i < 20; ++i) {
    auto* rt = fresh.mutable_upsert()->add_routes();
    rt->set_vni(3003);
    rt->set_prefix("10.77." + std::to_string(i) + ".0/24");
    rt->add_next_hops()->set_vtep("198.18.7." + std::to_string(i + 1));
  }
  auto* e = fresh.mutable_upsert()->add_endpoints();
  e->set_id("new");
  e->set_vni(3003);
  e->set_ip("10.77.100.1");
  e->set_mac("02:cc:00:00:00:01");
  e->set_iface("pod1");
  ASSERT_TRUE(t.apply(fresh, ctx, r).ok());
  // Until the grace period: everything the reader held is as it was.
  EXPECT_EQ(pod->network, pod_copy.network);
  EXPECT_EQ(pod->ip_be, pod_copy.ip_be);
  EXPECT_EQ(pod->mac, pod_copy.mac);
  EXPECT_EQ(net->vni, net_copy.vni);
  EXPECT_EQ(net->gateway_ip_be, net_copy.gateway_ip_be);
  EXPECT_EQ(d.group->first, group_copy.first);
  EXPECT_EQ(d.group->count, group_copy.count);
  EXPECT_EQ(t.group_slots()[group_copy.first], vtep_index);
  EXPECT_EQ(t.vtep(vtep_index).ip_be, vtep_ip);
  EXPECT_NE(t.network_by_vni(3003)->index, net_copy.index) << "the removed network's index is not reused yet";
  r.end_grace_period();
  EXPECT_EQ(t.dump().networks_size(), 2);
}

TEST(TablesInPlace, DefaultRouteInPlace) {
  VXFED_REQUIRE_EAL();
  Node node;
  auto ctx = node.context();
  auto built = node.build(sample_tables());
  ASSERT_TRUE(built.ok()) << built.error();
  auto& t = **built;
  dp::ImmediateReclaimer r;
  const std::uint16_t a = t.network_by_vni(kVniA)->index, b = t.network_by_vni(kVniB)->index;
  auto via = [&](std::uint16_t net, const char* dst) -> std::string {
    const auto d = t.resolve(net, htonl(ip(dst)));
    if (d.endpoint) return "port " + std::to_string(d.endpoint->port);
    if (!d.group) return "none";
    return dp::ipv4_text(t.vtep(t.pick(*d.group, 0)).ip_be);
  };
  EXPECT_EQ(via(a, "192.0.2.1"), "none");
  dataplane::v1::Delta add;
  auto* rt = add.mutable_upsert()->add_routes();
  rt->set_vni(kVniB);
  rt->set_prefix("0.0.0.0/0");
  rt->add_next_hops()->set_vtep("198.18.0.7");
  ASSERT_TRUE(t.apply(add, ctx, r).ok());
  EXPECT_EQ(via(b, "192.0.2.1"), "198.18.0.7");
  EXPECT_EQ(via(b, "10.245.1.1"), "198.18.0.5") << "longer routes still win";
  EXPECT_EQ(via(a, "192.0.2.1"), "none") << "another VNI's default route";
  EXPECT_EQ(via(a, "10.244.1.11"), "port 2");
  EXPECT_EQ(via(a, "10.245.7.1").substr(0, 11), "198.18.0.3");
  dataplane::v1::Delta del;
  auto* k = del.add_remove_routes();
  k->set_vni(kVniB);
  k->set_prefix("0.0.0.0/0");
  ASSERT_TRUE(t.apply(del, ctx, r).ok());
  EXPECT_EQ(via(b, "192.0.2.1"), "none");
  EXPECT_EQ(via(b, "10.245.1.1"), "198.18.0.5");
  EXPECT_EQ(via(a, "10.245.7.1").substr(0, 11), "198.18.0.3");
}

}  // namespace
}  // namespace vxfed::test
