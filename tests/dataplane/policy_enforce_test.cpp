// Network policy through the real pod burst (dataplane/core/policy_enforce.hpp): egress at the
// source decides a flow's first packet — Allow sends it with the GBP A bit, AskDestination with
// A clear (toward a VTEP that takes GBP; toward one that does not, refused), Deny drops it and counts policy_denied_egress; a
// flow's later packets are conntrack hits (no new decision); a burst's packets leave in their
// order, each with its own A choice; two local pods: the destination's ingress by the source pod's identity.
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <array>
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

constexpr std::size_t kVxlanAt = 14 + 20 + 8;  // outer Ethernet, IPv4, UDP
constexpr std::uint32_t kPod1Identity = 0x1234, kPod2Identity = 0x22;
const std::uint32_t kRemote = ip("10.245.1.1");  // routed to 198.18.0.2, which takes GBP

// Port sets: [2] UDP 5000, [3] UDP 6000. Pod1 (LocalIndex 0): egress isolated, UDP 5000 to
// 10.245.0.0/16 (an ipBlock: Allow at the source), UDP 6000 to identity 77 only (a selector:
// AskDestination), everything to pod2's address. Pod2 (LocalIndex 1): ingress isolated, UDP 5000 from pod1's identity.
dataplane::v1::Tables policy_tables() {
  auto t = sample_tables();
  for (auto& e : *t.mutable_endpoints()) {
    if (e.id() == "pod1/net1") e.set_identity(kPod1Identity);
    if (e.id() == "pod2/net1") e.set_identity(kPod2Identity);
  }
  auto* v = t.add_vteps();
  v->set_ip("198.18.0.2");
  v->set_gbp(true);
  auto* p = t.add_policies();
  p->set_vni(kVniA);
  p->add_port_sets();
  p->add_port_sets()->set_every_protocol(true);
  for (std::uint32_t port : {5000u, 6000u}) {
    auto* s = p->add_port_sets()->add_spans();
    s->set_protocol(17);
    s->set_first(port);
    s->set_last(port);
  }
  p->add_local_ingress();
  auto* out = p->add_local_egress();
  out->set_isolated(true);
  auto* selector = out->add_peers();
  selector->set_identity(77);
  selector->set_ports(3);
  out->set_some_selector(3);
  auto* to_pod2 = out->add_addresses();  // everything to pod2: its ingress decides
  to_pod2->set_first(ip("10.244.1.11"));
  to_pod2->set_last(ip("10.244.1.11"));
  to_pod2->set_ports(1);
  auto* block = out->add_addresses();
  block->set_first(ip("10.245.0.0"));
  block->set_last(ip("10.245.255.255"));
  block->set_ports(2);
  auto* in = p->add_local_ingress();
  in->set_isolated(true);
  auto* from_pod1 = in->add_peers();
  from_pod1->set_identity(kPod1Identity);
  from_pod1->set_ports(2);
  p->add_local_egress();
  for (auto [id, local] : {std::pair{"pod1/net1", 0u}, std::pair{"pod2/net1", 1u}}) {
    auto* e = p->add_endpoints();
    e->set_endpoint_id(id);
    e->set_local(local);
  }
  return t;
}

Bytes pod1_frame(std::uint32_t dst, std::uint16_t sport, std::uint16_t dport) {
  return ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800, ipv4(ip("10.244.1.10"), dst, 17, udp(sport, dport, payload(40))));
}

