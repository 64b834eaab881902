// Unit tests of the neighbour cache: stable slots, static beats ARP, wanted flags, capacity.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "dataplane/core/neighbor_cache.hpp"

namespace vxfed::dataplane {
namespace {

const wire::MacAddress kA = {0x02, 0, 0, 0, 0, 0xa};
const wire::MacAddress kB = {0x02, 0, 0, 0, 0, 0xb};

TEST(NeighborCache, SlotsAreStablePerAddress) {
  NeighborCache c(8);
  auto s1 = c.slot_for(htonl(0xc6120002));
  auto s2 = c.slot_for(htonl(0xc6120003));
  ASSERT_TRUE(s1.ok() && s2.ok());
  EXPECT_NE(*s1, *s2);
  EXPECT_EQ(*c.slot_for(htonl(0xc6120002)), *s1);
  EXPECT_EQ(c.find_slot(htonl(0xc6120003)), *s2);
  EXPECT_FALSE(c.find_slot(htonl(0xc6120004)).has_value());
}

TEST(NeighborCache, LearnStaticAndWanted) {
  NeighborCache c(8);
  const std::uint32_t ip = htonl(0xc6120002);
  const std::uint32_t slot = *c.slot_for(ip);
  EXPECT_FALSE(c.read(slot) & NeighborCache::kValid);
  c.want(slot);
  c.want(slot);
  auto wanted = c.take_wanted();
  ASSERT_EQ(wanted.size(), 1u);
  EXPECT_EQ(wanted[0], ip);
  EXPECT_TRUE(c.take_wanted().empty());

  c.want(slot);
  c.learn_slot(slot, kA);  // resolved before the control thread looked: nothing to ask
  EXPECT_TRUE(c.take_wanted().empty());
  EXPECT_EQ(*c.lookup(ip), kA);

  EXPECT_FALSE(c.learn(htonl(0x01020304), kA)) << "unknown addresses are not learned";
  c.set_static(slot, kB);
  EXPECT_FALSE(c.learn(ip, kA)) << "ARP never overrides a static entry";
  EXPECT_EQ(*c.lookup(ip), kB);
  c.clear_static(slot);
  EXPECT_FALSE(c.lookup(ip).has_value());
  EXPECT_TRUE(c.learn(ip, kA));
  EXPECT_EQ(*c.lookup(ip), kA);
}

TEST(NeighborCache, FullCacheIsAClearError) {
  NeighborCache c(2);
  ASSERT_TRUE(c.slot_for(1).ok());
  ASSERT_TRUE(c.slot_for(2).ok());
  auto third = c.slot_for(3);
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.error().find("neighbour cache full"), std::string::npos);
}

}  // namespace
}  // namespace vxfed::dataplane
