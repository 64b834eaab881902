// Packet tests that need more than one packet: ECMP spread and pinning, ARP learning of
// underlay neighbours, mbuf pool exhaustion and recovery, full bursts, per-VNI counters.
#include <arpa/inet.h>
#include <sys/mman.h>
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "dataplane/core/pipeline.hpp"
#include "dataplane/core/wire/vxlan.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/frames.hpp"
#include "tests/dataplane/mbufs.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

using dp::DropReason;

const Mac kZero{};
const Mac kBcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

class PacketFlow : public ::testing::Test {
 protected:
  void SetUp() override {
    VXFED_REQUIRE_EAL();
    auto t = node_.build(sample_tables());
    ASSERT_TRUE(t.ok()) << t.error();
    tables_ = std::move(*t);
    counters_ = std::make_unique<dp::WorkerCounters>();
    tx_ = std::make_unique<dp::TxStage>();
  }
  void TearDown() override { take_all(); }

  // Runs frames through one burst call; returns how many were staged.
  void run(std::uint16_t rx_port, const std::vector<Bytes>& frames, rte_mempool* pool = nullptr) {
    std::vector<rte_mbuf*> pkts;
    for (const auto& f : frames) {
      pkts.push_back(make_mbuf(f, pool ? pool : small_pool()));
      ASSERT_NE(pkts.back(), nullptr);
    }
    if (rx_port == kUplink)
      dp::process_uplink_burst(*tables_, pkts.data(), static_cast<std::uint16_t>(pkts.size()), *tx_, *counters_);
    else
      dp::process_pod_burst(*tables_, rx_port, pkts.data(), static_cast<std::uint16_t>(pkts.size()), *tx_, *counters_);
  }
  // Staged frames per port, freed.
  std::map<std::uint16_t, std::vector<Bytes>> take_all() {
    std::map<std::uint16_t, std::vector<Bytes>> out;
    if (!tx_) return out;
    tx_->flush([&](std::uint16_t port, rte_mbuf** p, std::uint16_t n) {
      for (std::uint16_t i = 0; i < n; ++i) out[port].push_back(read_mbuf(p[i]));
      rte_pktmbuf_free_bulk(p, n);
      return n;
    }, *counters_);
    return out;
  }
  std::uint64_t drops(DropReason r) const { return counters_->drops[static_cast<int>(r)].get(); }

  // The frames as one burst, then one at a time: what each way staged per port (in order),
  // and its counters (each way starts from zero; counters_ holds the one-at-a-time ones after).
  struct BurstAndSingles {
    std::map<std::uint16_t, std::vector<Bytes>> together, alone;
    std::unique_ptr<dp::WorkerCounters> together_counters;
  };
  BurstAndSingles run_both_ways(std::uint16_t rx_port, const std::vector<Bytes>& burst) {
    BurstAndSingles r;
    counters_ = std::make_unique<dp::WorkerCounters>();
    run(rx_port, burst);
    r.together = take_all();
    r.together_counters = std::move(counters_);
    counters_ = std::make_unique<dp::WorkerCounters>();
    for (const Bytes& f : burst) {
      run(rx_port, {f});
      for (auto& [port, frames] : take_all()) r.alone[port].insert(r.alone[port].end(), frames.begin(), frames.end());
    }
    return r;
  }
  // Every counter (ports, drop reasons, VNI slots) equal in a and b.
  static void expect_same_counters(const dp::WorkerCounters& a, const dp::WorkerCounters& b) {
    for (std::uint32_t p = 0; p < dp::kMaxPorts; ++p) {
      const auto &x = a.ports[p], &y = b.ports[p];
      EXPECT_EQ(x.rx_packets.get(), y.rx_packets.get()) << "port " << p;
      EXPECT_EQ(x.rx_bytes.get(), y.rx_bytes.get()) << "port " << p;
      EXPECT_EQ(x.tx_packets.get(), y.tx_packets.get()) << "port " << p;
      EXPECT_EQ(x.tx_bytes.get(), y.tx_bytes.get()) << "port " << p;
      EXPECT_EQ(x.drops.get(), y.drops.get()) << "port " << p;
    }
    for (std::uint32_t r = 0; r < dp::kDropReasonCount; ++r)
      EXPECT_EQ(a.drops[r].get(), b.drops[r].get()) << "drop reason " << r;
    for (std::uint32_t v = 0; v < dp::kMaxVniSlots; ++v) {
      const auto &x = a.vnis[v], &y = b.vnis[v];
      EXPECT_EQ(x.encap_packets.get(), y.encap_packets.get()) << "vni slot " << v;
      EXPECT_EQ(x.encap_bytes.get(), y.encap_bytes.get()) << "vni slot " << v;
      EXPECT_EQ(x.decap_packets.get(), y.decap_packets.get()) << "vni slot " << v;
      EXPECT_EQ(x.decap_bytes.get(), y.decap_bytes.get()) << "vni slot " << v;
      EXPECT_EQ(x.local_packets.get(), y.local_packets.get()) << "vni slot " << v;
      EXPECT_EQ(x.local_bytes.get(), y.local_bytes.get()) << "vni slot " << v;
    }
  }