class PolicyEnforce : public ::testing::Test {
 protected:
  void SetUp() override {
    VXFED_REQUIRE_EAL();
    auto t = node_.build(policy_tables());
    ASSERT_TRUE(t.ok()) << t.error();
    tables_ = std::move(*t);
    auto table = dp::ConntrackTable::create(dp::ConntrackConfig{});
    ASSERT_TRUE(table.ok());
    conntrack_ = std::move(*table);
    flows_.table = conntrack_.get();
    flows_.now = 1;
    counters_ = std::make_unique<dp::WorkerCounters>();
  }
  // The frames as one pod burst from pod1; what each port got, in order.
  std::vector<std::pair<std::uint16_t, Bytes>> burst(const std::vector<Bytes>& frames, std::uint16_t from = kPod1) {
    std::vector<rte_mbuf*> pkts;
    for (const auto& f : frames) pkts.push_back(make_mbuf(f, small_pool()));
    auto tx = std::make_unique<dp::TxStage>();
    if (from == kUplink) {
      dp::process_uplink_burst(*tables_, pkts.data(), static_cast<std::uint16_t>(pkts.size()), *tx, *counters_, &flows_);
    } else {
      dp::process_pod_burst(*tables_, from, pkts.data(), static_cast<std::uint16_t>(pkts.size()), *tx, *counters_, &flows_);
    }
    std::vector<std::pair<std::uint16_t, Bytes>> out;
    tx->flush([&](std::uint16_t p, rte_mbuf** m, std::uint16_t n) {
      for (std::uint16_t i = 0; i < n; ++i) out.emplace_back(p, read_mbuf(m[i]));
      rte_pktmbuf_free_bulk(m, n);
      return n;
    }, *counters_);
    return out;
  }
  std::uint64_t drops(dp::DropReason r) const { return counters_->drops[static_cast<std::uint32_t>(r)].get(); }
  // The refusals counted per local pod (PolicyPortDrops) at `port`: egress, ingress, remote
  // egress, forged identity; and their sum over every port.
  std::array<std::uint64_t, 4> pod_drops(std::uint16_t port) const {
    const auto& d = counters_->policy_drops[port];
    return {d.denied_egress.get(), d.denied_ingress.get(), d.denied_remote_egress.get(), d.forged_identity.get()};
  }
  std::uint64_t pod_drops_everywhere() const {
    std::uint64_t n = 0;
    for (std::uint32_t p = 0; p < dp::kMaxPorts; ++p)
      for (const std::uint64_t v : pod_drops(static_cast<std::uint16_t>(p))) n += v;
    return n;
  }

  Node node_;
  std::unique_ptr<dp::ForwardingTables> tables_;
  std::unique_ptr<dp::ConntrackTable> conntrack_;
  dp::ServiceFlows flows_;
  std::unique_ptr<dp::WorkerCounters> counters_;
};

TEST_F(PolicyEnforce, EgressAtTheSourceSetsTheABitOrAsksOrDrops) {
  const auto out = burst({pod1_frame(kRemote, 1000, 6000), pod1_frame(kRemote, 1001, 5000),
                          pod1_frame(kRemote, 1002, 7000), pod1_frame(kRemote, 1003, 5000)});
  ASSERT_EQ(out.size(), 3u) << "UDP 7000 is allowed by no rule";
  EXPECT_EQ(drops(dp::DropReason::PolicyDeniedEgress), 1u);
  EXPECT_EQ(counters_->policy.new_flows.get(), 4u);
  EXPECT_EQ(counters_->policy.allowed.get(), 3u);
  EXPECT_EQ(counters_->policy.denied.get(), 1u);
  // In their order: the one that asks the destination with A clear, those decided at the source with A.
  const std::uint16_t sports[] = {1000, 1001, 1003};
  const std::uint8_t a_byte[] = {0x00, 0x08, 0x08};
  for (std::size_t i = 0; i < 3; ++i) {
    const Bytes& b = out[i].second;
    EXPECT_EQ(out[i].first, kUplink);
    ASSERT_GT(b.size(), kVxlanAt + 8 + 14 + 20 + 2);
    EXPECT_EQ(b[kVxlanAt], 0x88) << "G|I toward the GBP VTEP";
    EXPECT_EQ(b[kVxlanAt + 1], a_byte[i]) << "packet " << i;
    EXPECT_EQ((b[kVxlanAt + 2] << 8) | b[kVxlanAt + 3], static_cast<int>(kPod1Identity));
    const std::size_t inner_udp = kVxlanAt + 8 + 14 + 20;
    EXPECT_EQ((b[inner_udp] << 8) | b[inner_udp + 1], sports[i]);
  }
  // Known flows: no new decision, the same A choice; the refused flow is decided again.
  const auto again = burst({pod1_frame(kRemote, 1000, 6000), pod1_frame(kRemote, 1001, 5000),
                            pod1_frame(kRemote, 1002, 7000)});
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].second[kVxlanAt + 1], 0x00) << "1000 asks";
  EXPECT_EQ(again[1].second[kVxlanAt + 1], 0x08);
  EXPECT_EQ(counters_->policy.new_flows.get(), 5u);
  EXPECT_EQ(drops(dp::DropReason::PolicyDeniedEgress), 2u);
  EXPECT_EQ(conntrack_->size(), 3u);
  // Per local pod: both refusals at pod1's port, as its egress; nothing anywhere else.
  EXPECT_EQ(pod_drops(kPod1), (std::array<std::uint64_t, 4>{2, 0, 0, 0}));
  EXPECT_EQ(pod_drops_everywhere(), 2u);
}

