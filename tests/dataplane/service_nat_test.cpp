// Packet tests of global services' translation (dataplane/core/service_nat.hpp) through the
// real burst functions: a pod's UDP and TCP to VIP:port reach a remote or local backend at its
// target port, replies (decapsulated, or from a local backend) come back from VIP:port, ICMP
// errors about a translated packet are translated back, checksums stay right (complete and
// pending), a flow keeps its backend when another is added and moves when its own is
// removed, hairpin is excluded, and what cannot be translated is dropped with its reason.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <map>
#include <memory>

#include "dataplane/core/pipeline.hpp"
#include "dataplane/core/service_nat.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/frames.hpp"
#include "tests/dataplane/mbufs.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

using dp::DropReason;
using dataplane::v1::Delta;
using dataplane::v1::Tables;

constexpr const char* kVip = "10.96.0.10";
constexpr const char* kRemoteBackend = "10.245.0.7";  // behind 198.18.0.2
constexpr const char* kLocalBackend = "10.244.1.11";  // pod2, port 2
constexpr std::size_t kInnerAt = 50;                  // inner frame after the VXLAN headers

// A TCP header (seq 1, no options) with `flags`, checksum 0 (fill_l4_checksum writes it).
Bytes tcp(std::uint16_t sport, std::uint16_t dport, std::uint8_t flags, const Bytes& data) {
  Bytes b(20, 0);
  b[0] = static_cast<std::uint8_t>(sport >> 8);
  b[1] = static_cast<std::uint8_t>(sport);
  b[2] = static_cast<std::uint8_t>(dport >> 8);
  b[3] = static_cast<std::uint8_t>(dport);
  b[7] = 1;
  b[12] = 5 << 4;
  b[13] = flags;
  b[14] = 0xff;
  b[15] = 0xff;
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

// The complete TCP/UDP checksum of the IPv4 packet at ip_at (written by these tests, not by
// the code under test).
void fill_l4_checksum(Bytes& f, std::size_t ip_at) {
  const std::size_t ihl = (f[ip_at] & 15u) * 4u, l4 = ip_at + ihl;
  const std::size_t len = get16(f, ip_at + 2) - ihl;
  const std::uint8_t proto = f[ip_at + 9];
  const std::size_t field = l4 + (proto == 6 ? 16 : 6);
  put16(f, field, 0);
  Bytes pseudo(f.begin() + static_cast<long>(ip_at + 12), f.begin() + static_cast<long>(ip_at + 20));
  pseudo.push_back(0);
  pseudo.push_back(proto);
  pseudo.push_back(static_cast<std::uint8_t>(len >> 8));
  pseudo.push_back(static_cast<std::uint8_t>(len));
  pseudo.insert(pseudo.end(), f.begin() + static_cast<long>(l4), f.begin() + static_cast<long>(l4 + len));
  std::uint16_t sum = checksum(pseudo.data(), pseudo.size());
  if (sum == 0 && proto == 17) sum = 0xffff;
  put16(f, field, sum);
}

Bytes from_pod1(std::uint32_t dst, std::uint8_t proto, const Bytes& l4) {
  Bytes f = ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800, ipv4(ip("10.244.1.10"), dst, proto, l4));
  fill_l4_checksum(f, 14);
  return f;
}
Bytes udp_to_vip(std::uint16_t sport, std::uint16_t dport = 53) { return from_pod1(ip(kVip), 17, udp(sport, dport, payload(20))); }

std::uint32_t src_of(const Bytes& f, std::size_t ip_at) { return get32(f, ip_at + 12); }
std::uint32_t dst_of(const Bytes& f, std::size_t ip_at) { return get32(f, ip_at + 16); }
std::uint16_t sport_of(const Bytes& f, std::size_t ip_at) { return get16(f, ip_at + 20); }
std::uint16_t dport_of(const Bytes& f, std::size_t ip_at) { return get16(f, ip_at + 22); }

class ServiceNat : public ::testing::Test {
 protected:
  void SetUp() override {
    VXFED_REQUIRE_EAL();
    dp::ConntrackConfig cc;
    cc.capacity = 1024;
    auto table = dp::ConntrackTable::create(cc);
    ASSERT_TRUE(table.ok()) << table.error();
    conntrack_ = std::move(*table);
    flows_.table = conntrack_.get();
    flows_.now = 1000;
    flows_.backend_counters = &slots_;
    counters_ = std::make_unique<dp::WorkerCounters>();
    tx_ = std::make_unique<dp::TxStage>();
  }
  void TearDown() override { take_all(); }