  Node node_;
  std::unique_ptr<dp::ForwardingTables> tables_;
  std::unique_ptr<dp::WorkerCounters> counters_;
  std::unique_ptr<dp::TxStage> tx_;
};

Bytes flow(std::uint16_t sport, std::uint32_t dst = ip("10.245.7.20")) {
  return ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                  ipv4(ip("10.244.1.10"), dst, 17, udp(sport, 80, payload(18))));
}
std::uint16_t outer_sport(const Bytes& b) { return static_cast<std::uint16_t>(b[34] << 8 | b[35]); }
std::uint32_t outer_dst(const Bytes& b) {
  return static_cast<std::uint32_t>(b[30] << 24 | b[31] << 16 | b[32] << 8 | b[33]);
}

TEST_F(PacketFlow, EcmpSpreadsFlowsAndPinsEachFlow) {
  std::map<std::uint32_t, int> per_vtep;
  std::map<std::uint16_t, std::pair<std::uint32_t, std::uint16_t>> first_seen;  // flow -> (vtep, sport)
  for (int round = 0; round < 3; ++round) {
    for (std::uint16_t f = 0; f < 1024; f += 32) {
      std::vector<Bytes> burst;
      for (std::uint16_t k = 0; k < 32; ++k) burst.push_back(flow(static_cast<std::uint16_t>(10000 + f + k)));
      run(kPod1, burst);
      auto out = take_all();
      ASSERT_EQ(out[kUplink].size(), 32u);
      for (std::uint16_t k = 0; k < 32; ++k) {
        const Bytes& o = out[kUplink][k];
        const std::uint32_t v = outer_dst(o);
        const std::uint16_t sp = outer_sport(o);
        EXPECT_GE(sp, 49152);
        if (round == 0) {
          ++per_vtep[v];
          first_seen[f + k] = {v, sp};
        } else {
          EXPECT_EQ(first_seen[f + k].first, v) << "flow moved to another VTEP";
          EXPECT_EQ(first_seen[f + k].second, sp) << "flow changed UDP source port";
        }
      }
    }
  }
  ASSERT_EQ(per_vtep.size(), 2u) << "both ECMP next hops used";
  EXPECT_GT(per_vtep[ip("198.18.0.3")], 1024 * 0.4);
  EXPECT_GT(per_vtep[ip("198.18.0.4")], 1024 * 0.4);
  std::set<std::uint16_t> ports;
  for (auto& [f, vs] : first_seen) ports.insert(vs.second);
  EXPECT_GT(ports.size(), 900u) << "source ports carry flow entropy";
}

TEST_F(PacketFlow, WeightedEcmpFollowsWeights) {
  auto t = sample_tables();
  auto* r = t.mutable_routes(1);  // 10.245.7.0/24
  r->mutable_next_hops(0)->set_weight(3);
  r->mutable_next_hops(1)->set_weight(1);
  auto built = node_.build(t);
  ASSERT_TRUE(built.ok()) << built.error();
  tables_ = std::move(*built);
  std::map<std::uint32_t, int> per_vtep;
  for (std::uint16_t f = 0; f < 4096; f += 32) {
    std::vector<Bytes> burst;
    for (std::uint16_t k = 0; k < 32; ++k) burst.push_back(flow(static_cast<std::uint16_t>(f + k)));
    run(kPod1, burst);
    auto out = take_all();
    for (const Bytes& o : out[kUplink]) ++per_vtep[outer_dst(o)];
  }
  const double share = per_vtep[ip("198.18.0.3")] / 4096.0;
  EXPECT_NEAR(share, 0.75, 0.05);
}