// Toward a VTEP that takes no GBP the destination could not check a selector rule (plain
// VXLAN carries no identity, no A bit): the source refuses such a flow; what the source decides
// itself (an ipBlock) still leaves, plain.
TEST_F(PolicyEnforce, AskingAVtepWithoutGbpIsRefusedAtTheSource) {
  dataplane::v1::Delta plain;
  auto* v = plain.mutable_upsert()->add_vteps();
  v->set_ip("198.18.0.2");
  v->set_gbp(false);
  dp::ImmediateReclaimer reclaimer;
  ASSERT_TRUE(tables_->apply(plain, node_.context(), reclaimer).ok());
  const auto out = burst({pod1_frame(kRemote, 1000, 6000), pod1_frame(kRemote, 1001, 5000)});
  ASSERT_EQ(out.size(), 1u) << "UDP 6000 needs the destination's word, which it cannot give";
  EXPECT_EQ(out[0].second[kVxlanAt], 0x08) << "plain VXLAN toward the VTEP without GBP";
  const std::size_t inner_udp = kVxlanAt + 8 + 14 + 20;
  EXPECT_EQ((out[0].second[inner_udp] << 8) | out[0].second[inner_udp + 1], 1001) << "the ipBlock flow";
  EXPECT_EQ(drops(dp::DropReason::PolicyDeniedEgress), 1u);
  EXPECT_EQ(counters_->policy.denied.get(), 1u);
  EXPECT_EQ(conntrack_->size(), 1u) << "the refused flow is not tracked";
}

TEST_F(PolicyEnforce, TwoLocalPodsCheckTheDestinationsIngress) {
  const auto out = burst({pod1_frame(ip("10.244.1.11"), 1000, 5000), pod1_frame(ip("10.244.1.11"), 1001, 6000)});
  ASSERT_EQ(out.size(), 1u) << "pod2 takes UDP 5000 from pod1's identity only";
  EXPECT_EQ(out[0].first, kPod2);
  EXPECT_EQ(drops(dp::DropReason::PolicyDeniedIngress), 1u);
  EXPECT_EQ(drops(dp::DropReason::PolicyDeniedEgress), 0u) << "pod1's egress lets everything to pod2 through";
  EXPECT_EQ(conntrack_->size(), 1u);
  // Counted for the pod it was decided for: pod2's ingress, not the sending pod1.
  EXPECT_EQ(pod_drops(kPod2), (std::array<std::uint64_t, 4>{0, 1, 0, 0}));
  EXPECT_EQ(pod_drops_everywhere(), 1u);
}

// The refusals at the destination, per local pod: pod2's ingress refuses a flow from a remote
// source (plain VXLAN: identity 0), and, with a remote-egress table for identity 500 that
// lets it reach pod1 only, a flow of 500 toward pod2 that asked the destination (A clear) is
// refused by 500's egress: both counted at pod2's port; an allowed flow counts nothing.
TEST_F(PolicyEnforce, RefusalsAtTheDestinationAreCountedForTheLocalPod) {
  dataplane::v1::Delta change;
  auto* p = change.mutable_upsert()->add_policies();
  *p = policy_tables().policies(0);
  auto* remote = p->add_remote_egress();
  remote->add_identities(500);
  auto* t = remote->mutable_table();
  t->set_isolated(true);
  auto* to_pod1 = t->add_peers();
  to_pod1->set_identity(kPod1Identity);
  to_pod1->set_ports(1);
  t->set_some_selector(1);
  dp::ImmediateReclaimer reclaimer;
  ASSERT_TRUE(tables_->apply(change, node_.context(), reclaimer).ok());
  auto from_remote = [](std::uint32_t dst, std::uint16_t sport, std::uint16_t dport, int group) {
    const Bytes inner = ethernet(gateway_mac(kVniA), Mac{0x02, 0xcc, 0, 0, 0, 0x01}, 0x0800,
                                 ipv4(kRemote, dst, 17, udp(sport, dport, payload(40))));
    Bytes b = vxlan_frame(kUplinkMac, neighbor_mac(2), ip("198.18.0.2"), ip("198.18.0.1"), 50000, kVniA, inner);
    if (group >= 0) {
      b[kVxlanAt] = 0x88;  // G|I, A clear: the source asked
      b[kVxlanAt + 2] = static_cast<std::uint8_t>(group >> 8);
      b[kVxlanAt + 3] = static_cast<std::uint8_t>(group);
    }
    return b;
  };
  const auto in = burst({from_remote(ip("10.244.1.11"), 3000, 5000, -1), from_remote(ip("10.244.1.11"), 3001, 5000, 500),
                         from_remote(ip("10.244.1.10"), 3002, 5000, 500)},
                        kUplink);
  ASSERT_EQ(in.size(), 1u) << "only 500's flow to pod1, which its egress allows (pod1's ingress is open)";
  EXPECT_EQ(in[0].first, kPod1);
  EXPECT_EQ(drops(dp::DropReason::PolicyDeniedIngress), 1u);
  EXPECT_EQ(drops(dp::DropReason::PolicyDeniedRemoteEgress), 1u);
  EXPECT_EQ(pod_drops(kPod2), (std::array<std::uint64_t, 4>{0, 1, 1, 0}));
  EXPECT_EQ(pod_drops(kPod1), (std::array<std::uint64_t, 4>{0, 0, 0, 0}));
  EXPECT_EQ(pod_drops_everywhere(), 2u);
}

