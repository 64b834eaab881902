// ForwardingTables' network policies (dataplane/core/policy_entry.hpp, docs/policy.md
// "Enforcement in the forwarder"): a NetworkPolicy converted into policy::PolicyTables with the
// same decisions the compiler's tables give, every validation error naming the entry and the
// field, the pod port -> LocalIndex map following the endpoints, a new generation at every
// change, Delta upsert/removal and the cascade of a network, the dump.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "dataplane/core/tables.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

using dataplane::v1::Delta;
using dataplane::v1::NetworkPolicy;
using dataplane::v1::Tables;

// Network A: pod1 (LocalIndex 0) takes TCP 80 from identity 100 and 10.245.0.0/24 only; pod2
// (LocalIndex 1) is egress-isolated to UDP 53 toward identity 200 (AskDestination at the
// source) and anything toward 10.246.0.0/16. Identity 300's egress (remote) allows only TCP 80
// toward identity 7.
NetworkPolicy sample_policy() {
  NetworkPolicy p;
  p.set_vni(kVniA);
  p.add_port_sets();                              // [0] nothing
  p.add_port_sets()->set_every_protocol(true);    // [1] everything
  auto span = [&](std::uint32_t proto, std::uint32_t first, std::uint32_t last) {
    auto* s = p.add_port_sets()->add_spans();
    s->set_protocol(proto);
    s->set_first(first);
    s->set_last(last);
  };
  span(6, 80, 80);  // [2]
  span(17, 53, 53); // [3]
  auto* in0 = p.add_local_ingress();
  in0->set_isolated(true);
  auto* peer = in0->add_peers();
  peer->set_identity(100);
  peer->set_ports(2);
  in0->set_some_selector(2);
  auto* block = in0->add_addresses();
  block->set_first(ip("10.245.0.0"));
  block->set_last(ip("10.245.0.255"));
  block->set_ports(2);
  p.add_local_egress();                          // pod1's egress: not isolated
  p.add_local_ingress();                         // pod2's ingress: not isolated
  auto* out1 = p.add_local_egress();
  out1->set_isolated(true);
  auto* dns = out1->add_peers();
  dns->set_identity(200);
  dns->set_ports(3);
  out1->set_some_selector(3);
  auto* any = out1->add_addresses();
  any->set_first(ip("10.246.0.0"));
  any->set_last(ip("10.246.255.255"));
  any->set_ports(1);
  auto* remote = p.add_remote_egress();
  remote->add_identities(300);
  remote->add_identities(301);
  remote->mutable_table()->set_isolated(true);
  auto* seven = remote->mutable_table()->add_peers();
  seven->set_identity(7);
  seven->set_ports(2);
  auto endpoint = [&](const char* id, std::uint32_t local) {
    auto* e = p.add_endpoints();
    e->set_endpoint_id(id);
    e->set_local(local);
  };
  endpoint("pod1/net1", 0);
  endpoint("pod2/net1", 1);
  return p;
}

net::Ipv4Addr addr(const char* text) { return net::Ipv4Addr{ip(text)}; }