  // The sample tables with one service on tenant A: UDP 53 -> 5353, TCP 80 -> 8080, TCP 5201.
  void build(const std::vector<const char*>& backends) {
    Tables t = sample_tables();
    *t.add_services() = service(backends);
    auto built = dp::ForwardingTables::create(t, context());
    ASSERT_TRUE(built.ok()) << built.error();
    tables_ = std::move(*built);
  }
  // The node's context with the per-backend counter slots, as the runtime builds with.
  dp::BuildContext context() {
    dp::BuildContext c = node_.context();
    c.service_counters = &slots_;
    return c;
  }
  static dataplane::v1::Service service(const std::vector<const char*>& backends) {
    dataplane::v1::Service sv;
    sv.set_id("ns/web");
    sv.set_vni(kVniA);
    sv.set_vip(kVip);
    for (auto [proto, port, target] : {std::tuple{17u, 53u, 5353u}, {6u, 80u, 8080u}, {6u, 5201u, 0u}}) {
      auto* p = sv.add_ports();
      p->set_protocol(proto);
      p->set_port(port);
      p->set_target_port(target);
    }
    for (const char* b : backends) {
      auto* x = sv.add_backends();
      x->set_ip(b);
      x->set_weight(1);
    }
    return sv;
  }
  void set_backends(const std::vector<const char*>& backends) {
    Delta d;
    *d.mutable_upsert()->add_services() = service(backends);
    dp::ImmediateReclaimer r;
    auto applied = tables_->apply(d, context(), r);
    ASSERT_TRUE(applied.ok()) << applied.error();
  }

  void run(std::uint16_t rx_port, const std::vector<Bytes>& frames, std::uint64_t ol_flags = 0) {
    std::vector<rte_mbuf*> pkts;
    for (const auto& f : frames) {
      pkts.push_back(make_mbuf(f, small_pool()));
      ASSERT_NE(pkts.back(), nullptr);
      pkts.back()->ol_flags |= ol_flags;
    }
    const auto n = static_cast<std::uint16_t>(pkts.size());
    if (rx_port == kUplink)
      dp::process_uplink_burst(*tables_, pkts.data(), n, *tx_, *counters_, &flows_);
    else
      dp::process_pod_burst(*tables_, rx_port, pkts.data(), n, *tx_, *counters_, &flows_);
  }
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
  // The one frame staged, on `port`.
  Bytes only(std::uint16_t port) {
    auto out = take_all();
    EXPECT_EQ(out.size(), 1u);
    EXPECT_EQ(out[port].size(), 1u) << "nothing staged on port " << port;
    return out[port].empty() ? Bytes{} : out[port][0];
  }
  std::uint64_t drops(DropReason r) const { return counters_->drops[static_cast<int>(r)].get(); }

  Node node_;
  dp::ServiceCounterSlots slots_{2};  // two: the hand-over test runs as worker 0 and 1
  std::unique_ptr<dp::ForwardingTables> tables_;
  std::unique_ptr<dp::ConntrackTable> conntrack_;
  dp::ServiceFlows flows_;
  std::unique_ptr<dp::WorkerCounters> counters_;
  std::unique_ptr<dp::TxStage> tx_;
};

TEST_F(ServiceNat, UdpToVipReachesARemoteBackendAndItsReplyComesBackFromTheVip) {
  build({kRemoteBackend});
  run(kPod1, {udp_to_vip(40001)});
  const Bytes out = only(kUplink);
  ASSERT_GT(out.size(), kInnerAt + 34);
  EXPECT_EQ(dst_of(out, kInnerAt + 14), ip(kRemoteBackend));
  EXPECT_EQ(dport_of(out, kInnerAt + 14), 5353);
  EXPECT_EQ(sport_of(out, kInnerAt + 14), 40001);
  EXPECT_TRUE(ipv4_checksum_ok(out, kInnerAt + 14));
  EXPECT_TRUE(l4_checksum_ok(out, kInnerAt + 14));
  EXPECT_EQ(counters_->services.new_flows.get(), 1u);
  // The same flow again: found, not inserted again.
  run(kPod1, {udp_to_vip(40001)});
  EXPECT_EQ(dst_of(only(kUplink), kInnerAt + 14), ip(kRemoteBackend));
  EXPECT_EQ(counters_->services.new_flows.get(), 1u);
  EXPECT_EQ(counters_->services.translated.get(), 2u);
  // The backend's reply, decapsulated toward pod1: from VIP:53.
  Bytes reply = ethernet(gateway_mac(kVniA), neighbor_mac(2), 0x0800,
                         ipv4(ip(kRemoteBackend), ip("10.244.1.10"), 17, udp(5353, 40001, payload(30))));
  fill_l4_checksum(reply, 14);
  run(kUplink, {vxlan_frame(kUplinkMac, neighbor_mac(2), ip("198.18.0.2"), ip("198.18.0.1"), 50000, kVniA, reply)});
  const Bytes back = only(kPod1);
  EXPECT_EQ(src_of(back, 14), ip(kVip));
  EXPECT_EQ(sport_of(back, 14), 53);
  EXPECT_EQ(dport_of(back, 14), 40001);
  EXPECT_TRUE(ipv4_checksum_ok(back, 14));
  EXPECT_TRUE(l4_checksum_ok(back, 14));
  EXPECT_EQ(counters_->services.replies_translated.get(), 1u);
  // A direct packet of the backend to the pod that is no reply of a service flow: untouched.
  Bytes other = reply;
  put16(other, 14 + 20, 5354);
  fill_l4_checksum(other, 14);
  run(kUplink, {vxlan_frame(kUplinkMac, neighbor_mac(2), ip("198.18.0.2"), ip("198.18.0.1"), 50000, kVniA, other)});
  EXPECT_EQ(src_of(only(kPod1), 14), ip(kRemoteBackend));
}

