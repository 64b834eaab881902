// FederationLink::apply_changes: a reconcile's snapshot of the node's networks, brought up to
// date with the joins and leaves the io thread made while it was on its way to the store, so
// the reconcile neither leaves a network just joined nor re-asserts one just left.
#include <gtest/gtest.h>

#include "control/federation/federation_link.hpp"

namespace {

using vxfed::control::FederationLink;
using vxfed::federation::Membership;

Membership member(const std::string& network, std::uint32_t vni, const std::string& block) {
  Membership m;
  m.network = network;
  m.vni = vni;
  m.block = block;
  return m;
}

std::vector<std::string> names(const std::vector<Membership>& list) {
  std::vector<std::string> out;
  for (const auto& m : list) out.push_back(m.network);
  return out;
}

TEST(FederationLinkChanges, NoChangesKeepTheSnapshot) {
  const std::vector<Membership> snapshot{member("red", 1000, "10.244.0.0/24"), member("blue", 1001, "10.144.0.0/24")};
  EXPECT_EQ(FederationLink::apply_changes(snapshot, {}), snapshot);
}

TEST(FederationLinkChanges, AJoinAfterTheSnapshotIsKept) {
  const auto out = FederationLink::apply_changes({member("red", 1000, "10.244.0.0/24")},
                                                 {{true, member("green", 1002, "10.246.0.0/24")}});
  ASSERT_EQ(names(out), (std::vector<std::string>{"red", "green"}));
  EXPECT_EQ(out[1], member("green", 1002, "10.246.0.0/24"));
}

TEST(FederationLinkChanges, ALeaveAfterTheSnapshotIsNotReasserted) {
  FederationLink::Change left;
  left.membership.network = "red";
  const auto out = FederationLink::apply_changes(
      {member("red", 1000, "10.244.0.0/24"), member("blue", 1001, "10.144.0.0/24")}, {left});
  EXPECT_EQ(names(out), std::vector<std::string>{"blue"});
}

TEST(FederationLinkChanges, TheLastChangeOfANetworkWins) {
  FederationLink::Change left;
  left.membership.network = "red";
  // Left, then joined again (a new block): the new membership, once.
  auto out = FederationLink::apply_changes({member("red", 1000, "10.244.0.0/24")},
                                           {left, {true, member("red", 1000, "10.244.1.0/24")}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].block, "10.244.1.0/24");
  // Joined, then left: gone.
  out = FederationLink::apply_changes({}, {{true, member("red", 1000, "10.244.0.0/24")}, left});
  EXPECT_TRUE(out.empty());
}

}  // namespace
