// Packet tests of the pipeline (suite 'packet'): a table of fixtures
// {description, input frame, expected verdict or drop reason, expected output bytes}
// (docs/conventions.md: packet tests are data), run one by one through the real burst functions with synthetic
// mbufs, plus tests that need several packets (ECMP spread, ARP learning, pool exhaustion,
// bursts). Every case also checks that no mbuf leaked.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dataplane/core/flow_hash.hpp"
#include "dataplane/core/pipeline.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/frames.hpp"
#include "tests/dataplane/mbufs.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

using dp::DropReason;

// ---- the addresses of sample_tables.hpp ----
const std::uint32_t kVtep = ip("198.18.0.1");
std::uint32_t vtep(int n) { return ip("198.18.0." + std::to_string(n)); }
const std::uint32_t kGwA = ip("10.244.0.1"), kGwB = ip("10.250.0.1");
// Pod addresses (kPod1..3 without "Ip" are their ports, from sample_tables.hpp).
const std::uint32_t kPod1Ip = ip("10.244.1.10"), kPod2Ip = ip("10.244.1.11"), kPod3Ip = ip("10.250.1.10");
const Mac kRemotePodMac = {0x02, 0xcc, 0, 0, 0, 0x01};
const Mac kZeroMac{};
const Mac kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

std::uint16_t expected_src_port(std::uint32_t src, std::uint32_t dst, std::uint8_t proto,
                                std::uint16_t sport, std::uint16_t dport) {
  return dp::vxlan_src_port(dp::flow_hash(htonl(src), htonl(dst), proto, htons(sport), htons(dport)));
}

// An IPv4/UDP packet as a pod sends it (to its gateway's MAC).
Bytes pod_frame(const Mac& src_mac, std::uint32_t vni, std::uint32_t src, std::uint32_t dst,
                std::size_t udp_payload, Ipv4Opts o = {}, std::uint16_t sport = 1234,
                std::uint16_t dport = 5678) {
  return ethernet(gateway_mac(vni), src_mac, 0x0800, ipv4(src, dst, 17, udp(sport, dport, payload(udp_payload)), o));
}

// The VXLAN frame our pipeline must produce for a pod frame toward VTEP n.
Bytes encapsulated(const Bytes& inner, int vtep_n, std::uint32_t vni, std::uint32_t src,
                   std::uint32_t dst, std::uint8_t tos, std::uint16_t sport = 1234,
                   std::uint16_t dport = 5678) {
  return vxlan_frame(neighbor_mac(vtep_n), kUplinkMac, kVtep, vtep(vtep_n),
                     expected_src_port(src, dst, 17, sport, dport), vni, inner, tos);
}

// A remote pod's packet for a local pod, VXLAN from VTEP n.
Bytes remote_inner(std::uint32_t vni, std::uint32_t dst, std::size_t udp_payload, Ipv4Opts o = {}) {
  return ethernet(gateway_mac(vni), kRemotePodMac, 0x0800,
                  ipv4(ip("10.245.1.1"), dst, 17, udp(4000, 5000, payload(udp_payload)), o));
}
// The same from another source address (the reverse-path check's cases).
Bytes remote_inner_from(std::uint32_t src, std::uint32_t vni, std::uint32_t dst) {
  return ethernet(gateway_mac(vni), kRemotePodMac, 0x0800, ipv4(src, dst, 17, udp(4000, 5000, payload(100))));
}
Bytes from_vtep(int n, std::uint32_t vni, const Bytes& inner) {
  return vxlan_frame(kUplinkMac, neighbor_mac(n), vtep(n), kVtep, 50000, vni, inner);
}
// What a local pod receives from another pod of this node: the frame from its gateway, as
// the sender set it otherwise (pod-to-pod on one node is not decremented, docs/security.md).
Bytes delivered(const Bytes& inner, const Mac& pod_mac, std::uint32_t vni) {
  Bytes b = inner;
  std::copy(pod_mac.begin(), pod_mac.end(), b.begin());
  const Mac gw = gateway_mac(vni);
  std::copy(gw.begin(), gw.end(), b.begin() + 6);
  return b;
}
// What a local pod receives from a remote VTEP: the same, one router hop later (TTL - 1, the
// header checksum computed afresh here, not updated the way the pipeline does it).
Bytes decapsulated(const Bytes& inner, const Mac& pod_mac, std::uint32_t vni) {
  Bytes b = delivered(inner, pod_mac, vni);
  b.at(14 + 8) -= 1;
  b[14 + 10] = b[14 + 11] = 0;
  const std::uint16_t sum = checksum(b.data() + 14, (b[14] & 0x0fu) * 4u);
  b[14 + 10] = static_cast<std::uint8_t>(sum >> 8);
  b[14 + 11] = static_cast<std::uint8_t>(sum & 0xff);
  return b;
}