TEST_F(ServiceNat, TcpToALocalBackendAndItsReplyBetweenTwoPodsOfTheNode) {
  build({kLocalBackend});
  run(kPod1, {from_pod1(ip(kVip), 6, tcp(40002, 80, 0x02, {}))});
  const Bytes syn = only(kPod2);
  EXPECT_EQ(dst_of(syn, 14), ip(kLocalBackend));
  EXPECT_EQ(dport_of(syn, 14), 8080);
  EXPECT_TRUE(ipv4_checksum_ok(syn, 14));
  EXPECT_TRUE(l4_checksum_ok(syn, 14));
  // pod2's SYN-ACK to pod1: from VIP:80 when pod1 gets it.
  Bytes synack = ethernet(gateway_mac(kVniA), kPod2Mac, 0x0800,
                          ipv4(ip(kLocalBackend), ip("10.244.1.10"), 6, tcp(8080, 40002, 0x12, {})));
  fill_l4_checksum(synack, 14);
  run(kPod2, {synack});
  for (std::uint32_t r = 0; r < dp::kDropReasonCount; ++r)
    EXPECT_EQ(counters_->drops[r].get(), 0u) << dp::drop_reason_name(static_cast<DropReason>(r));
  const Bytes back = only(kPod1);
  EXPECT_EQ(src_of(back, 14), ip(kVip));
  EXPECT_EQ(sport_of(back, 14), 80);
  EXPECT_TRUE(l4_checksum_ok(back, 14));
  EXPECT_EQ(conntrack_->size(), 1u);
}

TEST_F(ServiceNat, APendingChecksumHasItsPseudoHeaderSumMoved) {
  build({kLocalBackend});
  // tcp_partial: ports 40000 -> 5201 (the service's third port, target the same).
  Bytes f = ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                     ipv4(ip("10.244.1.10"), ip(kVip), 6, tcp_partial(ip("10.244.1.10"), ip(kVip), 7, 0x18, payload(100))));
  run(kPod1, {f}, RTE_MBUF_F_RX_L4_CKSUM_NONE);
  const Bytes out = only(kPod2);
  EXPECT_EQ(dst_of(out, 14), ip(kLocalBackend));
  EXPECT_EQ(get16(out, 14 + 20 + 16), pseudo_sum(ip("10.244.1.10"), ip(kLocalBackend), 6, out.size() - 34))
      << "the field must hold the new pseudo-header's sum, for whoever completes it";
  EXPECT_TRUE(ipv4_checksum_ok(out, 14));
}

TEST_F(ServiceNat, AFlowKeepsItsBackendWhenOneIsAddedAndMovesWhenItsOwnIsRemoved) {
  build({kRemoteBackend});
  run(kPod1, {udp_to_vip(40003)});
  EXPECT_EQ(dst_of(only(kUplink), kInnerAt + 14), ip(kRemoteBackend));
  // Many backends added: the established flow stays where it is.
  set_backends({kRemoteBackend, kLocalBackend, "10.245.0.8", "10.245.0.9", "10.246.0.5"});
  run(kPod1, {udp_to_vip(40003)});
  EXPECT_EQ(dst_of(only(kUplink), kInnerAt + 14), ip(kRemoteBackend));
  // Its backend removed: its next packet gets a new one.
  set_backends({kLocalBackend});
  run(kPod1, {udp_to_vip(40003)});
  EXPECT_EQ(dst_of(only(kPod2), 14), ip(kLocalBackend));
  EXPECT_EQ(counters_->services.repicked.get(), 1u);
}

