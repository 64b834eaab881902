// The GBP trust check's table (dataplane/core/policy_trust.hpp, docs/policy.md "Trusting the
// identity"): NetworkPolicy.clusters converted and validated (every error naming the field),
// the decision for listed, unlisted and reserved identities at the CIDRs' edges, and the
// forwarder's entry carrying it (or not, without clusters).
#include <gtest/gtest.h>

#include <string>

#include "dataplane/core/policy_entry.hpp"
#include "dataplane/core/tables.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

namespace dp = ::vxfed::dataplane;
using dataplane::v1::NetworkPolicy;

// The smallest valid policy (two port sets, no tables) with clusters a (10.244.0.0/16:
// identities 300, 301), b (10.245.0.0/16 and 10.247.0.0/24: 400) and c (10.246.0.0/16: none).
NetworkPolicy with_clusters() {
  NetworkPolicy p;
  p.set_vni(kVniA);
  p.add_port_sets();
  p.add_port_sets()->set_every_protocol(true);
  auto cluster = [&](const char* name, std::initializer_list<const char*> cidrs, std::initializer_list<std::uint32_t> ids) {
    auto* c = p.add_clusters();
    c->set_name(name);
    for (const char* cidr : cidrs) c->add_cidrs(cidr);
    for (std::uint32_t id : ids) c->add_identities(id);
  };
  cluster("a", {"10.244.0.0/16"}, {300, 301});
  cluster("b", {"10.247.0.0/24", "10.245.0.0/16"}, {400});
  cluster("c", {"10.246.0.0/16"}, {});
  return p;
}

std::string error_of(const NetworkPolicy& p) {
  auto spec = dp::convert_network_policy(p, "policies[0] (vni 1001)");
  return spec.ok() ? "(converted)" : spec.error();
}

TEST(PolicyTrust, ListedIdentitiesAreAdmittedFromTheirClustersAddressesOnly) {
  auto spec = dp::convert_network_policy(with_clusters(), "p");
  ASSERT_TRUE(spec.ok()) << spec.error();
  ASSERT_NE(spec->trust, nullptr);
  const dp::IdentityTrust& t = *spec->trust;
  EXPECT_EQ(t.identities(), 3u);
  EXPECT_EQ(t.spans(), 4u);
  EXPECT_EQ(t.cluster_of(300), "a");
  EXPECT_EQ(t.cluster_of(400), "b");
  EXPECT_EQ(t.cluster_of(302), "");
  // a's identity from a's addresses, at both edges; not one address outside.
  EXPECT_TRUE(t.admits(300, ip("10.244.0.0")));
  EXPECT_TRUE(t.admits(301, ip("10.244.255.255")));
  EXPECT_FALSE(t.admits(300, ip("10.243.255.255")));
  EXPECT_FALSE(t.admits(300, ip("10.245.0.0"))) << "b's address claiming a's identity";
  EXPECT_FALSE(t.admits(300, ip("10.246.1.1"))) << "c's address";
  EXPECT_FALSE(t.admits(300, ip("192.168.1.1"))) << "no cluster's address";
  // b's identity from either of b's CIDRs; not from a's.
  EXPECT_TRUE(t.admits(400, ip("10.245.3.4")));
  EXPECT_TRUE(t.admits(400, ip("10.247.0.255")));
  EXPECT_FALSE(t.admits(400, ip("10.247.1.0")));
  EXPECT_FALSE(t.admits(400, ip("10.244.1.10")));
  // Identities not listed carry no claim to check: reserved (0 unknown, 1 unlabelled, 2 world)
  // and numbers no table names.
  for (std::uint16_t id : {0, 1, 2, 302, 65535}) {
    EXPECT_TRUE(t.admits(id, ip("10.244.1.1"))) << id;
    EXPECT_TRUE(t.admits(id, ip("192.168.1.1"))) << id;
  }
}

TEST(PolicyTrust, NoClustersNoCheck) {
  NetworkPolicy p = with_clusters();
  p.clear_clusters();
  auto spec = dp::convert_network_policy(p, "p");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->trust, nullptr);
}

TEST(PolicyTrust, OneClustersTouchingAndOverlappingCidrsMerge) {
  NetworkPolicy p = with_clusters();
  p.mutable_clusters(2)->add_cidrs("10.246.0.0/24");   // inside its own 10.246.0.0/16
  p.mutable_clusters(2)->add_cidrs("10.248.0.0/16");   // apart
  p.mutable_clusters(0)->add_cidrs("10.243.0.0/16");   // touches a's 10.244.0.0/16
  p.mutable_clusters(2)->add_identities(500);
  auto spec = dp::convert_network_policy(p, "p");
  ASSERT_TRUE(spec.ok()) << spec.error();
  EXPECT_EQ(spec->trust->spans(), 5u) << "a: one span 10.243-10.244; b: two; c: 10.246, 10.248";
  EXPECT_TRUE(spec->trust->admits(300, ip("10.243.0.0")));
  EXPECT_TRUE(spec->trust->admits(500, ip("10.248.9.9")));
  EXPECT_FALSE(spec->trust->admits(500, ip("10.247.0.1")));
}