TEST(PolicyTables, ConvertedTablesDecideAsCompiled) {
  VXFED_REQUIRE_EAL();
  Node node;
  Tables t = sample_tables();
  *t.add_policies() = sample_policy();
  auto built = node.build(t);
  ASSERT_TRUE(built.ok()) << built.error();
  const auto& tables = **built;
  const std::uint16_t a = tables.network_by_vni(kVniA)->index, b = tables.network_by_vni(kVniB)->index;
  EXPECT_EQ(tables.network_policy(b), nullptr) << "a network without an entry pays nothing";
  const dp::NetworkPolicyEntry* e = tables.network_policy(a);
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->generation, 0u);
  EXPECT_EQ(e->local_of_port[kPod1], 0u);
  EXPECT_EQ(e->local_of_port[kPod2], 1u);
  EXPECT_EQ(e->local_of_port[kPod3], dp::NetworkPolicyEntry::kNotSelected) << "pod3 is in the other network";
  const policy::PolicyTables& pt = *e->tables;
  EXPECT_TRUE(policy::decide_ingress(pt, 0, 100, addr("10.9.9.9"), 6, 80));
  EXPECT_FALSE(policy::decide_ingress(pt, 0, 100, addr("10.9.9.9"), 6, 81));
  EXPECT_FALSE(policy::decide_ingress(pt, 0, 101, addr("10.9.9.9"), 6, 80)) << "another identity";
  EXPECT_TRUE(policy::decide_ingress(pt, 0, 0, addr("10.245.0.7"), 6, 80)) << "the ipBlock without GBP";
  EXPECT_TRUE(policy::decide_ingress(pt, 1, 0, addr("10.9.9.9"), 17, 9)) << "pod2's ingress is not isolated";
  EXPECT_EQ(policy::decide_egress_at_source(pt, 1, addr("10.245.0.7"), 17, 53), policy::EgressAtSource::AskDestination);
  EXPECT_EQ(policy::decide_egress_at_source(pt, 1, addr("10.246.3.4"), 6, 22), policy::EgressAtSource::Allow);
  EXPECT_EQ(policy::decide_egress_at_source(pt, 1, addr("10.245.0.7"), 6, 22), policy::EgressAtSource::Deny);
  EXPECT_EQ(policy::decide_egress_at_source(pt, 0, addr("10.245.0.7"), 6, 22), policy::EgressAtSource::Allow);
  EXPECT_TRUE(policy::decide_local_egress(pt, 1, 200, addr("10.244.1.10"), 17, 53));
  EXPECT_FALSE(policy::decide_local_egress(pt, 1, 201, addr("10.244.1.10"), 17, 53));
  EXPECT_TRUE(policy::decide_remote_egress(pt, 301, 7, addr("10.244.1.10"), 6, 80));
  EXPECT_FALSE(policy::decide_remote_egress(pt, 300, 8, addr("10.244.1.10"), 6, 80));
  EXPECT_TRUE(policy::decide_remote_egress(pt, 302, 8, addr("10.244.1.10"), 6, 80)) << "not egress-isolated";
  // The dump gives back what was given; the summary counts it.
  const auto dumped = tables.dump();
  ASSERT_EQ(dumped.policies_size(), 1);
  EXPECT_EQ(dumped.policies(0).SerializeAsString(), sample_policy().SerializeAsString());
  const auto sums = tables.policy_summaries();
  ASSERT_EQ(sums.size(), 1u);
  EXPECT_EQ(sums[0].vni, kVniA);
  EXPECT_EQ(sums[0].local_tables, 2u);
  EXPECT_EQ(sums[0].remote_tables, 1u);
  EXPECT_EQ(sums[0].remote_identities, 2u);
  EXPECT_EQ(sums[0].endpoints_mapped, 2u);
  EXPECT_GT(sums[0].bytes, 65536u * 4) << "the identity -> remote table map";
}