TEST_F(PacketFlow, UnresolvedNeighbourIsWantedThenLearnedFromArp) {
  const Bytes to_206 = flow(1, ip("10.246.0.5"));  // route -> 198.18.0.6, no static neighbour
  run(kPod1, {to_206});
  EXPECT_EQ(drops(DropReason::UnderlayNeighborUnresolved), 1u);
  EXPECT_TRUE(take_all().empty());
  const auto wanted = node_.neighbors.take_wanted();
  ASSERT_EQ(wanted.size(), 1u);
  EXPECT_EQ(wanted[0], htonl(ip("198.18.0.6")));
  EXPECT_TRUE(node_.neighbors.take_wanted().empty()) << "flag cleared once taken";

  // The runtime's ARP request for it:
  rte_mbuf* req = rte_pktmbuf_alloc(small_pool());
  ASSERT_TRUE(dp::build_arp_request(req, kUplinkMac, htonl(ip("198.18.0.1")), htonl(ip("198.18.0.6"))));
  EXPECT_EQ(read_mbuf(req), ethernet(kBcast, kUplinkMac, 0x0806, arp(1, kUplinkMac, ip("198.18.0.1"), kZero, ip("198.18.0.6"))));
  rte_pktmbuf_free(req);

  // The VTEP answers; the worker learns it, and the next packet goes out to that MAC.
  const Mac mac6 = {0x02, 0, 0, 0, 0x02, 0x06};
  run(kUplink, {ethernet(kUplinkMac, mac6, 0x0806, arp(2, mac6, ip("198.18.0.6"), kUplinkMac, ip("198.18.0.1")))});
  EXPECT_TRUE(take_all().empty()) << "an ARP reply is consumed";
  EXPECT_EQ(drops(DropReason::ArpIgnored), 0u);
  auto learned = node_.neighbors.lookup(htonl(ip("198.18.0.6")));
  ASSERT_TRUE(learned.has_value());
  EXPECT_EQ(*learned, mac6);
  run(kPod1, {to_206});
  auto out = take_all();
  ASSERT_EQ(out[kUplink].size(), 1u);
  EXPECT_TRUE(std::equal(mac6.begin(), mac6.end(), out[kUplink][0].begin())) << "outer dst = learned MAC";
  // Learning survives a table swap (the cache is not part of the tables).
  auto again = node_.build(sample_tables());
  ASSERT_TRUE(again.ok());
  tables_ = std::move(*again);
  run(kPod1, {to_206});
  EXPECT_EQ(take_all()[kUplink].size(), 1u);
}

// The VTEP entries carry their neighbour's MAC (VtepEntry::head), copied from the cache by
// the control thread (copy_neighbor_macs, when the cache's change count moves): an entry with
// no copy reads the cache; a MAC that changed is used from the next copy on; a neighbour that
// is no longer resolved clears the copy, and packets are dropped and the MAC asked for again.
TEST_F(PacketFlow, VtepEntriesCarryTheNeighbourMacCopiedFromTheCache) {
  const Bytes to_206 = flow(1, ip("10.246.0.5"));  // route -> 198.18.0.6, no static neighbour
  const auto slot = node_.neighbors.find_slot(htonl(ip("198.18.0.6")));
  ASSERT_TRUE(slot.has_value());
  const auto outer_dst_mac = [&] {
    run(kPod1, {to_206});
    auto out = take_all();
    Mac m{};
    if (out[kUplink].size() == 1) std::copy(out[kUplink][0].begin(), out[kUplink][0].begin() + 6, m.begin());
    return m;
  };
  const Mac mac_a = {0x02, 0, 0, 0, 0x0a, 0x06}, mac_b = {0x02, 0, 0, 0, 0x0b, 0x06};
  const std::uint64_t changes_before = node_.neighbors.changes();
  node_.neighbors.learn_slot(*slot, mac_a);  // a worker saw its ARP reply
  EXPECT_GT(node_.neighbors.changes(), changes_before) << "learning counts as a change";
  EXPECT_EQ(outer_dst_mac(), mac_a) << "no copy yet: the cache is read";
  EXPECT_GE(tables_->copy_neighbor_macs(), 1u);
  EXPECT_EQ(tables_->copy_neighbor_macs(), 0u) << "copied already: nothing to write";
  EXPECT_EQ(outer_dst_mac(), mac_a);

  node_.neighbors.learn_slot(*slot, mac_b);  // the VTEP's MAC changed
  EXPECT_EQ(outer_dst_mac(), mac_a) << "until the next copy, the entry's MAC";
  EXPECT_EQ(tables_->copy_neighbor_macs(), 1u);
  EXPECT_EQ(outer_dst_mac(), mac_b);

  node_.neighbors.set_static(*slot, mac_a);
  node_.neighbors.clear_static(*slot);  // no longer resolved
  tables_->copy_neighbor_macs();
  const std::uint64_t unresolved_before = drops(DropReason::UnderlayNeighborUnresolved);
  EXPECT_EQ(outer_dst_mac(), Mac{}) << "no MAC anywhere: dropped";
  EXPECT_EQ(drops(DropReason::UnderlayNeighborUnresolved), unresolved_before + 1);
  const auto wanted = node_.neighbors.take_wanted();
  EXPECT_EQ(wanted, std::vector<std::uint32_t>{htonl(ip("198.18.0.6"))}) << "and asked for again";

  // Tables built while the cache knows the MAC start with it copied.
  node_.neighbors.learn_slot(*slot, mac_b);
  auto again = node_.build(sample_tables());
  ASSERT_TRUE(again.ok());
  tables_ = std::move(*again);
  EXPECT_EQ(tables_->copy_neighbor_macs(), 0u) << "copied at creation";
  EXPECT_EQ(outer_dst_mac(), mac_b);
}