Bytes icmp_frag_needed(const Bytes& original_frame, std::uint16_t mtu) {
  Bytes icmp = {3, 4, 0, 0, 0, 0, static_cast<std::uint8_t>(mtu >> 8), static_cast<std::uint8_t>(mtu)};
  icmp.insert(icmp.end(), original_frame.begin() + 14, original_frame.begin() + 14 + 28);
  const std::uint16_t c = checksum(icmp.data(), icmp.size());
  icmp[2] = c >> 8;
  icmp[3] = c & 0xff;
  Ipv4Opts o;
  o.tos = 0xc0;
  return ethernet(kPod1Mac, gateway_mac(kVniA), 0x0800, ipv4(kGwA, kPod1Ip, 1, icmp, o));
}

Bytes with(Bytes b, std::size_t at, std::uint8_t value) {
  b.at(at) = value;
  return b;
}

// ---- the fixture table ----
struct Case {
  std::string name;          // test name (identifier characters only)
  std::string description;
  std::uint16_t rx_port;     // kUplink or a pod port
  Bytes input;
  std::optional<std::uint16_t> out_port;  // where one packet must come out; none: nothing out
  Bytes output;                           // its exact bytes
  std::optional<DropReason> drop;         // the one drop counted, if any
  std::uint32_t seg_size = 0;             // > 0: input as a chain of segments this big
  bool jumbo_pool = false;                // input in one 9 KiB segment
  // VXLAN-GBP counters that must move (every other case: they stay 0).
  std::uint64_t gbp_rx = 0, gbp_policy_applied = 0;
};

Case forward(std::string name, std::string desc, std::uint16_t rx, Bytes in, std::uint16_t out, Bytes want) {
  return Case{std::move(name), std::move(desc), rx, std::move(in), out, std::move(want), std::nullopt};
}
Case dropped(std::string name, std::string desc, std::uint16_t rx, Bytes in, DropReason r) {
  return Case{std::move(name), std::move(desc), rx, std::move(in), std::nullopt, {}, r};
}