TEST_F(ServiceNat, AnIcmpErrorAboutATranslatedPacketIsTranslatedBack) {
  build({kRemoteBackend});
  run(kPod1, {udp_to_vip(40004)});
  const Bytes sent = only(kUplink);
  // The backend answers port unreachable, quoting what it got (client -> backend:5353).
  const Bytes quoted(sent.begin() + static_cast<long>(kInnerAt + 14), sent.begin() + static_cast<long>(kInnerAt + 14 + 28));
  Bytes icmp{3, 3, 0, 0, 0, 0, 0, 0};
  icmp.insert(icmp.end(), quoted.begin(), quoted.end());
  put16(icmp, 2, checksum(icmp.data(), icmp.size()));
  const Bytes err = ethernet(gateway_mac(kVniA), neighbor_mac(2), 0x0800, ipv4(ip(kRemoteBackend), ip("10.244.1.10"), 1, icmp));
  run(kUplink, {vxlan_frame(kUplinkMac, neighbor_mac(2), ip("198.18.0.2"), ip("198.18.0.1"), 50000, kVniA, err)});
  const Bytes back = only(kPod1);
  EXPECT_EQ(src_of(back, 14), ip(kVip)) << "the error comes from the address the client talked to";
  const std::size_t q = 14 + 20 + 8;
  EXPECT_EQ(dst_of(back, q), ip(kVip));
  EXPECT_EQ(dport_of(back, q), 53);
  EXPECT_TRUE(ipv4_checksum_ok(back, 14));
  EXPECT_TRUE(ipv4_checksum_ok(back, q));
  EXPECT_EQ(checksum(back.data() + 34, back.size() - 34), 0) << "ICMP checksum";
}

TEST_F(ServiceNat, WhatCannotBeTranslatedIsDroppedWithItsReason) {
  build({"10.244.1.10"});  // pod1 alone: hairpin is excluded
  run(kPod1, {udp_to_vip(40005)});
  EXPECT_EQ(drops(DropReason::ServiceNoBackend), 1u);
  set_backends({});
  run(kPod1, {udp_to_vip(40006)});
  EXPECT_EQ(drops(DropReason::ServiceNoBackend), 2u);
  // A port the service does not have: untranslated, no route for the VIP.
  set_backends({kRemoteBackend});
  run(kPod1, {udp_to_vip(40007, 54)});
  EXPECT_EQ(drops(DropReason::NoRoute), 1u);
  // A fragment to the VIP.
  Ipv4Opts frag;
  frag.mf = true;
  run(kPod1, {ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800, ipv4(ip("10.244.1.10"), ip(kVip), 17, udp(1, 53, payload(40)), frag))});
  EXPECT_EQ(drops(DropReason::ServiceUnparsable), 1u);
  // Several workers: not translated (a reply could meet another worker's table).
  flows_.workers = 2;
  run(kPod1, {udp_to_vip(40008)});
  EXPECT_EQ(drops(DropReason::ServiceNeedsOneWorker), 1u);
  EXPECT_EQ(counters_->ports[kPod1].rx_packets.get(), 5u) << "dropped packets are received packets too";
  take_all();
  // A network without services is untouched by all this (the burst's other packets too).
  flows_.workers = 1;
  run(kPod1, {udp_to_vip(40009), from_pod1(ip("10.245.0.3"), 17, udp(1, 2, payload(10)))});
  auto out = take_all();
  ASSERT_EQ(out[kUplink].size(), 2u);
  EXPECT_EQ(dst_of(out[kUplink][0], kInnerAt + 14), ip(kRemoteBackend));
  EXPECT_EQ(dst_of(out[kUplink][1], kInnerAt + 14), ip("10.245.0.3"));
}

// A flow's translated entry keeps the network's services generation it was checked under: a
// hit under the current one is translated from the packet's words alone (no services map, no
// view); a change of any service of the network is checked once on the flow's next packet
// (kept: its backend is still in the set), and the entry takes the new generation.
TEST_F(ServiceNat, AHitUnderTheNetworksServicesGenerationIsTranslatedFromTheWords) {
  Tables t = sample_tables();
  *t.add_services() = service({kRemoteBackend});
  dataplane::v1::Service other = service({kLocalBackend});
  other.set_id("ns/other");
  other.set_vip("10.96.0.20");
  *t.add_services() = other;
  auto built = node_.build(t);
  ASSERT_TRUE(built.ok()) << built.error();
  tables_ = std::move(*built);
  const std::uint16_t network = tables_->pod_port(kPod1)->network;
  auto entry = [&]() -> const dp::ConntrackEntry* {
    for (std::uint32_t i = 0; i < conntrack_->capacity(); ++i)
      if (conntrack_->entry_at(i).in_use) return &conntrack_->entry_at(i);
    return nullptr;
  };
  const std::uint32_t g0 = tables_->services_generation(network);
  EXPECT_NE(g0, 0u);
  run(kPod1, {udp_to_vip(40020)});
  EXPECT_EQ(dst_of(only(kUplink), kInnerAt + 14), ip(kRemoteBackend));
  ASSERT_NE(entry(), nullptr);
  EXPECT_EQ(entry()->policy, g0);
  // The other service changed: a new generation; the flow is checked and kept.
  Delta d;
  dataplane::v1::Service changed = other;
  changed.add_backends()->set_ip("10.245.0.8");
  changed.mutable_backends(1)->set_weight(1);
  *d.mutable_upsert()->add_services() = changed;
  dp::ImmediateReclaimer r;
  ASSERT_TRUE(tables_->apply(d, node_.context(), r).ok());
  const std::uint32_t g1 = tables_->services_generation(network);
  EXPECT_NE(g1, g0);
  run(kPod1, {udp_to_vip(40020), udp_to_vip(40020)});
  auto out = take_all();
  ASSERT_EQ(out[kUplink].size(), 2u);
  for (const Bytes& f : out[kUplink]) {
    EXPECT_EQ(dst_of(f, kInnerAt + 14), ip(kRemoteBackend));
    EXPECT_TRUE(l4_checksum_ok(f, kInnerAt + 14));
  }
  EXPECT_EQ(entry()->policy, g1);
  EXPECT_EQ(counters_->services.repicked.get(), 0u);
  EXPECT_EQ(counters_->services.translated.get(), 3u);
  // The other service removed: another generation; still kept.
  Delta rm;
  rm.mutable_remove_services()->Add("ns/other");
  ASSERT_TRUE(tables_->apply(rm, node_.context(), r).ok());
  EXPECT_NE(tables_->services_generation(network), g1);
  run(kPod1, {udp_to_vip(40020)});
  EXPECT_EQ(dst_of(only(kUplink), kInnerAt + 14), ip(kRemoteBackend));
  EXPECT_EQ(entry()->policy, tables_->services_generation(network));
}