TEST(PolicyTrust, BadClustersAreRefusedNamingTheField) {
  auto bad = [](const std::function<void(NetworkPolicy&)>& edit) {
    NetworkPolicy p = with_clusters();
    edit(p);
    return error_of(p);
  };
  const std::string at = "policies[0] (vni 1001): ";
  EXPECT_EQ(bad([](NetworkPolicy& p) { p.mutable_clusters(1)->clear_name(); }), at + "clusters[1].name: empty");
  EXPECT_EQ(bad([](NetworkPolicy& p) { p.mutable_clusters(2)->set_name("a"); }),
            at + "clusters[2].name: \"a\" is already clusters[0]");
  EXPECT_EQ(bad([](NetworkPolicy& p) { p.mutable_clusters(2)->clear_cidrs(); }),
            at + "clusters[2].cidrs: empty (a cluster's identities need its addresses)");
  EXPECT_EQ(bad([](NetworkPolicy& p) { p.mutable_clusters(1)->set_cidrs(0, "10.247.0.1/24"); }).rfind(
                at + "clusters[1].cidrs[0]: ", 0),
            0u)
      << "host bits set";
  EXPECT_EQ(bad([](NetworkPolicy& p) { p.mutable_clusters(1)->set_cidrs(0, "nonsense"); }).rfind(
                at + "clusters[1].cidrs[0]: ", 0),
            0u);
  EXPECT_EQ(bad([](NetworkPolicy& p) { p.mutable_clusters(2)->add_cidrs("10.245.128.0/17"); }),
            at + "clusters[2].cidrs[1] (10.245.128.0/17): overlaps clusters[1].cidrs[1] (10.245.0.0/16) of another "
                 "cluster (an address belongs to one cluster)");
  EXPECT_EQ(bad([](NetworkPolicy& p) { p.mutable_clusters(0)->add_identities(70000); }),
            at + "clusters[0].identities[2]: 70000 is not 0..65535");
  EXPECT_EQ(bad([](NetworkPolicy& p) { p.mutable_clusters(0)->add_identities(301); }),
            at + "clusters[0].identities[2]: 301 not above identities[1] (sorted, unique)");
  EXPECT_EQ(bad([](NetworkPolicy& p) { p.mutable_clusters(2)->add_identities(301); }),
            at + "clusters[2].identities[0]: identity 301 is already in clusters[0] (\"a\") (an identity belongs "
                 "to one cluster)");
}

TEST(PolicyTrust, TheForwardersEntryCarriesIt) {
  VXFED_REQUIRE_EAL();
  auto t = sample_tables();
  *t.add_policies() = with_clusters();
  Node node;
  auto tables = node.build(t);
  ASSERT_TRUE(tables.ok()) << tables.error();
  const auto* pod = (*tables)->pod_port(kPod1);
  ASSERT_NE(pod, nullptr);
  const dp::NetworkPolicyEntry* entry = (*tables)->network_policy(pod->network);
  ASSERT_NE(entry, nullptr);
  ASSERT_NE(entry->trust, nullptr);
  EXPECT_FALSE(entry->trust->admits(400, ip("10.244.1.1")));
  // Replaced without clusters: the check is off.
  dataplane::v1::Delta d;
  auto* p = d.mutable_upsert()->add_policies();
  *p = with_clusters();
  p->clear_clusters();
  dp::ImmediateReclaimer reclaimer;
  ASSERT_TRUE((*tables)->apply(d, node.context(), reclaimer).ok());
  entry = (*tables)->network_policy(pod->network);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->trust, nullptr);
  // A bad cluster in a Delta: refused whole, the entry in force unchanged.
  dataplane::v1::Delta bad;
  *bad.mutable_upsert()->add_policies() = with_clusters();
  bad.mutable_upsert()->mutable_policies(0)->mutable_clusters(0)->clear_cidrs();
  auto r = (*tables)->apply(bad, node.context(), reclaimer);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("clusters[0].cidrs: empty"), std::string::npos) << r.error();
  EXPECT_EQ((*tables)->network_policy(pod->network), entry);
}

}  // namespace
}  // namespace vxfed::test
