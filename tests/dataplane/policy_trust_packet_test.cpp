// The GBP trust check through the real uplink burst (docs/policy.md "Trusting the identity"):
// VTEP 198.18.0.2 is routed 10.245.0.0/16 (cluster b's pods); a VXLAN-GBP packet from it with
// an inner source of b and an identity of cluster c is dropped as policy_forged_identity and
// admits no flow, while b's identity is admitted. Identities no cluster lists, and a local
// pod's own identity handed over between workers, are not claims to check.
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <memory>
#include <vector>

#include "dataplane/core/pipeline.hpp"
#include "dataplane/core/policy_enforce.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/frames.hpp"
#include "tests/dataplane/mbufs.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

constexpr std::uint16_t kIdentityB = 0x300, kIdentityC = 0x400, kUnlisted = 0x500, kPod2Identity = 0x22;
constexpr std::size_t kVxlanAt = 14 + 20 + 8;

// Pod1 (LocalIndex 0) is ingress-isolated: UDP from identities B, C, the unlisted one and
// pod2's. Clusters: a (this node's: 10.244.0.0/16, pod2's identity), b (10.245.0.0/16: B),
// c (10.246.0.0/16: C).
dataplane::v1::Tables trust_tables() {
  auto t = sample_tables();
  for (auto& e : *t.mutable_endpoints())
    if (e.id() == "pod2/net1") e.set_identity(kPod2Identity);
  auto* v = t.add_vteps();
  v->set_ip("198.18.0.2");
  v->set_gbp(true);
  auto* p = t.add_policies();
  p->set_vni(kVniA);
  p->add_port_sets();
  p->add_port_sets()->set_every_protocol(true);
  auto* in = p->add_local_ingress();
  in->set_isolated(true);
  for (std::uint32_t id : {kPod2Identity, kIdentityB, kIdentityC, kUnlisted}) {
    auto* peer = in->add_peers();
    peer->set_identity(id);
    peer->set_ports(1);
  }
  p->add_local_egress();
  auto* e = p->add_endpoints();
  e->set_endpoint_id("pod1/net1");
  e->set_local(0);
  auto cluster = [&](const char* name, const char* cidr, std::uint32_t id) {
    auto* c = p->add_clusters();
    c->set_name(name);
    c->add_cidrs(cidr);
    c->add_identities(id);
  };
  cluster("a", "10.244.0.0/16", kPod2Identity);
  cluster("b", "10.245.0.0/16", kIdentityB);
  cluster("c", "10.246.0.0/16", kIdentityC);
  return t;
}

// A VXLAN-GBP frame from VTEP 198.18.0.2 (A clear) carrying identity `group`: UDP from
// 10.245.1.1:sport to pod1 10.244.1.10:5000.
Bytes gbp_from_b(std::uint16_t group, std::uint16_t sport) {
  const Bytes inner = ethernet(gateway_mac(kVniA), Mac{0x02, 0xcc, 0, 0, 0, 0x01}, 0x0800,
                               ipv4(ip("10.245.1.1"), ip("10.244.1.10"), 17, udp(sport, 5000, payload(40))));
  Bytes b = vxlan_frame(kUplinkMac, neighbor_mac(2), ip("198.18.0.2"), ip("198.18.0.1"), 50000, kVniA, inner);
  b[kVxlanAt] = 0x88;  // G|I
  b[kVxlanAt + 2] = static_cast<std::uint8_t>(group >> 8);
  b[kVxlanAt + 3] = static_cast<std::uint8_t>(group);
  return b;
}

class PolicyTrustPacket : public ::testing::Test {
 protected:
  void SetUp() override {
    VXFED_REQUIRE_EAL();
    auto t = node_.build(trust_tables());
    ASSERT_TRUE(t.ok()) << t.error();
    tables_ = std::move(*t);
    auto table = dp::ConntrackTable::create(dp::ConntrackConfig{});
    ASSERT_TRUE(table.ok());
    conntrack_ = std::move(*table);
    flows_.table = conntrack_.get();
    flows_.now = 1;
    counters_ = std::make_unique<dp::WorkerCounters>();
  }
  // The frames as one uplink burst; how many pod1 got.
  std::size_t uplink(const std::vector<Bytes>& frames) {
    std::vector<rte_mbuf*> pkts;
    for (const auto& f : frames) pkts.push_back(make_mbuf(f, small_pool()));
    auto tx = std::make_unique<dp::TxStage>();
    dp::process_uplink_burst(*tables_, pkts.data(), static_cast<std::uint16_t>(pkts.size()), *tx, *counters_, &flows_);
    std::size_t to_pod1 = 0;
    tx->flush([&](std::uint16_t p, rte_mbuf** m, std::uint16_t n) {
      if (p == kPod1) to_pod1 += n;
      rte_pktmbuf_free_bulk(m, n);
      return n;
    }, *counters_);
    return to_pod1;
  }
  std::uint64_t drops(dp::DropReason r) const { return counters_->drops[static_cast<std::uint32_t>(r)].get(); }