// One burst mixing what takes the words path and what does not: a flow's packets in a row
// (the first inserts, the rest hit), a UDP checksum of 0 (stays 0), a packet with IPv4
// options (the view), TCP whose flags move the flow's state on the words path, and a packet
// to a VIP port the service does not have; each translated as alone, in order.
TEST_F(ServiceNat, ABurstOfHitsNewFlowsAndPacketsTheWordsPathRefusesIsTranslatedInOrder) {
  build({kRemoteBackend});
  Bytes zero = udp_to_vip(40031);
  put16(zero, 14 + 20 + 6, 0);
  Ipv4Opts opts;
  opts.ihl = 6;
  Bytes with_options = ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                                ipv4(ip("10.244.1.10"), ip(kVip), 17, udp(40032, 53, payload(20)), opts));
  fill_l4_checksum(with_options, 14);
  run(kPod1, {from_pod1(ip(kVip), 6, tcp(40033, 80, 0x02, {}))});  // SYN: a new flow
  take_all();
  run(kPod1, {udp_to_vip(40030), udp_to_vip(40030), zero, udp_to_vip(40030), with_options,
              from_pod1(ip(kVip), 6, tcp(40033, 80, 0x04, {})), udp_to_vip(40034, 54), zero});
  auto out = take_all();
  ASSERT_EQ(out[kUplink].size(), 7u);
  EXPECT_EQ(drops(DropReason::NoRoute), 1u) << "the port the service does not have";
  for (std::size_t k = 0; k < out[kUplink].size(); ++k) {
    const Bytes& f = out[kUplink][k];
    const std::size_t at = kInnerAt + 14;
    EXPECT_EQ(dst_of(f, at), ip(kRemoteBackend)) << k;
    EXPECT_TRUE(ipv4_checksum_ok(f, at)) << k;
    const std::size_t l4 = at + (f[at] & 15u) * 4u;
    if (get16(f, l4) == 40031) {
      EXPECT_EQ(get16(f, l4 + 6), 0) << "UDP checksum 0 stays none";
      EXPECT_EQ(get16(f, l4 + 2), 5353);
    } else {
      EXPECT_TRUE(l4_checksum_ok(f, at)) << k;
      EXPECT_EQ(get16(f, l4 + 2), f[at + 9] == 6 ? 8080 : 5353) << k;
    }
  }
  EXPECT_EQ(counters_->services.new_flows.get(), 4u);  // 40033, 40030, 40031, 40032
  EXPECT_EQ(counters_->services.translated.get(), 8u);
  bool closed = false;
  for (std::uint32_t i = 0; i < conntrack_->capacity(); ++i) {
    const auto& e = conntrack_->entry_at(i);
    if (e.in_use && e.original.protocol == 6) closed = e.state == dp::ConnState::TcpClose;
  }
  EXPECT_TRUE(closed) << "the RST on the words path moved the flow's state";
  // A run of one flow's packets (each after the first takes the hit of the one before), then
  // another flow's.
  run(kPod1, {udp_to_vip(40030), udp_to_vip(40030), udp_to_vip(40030), zero, zero});
  out = take_all();
  ASSERT_EQ(out[kUplink].size(), 5u);
  for (const Bytes& f : out[kUplink]) {
    EXPECT_EQ(dst_of(f, kInnerAt + 14), ip(kRemoteBackend));
    EXPECT_EQ(dport_of(f, kInnerAt + 14), 5353);
    EXPECT_TRUE(ipv4_checksum_ok(f, kInnerAt + 14));
  }
  EXPECT_TRUE(l4_checksum_ok(out[kUplink][2], kInnerAt + 14));
  EXPECT_EQ(get16(out[kUplink][4], kInnerAt + 14 + 20 + 6), 0);
  EXPECT_EQ(counters_->services.new_flows.get(), 4u);
  EXPECT_EQ(counters_->services.translated.get(), 13u);
}

