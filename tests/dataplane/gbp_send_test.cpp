// VXLAN-GBP on send (docs/dataplane.md, "VXLAN Group Policy"): toward a VTEP whose explicit
// entry says gbp, the encapsulation sets G and writes the sending pod's identity as the Group
// Policy ID; toward every other VTEP the header stays plain VXLAN. Checked through the three
// ways a pod's packet is encapsulated (one-destination burst, the general passes, the
// reference parser's slow path), across Deltas that change the flag and the identity in
// place, in the dump, and for refused input.
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <map>
#include <memory>
#include <vector>

#include "dataplane/core/pipeline.hpp"
#include "dataplane/core/reclaimer.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/frames.hpp"
#include "tests/dataplane/mbufs.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

constexpr std::size_t kVxlanAt = 14 + 20 + 8;  // outer Ethernet, IPv4, UDP
constexpr std::uint32_t kPod1Identity = 0x1234;
constexpr const char* kGbpVtep = "198.18.0.2";     // routes 10.245.0.0/16 of tenant A
const std::uint32_t kToGbpVtep = ip("10.245.1.1");
const std::uint32_t kToPlainVtep = ip("10.245.7.1");  // ECMP over .3 and .4, no gbp

dataplane::v1::Tables gbp_tables() {
  auto t = sample_tables();
  for (auto& e : *t.mutable_endpoints())
    if (e.id() == "pod1/net1") e.set_identity(kPod1Identity);
  auto* v = t.add_vteps();
  v->set_ip(kGbpVtep);  // no VNIs: the entry only says gbp (the route already admits it)
  v->set_gbp(true);
  return t;
}

Bytes pod1_frame(std::uint32_t dst, std::uint16_t sport, const Ipv4Opts& o = {}) {
  return ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                  ipv4(ip("10.244.1.10"), dst, 17, udp(sport, 5000, payload(40)), o));
}

class GbpSend : public ::testing::Test {
 protected:
  void SetUp() override {
    VXFED_REQUIRE_EAL();
    auto t = node_.build(gbp_tables());
    ASSERT_TRUE(t.ok()) << t.error();
    tables_ = std::move(*t);
  }
  // The frames as one pod burst; what went to the uplink.
  std::vector<Bytes> encap(const std::vector<Bytes>& frames, std::uint16_t port = kPod1) {
    std::vector<rte_mbuf*> pkts;
    for (const auto& f : frames) pkts.push_back(make_mbuf(f, small_pool()));
    auto tx_owner = std::make_unique<dp::TxStage>();  // large: not on the stack
    auto counters_owner = std::make_unique<dp::WorkerCounters>();
    dp::TxStage& tx = *tx_owner;
    dp::WorkerCounters& counters = *counters_owner;
    dp::process_pod_burst(*tables_, port, pkts.data(), static_cast<std::uint16_t>(pkts.size()), tx, counters);
    std::vector<Bytes> out;
    tx.flush([&](std::uint16_t p, rte_mbuf** m, std::uint16_t n) {
      for (std::uint16_t i = 0; i < n; ++i)
        if (p == kUplink) out.push_back(read_mbuf(m[i]));
      rte_pktmbuf_free_bulk(m, n);
      return n;
    }, counters);
    return out;
  }
  void apply(const dataplane::v1::Delta& d) {
    auto r = tables_->apply(d, node_.context(), reclaimer_);
    ASSERT_TRUE(r.ok()) << r.error();
  }
  void set_gbp(bool gbp) {
    dataplane::v1::Delta d;
    auto* v = d.mutable_upsert()->add_vteps();
    v->set_ip(kGbpVtep);
    v->set_gbp(gbp);
    apply(d);
  }

  Node node_;
  dp::ImmediateReclaimer reclaimer_;
  std::unique_ptr<dp::ForwardingTables> tables_;
};

// The VXLAN header's first four bytes and its VNI.
struct Vxlan {
  std::uint8_t flags, gbp_flags;
  std::uint16_t group;
  std::uint32_t vni;
};
Vxlan vxlan_of(const Bytes& b) {
  return {b.at(kVxlanAt), b.at(kVxlanAt + 1), get16(b, kVxlanAt + 2), get32(b, kVxlanAt + 4) >> 8};
}

