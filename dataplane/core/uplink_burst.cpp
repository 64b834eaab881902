// Uplink bursts: VXLAN from remote VTEPs, decapsulated to this node's pods; ARP for the
// VTEP address and from underlay neighbours; the underlay's ICMP fragmentation-needed (see
// pipeline.hpp for what happens to which packet).
#include <cstring>

#include "dataplane/core/icmp_parse.hpp"
#include "dataplane/core/mbuf_offload.hpp"
#include "dataplane/core/pipeline.hpp"
#include "dataplane/core/pipeline_common.hpp"
#include "dataplane/core/policy_enforce.hpp"
#include "dataplane/core/service_nat.hpp"
#include "dataplane/core/wire/vxlan.hpp"

namespace vxfed::dataplane {

using namespace pipeline_detail;

namespace {

// The forwarder is the router its gateway MAC says it is: a decapsulated packet crosses it as
// one hop. TTL 0 or 1 would expire here: false (drop and count; no ICMP time-exceeded is
// generated, docs/security.md). Else TTL - 1 and the header checksum updated incrementally
// (RFC 1624: the 16-bit word TTL|protocol drops by 0x0100, so the checksum rises by it, with
// the end-around carry; a sum of 0xffff becomes 0x0000, what a full recomputation gives).
[[gnu::always_inline]] inline bool decrement_ttl(std::uint8_t* ip) {
  if (ip[8] <= 1) [[unlikely]] return false;
  --ip[8];
  std::uint16_t be;
  std::memcpy(&be, ip + 10, 2);
  std::uint32_t sum = static_cast<std::uint32_t>(wire::from_be16(be)) + 0x0100;
  sum += sum >= 0xffff;
  be = wire::to_be16(static_cast<std::uint16_t>(sum));
  std::memcpy(ip + 10, &be, 2);
  return true;
}

// The reverse-path check every overlay router does (docs/security.md): a VTEP may send only
// inner sources its packet's network routes to it (its node's block, its cluster's CIDRs).
// A VTEP admitted by an explicit Vtep entry, which names no prefixes, may send any source but
// a local pod's; the gateway's address is never a remote source.
[[gnu::noinline]] bool inner_source_explicit(const ForwardingTables& t, const NetworkEntry& net,
                                             std::uint64_t admission_key, std::uint32_t src_ip_be) {
  return t.explicitly_admitted(admission_key) && t.resolve(net.index, src_ip_be).endpoint == nullptr;
}
[[gnu::always_inline]] inline bool inner_source_ok(const ForwardingTables& t, const NetworkEntry& net,
                                                   std::uint64_t admission_key, std::uint32_t src_ip_be) {
  if (src_ip_be == net.gateway_ip_be) [[unlikely]] return false;
  const auto vtep_ip_be = static_cast<std::uint32_t>(admission_key >> 24);
  if (t.source_routed_to(net.index, src_ip_be, vtep_ip_be)) [[likely]] return true;
  return inner_source_explicit(t, net, admission_key, src_ip_be);
}

[[gnu::noinline]] void uplink_arp(const ForwardingTables& t, rte_mbuf* m, const ArpFields& arp,
                       TxStage& tx, WorkerCounters& c) {
  const std::uint16_t port = t.uplink_port();
  // Any ARP from a known VTEP or underlay router tells us its MAC (replies to our requests,
  // and its requests and announcements).
  bool learned = false;
  if (const auto v = t.vtep_index(arp.sender_ip_be)) {
    t.neighbors().learn_slot(t.vtep(*v).neighbor_slot, arp.sender_mac);
    learned = true;
  } else if (const std::uint32_t* r = t.neighbors().router_slot(arp.sender_ip_be)) {
    t.neighbors().learn_slot(*r, arp.sender_mac);
    learned = true;
  }
  if (arp.opcode == kArpOpRequest && arp.target_ip_be == t.local_vtep_ip_be()) {
    arp_reply_in_place(m, arp, t.uplink_mac(), t.local_vtep_ip_be());
    m->ol_flags = t.underlay_tag().tx_flags;  // on a tagged underlay, in its VLAN
    m->vlan_tci = t.underlay_tag().control_tci();
    tx.stage(port, m, c);
    return;
  }
  if (learned) {
    rte_pktmbuf_free(m);  // consumed: its work is done
    return;
  }
  drop(m, DropReason::ArpIgnored, port, c);
}

// A VXLAN packet for our VTEP, parsed: checks against the tables, then decapsulation.
[[gnu::always_inline]] inline void uplink_vxlan(const ForwardingTables& t, rte_mbuf* m, const UplinkFrame& f,
                                                TxStage& tx, WorkerCounters& c, ServiceFlows* flows) {
  const std::uint16_t port = t.uplink_port();
  const auto allowed = t.allowed_network(f.outer_src_ip_be, f.vni);
  if (!allowed) [[unlikely]] {
    // Which of the three conditions failed decides the counter.
    if (!t.vtep_index(f.outer_src_ip_be)) return drop(m, DropReason::UnknownVtep, port, c);
    if (!t.network_by_vni(f.vni)) return drop(m, DropReason::UnknownVni, port, c);
    return drop(m, DropReason::VniNotAllowedForVtep, port, c);
  }
  const std::uint16_t ni = *allowed;
  const NetworkEntry* net = &t.network(ni);
  if (f.inner_ip_total_len > net->mtu) [[unlikely]] return drop(m, DropReason::InnerTooBig, port, c);
  const auto ep = t.endpoint(ni, f.inner_dst_ip_be);
  if (!ep) [[unlikely]] return drop(m, DropReason::NoEndpoint, port, c);
  auto* inner_ip = rte_pktmbuf_mtod_offset(m, std::uint8_t*, kVxlanOverhead + sizeof(EthernetHeader));
  std::uint32_t inner_src;
  std::memcpy(&inner_src, inner_ip + 12, 4);
  if (!inner_source_ok(t, *net, ForwardingTables::admission_key(f.outer_src_ip_be, f.vni), inner_src)) [[unlikely]]
    return drop(m, DropReason::InnerSourceSpoofed, port, c);
  if (!decrement_ttl(inner_ip)) return drop(m, DropReason::InnerTtlExpired, port, c);

  rte_pktmbuf_adj(m, static_cast<std::uint16_t>(kVxlanOverhead));  // headers are in segment 1
  const std::uint32_t excess = rte_pktmbuf_pkt_len(m) - f.inner_len;   // outer Ethernet padding
  if (excess) [[unlikely]] rte_pktmbuf_trim(m, static_cast<std::uint16_t>(excess));  // fails only if split: harmless
  set_macs(m, ep->mac, net->gateway_mac);
  decap_offload(m);  // a pending inner checksum stays pending
  // Network policy (policy_enforce.hpp): the sender's group, 0 without a GBP header.
  if (const NetworkPolicyEntry* policy = t.network_policy(ni)) [[unlikely]] {
    if (!admit_delivery(t, *policy, flows, m, ep->port, f.group_policy ? f.group_policy_id : 0,
                        f.group_policy && f.group_policy_applied, port, c))
      return;  // dropped, or handed to the pod's owner
  }
  VniCounters& vc = c.vnis[net->counter_slot];
  vc.decap_packets.add(1);
  vc.decap_bytes.add(f.inner_len);
  if (flows && t.network_has_services(ni)) [[unlikely]] {
    if (hand_over_delivery(*flows, ep->port, m, port, c)) return;  // the pod's owner translates
    translate_delivered(t, *flows, *net, m, c);
  }
  tx.stage(ep->port, m, c);
}

// A parsed VXLAN packet that the one-lookup admission refused: which of the three
// conditions failed decides the counter.
[[gnu::noinline]] void uplink_refused(const ForwardingTables& t, rte_mbuf* m, std::uint64_t key, WorkerCounters& c) {
  const std::uint16_t port = t.uplink_port();
  const auto src = static_cast<std::uint32_t>(key >> 24);
  const auto vni = static_cast<std::uint32_t>(key & 0xffffff);
  if (!t.vtep_index(src)) return drop(m, DropReason::UnknownVtep, port, c);
  if (!t.network_by_vni(vni)) return drop(m, DropReason::UnknownVni, port, c);
  drop(m, DropReason::VniNotAllowedForVtep, port, c);
}

// ICMP to our VTEP: a fragmentation-needed about a VXLAN packet we sent toward a known VTEP
// lowers the path MTU toward it (path_mtu.hpp); anything else is counted and dropped.
[[gnu::noinline]] void uplink_icmp(const ForwardingTables& t, rte_mbuf* m, const UnderlayIcmp& icmp,
                                   WorkerCounters& c) {
  const std::uint16_t port = t.uplink_port();
  PathMtuCache* path_mtus = t.path_mtus();
  if (icmp.kind != UnderlayIcmp::Kind::FragNeeded || !path_mtus || !t.vtep_index(icmp.vtep_ip_be))
    return drop(m, DropReason::IcmpIgnored, port, c);
  path_mtus->learn(icmp.vtep_ip_be, icmp.mtu, static_cast<std::uint16_t>(t.underlay_mtu()));
  drop(m, DropReason::IcmpFragNeededLearned, port, c);
}

// Everything the fast path did not take: ARP, ICMP, NIC-flagged checksums, VXLAN-GBP,
// malformed packets.
[[gnu::noinline]] void uplink_slow(const ForwardingTables& t, rte_mbuf* m, TxStage& tx, WorkerCounters& c,
                                   ServiceFlows* flows) {
  const std::uint16_t port = t.uplink_port();
  UplinkParseOptions opt;
  opt.local_vtep_ip_be = t.local_vtep_ip_be();
  const std::uint64_t csum = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
  if (csum == RTE_MBUF_F_RX_IP_CKSUM_BAD) {
    // A NIC-flagged bad checksum is only meaningful for IPv4; ARP has none.
    if (rte_pktmbuf_data_len(m) >= 14 &&
        rte_pktmbuf_mtod_offset(m, const std::uint8_t*, 12)[0] == 0x08 &&
        rte_pktmbuf_mtod_offset(m, const std::uint8_t*, 13)[0] == 0x00)
      return drop(m, DropReason::BadIpChecksum, port, c);
  }
  opt.outer_ip_checksum_verified = csum == RTE_MBUF_F_RX_IP_CKSUM_GOOD;
  // Unicast to another MAC (a NIC in promiscuous mode, a flooding switch): not ours to route.
  // Broadcast and multicast (ARP requests) go on to the parser.
  if (rte_pktmbuf_data_len(m) >= 6) {
    const auto* dst = rte_pktmbuf_mtod(m, const std::uint8_t*);
    if ((dst[0] & 0x01) == 0 && std::memcmp(dst, t.uplink_mac().data(), 6) != 0)
      return drop(m, DropReason::NotOurMac, port, c);
  }
  const UnderlayIcmp icmp = parse_underlay_icmp(first_segment(m), rte_pktmbuf_pkt_len(m), t.local_vtep_ip_be());
  if (icmp.kind != UnderlayIcmp::Kind::NotIcmp) return uplink_icmp(t, m, icmp, c);
  const UplinkFrame f = parse_uplink_frame_full(first_segment(m), rte_pktmbuf_pkt_len(m), opt);
  if (f.kind == FrameKind::Arp) return uplink_arp(t, m, f.arp, tx, c);
  if (f.kind != FrameKind::Vxlan) return drop(m, f.drop, port, c);
  // VXLAN-GBP packets come this way (the fast path takes flags 0x08 only); the group is the
  // source identity network policy decides with (uplink_vxlan, policy_enforce.hpp).
  if (f.group_policy) {
    c.group_policy.rx_packets.add(1);
    c.group_policy.rx_policy_applied.add(f.group_policy_applied ? 1 : 0);
  }
  uplink_vxlan(t, m, f, tx, c, flows);
}

}  // namespace

// Uplink bursts in one pass, in arrival order: fast parse; admission and endpoint (a hash
// lookup each, skipped when the packet has the (VTEP, VNI, inner destination) of the one before);
// decapsulation. Packets the fast path does not take go through uplink_slow in their place.
// One pass, not two with a prefetch of the admission slot between them: the admission table
// has an entry per (VTEP, VNI) and stays in L1, and the second pass's array traffic cost more
// than the prefetch saved: perf/testpmd/compare.py decap ratio 0.58 -> 0.62; the pipeline
// benchmark, where every packet comes from another VTEP to another pod, lost ~2-4 cycles
// (docs/dataplane-pipeline.md, "Second round").
std::uint16_t process_uplink_burst(const ForwardingTables& tables, rte_mbuf** pkts,
                                   std::uint16_t n, TxStage& tx, WorkerCounters& counters, ServiceFlows* flows) {
  const std::uint16_t uplink = tables.uplink_port();
  const std::uint32_t vtep_ip = tables.local_vtep_ip_be();
  // The uplink's MAC as two loads' worth: a frame unicast elsewhere takes the slow path, which
  // drops it (not_our_mac).
  std::uint32_t mac_lo;
  std::uint16_t mac_hi;
  std::memcpy(&mac_lo, tables.uplink_mac().data(), 4);
  std::memcpy(&mac_hi, tables.uplink_mac().data() + 4, 2);
  std::uint64_t rx_bytes = 0;
  // Per-VNI decap counters, added when the network changes and at the end.
  std::uint32_t vni_slot = ~0u;
  std::uint64_t vni_packets = 0, vni_bytes = 0;
  auto flush_vni = [&] {
    if (vni_packets) {
      counters.vnis[vni_slot].decap_packets.add(vni_packets);
      counters.vnis[vni_slot].decap_bytes.add(vni_bytes);
    }
    vni_packets = vni_bytes = 0;
  };
  // Packets from one VTEP and VNI to one pod come in runs (a flow's burst): a packet with the
  // (VTEP, VNI, inner destination) of the one before takes its admission and endpoint without
  // the two hash lookups. Only successes are remembered; ~0 is never a key (VNI is 24 bits).
  std::uint64_t last_key = ~0ull;
  std::uint32_t last_dst = 0;
  const NetworkEntry* net = nullptr;
  const NetworkPolicyEntry* policy = nullptr;  // the network's, read with `net` (null: no policy)
  EndpointEntry ep{};
  std::uint64_t macs_lo = 0;  // the new Ethernet dst + src (12 bytes), built once per memo miss
  // The reverse-path check's last success: the (VTEP, VNI) and inner source it passed.
  std::uint64_t last_src_key = ~0ull;
  std::uint32_t last_src = 0;
  std::uint32_t macs_hi = 0;
  // Decapsulated packets for one pod port gather in `run`, staged together when the port
  // changes, before the slow path (which may stage to a pod port too: order) and at the end.
  // perf/testpmd/compare.py decap (one pod): 45.1 -> 46.3-46.8 Mpps against staging each
  // packet; the pipeline benchmark, whose every packet goes to another pod than the one
  // before, pays 4-8 cycles per packet for it (docs/dataplane-pipeline.md, "Third round").
  rte_mbuf* run[kMaxBurst];
  std::uint16_t run_n = 0, run_port = 0;
  auto flush_run = [&] {
    if (run_n == 1) {
      tx.stage(run_port, run[0], counters);  // cheaper than stage_many's copy for one
    } else if (run_n != 0) {
      tx.stage_many(run_port, run, run_n, counters);
    }
    run_n = 0;
  };
  KnownDeliveryCheck known_delivery(flows);  // network policy's known flows (policy_enforce.hpp)
  for (std::uint16_t j = 0; j < kPrefetchAhead && j < n; ++j) prefetch_data(pkts[j]);
  for (std::uint16_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) prefetch_data(pkts[i + kPrefetchAhead]);
    rte_mbuf* m = pkts[i];
    const std::uint32_t pkt_len = rte_pktmbuf_pkt_len(m);
    rx_bytes += pkt_len;
    const std::uint64_t csum = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
    const auto* p = rte_pktmbuf_mtod(m, const std::uint8_t*);
    std::uint32_t dst_lo;
    std::uint16_t dst_hi;
    std::memcpy(&dst_lo, p, 4);
    std::memcpy(&dst_hi, p + 4, 2);
    if (csum == RTE_MBUF_F_RX_IP_CKSUM_BAD ||
        !uplink_fast_ok(p, rte_pktmbuf_data_len(m), pkt_len, vtep_ip, csum == RTE_MBUF_F_RX_IP_CKSUM_GOOD) ||
        ((dst_lo ^ mac_lo) | static_cast<std::uint32_t>(dst_hi ^ mac_hi)) != 0) [[unlikely]] {
      flush_run();
      uplink_slow(tables, m, tx, counters, flows);
      continue;
    }
    const std::uint64_t key = ForwardingTables::admission_key(uplink_fast_outer_src(p), uplink_fast_vni(p));
    const std::uint32_t inner_dst = uplink_fast_inner_dst(p);
    const std::uint32_t inner_len = uplink_fast_inner_len(p);
    if (key != last_key || inner_dst != last_dst) {
      last_key = ~0ull;
      const std::uint32_t allowed = tables.admitted_network(key);
      if (allowed == ForwardingTables::kNoNetwork) [[unlikely]] {
        uplink_refused(tables, m, key, counters);
        continue;
      }
      net = &tables.network(static_cast<std::uint16_t>(allowed));
      policy = tables.network_policy(net->index);
      const auto found = tables.endpoint(static_cast<std::uint16_t>(allowed), inner_dst);
      if (!found) [[unlikely]] {
        drop(m, DropReason::NoEndpoint, uplink, counters);
        continue;
      }
      ep = *found;
      last_key = key;
      last_dst = inner_dst;
      std::uint8_t macs[12];
      std::memcpy(macs, ep.mac.data(), 6);
      std::memcpy(macs + 6, net->gateway_mac.data(), 6);
      std::memcpy(&macs_lo, macs, 8);
      std::memcpy(&macs_hi, macs + 8, 4);
    }
    if (uplink_fast_inner_ip_total(p) > net->mtu) [[unlikely]] {
      drop(m, DropReason::InnerTooBig, uplink, counters);
      continue;
    }
    std::uint32_t inner_src;
    std::memcpy(&inner_src, p + fast_layout::kInnerIp + 12, 4);
    if (key != last_src_key || inner_src != last_src) {
      if (!inner_source_ok(tables, *net, key, inner_src)) [[unlikely]] {
        drop(m, DropReason::InnerSourceSpoofed, uplink, counters);
        continue;
      }
      last_src_key = key;
      last_src = inner_src;
    }
    if (!decrement_ttl(const_cast<std::uint8_t*>(p) + fast_layout::kInnerIp)) [[unlikely]] {
      drop(m, DropReason::InnerTtlExpired, uplink, counters);
      continue;
    }
    if (m->nb_segs == 1) [[likely]] {
      // Strip the outer headers and any outer Ethernet padding in one go (what adj + trim do).
      m->data_off = static_cast<std::uint16_t>(m->data_off + kVxlanOverhead);
      m->data_len = static_cast<std::uint16_t>(inner_len);
      m->pkt_len = inner_len;
    } else {
      rte_pktmbuf_adj(m, static_cast<std::uint16_t>(kVxlanOverhead));  // headers are in segment 1
      const std::uint32_t excess = rte_pktmbuf_pkt_len(m) - inner_len;  // outer Ethernet padding
      if (excess) rte_pktmbuf_trim(m, static_cast<std::uint16_t>(excess));  // fails only if split: harmless
    }
    auto* eth = rte_pktmbuf_mtod(m, std::uint8_t*);
    std::memcpy(eth, &macs_lo, 8);
    std::memcpy(eth + 8, &macs_hi, 4);
    decap_offload(m);  // a pending inner checksum stays pending
    // Network policy (policy_enforce.hpp): plain VXLAN here (GBP takes the slow path), so the
    // unknown identity 0 with A clear.
    if (policy) [[unlikely]] {
      if (!known_delivery.pass(*policy, eth, rte_pktmbuf_data_len(m), net->vni, ep.port) &&
          !admit_delivery(tables, *policy, flows, m, ep.port, 0, false, uplink, counters))
        continue;
    }
    if (net->counter_slot != vni_slot) [[unlikely]] {
      flush_vni();
      vni_slot = net->counter_slot;
    }
    ++vni_packets;
    vni_bytes += inner_len;
    if (flows && tables.network_has_services(net->index)) [[unlikely]] {
      if (hand_over_delivery(*flows, ep.port, m, uplink, counters)) continue;  // the pod's owner translates
      translate_delivered(tables, *flows, *net, m, counters);
    }
    if (ep.port != run_port) [[unlikely]] {
      flush_run();
      run_port = ep.port;
    }
    run[run_n++] = m;
  }
  flush_run();
  counters.ports[uplink].rx_packets.add(n);
  counters.ports[uplink].rx_bytes.add(rx_bytes);
  flush_vni();
  return n;
}

}  // namespace vxfed::dataplane