  Node node_;
  std::unique_ptr<dp::ForwardingTables> tables_;
  std::unique_ptr<dp::ConntrackTable> conntrack_;
  dp::ServiceFlows flows_;
  std::unique_ptr<dp::WorkerCounters> counters_;
};

TEST_F(PolicyTrustPacket, AnotherClustersIdentityFromAValidVtepIsDroppedAndCounted) {
  EXPECT_EQ(uplink({gbp_from_b(kIdentityC, 1000)}), 0u) << "c's identity for b's address";
  EXPECT_EQ(drops(dp::DropReason::PolicyForgedIdentity), 1u);
  EXPECT_EQ(drops(dp::DropReason::InnerSourceSpoofed), 0u) << "the route check lets it through: 10.245/16 is .2's";
  EXPECT_EQ(counters_->policy.denied.get(), 1u);
  EXPECT_EQ(counters_->policy_drops[kPod1].forged_identity.get(), 1u) << "counted for the pod it was sent to";
  EXPECT_EQ(counters_->policy_drops[kPod1].denied_ingress.get(), 0u);
  EXPECT_EQ(conntrack_->size(), 0u) << "no flow admitted";
  // The same flow with b's identity: admitted and tracked; its next packet is a hit.
  EXPECT_EQ(uplink({gbp_from_b(kIdentityB, 1000), gbp_from_b(kIdentityB, 1000)}), 2u);
  EXPECT_EQ(conntrack_->size(), 1u);
  EXPECT_EQ(counters_->policy.new_flows.get(), 2u);
  EXPECT_EQ(counters_->policy.allowed.get(), 1u);
  // A forged packet among good ones in one burst: only it is dropped.
  EXPECT_EQ(uplink({gbp_from_b(kIdentityB, 1001), gbp_from_b(kIdentityC, 1002), gbp_from_b(kIdentityB, 1003)}), 2u);
  EXPECT_EQ(drops(dp::DropReason::PolicyForgedIdentity), 2u);
  EXPECT_EQ(drops(dp::DropReason::PolicyDeniedIngress), 0u);
}

TEST_F(PolicyTrustPacket, IdentitiesNoClusterListsAreLeftToThePolicy) {
  EXPECT_EQ(uplink({gbp_from_b(kUnlisted, 1000)}), 1u) << "unlisted: pod1's ingress names it";
  EXPECT_EQ(uplink({gbp_from_b(0x501, 1001)}), 0u) << "unlisted and not a peer: ingress refuses it";
  EXPECT_EQ(drops(dp::DropReason::PolicyDeniedIngress), 1u);
  EXPECT_EQ(drops(dp::DropReason::PolicyForgedIdentity), 0u);
}

TEST_F(PolicyTrustPacket, WithoutClustersTheForgedIdentityIsBelieved) {
  auto t = trust_tables();
  t.mutable_policies(0)->clear_clusters();
  dataplane::v1::Delta d;
  *d.mutable_upsert()->add_policies() = t.policies(0);
  dp::ImmediateReclaimer reclaimer;
  ASSERT_TRUE(tables_->apply(d, node_.context(), reclaimer).ok());
  EXPECT_EQ(uplink({gbp_from_b(kIdentityC, 1000)}), 1u) << "what the check is for: without it, c's identity passes";
  EXPECT_EQ(drops(dp::DropReason::PolicyForgedIdentity), 0u);
}

TEST_F(PolicyTrustPacket, ALocalPodsOwnIdentityHandedOverIsNotAClaim) {
  // Pod2's packet handed to pod1's owner with pod2's identity, which the entry lists for
  // cluster a; pod2's address is a's too, so it passes either way: list it for c instead, so
  // only the local-source exemption lets it through.
  auto t = trust_tables();
  auto* p = t.mutable_policies(0);
  p->mutable_clusters(0)->clear_identities();
  p->mutable_clusters(2)->clear_identities();
  p->mutable_clusters(2)->add_identities(kPod2Identity);
  p->mutable_clusters(2)->add_identities(kIdentityC);
  dataplane::v1::Delta d;
  *d.mutable_upsert()->add_policies() = *p;
  dp::ImmediateReclaimer reclaimer;
  ASSERT_TRUE(tables_->apply(d, node_.context(), reclaimer).ok());
  const Bytes frame = ethernet(kPod1Mac, gateway_mac(kVniA), 0x0800,
                               ipv4(ip("10.244.1.11"), ip("10.244.1.10"), 17, udp(1000, 5000, payload(40))));
  rte_mbuf* m = make_mbuf(frame, small_pool());
  m->port = kPod1;
  m->hash.usr = dp::handover_word(kPod2Identity, true);
  EXPECT_EQ(dp::admit_handed_over(*tables_, flows_, &m, 1, *counters_), 1u);
  rte_pktmbuf_free(m);
  EXPECT_EQ(drops(dp::DropReason::PolicyForgedIdentity), 0u);
  // The same identity claimed from the uplink for b's address: forged.
  EXPECT_EQ(uplink({gbp_from_b(kPod2Identity, 1000)}), 0u);
  EXPECT_EQ(drops(dp::DropReason::PolicyForgedIdentity), 1u);
}

}  // namespace
}  // namespace vxfed::test