// A burst whose every packet is a known translated flow's VIP packet is translated in the route
// passes (pod_burst.cpp, VipPass), not by translate_pod_burst: the same bytes as the first
// burst's (which inserted the flows and took translate_pod_burst), the outer UDP source port
// from the translated tuple (what a packet sent to the backend directly gets), UDP checksum 0
// left 0, TCP flags tracked, the counters as before.
TEST_F(ServiceNat, ABurstOfKnownFlowsIsTranslatedInTheRoutePassesAsBefore) {
  build({kRemoteBackend});
  Bytes zero = udp_to_vip(40041);
  put16(zero, 14 + 20 + 6, 0);
  const std::vector<Bytes> burst{udp_to_vip(40040), zero, from_pod1(ip(kVip), 6, tcp(40042, 80, 0x10, payload(8))),
                                 udp_to_vip(40040), udp_to_vip(40043)};
  run(kPod1, burst);
  auto first = take_all();
  ASSERT_EQ(first[kUplink].size(), 5u);
  EXPECT_EQ(counters_->services.new_flows.get(), 4u);
  run(kPod1, burst);
  auto again = take_all();
  ASSERT_EQ(again[kUplink].size(), 5u);
  EXPECT_EQ(counters_->services.new_flows.get(), 4u);
  EXPECT_EQ(counters_->services.translated.get(), 10u);
  for (std::size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(again[kUplink][k], first[kUplink][k]) << k;
    const std::size_t at = kInnerAt + 14;
    EXPECT_EQ(dst_of(again[kUplink][k], at), ip(kRemoteBackend)) << k;
    EXPECT_TRUE(ipv4_checksum_ok(again[kUplink][k], at)) << k;
    if (k != 1) {
      EXPECT_TRUE(l4_checksum_ok(again[kUplink][k], at)) << k;
    }
  }
  EXPECT_EQ(get16(again[kUplink][1], kInnerAt + 14 + 20 + 6), 0) << "UDP checksum 0 stays none";
  // The outer source port (ECMP's and the receiver's RSS hash) is the translated tuple's.
  run(kPod1, {from_pod1(ip(kRemoteBackend), 17, udp(40040, 5353, payload(20)))});
  const Bytes direct = only(kUplink);
  EXPECT_EQ(get16(again[kUplink][0], 34), get16(direct, 34));
  EXPECT_EQ(get16(again[kUplink][3], 34), get16(direct, 34));
  // A RST of the known TCP flow, in a burst of hits: its state moves.
  run(kPod1, {udp_to_vip(40040), from_pod1(ip(kVip), 6, tcp(40042, 80, 0x04, {}))});
  EXPECT_EQ(take_all()[kUplink].size(), 2u);
  bool closed = false;
  for (std::uint32_t i = 0; i < conntrack_->capacity(); ++i) {
    const auto& e = conntrack_->entry_at(i);
    if (e.in_use && e.original.protocol == 6) closed = e.state == dp::ConnState::TcpClose;
  }
  EXPECT_TRUE(closed);
  EXPECT_EQ(counters_->services.translated.get(), 12u);
}

// The same with a pending checksum to a local backend: the pseudo-header's sum moved, the
// packet delivered to the backend's port, as translate_pod_burst does.
TEST_F(ServiceNat, AKnownFlowsPendingChecksumIsMovedInTheRoutePasses) {
  build({kLocalBackend});
  Bytes f = ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                     ipv4(ip("10.244.1.10"), ip(kVip), 6, tcp_partial(ip("10.244.1.10"), ip(kVip), 7, 0x18, payload(100))));
  run(kPod1, {f, f}, RTE_MBUF_F_RX_L4_CKSUM_NONE);
  auto first = take_all();
  ASSERT_EQ(first[kPod2].size(), 2u);
  run(kPod1, {f, f}, RTE_MBUF_F_RX_L4_CKSUM_NONE);
  auto again = take_all();
  ASSERT_EQ(again[kPod2].size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(again[kPod2][k], first[kPod2][k]) << k;
    EXPECT_EQ(get16(again[kPod2][k], 14 + 20 + 16), pseudo_sum(ip("10.244.1.10"), ip(kLocalBackend), 6, f.size() - 34));
  }
  EXPECT_EQ(counters_->services.translated.get(), 4u);
}