// Each broken field, refused with the entry and the field named; nothing applied.
TEST(PolicyTables, BadEntriesAreRefusedNamingTheField) {
  VXFED_REQUIRE_EAL();
  struct Case {
    const char* what;
    std::function<void(NetworkPolicy&)> breaks;
    const char* error;
  };
  const Case cases[] = {
      {"unknown network", [](NetworkPolicy& p) { p.set_vni(4242); },
       "policies[0] (vni 4242): vni 4242 is not a configured network"},
      {"[0] not nothing", [](NetworkPolicy& p) { p.mutable_port_sets(0)->set_every_protocol(true); },
       "policies[0] (vni 1001): port_sets[0]: must be nothing (every_protocol false, no spans)"},
      {"[1] not everything", [](NetworkPolicy& p) { p.mutable_port_sets(1)->set_every_protocol(false); },
       "policies[0] (vni 1001): port_sets[1]: must be everything (every_protocol true, no spans)"},
      {"too few sets", [](NetworkPolicy& p) { p.clear_port_sets(); },
       "policies[0] (vni 1001): port_sets: 0 sets, at least 2 ([0] nothing, [1] everything)"},
      {"span reversed", [](NetworkPolicy& p) { p.mutable_port_sets(2)->mutable_spans(0)->set_first(90); },
       "policies[0] (vni 1001): port_sets[2].spans[0]: ports 90..80 are not a range within 0..65535"},
      {"spans unsorted",
       [](NetworkPolicy& p) {
         auto* s = p.mutable_port_sets(2)->add_spans();
         s->set_protocol(6);
         s->set_first(70);
         s->set_last(75);
       },
       "policies[0] (vni 1001): port_sets[2].spans[1]: not after spans[0] (sorted by protocol and first, disjoint)"},
      {"port set out of range", [](NetworkPolicy& p) { p.mutable_local_ingress(0)->mutable_peers(0)->set_ports(9); },
       "policies[0] (vni 1001): local_ingress[0].peers[0].ports: port set 9 is not below the 4 port_sets"},
      {"any_peer out of range", [](NetworkPolicy& p) { p.mutable_local_egress(1)->set_any_peer(4); },
       "policies[0] (vni 1001): local_egress[1].any_peer: port set 4 is not below the 4 port_sets"},
      {"peers unsorted",
       [](NetworkPolicy& p) {
         auto* x = p.mutable_local_ingress(0)->add_peers();
         x->set_identity(100);
         x->set_ports(1);
       },
       "policies[0] (vni 1001): local_ingress[0].peers[1].identity: 100 not above peers[0]'s (sorted by identity, unique)"},
      {"identity out of range", [](NetworkPolicy& p) { p.mutable_local_ingress(0)->mutable_peers(0)->set_identity(70000); },
       "policies[0] (vni 1001): local_ingress[0].peers[0].identity: 70000 is not 0..65535"},
      {"addresses overlap",
       [](NetworkPolicy& p) {
         auto* x = p.mutable_local_ingress(0)->add_addresses();
         x->set_first(ip("10.245.0.128"));
         x->set_last(ip("10.245.1.0"));
       },
       "policies[0] (vni 1001): local_ingress[0].addresses[1]: not after addresses[0] (sorted by first, disjoint)"},
      {"address span reversed",
       [](NetworkPolicy& p) { p.mutable_local_ingress(0)->mutable_addresses(0)->set_last(ip("10.244.0.0")); },
       "policies[0] (vni 1001): local_ingress[0].addresses[0]: first above last"},
      {"shapes differ", [](NetworkPolicy& p) { p.add_local_egress(); },
       "policies[0] (vni 1001): local_egress: 3 tables, local_ingress has 2 (one of each per LocalIndex)"},
      {"local out of range", [](NetworkPolicy& p) { p.mutable_endpoints(1)->set_local(2); },
       "policies[0] (vni 1001): endpoints[1].local: 2 is not below the 2 local tables"},
      {"endpoint twice", [](NetworkPolicy& p) { p.mutable_endpoints(1)->set_endpoint_id("pod1/net1"); },
       "policies[0] (vni 1001): endpoints[1].endpoint_id: \"pod1/net1\" listed twice"},
      {"endpoint empty", [](NetworkPolicy& p) { p.mutable_endpoints(0)->set_endpoint_id(""); },
       "policies[0] (vni 1001): endpoints[0].endpoint_id: empty"},
      {"identity in two remote tables",
       [](NetworkPolicy& p) {
         auto* r = p.add_remote_egress();
         r->add_identities(301);
       },
       "policies[0] (vni 1001): remote_egress[1].identities[0]: identity 301 is already in remote_egress[0] (an identity has one table)"},
      {"remote identity out of range", [](NetworkPolicy& p) { p.mutable_remote_egress(0)->set_identities(0, 65536); },
       "policies[0] (vni 1001): remote_egress[0].identities[0]: 65536 is not 0..65535"},
  };
  for (const auto& c : cases) {
    Node node;
    Tables t = sample_tables();
    c.breaks(*t.add_policies() = sample_policy());
    auto built = node.build(t);
    ASSERT_FALSE(built.ok()) << c.what;
    EXPECT_NE(built.error().find(c.error), std::string::npos) << c.what << ": " << built.error();
  }
  // Two entries for one VNI in a Snapshot.
  Node node;
  Tables t = sample_tables();
  *t.add_policies() = sample_policy();
  *t.add_policies() = sample_policy();
  auto built = node.build(t);
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.error().find("policies[1] (vni 1001): vni already used by policies[0]"), std::string::npos)
      << built.error();
}