// A burst that starts with known flows passes them on their lookups (KnownFlowCheck); a new
// flow in it ends that run and is decided, and the packets after it keep their order.
TEST_F(PolicyEnforce, KnownFlowsBesideANewOneKeepTheirOrder) {
  ASSERT_EQ(burst({pod1_frame(kRemote, 1001, 5000)}).size(), 1u);
  ASSERT_EQ(counters_->policy.new_flows.get(), 1u);
  const auto out = burst({pod1_frame(kRemote, 1001, 5000), pod1_frame(kRemote, 1004, 5000),
                          pod1_frame(kRemote, 1001, 5000), pod1_frame(kRemote, 1004, 5000)});
  ASSERT_EQ(out.size(), 4u);
  const std::uint16_t sports[] = {1001, 1004, 1001, 1004};
  const std::size_t inner_udp = kVxlanAt + 8 + 14 + 20;
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((out[i].second[inner_udp] << 8) | out[i].second[inner_udp + 1], sports[i]) << "packet " << i;
    EXPECT_EQ(out[i].second[kVxlanAt + 1], 0x08) << "packet " << i << ": decided at the source, A set";
  }
  EXPECT_EQ(counters_->policy.new_flows.get(), 2u) << "only 1004's first packet is decided";
  EXPECT_EQ(conntrack_->size(), 2u);
}

// A known flow's next packet under a changed policy is decided again by it: a flow allowed
// before is refused once its rule is gone, though its entry was live.
TEST_F(PolicyEnforce, AChangedPolicyDecidesAKnownFlowAgain) {
  ASSERT_EQ(burst({pod1_frame(kRemote, 1001, 5000)}).size(), 1u);
  ASSERT_EQ(burst({pod1_frame(kRemote, 1001, 5000)}).size(), 1u);
  EXPECT_EQ(counters_->policy.new_flows.get(), 1u);
  dataplane::v1::Delta change;
  auto* p = change.mutable_upsert()->add_policies();
  *p = policy_tables().policies(0);
  p->mutable_local_egress(0)->mutable_addresses()->RemoveLast();  // UDP 5000 to 10.245.0.0/16 no more
  dp::ImmediateReclaimer reclaimer;
  ASSERT_TRUE(tables_->apply(change, node_.context(), reclaimer).ok());
  EXPECT_TRUE(burst({pod1_frame(kRemote, 1001, 5000)}).empty());
  EXPECT_EQ(counters_->policy.new_flows.get(), 2u);
  EXPECT_EQ(drops(dp::DropReason::PolicyDeniedEgress), 1u);
}

// At the destination: a reply over plain VXLAN (no identity) to a flow pod2 opened passes on the
// flow (the uplink's known-delivery lookup), though pod2's ingress takes UDP 5000 from pod1's
// identity only; the same without the flow, or from another port, is refused.
TEST_F(PolicyEnforce, AReplyOverPlainVxlanPassesOnItsFlow) {
  const Bytes out = ethernet(gateway_mac(kVniA), kPod2Mac, 0x0800,
                             ipv4(ip("10.244.1.11"), kRemote, 17, udp(2000, 7000, payload(40))));
  ASSERT_EQ(burst({out}, kPod2).size(), 1u) << "pod2's egress is not isolated";
  auto reply = [](std::uint16_t sport) {
    const Bytes inner = ethernet(gateway_mac(kVniA), Mac{0x02, 0xcc, 0, 0, 0, 0x01}, 0x0800,
                                 ipv4(kRemote, ip("10.244.1.11"), 17, udp(sport, 2000, payload(40))));
    return vxlan_frame(kUplinkMac, neighbor_mac(2), ip("198.18.0.2"), ip("198.18.0.1"), 50000, kVniA, inner);
  };
  const auto in = burst({reply(7000), reply(7000), reply(7001)}, kUplink);
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].first, kPod2);
  EXPECT_EQ(in[1].first, kPod2);
  EXPECT_EQ(drops(dp::DropReason::PolicyDeniedIngress), 1u) << "7001 is no reply: pod2's ingress refuses it";
  EXPECT_EQ(counters_->policy.new_flows.get(), 2u) << "pod2's flow, then 7001's decision";
}

