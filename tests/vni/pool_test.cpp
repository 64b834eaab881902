// Unit tests of the VNI allocator: allocate, release, hold-down, exhaustion, pinned VNIs and
// conflicts, label selection, range validation.
#include <gtest/gtest.h>

#include <set>

#include "vni/pool.hpp"

namespace {

using namespace vxfed::vni;

Allocator make(std::vector<PoolSpec> pools, std::uint64_t hold_ms = 1000) {
  auto a = Allocator::create(std::move(pools), hold_ms);
  EXPECT_TRUE(a.ok()) << a.error();
  return std::move(a).value();
}

PoolSpec pool(std::string name, std::uint32_t first, std::uint32_t last, Labels selector = {}) {
  return PoolSpec{std::move(name), {Range{first, last}}, std::move(selector)};
}

TEST(Range, Parses) {
  auto r = parse_range("1000-2000");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first, 1000u);
  EXPECT_EQ(r->last, 2000u);
  auto single = parse_range("7");
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->size(), 1u);
  EXPECT_FALSE(parse_range("10-x").ok());
  EXPECT_FALSE(parse_range("").ok());
  EXPECT_FALSE(parse_range("-5").ok());
}

TEST(Pools, RefuseReservedAndInvertedAndOverlappingRanges) {
  EXPECT_FALSE(Allocator::create({pool("a", 0, 10)}).ok()) << "0 is reserved";
  EXPECT_FALSE(Allocator::create({pool("a", 16777200, 16777215)}).ok()) << "2^24-1 is reserved";
  EXPECT_TRUE(Allocator::create({pool("a", 1, 16777214)}).ok());
  EXPECT_FALSE(Allocator::create({pool("a", 20, 10)}).ok());
  auto overlap = Allocator::create({pool("a", 1000, 2000), pool("b", 2000, 3000)});
  ASSERT_FALSE(overlap.ok());
  EXPECT_NE(overlap.error().find("overlap"), std::string::npos) << overlap.error();
  EXPECT_NE(overlap.error().find("'a'"), std::string::npos);
  EXPECT_NE(overlap.error().find("'b'"), std::string::npos);
  PoolSpec self{"s", {Range{10, 20}, Range{15, 30}}, {}};
  EXPECT_FALSE(Allocator::create({self}).ok()) << "overlap inside one pool";
  EXPECT_FALSE(Allocator::create({pool("a", 1, 2), pool("a", 3, 4)}).ok()) << "duplicate name";
  EXPECT_FALSE(Allocator::create({PoolSpec{"", {Range{1, 2}}, {}}}).ok());
  EXPECT_FALSE(Allocator::create({PoolSpec{"e", {}, {}}}).ok());
}

TEST(Allocate, GivesDistinctVnisInRangeAndIsIdempotent) {
  auto a = make({pool("federation", 1000, 2000)});
  std::set<std::uint32_t> seen;
  for (int i = 0; i < 1001; ++i) {
    auto r = a.allocate("net-" + std::to_string(i), {}, 0, 0);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_GE(r->vni, 1000u);
    EXPECT_LE(r->vni, 2000u);
    EXPECT_EQ(r->pool, "federation");
    EXPECT_EQ(r->state, State::allocated);
    EXPECT_TRUE(seen.insert(r->vni).second) << "VNI given twice: " << r->vni;
  }
  auto again = a.allocate("net-17", {}, 0, 0);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->vni, a.find_network("net-17")->vni);
  EXPECT_EQ(a.list().size(), 1001u);
}

TEST(Allocate, ExhaustionNamesThePool) {
  auto a = make({pool("tiny", 10, 12)});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a.allocate("n" + std::to_string(i), {}, 0, 0).ok());
  auto r = a.allocate("n3", {}, 0, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("'tiny'"), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("exhausted"), std::string::npos) << r.error();
}

TEST(Release, HoldsDownBeforeReuse) {
  auto a = make({pool("tiny", 10, 11)}, /*hold_ms=*/5000);
  auto x = a.allocate("x", {}, 0, 0);
  auto y = a.allocate("y", {}, 0, 0);
  ASSERT_TRUE(x.ok() && y.ok());
  auto held = a.release("x", 1000);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->state, State::held);
  EXPECT_EQ(held->held_until_ms, 6000u);
  EXPECT_EQ(a.find_network("x"), nullptr);
  auto early = a.allocate("z", {}, 0, 5999);
  ASSERT_FALSE(early.ok()) << "VNI " << early->vni << " reused during hold-down";
  EXPECT_NE(early.error().find("held down"), std::string::npos) << early.error();
  auto later = a.allocate("z", {}, 0, 6000);
  ASSERT_TRUE(later.ok()) << later.error();
  EXPECT_EQ(later->vni, x->vni);
  EXPECT_FALSE(a.release("nobody", 0).ok());
}