// Two workers: the pod's owner (port % 2) holds its flows. The other worker hands pod bursts
// of that pod and deliveries to it over (here into vectors), and the owner resumes them.
TEST_F(ServiceNat, WithTwoWorkersPacketsGoToThePodsOwner) {
  build({kRemoteBackend});
  struct Handed {
    std::vector<std::pair<dp::HandoverStage, rte_mbuf*>> to[2];
  } handed;
  auto hand_over = [](void* ctx, std::uint32_t to, dp::HandoverStage stage, rte_mbuf* m) {
    static_cast<Handed*>(ctx)->to[to].emplace_back(stage, m);
    return true;
  };
  flows_.workers = 2;
  flows_.hand_over = hand_over;
  flows_.hand_over_context = &handed;
  const std::uint32_t owner = kPod1 % 2;
  flows_.worker = 1 - owner;  // not pod1's owner
  run(kPod1, {udp_to_vip(40010)});
  EXPECT_TRUE(take_all().empty());
  ASSERT_EQ(handed.to[owner].size(), 1u);
  EXPECT_EQ(handed.to[owner][0].first, dp::HandoverStage::PodBurst);
  EXPECT_EQ(handed.to[owner][0].second->port, kPod1);
  EXPECT_EQ(conntrack_->size(), 0u) << "not this worker's flow";
  // The owner resumes it as a pod burst of pod1: translated, tracked in its table.
  flows_.worker = owner;
  rte_mbuf* m = handed.to[owner][0].second;
  handed.to[owner].clear();
  dp::process_pod_burst(*tables_, m->port, &m, 1, *tx_, *counters_, &flows_);
  EXPECT_EQ(dst_of(only(kUplink), kInnerAt + 14), ip(kRemoteBackend));
  EXPECT_EQ(conntrack_->size(), 1u);
  // The reply arrives on the other worker: handed over for delivery, translated by the owner.
  flows_.worker = 1 - owner;
  Bytes reply = ethernet(gateway_mac(kVniA), neighbor_mac(2), 0x0800,
                         ipv4(ip(kRemoteBackend), ip("10.244.1.10"), 17, udp(5353, 40010, payload(30))));
  fill_l4_checksum(reply, 14);
  run(kUplink, {vxlan_frame(kUplinkMac, neighbor_mac(2), ip("198.18.0.2"), ip("198.18.0.1"), 50000, kVniA, reply)});
  EXPECT_TRUE(take_all().empty());
  ASSERT_EQ(handed.to[owner].size(), 1u);
  EXPECT_EQ(handed.to[owner][0].first, dp::HandoverStage::Deliver);
  flows_.worker = owner;
  m = handed.to[owner][0].second;
  handed.to[owner].clear();
  dp::deliver_handed_over(*tables_, flows_, &m, 1, *tx_, *counters_);
  const Bytes back = only(kPod1);
  EXPECT_EQ(src_of(back, 14), ip(kVip));
  EXPECT_EQ(sport_of(back, 14), 53);
  EXPECT_TRUE(l4_checksum_ok(back, 14));
  // A network without services is never handed over (tenant B's pod3 to its route).
  flows_.worker = 1 - (kPod3 % 2);
  run(kPod3, {ethernet(gateway_mac(kVniB), kPod3Mac, 0x0800, ipv4(ip("10.250.1.10"), ip("10.245.0.3"), 17, udp(1, 2, payload(10))))});
  EXPECT_EQ(take_all()[kUplink].size(), 1u);
  EXPECT_TRUE(handed.to[0].empty() && handed.to[1].empty());
}

}  // namespace
}  // namespace vxfed::test