// ICMP errors about a tracked flow are RELATED (as Linux's conntrack has them): pod2, whose
// ingress takes only UDP 5000 from pod1's identity, gets the port unreachable about its own
// flow, not one about a flow it never had; pod1, whose egress allows no ICMP, may send a port
// unreachable about a flow it received.
TEST_F(PolicyEnforce, IcmpErrorsAboutATrackedFlowAreRelated) {
  auto icmp_error = [](std::uint32_t src, std::uint32_t dst, const Bytes& quoted_packet) {
    Bytes icmp{3, 3, 0, 0, 0, 0, 0, 0};
    icmp.insert(icmp.end(), quoted_packet.begin(), quoted_packet.begin() + 28);  // IPv4 header + 8 bytes
    const std::uint16_t sum = checksum(icmp.data(), icmp.size());
    icmp[2] = static_cast<std::uint8_t>(sum >> 8);
    icmp[3] = static_cast<std::uint8_t>(sum);
    return ipv4(src, dst, 1, icmp);
  };
  const Bytes pod2_out = ipv4(ip("10.244.1.11"), kRemote, 17, udp(2000, 7000, payload(40)));
  ASSERT_EQ(burst({ethernet(gateway_mac(kVniA), kPod2Mac, 0x0800, pod2_out)}, kPod2).size(), 1u);
  const Bytes other = ipv4(ip("10.244.1.11"), kRemote, 17, udp(2001, 7000, payload(40)));
  auto from_remote = [](const Bytes& ip_packet) {
    return vxlan_frame(kUplinkMac, neighbor_mac(2), ip("198.18.0.2"), ip("198.18.0.1"), 50000, kVniA,
                       ethernet(gateway_mac(kVniA), Mac{0x02, 0xcc, 0, 0, 0, 0x01}, 0x0800, ip_packet));
  };
  const auto in = burst({from_remote(icmp_error(kRemote, ip("10.244.1.11"), pod2_out)),
                         from_remote(icmp_error(kRemote, ip("10.244.1.11"), other))}, kUplink);
  ASSERT_EQ(in.size(), 1u) << "the error about a flow pod2 never had is refused";
  EXPECT_EQ(in[0].first, kPod2);
  EXPECT_EQ(drops(dp::DropReason::PolicyDeniedIngress), 1u);
  // A flow into pod1 (its ingress is not isolated), then pod1's port unreachable about it.
  const Bytes into_pod1 = ipv4(kRemote, ip("10.244.1.10"), 17, udp(3000, 9000, payload(40)));
  ASSERT_EQ(burst({from_remote(into_pod1)}, kUplink).size(), 1u);
  const auto out = burst({ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800, icmp_error(ip("10.244.1.10"), kRemote, into_pod1))});
  ASSERT_EQ(out.size(), 1u) << "pod1's egress allows no ICMP, but this error is RELATED";
  EXPECT_EQ(out[0].first, kUplink);
  EXPECT_EQ(drops(dp::DropReason::PolicyDeniedEgress), 0u);
  EXPECT_EQ(conntrack_->size(), 2u) << "the errors get no entries";
}

TEST_F(PolicyEnforce, ANetworkWithoutPolicyIsNotTracked) {
  dataplane::v1::Delta rm;
  rm.add_remove_policies(kVniA);
  dp::ImmediateReclaimer reclaimer;
  ASSERT_TRUE(tables_->apply(rm, node_.context(), reclaimer).ok());
  const auto out = burst({pod1_frame(kRemote, 1000, 7000)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].second[kVxlanAt + 1], 0x00) << "no policy applied: A clear";
  EXPECT_EQ(conntrack_->size(), 0u);
  EXPECT_EQ(counters_->policy.new_flows.get(), 0u);
}

}  // namespace
}  // namespace vxfed::test