// A pod's frames that are not IPv4 (a new pod's IPv6 router solicitations and duplicate
// address detection) are dropped without a route lookup: the bytes where an IPv4 destination
// would be are part of the IPv6 source address, and looking them up read first-level LPM
// pages all over the address space (the soak's dataplane grew with every pod that came up).
// Checked by the page the lookup would have read: still not mapped after the frames.
TEST_F(PacketFlow, NonIpv4PodFramesLookNothingUp) {
  const std::uint32_t garbage = ip("198.51.85.119");  // frame bytes 30..33: IPv6 source bytes 8..11
  const auto page_mapped = [&] {
    const auto at = reinterpret_cast<std::uintptr_t>(tables_->lpm().tbl24() + (garbage >> 8));
    const std::uintptr_t page = at & ~std::uintptr_t{4095};
    unsigned char v = 0;
    EXPECT_EQ(::mincore(reinterpret_cast<void*>(page), 4096, &v), 0);
    return (v & 1) != 0;
  };
  ASSERT_FALSE(page_mapped()) << "nothing in the tables there";
  Bytes ipv6(40 + 8, 0);
  ipv6[0] = 0x60;
  ipv6[5] = 8;     // payload length
  ipv6[6] = 58;    // ICMPv6
  ipv6[7] = 255;
  ipv6[8] = 0xfe;  // source fe80::c633:5577:...
  ipv6[9] = 0x80;
  ipv6[16] = 198;
  ipv6[17] = 51;
  ipv6[18] = 85;
  ipv6[19] = 119;
  ipv6[24] = 0xff;  // destination ff02::2 (all routers)
  ipv6[25] = 0x02;
  ipv6[39] = 0x02;
  ipv6[40] = 133;  // router solicitation
  const Bytes frame = ethernet({0x33, 0x33, 0, 0, 0, 2}, kPod1Mac, 0x86dd, ipv6);
  ASSERT_EQ(frame[30], 198);
  run(kPod1, {frame});           // a burst of one: its first and last frame
  run(kPod1, {frame, frame});
  EXPECT_TRUE(take_all().empty());
  EXPECT_FALSE(page_mapped()) << "an IPv6 frame's bytes were looked up as an IPv4 destination";
}

// An underlay router's ICMP fragmentation-needed, answering an outer packet we sent (the
// frame as it left the uplink): from `router` to our VTEP, quoting the outer IPv4 header and
// its 8 UDP bytes (what RFC 792 routers quote at least).
Bytes router_frag_needed(const Bytes& our_outer_frame, std::uint16_t mtu, std::uint32_t router = ip("198.18.0.254")) {
  Bytes icmp = {3, 4, 0, 0, 0, 0, static_cast<std::uint8_t>(mtu >> 8), static_cast<std::uint8_t>(mtu)};
  icmp.insert(icmp.end(), our_outer_frame.begin() + 14, our_outer_frame.begin() + 14 + 28);
  const std::uint16_t c = checksum(icmp.data(), icmp.size());
  icmp[2] = c >> 8;
  icmp[3] = c & 0xff;
  const Mac router_mac = {0x02, 0, 0, 0, 0xfe, 0x01};
  return ethernet(kUplinkMac, router_mac, 0x0800, ipv4(router, ip("198.18.0.1"), 1, icmp));
}
Bytes pod_udp(std::uint32_t dst, std::size_t ip_total, bool df) {
  return ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                  ipv4(ip("10.244.1.10"), dst, 17, udp(7, 80, payload(ip_total - 28)), Ipv4Opts{.df = df}));
}
std::uint16_t icmp_mtu(const Bytes& b) { return static_cast<std::uint16_t>(b[14 + 20 + 6] << 8 | b[14 + 20 + 7]); }

