// software_rss_hash: which worker a frame from a single-queue uplink goes to
// (dataplane/runtime/software_rss.hpp). Expected hashes are flow_hash of the tuple as the test
// wrote it into the frame, so a field read from the wrong place shows.
#include <gtest/gtest.h>

#include <rte_mbuf.h>

#include "dataplane/core/flow_hash.hpp"
#include "dataplane/runtime/software_rss.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/frames.hpp"
#include "tests/dataplane/mbufs.hpp"

namespace vxfed::dataplane {
namespace {

using test::Bytes;

const test::Mac kDst = test::mac("02:00:00:00:00:01");
const test::Mac kSrc = test::mac("02:00:00:00:00:02");
const std::uint32_t kSrcIp = test::ip("198.18.0.2");
const std::uint32_t kDstIp = test::ip("198.18.0.1");

std::uint32_t expected(std::uint8_t proto, std::uint16_t sport, std::uint16_t dport) {
  return flow_hash(__builtin_bswap32(kSrcIp), __builtin_bswap32(kDstIp), proto, __builtin_bswap16(sport),
                   __builtin_bswap16(dport));
}

Bytes ipv4_frame(std::uint8_t proto, const Bytes& l4, const test::Ipv4Opts& o = {}) {
  return test::ethernet(kDst, kSrc, 0x0800, test::ipv4(kSrcIp, kDstIp, proto, l4, o));
}

// The hash of a frame in a fresh mbuf.
std::uint32_t hash_of(const Bytes& frame) {
  rte_mbuf* m = test::make_mbuf(frame, test::small_pool());
  if (!m) {
    ADD_FAILURE() << "mbuf pool empty";
    return 0;
  }
  const std::uint32_t h = software_rss_hash(m);
  rte_pktmbuf_free(m);
  return h;
}

TEST(SoftwareRss, UsesTheNicHashWhenTheMbufCarriesOne) {
  VXFED_REQUIRE_EAL();
  rte_mbuf* m = test::make_mbuf(ipv4_frame(17, test::udp(50000, 4789, test::payload(16))), test::small_pool());
  ASSERT_NE(m, nullptr);
  m->ol_flags |= RTE_MBUF_F_RX_RSS_HASH;
  m->hash.rss = 0xdeadbeef;
  EXPECT_EQ(software_rss_hash(m), 0xdeadbeefu);
  rte_pktmbuf_free(m);
}

TEST(SoftwareRss, HashesTheOuterUdpFiveTuple) {
  VXFED_REQUIRE_EAL();
  EXPECT_EQ(hash_of(ipv4_frame(17, test::udp(50000, 4789, test::payload(16)))), expected(17, 50000, 4789));
  // VXLAN senders carry the inner flow in the source port: another port, another hash.
  EXPECT_EQ(hash_of(ipv4_frame(17, test::udp(50001, 4789, test::payload(16)))), expected(17, 50001, 4789));
  EXPECT_NE(expected(17, 50000, 4789), expected(17, 50001, 4789));
}

TEST(SoftwareRss, HashesTcpPortsToo) {
  VXFED_REQUIRE_EAL();
  Bytes tcp = test::payload(20);
  tcp[0] = 0x1f; tcp[1] = 0x90;  // source port 8080
  tcp[2] = 0x00; tcp[3] = 0x50;  // destination port 80
  EXPECT_EQ(hash_of(ipv4_frame(6, tcp)), expected(6, 8080, 80));
}

TEST(SoftwareRss, ReadsPortsAfterIpOptions) {
  VXFED_REQUIRE_EAL();
  test::Ipv4Opts o;
  o.ihl = 7;
  EXPECT_EQ(hash_of(ipv4_frame(17, test::udp(40000, 4789, test::payload(8)), o)), expected(17, 40000, 4789));
}

TEST(SoftwareRss, FragmentsAndOtherProtocolsHashAddressesOnly) {
  VXFED_REQUIRE_EAL();
  test::Ipv4Opts first_fragment;
  first_fragment.mf = true;
  EXPECT_EQ(hash_of(ipv4_frame(17, test::udp(50000, 4789, test::payload(16)), first_fragment)), expected(17, 0, 0));
  test::Ipv4Opts later_fragment;
  later_fragment.frag_offset = 185;
  EXPECT_EQ(hash_of(ipv4_frame(17, test::payload(24), later_fragment)), expected(17, 0, 0));
  EXPECT_EQ(hash_of(ipv4_frame(1, test::payload(16))), expected(1, 0, 0));  // ICMP
}

TEST(SoftwareRss, PortsBeyondTheFirstSegmentAreNotRead) {
  VXFED_REQUIRE_EAL();
  Bytes frame = ipv4_frame(17, test::udp(50000, 4789, {}));
  frame.resize(14 + 20 + 3);  // one byte short of both ports
  EXPECT_EQ(hash_of(frame), expected(17, 0, 0));
}

TEST(SoftwareRss, NonIpv4AndRuntFramesGoToWorkerZero) {
  VXFED_REQUIRE_EAL();
  const Bytes arp = test::ethernet(test::mac("ff:ff:ff:ff:ff:ff"), kSrc, 0x0806,
                                   test::arp(1, kSrc, kSrcIp, test::Mac{}, kDstIp));
  EXPECT_EQ(hash_of(arp), 0u);
  Bytes runt = ipv4_frame(17, test::udp(50000, 4789, {}));
  runt.resize(14 + 19);
  EXPECT_EQ(hash_of(runt), 0u);
}

}  // namespace
}  // namespace vxfed::dataplane
