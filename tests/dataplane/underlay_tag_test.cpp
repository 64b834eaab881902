// The underlay 802.1Q tag (dataplane/core/underlay_tag.hpp) through the real burst functions
// (suite 'packet'): every frame the pipeline stages on the uplink carries the port's
// VLAN-insert request (RTE_MBUF_F_TX_VLAN) and the TCI of the inner packet's traffic class,
// on the single-packet, per-VTEP-template and mixed paths of process_pod_burst and for the
// ARP replies of process_uplink_burst; frames for pods carry none; untagged tables none at all.
// The frame bytes themselves do not change: the port inserts the tag.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <memory>
#include <vector>

#include "dataplane/core/pipeline.hpp"
#include "dataplane/core/underlay_tag.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/frames.hpp"
#include "tests/dataplane/mbufs.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

struct Staged {
  std::uint16_t port;
  std::uint64_t ol_flags;
  std::uint16_t vlan_tci;
  Bytes bytes;
};

class UnderlayTagFlow : public ::testing::Test {
 protected:
  void build(const dp::UnderlayTag& tag) {
    dp::BuildContext ctx = node_.context();
    ctx.underlay_tag = tag;
    auto t = dp::ForwardingTables::create(sample_tables(), ctx);
    ASSERT_TRUE(t.ok()) << t.error();
    tables_ = std::move(*t);
    counters_ = std::make_unique<dp::WorkerCounters>();
    tx_ = std::make_unique<dp::TxStage>();
  }
  std::vector<Staged> run(std::uint16_t rx_port, const std::vector<Bytes>& frames) {
    std::vector<rte_mbuf*> pkts;
    for (const auto& f : frames) {
      pkts.push_back(make_mbuf(f, small_pool()));
      EXPECT_NE(pkts.back(), nullptr);
      // What a receiving port may leave behind: the pipeline must overwrite both fields.
      pkts.back()->ol_flags = RTE_MBUF_F_RX_VLAN | RTE_MBUF_F_RX_VLAN_STRIPPED;
      pkts.back()->vlan_tci = 0xabcd;
    }
    if (rx_port == kUplink)
      dp::process_uplink_burst(*tables_, pkts.data(), static_cast<std::uint16_t>(pkts.size()), *tx_, *counters_);
    else
      dp::process_pod_burst(*tables_, rx_port, pkts.data(), static_cast<std::uint16_t>(pkts.size()), *tx_, *counters_);
    std::vector<Staged> out;
    tx_->flush([&](std::uint16_t port, rte_mbuf** p, std::uint16_t n) {
      for (std::uint16_t i = 0; i < n; ++i) out.push_back({port, p[i]->ol_flags, p[i]->vlan_tci, read_mbuf(p[i])});
      rte_pktmbuf_free_bulk(p, n);
      return n;
    }, *counters_);
    return out;
  }
  // Pod 1's UDP packet to a remote pod, with this TOS byte (DSCP << 2 | ECN).
  static Bytes pod1_to(std::uint32_t dst, std::uint8_t tos, std::uint16_t sport = 1234) {
    Ipv4Opts o;
    o.tos = tos;
    return ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                    ipv4(ip("10.244.1.10"), dst, 17, udp(sport, 5678, payload(64)), o));
  }

  Node node_;
  std::unique_ptr<dp::ForwardingTables> tables_;
  std::unique_ptr<dp::WorkerCounters> counters_;
  std::unique_ptr<dp::TxStage> tx_;
};

TEST(UnderlayTag, ClassSelectorAndOverrides) {
  const dp::UnderlayTag none = dp::UnderlayTag::make(std::nullopt);
  EXPECT_EQ(none.tx_flags, 0u);
  for (unsigned tos = 0; tos < 256; ++tos) EXPECT_EQ(none.tci_of_tos[tos], 0u);

  auto pcp = dp::UnderlayTag::class_selector_pcp();
  EXPECT_EQ(pcp[26], 3u);  // RoCEv2 (AF31) -> 3
  EXPECT_EQ(pcp[46], 5u);  // EF -> 5
  EXPECT_EQ(pcp[48], 6u);  // CS6 -> 6
  pcp[10] = 7;
  const dp::UnderlayTag t = dp::UnderlayTag::make(100, pcp);
  EXPECT_EQ(t.tx_flags, RTE_MBUF_F_TX_VLAN);
  EXPECT_EQ(t.tci_of_tos[0], 100u);                 // best effort: PCP 0
  EXPECT_EQ(t.tci_of_tos[26 << 2], 3u << 13 | 100u);
  EXPECT_EQ(t.tci_of_tos[26 << 2 | 3], 3u << 13 | 100u) << "ECN bits do not change the class";
  EXPECT_EQ(t.tci_of_tos[10 << 2], 7u << 13 | 100u) << "override";
  EXPECT_EQ(t.tci_of_tos[63 << 2], 7u << 13 | 100u);
  EXPECT_EQ(t.control_tci(), 100u);
  const dp::UnderlayTag prio = dp::UnderlayTag::make(0);
  EXPECT_EQ(prio.tx_flags, RTE_MBUF_F_TX_VLAN) << "VID 0: a priority tag is still a tag";
  EXPECT_EQ(prio.tci_of_tos[46 << 2], 5u << 13);
  EXPECT_EQ(prio.control_tci(), 0u);
}