TEST_F(PacketFlow, UnderlayFragNeededLowersThePathMtuTowardThatVtepOnly) {
  auto run = [&](std::uint16_t port, const std::vector<Bytes>& frames) { PacketFlow::run(port, frames, jumbo_pool()); };
  const std::uint32_t to_202 = ip("10.245.1.1");  // route -> 198.18.0.2
  const std::uint32_t to_203_or_204 = ip("10.245.7.20");
  run(kPod1, {pod_udp(to_202, 3000, true)});
  auto out = take_all();
  ASSERT_EQ(out[kUplink].size(), 1u) << "3000 bytes fit the network MTU: encapsulated";
  const Bytes sent = out[kUplink][0];

  // ICMP that must not count: quoting a packet that is not ours, and a next-hop MTU of 0.
  Bytes not_ours = sent;
  not_ours[14 + 12 + 3] ^= 1;  // the quoted source is another VTEP's
  run(kUplink, {router_frag_needed(not_ours, 1500), router_frag_needed(sent, 0)});
  EXPECT_TRUE(take_all().empty());
  EXPECT_EQ(drops(DropReason::IcmpIgnored), 2u);
  EXPECT_FALSE(node_.path_mtus.any());

  // The router's answer to our packet: the path toward 198.18.0.2 is 1500.
  run(kUplink, {router_frag_needed(sent, 1500)});
  EXPECT_TRUE(take_all().empty()) << "consumed";
  EXPECT_EQ(drops(DropReason::IcmpFragNeededLearned), 1u);
  EXPECT_EQ(node_.path_mtus.lookup(htonl(ip("198.18.0.2"))), 1500);

  // With DF: fragmentation-needed to the pod for the inner size that fits (1500 - 50).
  const Bytes big_df = pod_udp(to_202, 3000, true);
  run(kPod1, {big_df});
  out = take_all();
  ASSERT_EQ(out[kPod1].size(), 1u);
  EXPECT_TRUE(out[kUplink].empty());
  EXPECT_EQ(out[kPod1][0][14 + 20], 3);
  EXPECT_EQ(out[kPod1][0][14 + 21], 4);
  EXPECT_EQ(icmp_mtu(out[kPod1][0]), 1450);
  EXPECT_EQ(drops(DropReason::PathTooBigDf), 1u);
  // Without DF: dropped and counted. At the path's size: encapsulated. Both in one burst with
  // the DF one, and alone (the one-destination pass is not taken while a path MTU is in force).
  run(kPod1, {pod_udp(to_202, 3000, false), pod_udp(to_202, 1450, true), big_df});
  out = take_all();
  EXPECT_EQ(out[kUplink].size(), 1u) << "the 1450-byte packet";
  EXPECT_EQ(out[kPod1].size(), 1u) << "one more fragmentation-needed";
  EXPECT_EQ(drops(DropReason::PathTooBigNoDf), 1u);
  EXPECT_EQ(drops(DropReason::PathTooBigDf), 2u);
  // The slow path (an IPv4 option) takes the same check.
  const Bytes big_df_options = ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
      ipv4(ip("10.244.1.10"), to_202, 17, udp(7, 80, payload(3000 - 32)), Ipv4Opts{.df = true, .ihl = 6}));
  run(kPod1, {big_df_options});
  out = take_all();
  EXPECT_EQ(out[kPod1].size(), 1u);
  EXPECT_EQ(drops(DropReason::PathTooBigDf), 3u);
  // Other VTEPs keep the underlay's MTU.
  run(kPod1, {pod_udp(to_203_or_204, 3000, true)});
  EXPECT_EQ(take_all()[kUplink].size(), 1u);

  // Below 552 (Linux's floor) is raised to it; a higher answer does not raise the MTU again.
  run(kUplink, {router_frag_needed(sent, 300)});
  EXPECT_EQ(node_.path_mtus.lookup(htonl(ip("198.18.0.2"))), 552);
  run(kUplink, {router_frag_needed(sent, 1500)});
  EXPECT_EQ(node_.path_mtus.lookup(htonl(ip("198.18.0.2"))), 552);
  take_all();

  // Ten minutes later the exception is gone and the packet goes out again.
  node_.path_mtus.tick(dp::PathMtuCache::kLifetimeSeconds + 1);
  EXPECT_FALSE(node_.path_mtus.any());
  run(kPod1, {big_df});
  EXPECT_EQ(take_all()[kUplink].size(), 1u);
}

TEST_F(PacketFlow, ArpCannotOverrideStaticNeighbour) {
  const Mac evil = {0x02, 0xee, 0, 0, 0, 1};
  run(kUplink, {ethernet(kUplinkMac, evil, 0x0806, arp(2, evil, ip("198.18.0.2"), kUplinkMac, ip("198.18.0.1")))});
  take_all();
  EXPECT_EQ(*node_.neighbors.lookup(htonl(ip("198.18.0.2"))), neighbor_mac(2));
}