// Deltas: an upsert replaces the entry whole (new generation), an endpoint change rebuilds
// the port map, remove_policies removes it (then everything passes), a removed network takes
// its policy, a refused Delta changes nothing; apply_delta() agrees.
TEST(PolicyTables, DeltasReplaceRemoveAndFollowEndpoints) {
  VXFED_REQUIRE_EAL();
  Node node;
  Tables t = sample_tables();
  auto built = node.build(t);
  ASSERT_TRUE(built.ok()) << built.error();
  auto& tables = **built;
  auto ctx = node.context();
  dp::ImmediateReclaimer reclaimer;
  const std::uint16_t a = tables.network_by_vni(kVniA)->index;
  EXPECT_EQ(tables.network_policy(a), nullptr);
  Delta put;
  *put.mutable_upsert()->add_policies() = sample_policy();
  ASSERT_TRUE(tables.apply(put, ctx, reclaimer).ok());
  const dp::NetworkPolicyEntry* first = tables.network_policy(a);
  ASSERT_NE(first, nullptr);
  const std::uint32_t g1 = first->generation;
  // Replaced whole: pod2 no longer listed.
  Delta replace;
  auto* p = replace.mutable_upsert()->add_policies();
  *p = sample_policy();
  p->mutable_endpoints()->RemoveLast();
  ASSERT_TRUE(tables.apply(replace, ctx, reclaimer).ok());
  const dp::NetworkPolicyEntry* second = tables.network_policy(a);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(second->generation, g1);
  EXPECT_EQ(second->local_of_port[kPod2], dp::NetworkPolicyEntry::kNotSelected);
  EXPECT_EQ(second->local_of_port[kPod1], 0u);
  // pod1's endpoint removed: the map follows, with a new generation (its flows are re-checked).
  Delta gone;
  gone.add_remove_endpoints("pod1/net1");
  ASSERT_TRUE(tables.apply(gone, ctx, reclaimer).ok());
  const dp::NetworkPolicyEntry* third = tables.network_policy(a);
  EXPECT_NE(third->generation, second->generation);
  EXPECT_EQ(third->local_of_port[kPod1], dp::NetworkPolicyEntry::kNotSelected);
  // A bad upsert changes nothing.
  Delta bad;
  *bad.mutable_upsert()->add_policies() = sample_policy();
  bad.mutable_upsert()->mutable_policies(0)->mutable_local_ingress(0)->set_any_peer(99);
  auto refused = tables.apply(bad, ctx, reclaimer);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("upsert.policies[0] (vni 1001): local_ingress[0].any_peer: port set 99"),
            std::string::npos)
      << refused.error();
  EXPECT_EQ(tables.network_policy(a), third);
  // Removed; removing again names it.
  Delta rm;
  rm.add_remove_policies(kVniA);
  ASSERT_TRUE(tables.apply(rm, ctx, reclaimer).ok());
  EXPECT_EQ(tables.network_policy(a), nullptr);
  EXPECT_EQ(tables.policy_count(), 0u);
  auto again = tables.apply(rm, ctx, reclaimer);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error(), "remove_policies[0] (vni 1001): not present");
  // A network takes its policy with it, here and in apply_delta().
  ASSERT_TRUE(tables.apply(put, ctx, reclaimer).ok());
  Delta drop_net;
  drop_net.add_remove_networks(kVniA);
  ASSERT_TRUE(tables.apply(drop_net, ctx, reclaimer).ok());
  EXPECT_EQ(tables.policy_count(), 0u);
  Tables with = t;
  *with.add_policies() = sample_policy();
  auto merged = dp::apply_delta(with, drop_net);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->policies_size(), 0);
  auto removed = dp::apply_delta(with, rm);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->policies_size(), 0);
  auto replaced = dp::apply_delta(with, replace);
  ASSERT_TRUE(replaced.ok());
  ASSERT_EQ(replaced->policies_size(), 1);
  EXPECT_EQ(replaced->policies(0).endpoints_size(), 1);
}

}  // namespace
}  // namespace vxfed::test