TEST(Release, SameNetworkReclaimsItsVniDuringHoldDown) {
  auto a = make({pool("p", 100, 200)}, 60000);
  auto first = a.allocate("red", {}, 0, 0);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(a.release("red", 10).ok());
  ASSERT_TRUE(a.allocate("blue", {}, 0, 20).ok());
  auto back = a.allocate("red", {}, 0, 30);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->vni, first->vni);
  EXPECT_EQ(back->state, State::allocated);
}

TEST(Release, ExpireForgetsOnlyEndedHoldDowns) {
  auto a = make({pool("p", 100, 200)}, 100);
  ASSERT_TRUE(a.allocate("a", {}, 0, 0).ok());
  ASSERT_TRUE(a.allocate("b", {}, 0, 0).ok());
  ASSERT_TRUE(a.release("a", 0).ok());
  ASSERT_TRUE(a.release("b", 50).ok());
  EXPECT_EQ(a.expire(120).size(), 1u);
  EXPECT_EQ(a.list().size(), 1u);
  EXPECT_EQ(a.expire(150).size(), 1u);
  EXPECT_TRUE(a.list().empty());
}

TEST(Pinned, ConflictsAreRefused) {
  auto a = make({pool("p", 1000, 2000)}, 1000);
  auto pinned = a.allocate("red", {}, 5000, 0);
  ASSERT_TRUE(pinned.ok()) << pinned.error();
  EXPECT_EQ(pinned->vni, 5000u);
  EXPECT_EQ(pinned->state, State::pinned);
  EXPECT_EQ(pinned->pool, "");
  auto clash = a.allocate("blue", {}, 5000, 0);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().find("'red'"), std::string::npos) << clash.error();
  auto repin = a.allocate("red", {}, 5001, 0);
  EXPECT_FALSE(repin.ok()) << "a network keeps its VNI";
  EXPECT_TRUE(a.allocate("red", {}, 5000, 0).ok()) << "same pin is idempotent";
  EXPECT_FALSE(a.allocate("x", {}, 16777215, 0).ok());
  EXPECT_FALSE(a.allocate("x", {}, 0xffffffffu, 0).ok());
  // A pinned VNI inside a pool's range is skipped by that pool.
  auto inside = a.allocate("green", {}, 1000, 0);
  ASSERT_TRUE(inside.ok());
  auto next = a.allocate("pooled", {}, 0, 0);
  ASSERT_TRUE(next.ok());
  EXPECT_NE(next->vni, 1000u);
  // A held pinned VNI is not available to another pin until the hold-down ends.
  ASSERT_TRUE(a.release("red", 0).ok());
  EXPECT_FALSE(a.allocate("other", {}, 5000, 500).ok());
  EXPECT_TRUE(a.allocate("other", {}, 5000, 1000).ok());
}

TEST(Selection, LabelsPickThePoolMostSpecificFirst) {
  auto a = make({pool("default", 1000, 1999), pool("gpu", 2000, 2999, {{"tier", "gpu"}}),
                 pool("gpu-eu", 3000, 3999, {{"tier", "gpu"}, {"region", "eu"}})});
  auto d = a.allocate("d", {{"tier", "cpu"}}, 0, 0);
  auto g = a.allocate("g", {{"tier", "gpu"}}, 0, 0);
  auto e = a.allocate("e", {{"tier", "gpu"}, {"region", "eu"}, {"x", "y"}}, 0, 0);
  ASSERT_TRUE(d.ok() && g.ok() && e.ok());
  EXPECT_EQ(d->pool, "default");
  EXPECT_EQ(g->pool, "gpu");
  EXPECT_EQ(e->pool, "gpu-eu");
  EXPECT_TRUE(e->vni >= 3000 && e->vni <= 3999);
  auto none = make({pool("gpu", 2000, 2999, {{"tier", "gpu"}})});
  auto r = none.allocate("n", {{"tier", "cpu"}}, 0, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("no VNI pool"), std::string::npos);
}

TEST(Restore, RefusesDuplicates) {
  auto a = make({pool("p", 1, 100)});
  EXPECT_FALSE(a.restore({{5, "p", "x", State::allocated, 0}, {6, "p", "x", State::allocated, 0}}).ok());
  EXPECT_TRUE(a.restore({{5, "p", "x", State::allocated, 0}, {6, "p", "x", State::held, 9}}).ok());
  EXPECT_EQ(a.find_network("x")->vni, 5u);
  auto next = a.allocate("y", {}, 0, 0);
  ASSERT_TRUE(next.ok());
  EXPECT_NE(next->vni, 5u);
  EXPECT_NE(next->vni, 6u);
}

TEST(Reconfigure, KeepsAllocationsOutsideNewRanges) {
  auto a = make({pool("p", 1, 10)});
  auto x = a.allocate("x", {}, 0, 0);
  ASSERT_TRUE(x.ok());
  ASSERT_TRUE(a.reconfigure({pool("p", 20, 30)}, 1000).ok());
  EXPECT_EQ(a.find_network("x")->vni, x->vni);
  EXPECT_FALSE(a.reconfigure({pool("p", 20, 30), pool("q", 25, 26)}, 1000).ok());
}

}  // namespace