TEST_F(PacketFlow, PoolExhaustedThenRecovers) {
  // Only generated packets (ICMP) allocate. A tiny pool, emptied, then refilled.
  rte_mempool* pool = rte_pktmbuf_pool_create("exhaust", 15, 0, 0, 9216 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
  ASSERT_NE(pool, nullptr);
  const Bytes big = ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                             ipv4(ip("10.244.1.10"), ip("10.245.1.1"), 17, udp(1, 2, payload(9000 - 28)), Ipv4Opts{.df = true}));
  std::vector<rte_mbuf*> hog;
  rte_mbuf* pkt = make_mbuf(big, pool);
  ASSERT_NE(pkt, nullptr);
  while (rte_mbuf* m = rte_pktmbuf_alloc(pool)) hog.push_back(m);
  rte_mbuf* burst[1] = {pkt};
  dp::process_pod_burst(*tables_, kPod1, burst, 1, *tx_, *counters_);
  EXPECT_EQ(drops(DropReason::MbufAllocFailed), 1u);
  EXPECT_TRUE(take_all().empty());
  EXPECT_EQ(rte_mempool_in_use_count(pool), hog.size()) << "the dropped packet went back to the pool";
  rte_pktmbuf_free_bulk(hog.data(), static_cast<unsigned>(hog.size()));
  run(kPod1, {big}, pool);
  auto out = take_all();
  ASSERT_EQ(out[kPod1].size(), 1u) << "ICMP sent once mbufs are back";
  EXPECT_EQ(out[kPod1][0][14 + 20], 3);  // ICMP type 3
  EXPECT_EQ(drops(DropReason::TooBigDf), 1u);
  EXPECT_EQ(rte_mempool_in_use_count(pool), 0u);
  rte_mempool_free(pool);
}

TEST_F(PacketFlow, FullBurstOfMixedTrafficIsAllAccountedFor) {
  std::vector<Bytes> burst;
  for (int i = 0; i < dp::kMaxBurst; ++i) {
    switch (i % 4) {
      case 0: burst.push_back(flow(static_cast<std::uint16_t>(i), ip("10.245.1.1"))); break;  // encap
      case 1: burst.push_back(flow(static_cast<std::uint16_t>(i), ip("10.244.1.11"))); break; // local
      case 2: burst.push_back(flow(static_cast<std::uint16_t>(i), ip("192.0.2.1"))); break;   // no route
      default: {  // truncated
        const Bytes whole = flow(1);
        burst.push_back(Bytes(whole.begin(), whole.begin() + 20));
        break;
      }
    }
  }
  run(kPod1, burst);
  auto out = take_all();
  EXPECT_EQ(out[kUplink].size(), 16u);
  EXPECT_EQ(out[kPod2].size(), 16u);
  EXPECT_EQ(drops(DropReason::NoRoute), 16u);
  EXPECT_EQ(drops(DropReason::Truncated), 16u);
  EXPECT_EQ(counters_->ports[kPod1].rx_packets.get(), 64u);
  EXPECT_EQ(counters_->ports[kPod1].drops.get(), 32u);
  EXPECT_EQ(counters_->ports[kUplink].tx_packets.get(), 16u);
  EXPECT_EQ(counters_->ports[kPod2].tx_packets.get(), 16u);
  const auto slot = node_.vni_slots.find(kVniA);
  ASSERT_TRUE(slot.has_value());
  EXPECT_EQ(counters_->vnis[*slot].encap_packets.get(), 16u);
  EXPECT_EQ(counters_->vnis[*slot].local_packets.get(), 16u);
  EXPECT_EQ(counters_->vnis[*slot].encap_bytes.get(), 16u * flow(1).size());
}

