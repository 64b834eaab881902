// Unit tests of Maglev backend selection (dataplane/core/maglev.hpp): shares follow the
// weights, removing one backend moves few flows, the table does not depend on input order,
// an empty set picks nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "dataplane/core/maglev.hpp"

namespace vxfed::dataplane {
namespace {

std::vector<MaglevBackend> backends(std::uint32_t n, std::uint64_t first_id = 1000) {
  std::vector<MaglevBackend> v;
  for (std::uint32_t i = 0; i < n; ++i) v.push_back({first_id + i * 7919, 1});
  return v;
}

// How many slots each backend id holds.
std::vector<std::uint32_t> shares(const MaglevTable& t) {
  std::vector<std::uint32_t> count(t.backends().size(), 0);
  for (std::uint32_t s : t.slots()) ++count.at(s);
  return count;
}

// The backend id per slot, so tables built from different sets can be compared.
std::vector<std::uint64_t> ids(const MaglevTable& t) {
  std::vector<std::uint64_t> v;
  for (std::uint32_t s : t.slots()) v.push_back(t.backends()[s].id);
  return v;
}

TEST(Maglev, RefusesBadSizesAndDuplicateIds) {
  auto b = backends(3);
  EXPECT_FALSE(MaglevTable::build(b, 65536).ok()) << "not prime";
  EXPECT_FALSE(MaglevTable::build(b, 1).ok());
  auto small = MaglevTable::build(b, 2);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().find("prime"), std::string::npos) << small.error();
  b.push_back(b[1]);
  auto dup = MaglevTable::build(b, 251);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().find("twice"), std::string::npos) << dup.error();
  EXPECT_FALSE(MaglevTable::build(backends(20), 13).ok()) << "more backends than slots";
}

TEST(Maglev, EmptySetAndZeroWeightsPickNothing) {
  auto empty = MaglevTable::build({}, 251);
  ASSERT_TRUE(empty.ok()) << empty.error();
  EXPECT_EQ(empty->lookup(12345), MaglevTable::kNoBackend);
  EXPECT_EQ(empty->size(), 0u);

  std::vector<MaglevBackend> draining = {{1, 0}, {2, 0}};
  auto t = MaglevTable::build(draining, 251);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->lookup(0), MaglevTable::kNoBackend);
  EXPECT_EQ(t->lookup(0xffffffffu), MaglevTable::kNoBackend);
}

TEST(Maglev, EveryHashPicksABackendAndZeroWeightNeverPicked) {
  std::vector<MaglevBackend> b = {{10, 1}, {20, 0}, {30, 1}};
  auto t = MaglevTable::build(b, 251);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->size(), 251u);
  for (std::uint32_t s : t->slots()) {
    ASSERT_NE(s, MaglevTable::kNoBackend);
    EXPECT_NE(t->backends()[s].id, 20u);
  }
  for (std::uint64_t h = 0; h <= 0xffffffffull; h += 0x01000193) {
    const std::uint32_t pick = t->lookup(static_cast<std::uint32_t>(h));
    ASSERT_LT(pick, 3u);
    EXPECT_NE(t->backends()[pick].id, 20u);
  }
}

TEST(Maglev, EqualWeightsShareEqually) {
  auto t = MaglevTable::build(backends(10));
  ASSERT_TRUE(t.ok());
  for (std::uint32_t c : shares(*t)) {
    // 65537 / 10: round-robin turns give each 6553 or 6554 slots.
    EXPECT_GE(c, 6553u);
    EXPECT_LE(c, 6554u);
  }
}

TEST(Maglev, SharesFollowWeightsWithinTwoPercent) {
  std::vector<MaglevBackend> b = {{1, 1}, {2, 2}, {3, 3}, {4, 10}, {5, 100}, {6, 7}};
  std::uint64_t sum = 0;
  for (const auto& x : b) sum += x.weight;
  auto t = MaglevTable::build(b);
  ASSERT_TRUE(t.ok());
  const auto count = shares(*t);
  for (std::size_t i = 0; i < b.size(); ++i) {
    const double want = double(t->backends()[i].weight) / double(sum);
    const double got = double(count[i]) / double(t->size());
    EXPECT_NEAR(got, want, 0.02 * want + 1.0 / t->size()) << "backend " << t->backends()[i].id;
  }
}

TEST(Maglev, SameSetInAnyOrderGivesTheSameTable) {
  auto b = backends(12);
  b[3].weight = 5;
  auto reversed_b = b;
  std::reverse(reversed_b.begin(), reversed_b.end());
  auto rotated = b;
  std::rotate(rotated.begin(), rotated.begin() + 5, rotated.end());
  auto t1 = MaglevTable::build(b), t2 = MaglevTable::build(reversed_b), t3 = MaglevTable::build(rotated);
  ASSERT_TRUE(t1.ok() && t2.ok() && t3.ok());
  EXPECT_EQ(ids(*t1), ids(*t2));
  EXPECT_EQ(ids(*t1), ids(*t3));
  EXPECT_EQ(t1->slots(), t2->slots()) << "indices refer to the backends in id order";
}

// Removing one backend of N: the slots it held must move (1/N of the table); Maglev moves a
// few more. The bound asserted: at most 1/N + 1 % of the table for N = 5..50 at M = 65537
// (measured 2026-12-06: excess 0.09 % at N=5 to 0.41 % at N=50; printed by the test).
TEST(Maglev, RemovingOneBackendMovesLittleMoreThanItsShare) {
  for (std::uint32_t n : {5u, 10u, 20u, 50u}) {
    auto all = backends(n);
    auto full = MaglevTable::build(all);
    ASSERT_TRUE(full.ok());
    const std::uint64_t gone = all[n / 2].id;
    all.erase(all.begin() + n / 2);
    auto less = MaglevTable::build(all);
    ASSERT_TRUE(less.ok());
    const auto before = ids(*full), after = ids(*less);
    std::uint32_t changed = 0, changed_elsewhere = 0;
    for (std::size_t i = 0; i < before.size(); ++i) {
      if (before[i] == after[i]) continue;
      ++changed;
      if (before[i] != gone) ++changed_elsewhere;
      ASSERT_NE(after[i], gone);
    }
    const double fraction = double(changed) / before.size();
    const double excess = double(changed_elsewhere) / before.size();
    std::printf("maglev: N=%u remove 1: %.4f of the table changed (ideal %.4f, excess %.4f)\n", n, fraction,
                1.0 / n, excess);
    EXPECT_GE(fraction, 1.0 / n - 0.001) << "the removed backend's slots must all move";
    EXPECT_LE(fraction, 1.0 / n + 0.01) << "N=" << n;
  }
}

TEST(Maglev, AddingOneBackendMovesLittleMoreThanItsShare) {
  auto b = backends(10);
  auto before = MaglevTable::build(b);
  b.push_back({999999, 1});
  auto after = MaglevTable::build(b);
  ASSERT_TRUE(before.ok() && after.ok());
  const auto x = ids(*before), y = ids(*after);
  std::uint32_t changed = 0;
  for (std::size_t i = 0; i < x.size(); ++i) changed += x[i] != y[i];
  const double fraction = double(changed) / x.size();
  std::printf("maglev: N=10 add 1: %.4f of the table changed (ideal %.4f)\n", fraction, 1.0 / 11);
  EXPECT_GE(fraction, 1.0 / 11 - 0.001);
  EXPECT_LE(fraction, 1.0 / 11 + 0.01);
}

}  // namespace
}  // namespace vxfed::dataplane