std::vector<Case> cases() {
  std::vector<Case> c;
  const Ipv4Opts df{.df = true};

  // --- decapsulation ---
  {
    const Bytes inner = remote_inner(kVniA, kPod1Ip, 100);
    c.push_back(forward("decap_to_pod1", "VXLAN from a route's VTEP to a local pod: outer stripped, MACs from the gateway",
                        kUplink, from_vtep(2, kVniA, inner), kPod1, decapsulated(inner, kPod1Mac, kVniA)));
    c.push_back(forward("decap_from_explicit_vtep", "VXLAN from an explicitly allowed VTEP",
                        kUplink, from_vtep(9, kVniA, inner), kPod1, decapsulated(inner, kPod1Mac, kVniA)));
    Bytes padded = from_vtep(2, kVniA, inner);
    padded.insert(padded.end(), {0xde, 0xad, 0xbe, 0xef});
    c.push_back(forward("decap_ignores_trailing_padding", "bytes after the outer IPv4 packet are not delivered",
                        kUplink, padded, kPod1, decapsulated(inner, kPod1Mac, kVniA)));
    const Bytes inner_b = remote_inner(kVniB, kPod3Ip, 64);
    c.push_back(forward("decap_tenant_b", "tenant B's VTEP and VNI reach tenant B's pod",
                        kUplink, from_vtep(5, kVniB, inner_b), kPod3, decapsulated(inner_b, kPod3Mac, kVniB)));
    const Bytes inner_frag = remote_inner(kVniA, kPod1Ip, 100, Ipv4Opts{.mf = true});
    c.push_back(forward("decap_inner_fragment", "inner fragments are the pods' business: delivered",
                        kUplink, from_vtep(2, kVniA, inner_frag), kPod1, decapsulated(inner_frag, kPod1Mac, kVniA)));
    // The forwarder is a router hop: TTL 2 arrives as 1; 1 and 0 would expire here.
    const Bytes ttl2 = remote_inner(kVniA, kPod1Ip, 100, Ipv4Opts{.ttl = 2});
    c.push_back(forward("decap_ttl_2_delivered_with_1", "inner TTL 2: delivered with TTL 1 and its checksum updated",
                        kUplink, from_vtep(2, kVniA, ttl2), kPod1, decapsulated(ttl2, kPod1Mac, kVniA)));
    // An id chosen so that the header checksum is 0xfeff: after TTL - 1 it must be 0x0000 (the
    // incremental update's corner case), what a full recomputation gives.
    const std::uint16_t c0 = [] {
      Bytes h = remote_inner(kVniA, kPod1Ip, 77, Ipv4Opts{.ttl = 255});
      h[14 + 10] = h[14 + 11] = 0;
      return checksum(h.data() + 14, 20);  // ~(sum without id), id = 0
    }();
    std::uint32_t id = 0x0100u + c0;
    id = (id & 0xffff) + (id >> 16);
    const Bytes ttl_ff = remote_inner(kVniA, kPod1Ip, 77, Ipv4Opts{.ttl = 255, .id = static_cast<std::uint16_t>(id)});
    c.push_back(forward("decap_ttl_checksum_corner", "TTL 255, checksum 0xfeff: 0x0000 after the hop, not 0xffff",
                        kUplink, from_vtep(2, kVniA, ttl_ff), kPod1, decapsulated(ttl_ff, kPod1Mac, kVniA)));
    for (std::uint8_t ttl : {0, 1})
      c.push_back(dropped("decap_ttl_" + std::to_string(ttl) + "_expires", "inner TTL would expire at this hop",
                          kUplink, from_vtep(2, kVniA, remote_inner(kVniA, kPod1Ip, 100, Ipv4Opts{.ttl = ttl})),
                          DropReason::InnerTtlExpired));
    // The reverse-path check: a VTEP may send only inner sources its VNI routes to it.
    const auto spoofed = [&](std::string name, std::string desc, int n, std::uint32_t src) {
      c.push_back(dropped(std::move(name), std::move(desc), kUplink,
                          from_vtep(n, kVniA, remote_inner_from(src, kVniA, kPod1Ip)), DropReason::InnerSourceSpoofed));
    };
    const auto accepted = [&](std::string name, std::string desc, int n, std::uint32_t src) {
      const Bytes in = remote_inner_from(src, kVniA, kPod1Ip);
      c.push_back(forward(std::move(name), std::move(desc), kUplink, from_vtep(n, kVniA, in), kPod1,
                          decapsulated(in, kPod1Mac, kVniA)));
    };
    spoofed("decap_source_routed_to_another_vtep", "VTEP .3 sends 10.245.1.1, which VNI A routes to .2 (/16)", 3,
            ip("10.245.1.1"));
    spoofed("decap_source_less_specific_route_elsewhere", "VTEP .2 sends 10.245.7.9: the /24 to .3 and .4 wins over .2's /16", 2,
            ip("10.245.7.9"));
    accepted("decap_source_ecmp_member", "VTEP .4 sends 10.245.7.9: .4 is one of the /24's two next hops", 4, ip("10.245.7.9"));
    accepted("decap_source_ecmp_other_member", "VTEP .3 sends 10.245.7.200 (the /24's other next hop)", 3, ip("10.245.7.200"));
    spoofed("decap_source_unrouted", "VTEP .2 sends 10.99.0.1, routed nowhere", 2, ip("10.99.0.1"));
    spoofed("decap_source_local_pod", "VTEP .2 sends as local pod 2 (10.244.1.11)", 2, kPod2Ip);
    spoofed("decap_source_is_destination", "VTEP .2 sends as the destination pod itself", 2, kPod1Ip);
    spoofed("decap_source_gateway", "VTEP .2 sends as VNI A's gateway 10.244.0.1", 2, kGwA);
    spoofed("decap_source_other_vni_route", "VTEP .6 (VNI A's 10.246/16) sends 10.245.1.1, VNI B's route to .5 irrelevant", 6,
            ip("10.245.1.1"));
    accepted("decap_source_explicit_vtep_any", "VTEP .9 (explicit Vtep entry, no prefixes) sends 10.99.0.1", 9, ip("10.99.0.1"));
    spoofed("decap_source_explicit_vtep_local_pod", "VTEP .9 (explicit) sends as local pod 2", 9, kPod2Ip);
    spoofed("decap_source_explicit_vtep_gateway", "VTEP .9 (explicit) sends as the gateway", 9, kGwA);
    // Frames unicast to another MAC are not ours to route (a promiscuous NIC, a flooding switch).
    c.push_back(dropped("uplink_unicast_to_other_mac", "valid VXLAN frame addressed to 02:00:00:00:00:99", kUplink,
                        vxlan_frame(mac("02:00:00:00:00:99"), neighbor_mac(2), vtep(2), kVtep, 50000, kVniA, inner),
                        DropReason::NotOurMac));
    c.push_back(dropped("uplink_unicast_mac_differs_in_last_byte", "one bit off in the last MAC byte", kUplink,
                        with(from_vtep(2, kVniA, inner), 5, 0x00), DropReason::NotOurMac));
  }
  // --- jumbo, both ways, single and chained mbufs ---
  {
    const Bytes inner = remote_inner(kVniA, kPod1Ip, 8950 - 28, df);  // inner IPv4 8950 bytes
    const Bytes in = from_vtep(2, kVniA, inner);                     // outer IPv4 9000 bytes
    Case one = forward("decap_jumbo_single_segment", "9014-byte frame (outer IPv4 9000) in one mbuf", kUplink, in, kPod1,
                       decapsulated(inner, kPod1Mac, kVniA));
    one.jumbo_pool = true;
    c.push_back(one);
    Case chained = forward("decap_jumbo_chained", "9014-byte frame in 2 KiB segments", kUplink, in, kPod1,
                           decapsulated(inner, kPod1Mac, kVniA));
    chained.seg_size = 2048;
    c.push_back(chained);
    Case tiny = chained;
    tiny.name = "decap_jumbo_chained_small_segments";
    tiny.description = "9014-byte frame in 100-byte segments (headers still in the first)";
    tiny.seg_size = 100;
    c.push_back(tiny);

    const Bytes pod = pod_frame(kPod1Mac, kVniA, kPod1Ip, ip("10.245.1.1"), 8950 - 28, df);
    const Bytes out = encapsulated(pod, 2, kVniA, kPod1Ip, ip("10.245.1.1"), 0);
    Case e1 = forward("encap_jumbo_single_segment", "8964-byte pod frame (IPv4 8950) -> outer IPv4 9000", kPod1, pod, kUplink, out);
    e1.jumbo_pool = true;
    c.push_back(e1);
    Case e2 = forward("encap_jumbo_chained", "8964-byte pod frame in 2 KiB segments", kPod1, pod, kUplink, out);
    e2.seg_size = 2048;
    c.push_back(e2);
    Case big = dropped("decap_inner_over_mtu", "inner IPv4 8951 bytes > network MTU 8950", kUplink,
                       from_vtep(2, kVniA, remote_inner(kVniA, kPod1Ip, 8951 - 28, df)), DropReason::InnerTooBig);
    big.jumbo_pool = true;
    c.push_back(big);
  }
  // --- encapsulation ---
  {
    const Bytes pod = pod_frame(kPod1Mac, kVniA, kPod1Ip, ip("10.245.1.1"), 18);
    c.push_back(forward("encap_64_byte_frame", "pod1 to a remote /16: outer to VTEP .2, VNI 1001", kPod1, pod, kUplink,
                        encapsulated(pod, 2, kVniA, kPod1Ip, ip("10.245.1.1"), 0)));
    const Bytes dscp = pod_frame(kPod1Mac, kVniA, kPod1Ip, ip("10.245.1.1"), 200, Ipv4Opts{.tos = 0x6a, .df = true});
    c.push_back(forward("encap_copies_tos", "inner TOS 0x6a (DSCP 26, ECN 2) copied to the outer header", kPod1, dscp,
                        kUplink, encapsulated(dscp, 2, kVniA, kPod1Ip, ip("10.245.1.1"), 0x6a)));
    const Bytes b = pod_frame(kPod3Mac, kVniB, kPod3Ip, ip("10.245.7.1"), 40);
    c.push_back(forward("encap_tenant_b_own_routes", "tenant B's /16 wins over tenant A's longer /24: VTEP .5, VNI 2002",
                        kPod3, b, kUplink, encapsulated(b, 5, kVniB, kPod3Ip, ip("10.245.7.1"), 0)));
    c.push_back(dropped("encap_no_route", "destination outside every route of the VNI", kPod1,
                        pod_frame(kPod1Mac, kVniA, kPod1Ip, ip("192.0.2.1"), 18), DropReason::NoRoute));
    c.push_back(dropped("encap_other_tenant_pod_unreachable", "tenant A cannot reach tenant B's pod (no route, no local delivery)",
                        kPod1, pod_frame(kPod1Mac, kVniA, kPod1Ip, kPod3Ip, 18), DropReason::NoRoute));
    c.push_back(dropped("pod_source_spoofed", "pod1 sends with pod2's source address", kPod1,
                        pod_frame(kPod1Mac, kVniA, kPod2Ip, ip("10.245.1.1"), 18), DropReason::PodSourceSpoofed));
    c.push_back(dropped("pod_to_gateway", "IPv4 to the gateway address", kPod1,
                        pod_frame(kPod1Mac, kVniA, kPod1Ip, kGwA, 18), DropReason::ToGateway));
    c.push_back(dropped("unknown_pod_port", "frame on a port without an endpoint", 7,
                        pod_frame(kPod1Mac, kVniA, kPod1Ip, ip("10.245.1.1"), 18), DropReason::UnknownPodPort));
    c.push_back(dropped("pod_not_ipv4", "IPv6 ethertype from a pod", kPod1,
                        ethernet(gateway_mac(kVniA), kPod1Mac, 0x86dd, payload(60)), DropReason::NotIpv4));
    c.push_back(dropped("pod_ip_truncated", "IPv4 total length beyond the frame", kPod1,
                        ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                                 ipv4(kPod1Ip, ip("10.245.1.1"), 17, payload(30), Ipv4Opts{.total_length_delta = 10})),
                        DropReason::Truncated));
    c.push_back(dropped("pod_ihl_below_5", "IHL 4 from a pod", kPod1,
                        ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                                 ipv4(kPod1Ip, ip("10.245.1.1"), 17, payload(30), Ipv4Opts{.ihl = 4})),
                        DropReason::IpHeaderTooShort));
    const Bytes opts = ethernet(gateway_mac(kVniA), kPod1Mac, 0x0800,
                                ipv4(kPod1Ip, ip("10.245.1.1"), 17, udp(1234, 5678, payload(10)), Ipv4Opts{.ihl = 6}));
    // Inner options are the pods' business; the flow hash reads the ports after them.
    c.push_back(forward("encap_inner_ip_options", "inner IPv4 with options is carried", kPod1, opts, kUplink,
                        encapsulated(opts, 2, kVniA, kPod1Ip, ip("10.245.1.1"), 0)));
  }
  // --- local delivery ---
  {
    const Bytes p = pod_frame(kPod1Mac, kVniA, kPod1Ip, kPod2Ip, 18);
    c.push_back(forward("local_pod1_to_pod2", "same node, same VNI: to pod2's port with pod2's MAC", kPod1, p, kPod2,
                        delivered(p, kPod2Mac, kVniA)));
    const Bytes j = pod_frame(kPod2Mac, kVniA, kPod2Ip, kPod1Ip, 8950 - 28, df);
    Case jc = forward("local_jumbo_chained", "8964-byte frame pod2 -> pod1 in 2 KiB segments", kPod2, j, kPod1,
                      delivered(j, kPod1Mac, kVniA));
    jc.seg_size = 2048;
    c.push_back(jc);
  }
  // --- ARP ---
  {
    Bytes req = ethernet(kBroadcast, neighbor_mac(2), 0x0806, arp(1, neighbor_mac(2), vtep(2), kZeroMac, kVtep));
    Bytes rep = ethernet(neighbor_mac(2), kUplinkMac, 0x0806, arp(2, kUplinkMac, kVtep, neighbor_mac(2), vtep(2)));
    req.resize(60);  // Ethernet minimum: padding kept as it was
    rep.resize(60);
    c.push_back(forward("arp_for_vtep_answered", "ARP request for our VTEP on the uplink -> reply", kUplink, req, kUplink, rep));
    c.push_back(dropped("arp_for_other_ip_on_uplink", "ARP request for someone else on the underlay", kUplink,
                        ethernet(kBroadcast, neighbor_mac(7), 0x0806, arp(1, neighbor_mac(7), vtep(7), kZeroMac, vtep(8))),
                        DropReason::ArpIgnored));
    const Bytes preq = ethernet(kBroadcast, kPod1Mac, 0x0806, arp(1, kPod1Mac, kPod1Ip, kZeroMac, kGwA));
    c.push_back(forward("arp_for_gateway_answered", "pod1 ARPs for its gateway -> reply with the gateway MAC", kPod1, preq,
                        kPod1, ethernet(kPod1Mac, gateway_mac(kVniA), 0x0806, arp(2, gateway_mac(kVniA), kGwA, kPod1Mac, kPod1Ip))));
    c.push_back(dropped("arp_for_other_tenant_gateway", "pod1 ARPs for tenant B's gateway: not its gateway", kPod1,
                        ethernet(kBroadcast, kPod1Mac, 0x0806, arp(1, kPod1Mac, kPod1Ip, kZeroMac, kGwB)),
                        DropReason::ArpIgnored));
    c.push_back(dropped("arp_truncated", "ARP cut after 20 bytes", kPod1,
                        Bytes(preq.begin(), preq.begin() + 34), DropReason::BadArp));
    Bytes bad = preq;
    bad[14 + 4] = 8;  // hardware length 8
    c.push_back(dropped("arp_bad_hardware_length", "ARP with hardware length 8", kPod1, bad, DropReason::BadArp));
  }
  // --- too big for the tunnel ---
  {
    const Bytes big_df = pod_frame(kPod1Mac, kVniA, kPod1Ip, ip("10.245.1.1"), 8951 - 28, df);
    Case icmp = forward("too_big_df_gets_frag_needed", "IPv4 8951 with DF -> ICMP 3/4, next-hop MTU 8950, to the pod",
                        kPod1, big_df, kPod1, icmp_frag_needed(big_df, 8950));
    icmp.drop = DropReason::TooBigDf;
    icmp.jumbo_pool = true;
    c.push_back(icmp);
    Case no_df = dropped("too_big_without_df_dropped", "IPv4 8951 without DF: dropped and counted", kPod1,
                         pod_frame(kPod1Mac, kVniA, kPod1Ip, ip("10.245.1.1"), 8951 - 28), DropReason::TooBigNoDf);
    no_df.jumbo_pool = true;
    c.push_back(no_df);
  }
  // --- bad input on the uplink: each dropped and counted by reason ---
  {
    const Bytes inner = remote_inner(kVniA, kPod1Ip, 18);
    const Bytes good = from_vtep(2, kVniA, inner);
    for (std::uint8_t flags : {0x00, 0x0c, 0x8c, 0x80, 0xc8, 0xff})
      c.push_back(dropped("vxlan_flags_" + std::to_string(flags), "VXLAN flags byte neither 0x08 nor 0x88", kUplink,
                          with(good, 42, flags), DropReason::BadVxlanFlags));
    // VXLAN-GBP (flags 0x88): the Group Policy header is read, counted, and the packet
    // decapsulated as plain VXLAN; reserved bits in its second byte are dropped.
    const Bytes gbp = with(with(with(good, 42, 0x88), 44, 0x12), 45, 0x34);
    Case gbp_group = forward("decap_gbp_group", "VXLAN-GBP, group 0x1234: decapsulated, counted", kUplink, gbp, kPod1,
                             decapsulated(inner, kPod1Mac, kVniA));
    gbp_group.gbp_rx = 1;
    c.push_back(gbp_group);
    Case gbp_applied = forward("decap_gbp_policy_applied", "VXLAN-GBP with D and A: decapsulated, A counted", kUplink,
                               with(gbp, 43, 0x48), kPod1, decapsulated(inner, kPod1Mac, kVniA));
    gbp_applied.gbp_rx = gbp_applied.gbp_policy_applied = 1;
    c.push_back(gbp_applied);
    for (std::uint8_t bit : {0x01, 0x02, 0x04, 0x10, 0x20, 0x80})
      c.push_back(dropped("vxlan_gbp_reserved_" + std::to_string(bit), "VXLAN-GBP with a reserved bit of its second byte",
                          kUplink, with(gbp, 43, bit), DropReason::BadVxlanGbpBits));
    Case gbp_unknown_vtep = dropped("decap_gbp_unknown_vtep", "VXLAN-GBP from an unknown VTEP: counted as GBP, then dropped",
                                    kUplink, with(with(from_vtep(77, kVniA, inner), 42, 0x88), 45, 9), DropReason::UnknownVtep);
    gbp_unknown_vtep.gbp_rx = 1;
    c.push_back(gbp_unknown_vtep);
    for (std::size_t len = 0; len < good.size(); ++len)
      c.push_back(dropped("truncated_at_" + std::to_string(len), "valid VXLAN frame cut after this many bytes", kUplink,
                          Bytes(good.begin(), good.begin() + static_cast<long>(len)), DropReason::Truncated));
    auto outer = [&](Ipv4Opts o, std::uint16_t dport = 4789, int udp_delta = 0, std::uint32_t dst = 0,
                     std::uint8_t proto = 17, std::uint32_t vni = kVniA, std::uint32_t src = 0, const Bytes* in = nullptr) {
      o.df = o.df || (!o.mf && o.frag_offset == 0);
      return ethernet(kUplinkMac, neighbor_mac(2), 0x0800,
                      ipv4(src ? src : vtep(2), dst ? dst : kVtep, proto,
                           udp(50000, dport, vxlan(vni, in ? *in : inner), udp_delta), o));
    };
    c.push_back(dropped("udp_length_above_ip", "UDP length 4 more than IPv4 says", kUplink, outer({}, 4789, 4), DropReason::UdpLengthMismatch));
    c.push_back(dropped("udp_length_below_ip", "UDP length 4 less than IPv4 says", kUplink, outer({}, 4789, -4), DropReason::UdpLengthMismatch));
    c.push_back(dropped("ihl_4", "outer IHL 4", kUplink, outer(Ipv4Opts{.ihl = 4}), DropReason::IpHeaderTooShort));
    c.push_back(dropped("ihl_0", "outer IHL 0", kUplink, outer(Ipv4Opts{.ihl = 0}), DropReason::IpHeaderTooShort));
    c.push_back(dropped("ip_options", "outer IPv4 with 4 bytes of options", kUplink, outer(Ipv4Opts{.ihl = 6}), DropReason::IpOptions));
    c.push_back(dropped("ip_options_max", "outer IPv4 with 40 bytes of options", kUplink, outer(Ipv4Opts{.ihl = 15}), DropReason::IpOptions));
    c.push_back(dropped("outer_fragment_mf", "outer first fragment (MF)", kUplink, outer(Ipv4Opts{.mf = true}), DropReason::OuterFragment));
    c.push_back(dropped("outer_fragment_offset", "outer later fragment (offset 185)", kUplink,
                        outer(Ipv4Opts{.frag_offset = 185}), DropReason::OuterFragment));
    c.push_back(dropped("wrong_udp_port", "UDP destination 4790", kUplink, outer({}, 4790), DropReason::WrongUdpPort));
    c.push_back(dropped("wrong_udp_port_8472", "UDP destination 8472 (Linux's old VXLAN port)", kUplink, outer({}, 8472), DropReason::WrongUdpPort));
    c.push_back(dropped("unknown_vni", "VNI 4242 not configured", kUplink, outer({}, 4789, 0, 0, 17, 4242), DropReason::UnknownVni));
    c.push_back(dropped("vni_of_other_tenant", "VTEP .2 (tenant A) sends tenant B's VNI", kUplink,
                        outer({}, 4789, 0, 0, 17, kVniB), DropReason::VniNotAllowedForVtep));
    c.push_back(dropped("known_vni_unknown_vtep", "VNI 1001 from 198.18.0.77 (spoofed VTEP)", kUplink,
                        outer({}, 4789, 0, 0, 17, kVniA, ip("198.18.0.77")), DropReason::UnknownVtep));
    c.push_back(dropped("not_our_vtep", "VXLAN to another VTEP address", kUplink, outer({}, 4789, 0, vtep(3)), DropReason::NotOurVtep));
    c.push_back(dropped("not_udp", "outer protocol TCP", kUplink, outer({}, 4789, 0, 0, 6), DropReason::NotUdp));
    c.push_back(dropped("bad_ip_checksum", "outer IPv4 checksum wrong", kUplink, outer(Ipv4Opts{.bad_checksum = true}), DropReason::BadIpChecksum));
    c.push_back(dropped("ip_version_6", "version nibble 6", kUplink, with(good, 14, 0x65), DropReason::BadIpVersion));
    c.push_back(dropped("ip_total_length_below_header", "outer total length 19", kUplink,
                        outer(Ipv4Opts{.total_length_delta = -static_cast<int>(good.size() - 14 - 19)}), DropReason::BadIpLength));
    c.push_back(dropped("uplink_ipv6", "IPv6 on the uplink", kUplink, ethernet(kUplinkMac, neighbor_mac(2), 0x86dd, payload(80)),
                        DropReason::NotIpv4));
    c.push_back(dropped("uplink_vlan_tag", "802.1Q tagged frame", kUplink, ethernet(kUplinkMac, neighbor_mac(2), 0x8100, payload(80)),
                        DropReason::NotIpv4));
    const Bytes inner_arp = ethernet(kBroadcast, kRemotePodMac, 0x0806, arp(1, kRemotePodMac, ip("10.245.1.1"), kZeroMac, kPod1Ip));
    c.push_back(dropped("inner_not_ipv4", "inner ARP through the tunnel", kUplink, from_vtep(2, kVniA, inner_arp), DropReason::InnerNotIpv4));
    c.push_back(dropped("no_endpoint", "inner destination 10.244.9.9 is nobody here", kUplink,
                        from_vtep(2, kVniA, remote_inner(kVniA, ip("10.244.9.9"), 18)), DropReason::NoEndpoint));
    c.push_back(dropped("inner_for_other_tenant_pod", "VNI 1001 packet for tenant B's pod address", kUplink,
                        from_vtep(2, kVniA, remote_inner(kVniA, kPod3Ip, 18)), DropReason::NoEndpoint));
    const Bytes short_inner = ethernet(gateway_mac(kVniA), kRemotePodMac, 0x0800, payload(10));
    c.push_back(dropped("inner_ip_header_cut", "inner IPv4 header shorter than 20 bytes", kUplink,
                        from_vtep(2, kVniA, short_inner), DropReason::Truncated));
    Case split = dropped("headers_split_across_segments", "outer headers spread over 40-byte segments", kUplink, good,
                         DropReason::HeadersSplit);
    split.seg_size = 40;
    c.push_back(split);
  }
  return c;
}