// A pod burst takes one pass while its packets go to the first packet's destination and the
// general passes from the first that does not: whatever the mix, the burst's outputs (bytes,
// order per port) and counters must be those of the same packets sent one at a time.
TEST_F(PacketFlow, PodBurstMatchesPacketsSentOneAtATime) {
  Ipv4Opts fragment;
  fragment.mf = true;
  const Bytes icmp_echo = ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                                   ipv4(ip("10.244.1.10"), ip("10.245.7.20"), 1, payload(30)));
  const Bytes frag = ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                              ipv4(ip("10.244.1.10"), ip("10.245.7.20"), 17, udp(7, 80, payload(18)), fragment));
  std::vector<std::vector<Bytes>> bursts;
  std::vector<Bytes> one_destination;  // all of it in one pass (an ECMP group)
  for (std::uint16_t i = 0; i < dp::kMaxBurst; ++i) one_destination.push_back(flow(static_cast<std::uint16_t>(1000 + i)));
  bursts.push_back(one_destination);
  std::vector<Bytes> mixed;  // the one pass stops at packet 5, 6, 8, ... in turn
  for (std::uint16_t i = 0; i < 5; ++i) mixed.push_back(flow(static_cast<std::uint16_t>(i)));
  mixed.push_back(icmp_echo);
  mixed.push_back(flow(5));
  mixed.push_back(frag);
  mixed.push_back(flow(6, ip("10.244.1.11")));  // local
  mixed.push_back(flow(7, ip("10.245.1.1")));   // another remote destination
  mixed.push_back(flow(8));
  mixed.push_back(flow(9, ip("192.0.2.1")));    // no route
  for (std::uint16_t i = 10; i < 20; ++i) mixed.push_back(flow(i));
  bursts.push_back(mixed);
  std::vector<Bytes> local_first = {flow(1, ip("10.244.1.11")), flow(2), flow(3), flow(4, ip("10.245.1.1"))};
  bursts.push_back(local_first);

  for (const auto& burst : bursts) {
    const auto r = run_both_ways(kPod1, burst);
    EXPECT_EQ(r.together, r.alone) << "burst of " << burst.size();
    expect_same_counters(*r.together_counters, *counters_);
  }
  // And the mixed burst did what its parts say: 17 UDP packets, the ICMP echo and the fragment
  // encapsulated toward 10.245.7.20, one toward 10.245.1.1, one delivered locally, one
  // without a route.
  counters_ = std::make_unique<dp::WorkerCounters>();
  run(kPod1, mixed);
  auto out = take_all();
  EXPECT_EQ(out[kUplink].size(), 20u);
  EXPECT_EQ(out[kPod2].size(), 1u);
  EXPECT_EQ(drops(DropReason::NoRoute), 1u);
}

// An uplink burst gathers the packets for one pod port and stages them together: whatever
// the mix (pods alternating, slow-path packets between them), the burst's outputs and
// counters must be those of the same packets sent one at a time.
TEST_F(PacketFlow, UplinkBurstMatchesPacketsSentOneAtATime) {
  auto to_pod = [](std::uint32_t pod_ip, std::uint16_t sport, std::uint32_t vtep = ip("198.18.0.2"),
                   std::uint32_t vni = kVniA, std::uint32_t src = ip("10.245.0.9")) {
    const Bytes inner = ethernet(gateway_mac(vni), kZero, 0x0800,
                                 ipv4(src, pod_ip, 17, udp(sport, 80, payload(30))));
    return vxlan_frame(kUplinkMac, neighbor_mac(2), vtep, ip("198.18.0.1"), sport, vni, inner);
  };
  const std::uint32_t pod1 = ip("10.244.1.10"), pod2 = ip("10.244.1.11");
  const Bytes arp_for_vtep = ethernet(kBcast, neighbor_mac(2), 0x0806,
                                      arp(1, neighbor_mac(2), ip("198.18.0.2"), kZero, ip("198.18.0.1")));
  Bytes bad_checksum = to_pod(pod1, 77);
  bad_checksum[24] ^= 0xff;  // outer IPv4 checksum: the reference parser names the drop
  std::vector<Bytes> burst;
  for (std::uint16_t i = 0; i < 4; ++i) burst.push_back(to_pod(pod1, i));
  for (std::uint16_t i = 4; i < 6; ++i) burst.push_back(to_pod(pod2, i));
  burst.push_back(to_pod(pod1, 6));
  burst.push_back(arp_for_vtep);                              // the slow path, staged on the uplink
  burst.push_back(to_pod(pod1, 7));
  burst.push_back(to_pod(pod1, 8, ip("198.18.0.77")));        // unknown VTEP
  burst.push_back(bad_checksum);
  burst.push_back(to_pod(ip("10.250.1.10"), 9, ip("198.18.0.5"), kVniB));  // pod3, tenant B
  for (std::uint16_t i = 10; i < 14; ++i) burst.push_back(to_pod(i % 2 ? pod1 : pod2, i));
  // In a run from one VTEP to one pod, sources it has no route for (the reverse-path check
  // is not skipped for a packet whose VTEP, VNI and destination match the one before).
  burst.push_back(to_pod(pod1, 14, ip("198.18.0.2"), kVniA, pod2));
  burst.push_back(to_pod(pod1, 15, ip("198.18.0.2"), kVniA, ip("10.245.7.9")));  // routed to .3/.4
  burst.push_back(to_pod(pod1, 16));

  const auto r = run_both_ways(kUplink, burst);
  EXPECT_EQ(r.together, r.alone);
  EXPECT_EQ(r.together.at(kPod1).size(), 9u);
  EXPECT_EQ(r.together.at(kPod2).size(), 4u);
  EXPECT_EQ(r.together.at(kPod3).size(), 1u);
  EXPECT_EQ(r.together.at(kUplink).size(), 1u);  // the ARP reply
  expect_same_counters(*r.together_counters, *counters_);
  EXPECT_EQ(r.together_counters->drops[static_cast<int>(DropReason::UnknownVtep)].get(), 1u);
  EXPECT_EQ(r.together_counters->drops[static_cast<int>(DropReason::BadIpChecksum)].get(), 1u);
  EXPECT_EQ(r.together_counters->drops[static_cast<int>(DropReason::InnerSourceSpoofed)].get(), 2u);
}