TEST_F(GbpSend, TowardAGbpVtepTheHeaderCarriesThePodsIdentity) {
  // One destination (the burst's single pass), then mixed destinations (the general passes).
  for (const auto& frames : {std::vector<Bytes>{pod1_frame(kToGbpVtep, 1), pod1_frame(kToGbpVtep, 2)},
                             std::vector<Bytes>{pod1_frame(kToGbpVtep, 3), pod1_frame(kToPlainVtep, 4),
                                                pod1_frame(kToGbpVtep, 5)}}) {
    const auto out = encap(frames);
    ASSERT_EQ(out.size(), frames.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      const Vxlan h = vxlan_of(out[i]);
      const bool to_gbp = get32(out[i], 14 + 16) == ip(kGbpVtep);
      EXPECT_EQ(h.vni, kVniA);
      if (to_gbp) {
        EXPECT_EQ(h.flags, 0x88) << "packet " << i;
        EXPECT_EQ(h.gbp_flags, 0) << "A and D clear: no egress policy applied yet";
        EXPECT_EQ(h.group, kPod1Identity);
      } else {
        EXPECT_EQ(h.flags, 0x08) << "packet " << i;
        EXPECT_EQ(h.gbp_flags, 0);
        EXPECT_EQ(h.group, 0);
      }
    }
  }
  // The reference parser's path (IPv4 options): the same header.
  Ipv4Opts options;
  options.ihl = 6;
  const auto slow = encap({pod1_frame(kToGbpVtep, 6, options)});
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(vxlan_of(slow[0]).flags, 0x88);
  EXPECT_EQ(vxlan_of(slow[0]).group, kPod1Identity);
}

TEST_F(GbpSend, OnlyTheGbpBytesDifferFromPlainVxlan) {
  const Bytes frame = pod1_frame(kToGbpVtep, 7);
  const auto with_gbp = encap({frame});
  set_gbp(false);
  const auto plain = encap({frame});
  ASSERT_EQ(with_gbp.size(), 1u);
  ASSERT_EQ(plain.size(), 1u);
  ASSERT_EQ(with_gbp[0].size(), plain[0].size());
  EXPECT_EQ(vxlan_of(plain[0]).flags, 0x08);
  for (std::size_t i = 0; i < plain[0].size(); ++i) {
    if (i == kVxlanAt || i == kVxlanAt + 2 || i == kVxlanAt + 3) continue;
    EXPECT_EQ(with_gbp[0][i], plain[0][i]) << "byte " << i;
  }
  EXPECT_EQ(plain[0][kVxlanAt + 2], 0);
  EXPECT_EQ(plain[0][kVxlanAt + 3], 0);
}

TEST_F(GbpSend, FlagAndIdentityChangeInPlaceAndShowInTheDump) {
  // A pod without identity toward a GBP VTEP: G set, group 0 (unknown).
  const auto pod2 = encap({ethernet(gateway_mac(kVniA), kPod2Mac, 0x0800,
                                    ipv4(ip("10.244.1.11"), kToGbpVtep, 17, udp(9, 9, payload(8))))},
                          kPod2);
  ASSERT_EQ(pod2.size(), 1u);
  EXPECT_EQ(vxlan_of(pod2[0]).flags, 0x88);
  EXPECT_EQ(vxlan_of(pod2[0]).group, 0);

  dataplane::v1::Delta d;
  auto* e = d.mutable_upsert()->add_endpoints();
  *e = gbp_tables().endpoints(0);
  ASSERT_EQ(e->id(), "pod1/net1");
  e->set_identity(65535);
  apply(d);
  EXPECT_EQ(vxlan_of(encap({pod1_frame(kToGbpVtep, 8)}).at(0)).group, 65535);

  const auto dump = tables_->dump();
  bool saw_identity = false, saw_gbp = false;
  for (const auto& ep : dump.endpoints()) saw_identity |= ep.id() == "pod1/net1" && ep.identity() == 65535;
  for (const auto& v : dump.vteps()) saw_gbp |= v.ip() == kGbpVtep && v.gbp();
  EXPECT_TRUE(saw_identity);
  EXPECT_TRUE(saw_gbp);

  // The explicit entry removed: the route still uses the VTEP, now with plain VXLAN.
  dataplane::v1::Delta remove;
  remove.add_remove_vteps(kGbpVtep);
  apply(remove);
  const auto after = encap({pod1_frame(kToGbpVtep, 9)});
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(vxlan_of(after[0]).flags, 0x08);
  EXPECT_EQ(vxlan_of(after[0]).group, 0);
  const auto dump_after = tables_->dump();
  for (const auto& v : dump_after.vteps()) EXPECT_NE(v.ip(), kGbpVtep);

  // Given again, to a VTEP only routes had: G again.
  set_gbp(true);
  EXPECT_EQ(vxlan_of(encap({pod1_frame(kToGbpVtep, 10)}).at(0)).flags, 0x88);
}

TEST_F(GbpSend, AnIdentityOver16BitsIsRefusedNamingTheField) {
  auto t = gbp_tables();
  t.mutable_endpoints(0)->set_identity(65536);
  auto built = node_.build(t);
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.error().find("endpoints[0]"), std::string::npos) << built.error();
  EXPECT_NE(built.error().find("identity 65536"), std::string::npos) << built.error();

  dataplane::v1::Delta d;
  *d.mutable_upsert()->add_endpoints() = t.endpoints(0);
  auto r = tables_->apply(d, node_.context(), reclaimer_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("identity"), std::string::npos) << r.error();
  // Nothing applied: pod1 still sends its old identity.
  EXPECT_EQ(vxlan_of(encap({pod1_frame(kToGbpVtep, 11)}).at(0)).group, kPod1Identity);
}

}  // namespace
}  // namespace vxfed::test