TEST_F(UnderlayTagFlow, EncapsulatedFramesCarryTheTagOfTheirClassOnEveryPath) {
  VXFED_REQUIRE_EAL();
  build(dp::UnderlayTag::make(100));
  const std::uint32_t vtep2 = ip("10.245.1.1");    // route -> 198.18.0.2
  const std::uint32_t ecmp = ip("10.245.7.1");     // route -> 198.18.0.3 / .4
  const std::uint32_t local = ip("10.244.1.11");   // pod 2, same node
  const std::uint8_t tos[] = {0, 26 << 2, 46 << 2 | 1, 48 << 2, 8 << 2};
  // One packet at a time, then bursts to one VTEP (the template path) and mixed with local
  // delivery and ECMP.
  for (std::uint8_t t : tos) {
    auto out = run(kPod1, {pod1_to(vtep2, t)});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].port, kUplink);
    EXPECT_EQ(out[0].ol_flags, RTE_MBUF_F_TX_VLAN);
    EXPECT_EQ(out[0].vlan_tci, (t >> 5) << 13 | 100) << "tos " << int(t);
  }
  std::vector<Bytes> burst;
  for (int i = 0; i < 16; ++i) burst.push_back(pod1_to(vtep2, tos[i % 5], static_cast<std::uint16_t>(1000 + i)));
  auto out = run(kPod1, burst);
  ASSERT_EQ(out.size(), 16u);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(out[i].ol_flags, RTE_MBUF_F_TX_VLAN) << i;
    EXPECT_EQ(out[i].vlan_tci, (tos[i % 5] >> 5) << 13 | 100) << i;
  }
  std::vector<Bytes> mixed;
  for (int i = 0; i < 12; ++i)
    mixed.push_back(pod1_to(i % 3 == 0 ? local : i % 3 == 1 ? ecmp : vtep2, tos[i % 5], static_cast<std::uint16_t>(2000 + i)));
  out = run(kPod1, mixed);
  ASSERT_EQ(out.size(), 12u);
  int to_pod = 0;
  for (const Staged& s : out) {
    if (s.port == kPod2) {
      ++to_pod;
      EXPECT_EQ(s.ol_flags, 0u) << "frames for pods are never tagged";
    } else {
      EXPECT_EQ(s.port, kUplink);
      EXPECT_EQ(s.ol_flags, RTE_MBUF_F_TX_VLAN);
      EXPECT_EQ(s.vlan_tci & 0x0fff, 100);
      EXPECT_EQ(s.vlan_tci >> 13, s.bytes[14 + 50 + 1] >> 5) << "PCP = class selector of the inner TOS";
    }
  }
  EXPECT_EQ(to_pod, 4);
}

TEST_F(UnderlayTagFlow, TagDoesNotChangeTheFrameBytes) {
  VXFED_REQUIRE_EAL();
  const Bytes in = pod1_to(ip("10.245.1.1"), 26 << 2);
  build(dp::UnderlayTag::make(std::nullopt));
  auto plain = run(kPod1, {in});
  build(dp::UnderlayTag::make(4094));
  auto tagged = run(kPod1, {in});
  ASSERT_EQ(plain.size(), 1u);
  ASSERT_EQ(tagged.size(), 1u);
  EXPECT_EQ(plain[0].ol_flags, 0u);
  EXPECT_EQ(plain[0].bytes, tagged[0].bytes);
  EXPECT_EQ(tagged[0].vlan_tci, 3 << 13 | 4094);
}

TEST_F(UnderlayTagFlow, ArpReplyOnTheUplinkIsTaggedWithPriorityZero) {
  VXFED_REQUIRE_EAL();
  build(dp::UnderlayTag::make(100));
  const Mac asker = {0x02, 0, 0, 0, 0x02, 0x02};
  auto out = run(kUplink, {ethernet({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, asker, 0x0806,
                                    arp(1, asker, ip("198.18.0.2"), Mac{}, ip("198.18.0.1")))});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port, kUplink);
  EXPECT_EQ(out[0].ol_flags, RTE_MBUF_F_TX_VLAN);
  EXPECT_EQ(out[0].vlan_tci, 100u);
}

TEST_F(UnderlayTagFlow, DecapsulatedFramesForPodsCarryNoTag) {
  VXFED_REQUIRE_EAL();
  build(dp::UnderlayTag::make(100));
  const Bytes inner = ethernet(gateway_mac(kVniA), {0x02, 0xcc, 0, 0, 0, 1}, 0x0800,
                               ipv4(ip("10.245.1.1"), ip("10.244.1.10"), 17, udp(4000, 5000, payload(40))));
  // A tagged frame as a stripping port delivers it: the tag in vlan_tci, the frame untagged.
  auto out = run(kUplink, {vxlan_frame(kUplinkMac, neighbor_mac(2), ip("198.18.0.2"), ip("198.18.0.1"), 50000, kVniA, inner)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].port, kPod1);
  EXPECT_EQ(out[0].ol_flags, 0u);
}

TEST_F(UnderlayTagFlow, UntaggedTablesRequestNoTag) {
  VXFED_REQUIRE_EAL();
  build(dp::UnderlayTag{});
  auto out = run(kPod1, {pod1_to(ip("10.245.1.1"), 46 << 2), pod1_to(ip("10.245.1.1"), 26 << 2, 99)});
  ASSERT_EQ(out.size(), 2u);
  for (const Staged& s : out) {
    EXPECT_EQ(s.ol_flags, 0u);
    EXPECT_EQ(s.vlan_tci, 0u);
  }
}

}  // namespace
}  // namespace vxfed::test