TEST_F(PacketFlow, DecapCountsPerVni) {
  const Bytes inner = ethernet(gateway_mac(kVniB), kZero, 0x0800, ipv4(ip("10.245.0.9"), ip("10.250.1.10"), 17, udp(1, 2, payload(30))));
  const Bytes frame = vxlan_frame(kUplinkMac, neighbor_mac(5), ip("198.18.0.5"), ip("198.18.0.1"), 50001, kVniB, inner);
  run(kUplink, {frame, frame, frame});
  EXPECT_EQ(take_all()[kPod3].size(), 3u);
  const auto slot = node_.vni_slots.find(kVniB);
  ASSERT_TRUE(slot.has_value());
  EXPECT_EQ(counters_->vnis[*slot].decap_packets.get(), 3u);
  EXPECT_EQ(counters_->vnis[*slot].decap_bytes.get(), 3 * inner.size());
  EXPECT_EQ(counters_->ports[kUplink].rx_bytes.get(), 3 * frame.size());
}

TEST_F(PacketFlow, TxStageOverflowCountsTxFull) {
  // The runtime flushes after every burst; if it does not, staging stops at capacity.
  for (int b = 0; b < 3; ++b) {
    std::vector<Bytes> burst;
    for (int i = 0; i < 64; ++i) burst.push_back(flow(static_cast<std::uint16_t>(i), ip("10.245.1.1")));
    run(kPod1, burst);
  }
  EXPECT_EQ(tx_->ports[kUplink].count, dp::kTxStageCapacity);
  EXPECT_EQ(drops(DropReason::TxFull), 3u * 64 - dp::kTxStageCapacity);
  // A NIC that takes only 10: the rest is freed and counted as tx_full.
  tx_->flush([](std::uint16_t, rte_mbuf** p, std::uint16_t n) {
    const std::uint16_t took = std::min<std::uint16_t>(n, 10);
    rte_pktmbuf_free_bulk(p, took);
    return took;
  }, *counters_);
  EXPECT_EQ(counters_->ports[kUplink].tx_packets.get(), 10u);
  EXPECT_EQ(drops(DropReason::TxFull), 3u * 64 - 10);
  EXPECT_EQ(rte_mempool_in_use_count(small_pool()), 0u);
}

TEST_F(PacketFlow, NoHeadroomForOuterHeadersIsDropped) {
  rte_mbuf* m = rte_pktmbuf_alloc(small_pool());
  ASSERT_NE(m, nullptr);
  m->data_off = 10;  // only 10 bytes in front of the frame
  const Bytes f = flow(1, ip("10.245.1.1"));
  std::memcpy(rte_pktmbuf_append(m, static_cast<std::uint16_t>(f.size())), f.data(), f.size());
  rte_mbuf* burst[1] = {m};
  dp::process_pod_burst(*tables_, kPod1, burst, 1, *tx_, *counters_);
  EXPECT_EQ(drops(DropReason::NoHeadroom), 1u);
  EXPECT_TRUE(take_all().empty());
  EXPECT_EQ(rte_mempool_in_use_count(small_pool()), 0u);
}

TEST_F(PacketFlow, NoTablesDropsWholeBurst) {
  std::vector<rte_mbuf*> pkts;
  for (int i = 0; i < 5; ++i) pkts.push_back(make_mbuf(flow(1), small_pool()));
  dp::drop_burst(pkts.data(), 5, kPod1, DropReason::NoTables, *counters_);
  EXPECT_EQ(drops(DropReason::NoTables), 5u);
  EXPECT_EQ(counters_->ports[kPod1].rx_packets.get(), 5u);
  EXPECT_EQ(rte_mempool_in_use_count(small_pool()), 0u);
}

}  // namespace
}  // namespace vxfed::test