// ---- the runner ----
class PacketCase : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() {
    if (!eal_ready()) return;
    node_ = new Node();
    auto t = node_->build(sample_tables());
    ASSERT_TRUE(t.ok()) << t.error();
    tables_ = t->release();
  }
  static void TearDownTestSuite() {
    delete tables_;
    delete node_;
    tables_ = nullptr;
    node_ = nullptr;
  }
  static Node* node_;
  static dp::ForwardingTables* tables_;
};
Node* PacketCase::node_ = nullptr;
dp::ForwardingTables* PacketCase::tables_ = nullptr;

TEST_P(PacketCase, Verdict) {
  VXFED_REQUIRE_EAL();
  ASSERT_NE(tables_, nullptr);
  const Case& k = GetParam();
  SCOPED_TRACE(k.description);
  rte_mempool* pool = k.jumbo_pool ? jumbo_pool() : small_pool();
  const unsigned in_use_before = rte_mempool_in_use_count(pool);
  rte_mbuf* m = make_mbuf(k.input, pool, k.seg_size);
  ASSERT_NE(m, nullptr);
  if (k.seg_size && k.input.size() > k.seg_size) {
    ASSERT_GT(m->nb_segs, 1);
  }

  auto counters = std::make_unique<dp::WorkerCounters>();
  auto tx = std::make_unique<dp::TxStage>();
  rte_mbuf* burst[1] = {m};
  const std::uint16_t done = k.rx_port == kUplink
                                 ? dp::process_uplink_burst(*tables_, burst, 1, *tx, *counters)
                                 : dp::process_pod_burst(*tables_, k.rx_port, burst, 1, *tx, *counters);
  EXPECT_EQ(done, 1);

  std::uint64_t total_drops = 0;
  for (const auto& d : counters->drops) total_drops += d.get();
  if (k.drop) {
    EXPECT_EQ(counters->drops[static_cast<int>(*k.drop)].get(), 1u)
        << "expected drop reason " << dp::drop_reason_name(*k.drop);
    EXPECT_EQ(total_drops, 1u);
    EXPECT_EQ(counters->ports[k.rx_port].drops.get(), 1u);
  } else {
    EXPECT_EQ(total_drops, 0u);
  }
  EXPECT_EQ(counters->ports[k.rx_port].rx_packets.get(), 1u);
  EXPECT_EQ(counters->group_policy.rx_packets.get(), k.gbp_rx);
  EXPECT_EQ(counters->group_policy.rx_policy_applied.get(), k.gbp_policy_applied);

  int staged = 0;
  for (std::uint16_t i = 0; i < tx->n_dirty; ++i) staged += tx->ports[tx->dirty[i]].count;
  if (k.out_port) {
    ASSERT_EQ(staged, 1);
    ASSERT_EQ(tx->ports[*k.out_port].count, 1);
    rte_mbuf* out = tx->ports[*k.out_port].pkts[0];
    const Bytes got = read_mbuf(out);
    EXPECT_EQ(got, k.output) << hex_diff(k.output, got);
    EXPECT_EQ(rte_pktmbuf_pkt_len(out), got.size());
  } else {
    EXPECT_EQ(staged, 0);
    for (std::uint16_t i = 0; i < tx->n_dirty; ++i)
      ADD_FAILURE() << "unexpected output on port " << tx->dirty[i];
  }
  // Hand everything to a "NIC" that takes all, then check no mbuf leaked.
  tx->flush([](std::uint16_t, rte_mbuf** p, std::uint16_t n) {
    rte_pktmbuf_free_bulk(p, n);
    return n;
  }, *counters);
  EXPECT_EQ(rte_mempool_in_use_count(pool), in_use_before) << "mbuf leak";
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PacketCase, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace vxfed::test