namespace vxfed::test {
namespace {

// The census of a worker's table (service_counters.hpp) in steps of `step` entries, at `now`.
std::map<std::uint32_t, std::uint32_t> census_by_backend(const dp::ConntrackTable& table, std::uint64_t now,
                                                        std::size_t room, bool* truncated = nullptr) {
  dp::FlowCensus census;
  census.out.resize(room);
  census.state.store(dp::FlowCensus::kRequested);
  int steps = 0;
  while (!dp::census_step(census, table, now, 100)) ++steps;
  EXPECT_EQ(steps, static_cast<int>((table.capacity() + 99) / 100) - 1) << "a part per step, never the whole table";
  EXPECT_EQ(census.state.load(), dp::FlowCensus::kDone);
  std::map<std::uint32_t, std::uint32_t> out;
  for (std::uint32_t i = 0; i < census.count; ++i) {
    const dp::ServiceFlowRecord& r = census.out[i];
    EXPECT_EQ(r.vip_be, htonl(ip(kVip)));
    EXPECT_EQ(ntohs(r.vip_port_be), 53);
    EXPECT_EQ(ntohs(r.backend_port_be), 5353);
    EXPECT_EQ(r.vni, kVniA);
    EXPECT_EQ(r.protocol, 17);
    ++out[ntohl(r.backend_be)];
  }
  if (truncated) *truncated = census.truncated;
  return out;
}

TEST_F(ServiceNat, NewFlowsAreCountedPerBackendWhereTheyArePickedAndTheCensusFindsTheLiveOnes) {
  build({kRemoteBackend, kLocalBackend});
  std::vector<Bytes> frames;
  for (std::uint16_t p = 0; p < 200; ++p) frames.push_back(udp_to_vip(static_cast<std::uint16_t>(41000 + p)));
  for (std::size_t i = 0; i < frames.size(); i += 50)
    run(kPod1, std::vector<Bytes>(frames.begin() + static_cast<long>(i), frames.begin() + static_cast<long>(i + 50)));
  auto out = take_all();
  const std::uint64_t remote = out[kUplink].size(), local = out[kPod2].size();
  ASSERT_EQ(remote + local, 200u);
  EXPECT_GT(remote, 50u);
  EXPECT_GT(local, 50u);
  const std::uint32_t remote_slot = slots_.find("ns/web", htonl(ip(kRemoteBackend)));
  const std::uint32_t local_slot = slots_.find("ns/web", htonl(ip(kLocalBackend)));
  ASSERT_NE(remote_slot, dp::ServiceCounterSlots::kUncounted);
  ASSERT_NE(local_slot, dp::ServiceCounterSlots::kUncounted);
  EXPECT_NE(remote_slot, local_slot);
  EXPECT_EQ(slots_.new_flows(remote_slot), remote);
  EXPECT_EQ(slots_.new_flows(local_slot), local);
  // Packets of known flows are not new flows.
  run(kPod1, {frames[0], frames[1], frames[2]});
  take_all();
  EXPECT_EQ(slots_.new_flows(remote_slot) + slots_.new_flows(local_slot), 200u);
  // The census of the live flows: the same split.
  auto live = census_by_backend(*conntrack_, flows_.now, 1024);
  EXPECT_EQ(live[ip(kRemoteBackend)], remote);
  EXPECT_EQ(live[ip(kLocalBackend)], local);
  // A census with less room than flows says so.
  bool truncated = false;
  auto few = census_by_backend(*conntrack_, flows_.now, 5, &truncated);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(few[ip(kRemoteBackend)] + few[ip(kLocalBackend)], 5u);
  // Flows past their timeout (30 s for UDP in the fixture's seconds) are not live.
  EXPECT_TRUE(census_by_backend(*conntrack_, flows_.now + 31, 1024).empty());
  // The entry replaced (the remote backend gone): the local one keeps its slot and its count,
  // and the flows that move to it (their backend left) are new flows of it.
  set_backends({kLocalBackend});
  EXPECT_EQ(slots_.find("ns/web", htonl(ip(kLocalBackend))), local_slot);
  EXPECT_EQ(tables_->service(tables_->network_index(*tables_->network_by_vni(kVniA)), htonl(ip(kVip)))->backend_slot,
            std::vector<std::uint32_t>{local_slot});
  for (std::size_t i = 0; i < 10; ++i) run(kPod1, {udp_to_vip(static_cast<std::uint16_t>(42000 + i))});
  take_all();
  EXPECT_EQ(slots_.new_flows(local_slot), local + 10);
  EXPECT_EQ(slots_.new_flows(remote_slot), remote);
}

TEST(ServiceCounterSlots, SlotsAreStablePerServiceAndBackendAndSumTheWorkers) {
  dp::ServiceCounterSlots slots(3);
  const std::uint32_t a = slots.slot_for("ns/a", htonl(ip("10.0.0.1")));
  const std::uint32_t b = slots.slot_for("ns/a", htonl(ip("10.0.0.2")));
  const std::uint32_t c = slots.slot_for("ns/b", htonl(ip("10.0.0.1")));
  EXPECT_NE(a, dp::ServiceCounterSlots::kUncounted);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(slots.slot_for("ns/a", htonl(ip("10.0.0.1"))), a);
  EXPECT_EQ(slots.find("ns/b", htonl(ip("10.0.0.1"))), c);
  EXPECT_EQ(slots.find("ns/b", htonl(ip("10.0.0.2"))), dp::ServiceCounterSlots::kUncounted);
  slots.add_new_flow(0, a);
  slots.add_new_flow(1, a);
  slots.add_new_flow(2, a);
  slots.add_new_flow(2, b);
  EXPECT_EQ(slots.new_flows(a), 3u);
  EXPECT_EQ(slots.new_flows(b), 1u);
  EXPECT_EQ(slots.new_flows(c), 0u);
  // Past the first chunk: a new chunk, counted alike.
  std::uint32_t last = 0;
  for (std::uint32_t i = 0; i < dp::ServiceCounterSlots::kChunkSlots + 10; ++i)
    last = slots.slot_for("ns/many", htonl(0x0a010000u + i));
  EXPECT_GE(last, dp::ServiceCounterSlots::kChunkSlots);
  slots.add_new_flow(1, last);
  EXPECT_EQ(slots.new_flows(last), 1u);
  EXPECT_EQ(slots.all().size(), 3u + dp::ServiceCounterSlots::kChunkSlots + 10);
}

}  // namespace
}  // namespace vxfed::test
