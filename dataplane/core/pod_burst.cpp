// Pod bursts: a pod's frames encapsulated toward remote VTEPs or delivered to pods on this
// node; ARP for the gateway; ICMP fragmentation-needed (see pipeline.hpp for what happens to
// which packet).
#include <atomic>
#include <cstring>

#include "dataplane/core/flow_hash.hpp"
#include "dataplane/core/mbuf_offload.hpp"
#include "dataplane/core/pipeline.hpp"
#include "dataplane/core/pipeline_common.hpp"
#include "dataplane/core/policy_enforce.hpp"
#include "dataplane/core/service_nat.hpp"
#include "dataplane/core/wire/icmp.hpp"
#include "dataplane/core/wire/ipv4.hpp"
#include "dataplane/core/wire/vxlan.hpp"

namespace vxfed::dataplane {

using namespace pipeline_detail;

namespace {

// The A bit (policy applied) in the VXLAN header's first word as stored in memory (its second
// byte): sent only toward VTEPs that take GBP, like the rest of the word (vxlan_first_word()).
constexpr std::uint32_t kGbpPolicyAppliedWord = std::uint32_t{kVxlanGbpPolicyApplied} << 8;

// ICMP fragmentation-needed (RFC 792 / 1191) from the gateway to the pod, quoting the IP
// header and first 8 payload bytes of m (which the caller then frees).
// `mtu`: the largest inner packet that fits (the network's, or the path's toward the VTEP).
[[gnu::noinline]] bool frag_needed(const NetworkEntry& net, const PodPortEntry& pod, rte_mbuf* m,
                        const PodFrame& f, std::uint32_t mtu, std::uint16_t port, TxStage& tx, WorkerCounters& c) {
  rte_mbuf* r = rte_pktmbuf_alloc(m->pool);
  if (!r) return false;
  const std::uint32_t quote_max = rte_pktmbuf_data_len(m) - sizeof(EthernetHeader);
  const std::uint32_t quote = std::min<std::uint32_t>(f.ip_header_len + 8u, quote_max);
  const std::uint32_t ip_len = sizeof(Ipv4Header) + sizeof(IcmpHeader) + quote;
  auto* p = reinterpret_cast<std::uint8_t*>(
      rte_pktmbuf_append(r, static_cast<std::uint16_t>(sizeof(EthernetHeader) + ip_len)));
  if (!p) {
    rte_pktmbuf_free(r);
    return false;
  }
  EthernetHeader eth{pod.mac, net.gateway_mac, to_be16(kEtherTypeIpv4)};
  Ipv4Header ip{};
  ip.version_ihl = 0x45;
  ip.tos = 0xc0;  // internetwork control, as hosts send ICMP errors
  ip.total_length_be = to_be16(static_cast<std::uint16_t>(ip_len));
  ip.ttl = 64;
  ip.protocol = kIpProtoIcmp;
  ip.src_be = net.gateway_ip_be;
  ip.dst_be = f.src_ip_be;
  ip.checksum_be = to_be16(ipv4_checksum(&ip, sizeof(ip)));
  std::memcpy(p, &eth, sizeof(eth));
  std::memcpy(p + sizeof(eth), &ip, sizeof(ip));
  std::uint8_t* icmp_at = p + sizeof(eth) + sizeof(ip);
  IcmpHeader icmp{};
  icmp.type = kIcmpDestUnreachable;
  icmp.code = kIcmpCodeFragNeeded;
  icmp.next_hop_mtu_be = to_be16(static_cast<std::uint16_t>(mtu));
  std::memcpy(icmp_at, &icmp, sizeof(icmp));
  std::memcpy(icmp_at + sizeof(icmp), rte_pktmbuf_mtod_offset(m, const std::uint8_t*, sizeof(EthernetHeader)), quote);
  const std::uint16_t sum = ipv4_checksum(icmp_at, sizeof(icmp) + quote);
  icmp.checksum_be = to_be16(sum);
  std::memcpy(icmp_at, &icmp, sizeof(icmp));
  tx.stage(port, r, c);
  return true;
}

// A packet toward VTEP v when the underlay told us of a smaller path toward it (path_mtu.hpp):
// false when it fits (or nothing was learned); true when it was answered like a packet over
// the network MTU — ICMP fragmentation-needed naming the inner size that fits the path, or
// dropped without DF — and consumed. Called only while some path MTU is in force.
[[gnu::noinline]] bool over_path_mtu(const ForwardingTables& t, const PodPortEntry& pod, const VtepEntry& v,
                                     rte_mbuf* m, std::uint16_t rx_port, TxStage& tx, WorkerCounters& c) {
  const std::uint16_t outer_mtu = t.path_mtus()->lookup(v.ip_be);
  if (outer_mtu == 0) return false;
  const std::uint32_t mtu = outer_mtu - kVxlanOverhead;  // outer_mtu >= 552: positive
  const PodFrame f = parse_pod_frame_full(first_segment(m), rte_pktmbuf_pkt_len(m));
  if (f.kind != FrameKind::Ipv4 || f.ip_total_len <= mtu || gso_segments_fit(m, mtu)) return false;
  if (!f.dont_fragment) {
    drop(m, DropReason::PathTooBigNoDf, rx_port, c);
    return true;
  }
  if (!frag_needed(t.network(pod.network), pod, m, f, mtu, rx_port, tx, c)) {
    drop(m, DropReason::MbufAllocFailed, rx_port, c);
    return true;
  }
  drop(m, DropReason::PathTooBigDf, rx_port, c);
  return true;
}

// The fields of the outer headers that differ per packet, written after the VTEP's constant
// headers were copied in front of the frame (frame_len bytes, IPv4 TOS `tos`).
[[gnu::always_inline]] inline void write_outer_fields(VxlanOuterHeaders* o, std::uint32_t frame_len, std::uint8_t tos,
                                                      std::uint32_t checksum_base, std::uint32_t hash) {
  const std::uint32_t ip_total = frame_len + sizeof(Ipv4Header) + sizeof(UdpHeader) + sizeof(VxlanHeader);
  o->ip.tos = tos;  // DSCP (e.g. RoCE traffic classes) and ECN survive the tunnel
  o->ip.total_length_be = to_be16(static_cast<std::uint16_t>(ip_total));
  o->ip.checksum_be = to_be16(fold_checksum(checksum_base + ip_total + tos));
  o->udp.src_port_be = to_be16(vxlan_src_port(hash));
  o->udp.length_be = to_be16(static_cast<std::uint16_t>(ip_total - sizeof(Ipv4Header)));
}

// A packet whose VTEP's underlay neighbour is not resolved: ask for it, drop.
[[gnu::noinline]] void drop_unresolved(const ForwardingTables& t, std::uint32_t neighbor_slot, rte_mbuf* m,
                                       std::uint16_t rx_port, WorkerCounters& c) {
  t.neighbors().want(neighbor_slot);
  drop(m, DropReason::UnderlayNeighborUnresolved, rx_port, c);
}

// Prepends the outer headers to a packet to encapsulate: copy_constant(o) writes the VTEP's
// constant headers, then the per-packet fields follow. False when there is no headroom (the
// packet dropped and counted); true: the caller stages it on the uplink.
// The underlay tag (underlay_tag.hpp) goes into the mbuf: tag_flags and tci_of_tos are the
// tables' UnderlayTag, passed as values so that the packet stores do not make them reload.
template <typename CopyConstant>
[[gnu::always_inline]] inline bool prepend_outer(rte_mbuf* m, std::uint32_t checksum_base, std::uint32_t hash,
                                                 std::uint16_t rx_port, WorkerCounters& c,
                                                 std::uint32_t* frame_len_out, std::uint64_t tag_flags,
                                                 const std::uint16_t* tci_of_tos, CopyConstant&& copy_constant) {
  const std::uint32_t frame_len = rte_pktmbuf_pkt_len(m);
  const std::uint8_t tos = rte_pktmbuf_mtod(m, const std::uint8_t*)[15];
  auto* o = reinterpret_cast<VxlanOuterHeaders*>(rte_pktmbuf_prepend(m, sizeof(VxlanOuterHeaders)));
  if (!o) [[unlikely]] {
    drop(m, DropReason::NoHeadroom, rx_port, c);
    return false;
  }
  copy_constant(o);
  write_outer_fields(o, frame_len, tos, checksum_base, hash);
  encap_offload(m);  // sets ol_flags: the pending checksum/segmentation, or nothing
  m->ol_flags |= tag_flags;
  m->vlan_tci = tci_of_tos[tos];
  *frame_len_out = frame_len;
  return true;
}

// The first 8 bytes of the VTEP's outer headers with its underlay neighbour's MAC in place:
// the entry's copy (VtepEntry::head), or the cache's word when the entry has none yet. False
// when the cache has none either (then the caller asks for it and drops).
[[gnu::always_inline]] inline bool neighbor_head(const std::atomic<std::uint64_t>* cache, const VtepEntry& v,
                                                 std::uint64_t* head) {
  const std::uint64_t h = load_word(&v.head);
  if (h & VtepEntry::kHeadMac) [[likely]] {
    *head = h;
    return true;
  }
  const std::uint64_t nb = cache[v.neighbor_slot].load(std::memory_order_acquire);
  if (!(nb & NeighborCache::kValid)) return false;
  *head = VtepEntry::with_mac(h, nb);
  return true;
}

// The VTEP's constant outer headers with `head` (neighbor_head()), then the VXLAN header's
// first word, plain (0x08) or, toward a VTEP that takes GBP, G|I with the sending
// pod's group (`gbp_word`, VtepEntry::gbp_word_of), and the network's VNI. Where there was one
// 4-byte store of the VNI, the GBP choice adds a 2-byte load from the line already read and
// a mask: no branch, the same work toward every VTEP.
[[gnu::always_inline]] inline void copy_vtep_headers(VxlanOuterHeaders* o, const VtepEntry& v, std::uint64_t head,
                                                     std::uint32_t vni_field_be, std::uint32_t gbp_word) {
  std::memcpy(o, &head, sizeof(head));
  std::memcpy(reinterpret_cast<std::uint8_t*>(o) + sizeof(head), v.tail.data(), v.tail.size());
  const std::uint32_t first = VtepEntry::vxlan_first_word(load_word(&v.gbp), gbp_word);
  std::memcpy(&o->vxlan, &first, sizeof(first));
  o->vxlan.vni_reserved_be = vni_field_be;
}

// Encapsulation of a packet the reference parser took (IPv4 with options, ICMP, fragments):
// the same headers as the fast path's.
[[gnu::always_inline]] inline void encap(const ForwardingTables& t, const PodPortEntry& pod, const NetworkEntry& net,
                                         const NextHopGroup& g, rte_mbuf* m, const PodFrame& f, std::uint16_t rx_port,
                                         std::uint32_t gbp_word, TxStage& tx, WorkerCounters& c) {
  const std::uint32_t hash = flow_hash(f.src_ip_be, f.dst_ip_be, f.protocol, f.src_port_be, f.dst_port_be);
  const VtepEntry& v = t.vtep(t.pick(g, hash));
  if (t.path_mtus() && t.path_mtus()->any() && over_path_mtu(t, pod, v, m, rx_port, tx, c)) [[unlikely]] return;
  std::uint64_t head;
  if (!neighbor_head(t.neighbors().words(), v, &head)) [[unlikely]] return drop_unresolved(t, v.neighbor_slot, m, rx_port, c);
  std::uint32_t frame_len;
  const UnderlayTag& tag = t.underlay_tag();
  if (!prepend_outer(m, v.checksum_base, hash, rx_port, c, &frame_len, tag.tx_flags, tag.tci_of_tos.data(),
                     [&](VxlanOuterHeaders* o) { copy_vtep_headers(o, v, head, net.vni_field_be, gbp_word); }))
    return;
  VniCounters& vc = c.vnis[net.counter_slot];
  vc.encap_packets.add(1);
  vc.encap_bytes.add(frame_len);
  tx.stage(t.uplink_port(), m, c);
}

// An IPv4 packet from a pod, parsed (by the fast path or the reference parser).
[[gnu::always_inline]] inline void pod_ipv4(const ForwardingTables& t, const PodPortEntry& pod,
                                            std::uint16_t rx_port, rte_mbuf* m, const PodFrame& f,
                                            std::uint32_t gbp_word, TxStage& tx, WorkerCounters& c) {
  const NetworkEntry& net = t.network(pod.network);
  if (f.src_ip_be != pod.ip_be) [[unlikely]] return drop(m, DropReason::PodSourceSpoofed, rx_port, c);
  if (f.dst_ip_be == net.gateway_ip_be) [[unlikely]] return drop(m, DropReason::ToGateway, rx_port, c);
  if (f.ip_total_len > net.mtu && !gso_segments_fit(m, net.mtu)) [[unlikely]] {
    if (!f.dont_fragment) return drop(m, DropReason::TooBigNoDf, rx_port, c);
    if (!frag_needed(net, pod, m, f, net.mtu, rx_port, tx, c)) return drop(m, DropReason::MbufAllocFailed, rx_port, c);
    return drop(m, DropReason::TooBigDf, rx_port, c);
  }
  const Destination d = t.resolve(pod.network, f.dst_ip_be);
  if (const EndpointEntry* ep = d.endpoint) {
    set_macs(m, ep->mac, net.gateway_mac);
    local_offload(m);
    VniCounters& vc = c.vnis[net.counter_slot];
    vc.local_packets.add(1);
    vc.local_bytes.add(rte_pktmbuf_pkt_len(m));
    return tx.stage(ep->port, m, c);
  }
  if (!d.group) [[unlikely]] return drop(m, DropReason::NoRoute, rx_port, c);
  encap(t, pod, net, *d.group, m, f, rx_port, gbp_word, tx, c);
}

// Everything the fast path did not take: ARP, IPv4 with options, and what gets dropped.
// `gbp_word`: the VXLAN header's first word (PodBurstFacts::gbp_word).
[[gnu::noinline]] void pod_slow(const ForwardingTables& t, const PodPortEntry& pod, std::uint16_t rx_port,
                                rte_mbuf* m, std::uint32_t gbp_word, TxStage& tx, WorkerCounters& c) {
  const NetworkEntry& net = t.network(pod.network);
  const PodFrame f = parse_pod_frame_full(first_segment(m), rte_pktmbuf_pkt_len(m));
  if (f.kind == FrameKind::Arp) {
    if (f.arp.opcode == kArpOpRequest && f.arp.target_ip_be == net.gateway_ip_be) {
      arp_reply_in_place(m, f.arp, net.gateway_mac, net.gateway_ip_be);
      return tx.stage(rx_port, m, c);
    }
    return drop(m, DropReason::ArpIgnored, rx_port, c);
  }
  if (f.kind != FrameKind::Ipv4) return drop(m, f.drop, rx_port, c);
  pod_ipv4(t, pod, rx_port, m, f, gbp_word, tx, c);
}

// What a pod burst needs from the tables, read once per burst into locals: every store into
// packet bytes (a char store may alias anything) would otherwise make the compiler reload
// each of them from the tables for the next packet.
struct PodBurstFacts {
  std::uint16_t network;
  std::uint32_t pod_ip_be;
  std::uint32_t gateway_ip_be;
  std::uint32_t mtu;
  std::uint32_t vni_field_be;
  std::uint32_t gbp_word;            // VtepEntry::gbp_word_of(the pod's identity), A where policy was applied
  std::uint16_t uplink;
  const VtepEntry* vteps;
  const std::uint32_t* group_slots;
  const std::atomic<std::uint64_t>* neighbor_words;
  const PathMtuCache* path_mtus;     // null unless some path MTU is in force (then every packet is checked)
  wire::MacAddress gateway_mac;
  std::uint64_t tag_flags;           // the tables' UnderlayTag
  const std::uint16_t* tci_of_tos;
};

// The outer headers toward one VTEP, with the burst's VNI and the VTEP's underlay MAC filled in:
// built when a burst's packet goes to another VTEP than the one before (once per burst in the
// common case), then copied whole in front of each packet, which only adds its own fields.
struct OuterTemplate {
  const VtepEntry* vtep = nullptr;  // whose template this is
  bool resolved = false;            // false: the VTEP's underlay neighbour is not known yet
  std::uint32_t checksum_base = 0;
  wire::VxlanOuterHeaders headers;

  // Out of line: inlined, GCC sank the VNI store into the packet loop, where the next copy
  // of the template then read across it (a store-forwarding stall per packet).
  [[gnu::noinline]] void build(const PodBurstFacts& k, const VtepEntry& v) {
    vtep = &v;
    std::uint64_t head = 0;
    resolved = neighbor_head(k.neighbor_words, v, &head);
    checksum_base = v.checksum_base;
    copy_vtep_headers(&headers, v, head, k.vni_field_be, k.gbp_word);
  }
};

// Encapsulation of a fast-path packet toward VTEP v (flow hash `hash`), the headers taken from
// the VTEP's entry: for bursts whose packets go to many VTEPs.
[[gnu::always_inline]] inline bool encap_fast(const ForwardingTables& t, const PodBurstFacts& k,
                                              const VtepEntry& v, rte_mbuf* m, std::uint32_t hash,
                                              std::uint16_t rx_port, WorkerCounters& c,
                                              std::uint32_t* frame_len_out) {
  std::uint64_t head;
  if (!neighbor_head(k.neighbor_words, v, &head)) [[unlikely]] {
    drop_unresolved(t, v.neighbor_slot, m, rx_port, c);
    return false;
  }
  return prepend_outer(m, v.checksum_base, hash, rx_port, c, frame_len_out, k.tag_flags, k.tci_of_tos,
                       [&](VxlanOuterHeaders* o) { copy_vtep_headers(o, v, head, k.vni_field_be, k.gbp_word); });
}

// The encapsulated packets of one pod burst, staged on the uplink together, and their counts.
struct EncapBatch {
  rte_mbuf* up[kMaxBurst];
  std::uint16_t count = 0;
  std::uint64_t packets = 0, bytes = 0;

  // Toward v, its headers from its entry (packets of one burst to many VTEPs).
  // False: dropped (and counted).
  [[gnu::always_inline]] bool add(const ForwardingTables& t, const PodBurstFacts& k, const VtepEntry& v,
                                  rte_mbuf* m, std::uint32_t hash, std::uint16_t rx_port, WorkerCounters& c) {
    std::uint32_t len;
    if (!encap_fast(t, k, v, m, hash, rx_port, c, &len)) return false;
    taken(m, len);
    return true;
  }
  [[gnu::always_inline]] void taken(rte_mbuf* m, std::uint32_t len) {
    up[count++] = m;
    ++packets;
    bytes += len;
  }
  // Stages what is batched; called before anything else of the burst goes to the uplink, so
  // the uplink sees the burst's order.
  void stage(TxStage& tx, std::uint16_t uplink, WorkerCounters& c) {
    tx.stage_many(uplink, up, count, c);
    count = 0;
  }
};

// A network with policy (policy_enforce.hpp): the route passes decide each packet as they
// read it. A fast-path packet of a known flow passes on KnownFlowCheck's lookup, its headers
// built with A set (PodBurstFacts::gbp_word) and A cleared again where its source asked the
// destination; any other packet is decided alone by enforce_pod_burst in its place in the
// burst (so order holds), then routed like a packet the fast path did not take.
struct PolicyPass {
  const NetworkPolicyEntry& policy;
  ServiceFlows* flows;  // with a table (process_pod_burst takes the general way without one)
  KnownFlowCheck known;
  // Dropped or handed over by enforce_pod_burst, which counted their rx itself.
  std::uint16_t consumed = 0;
  std::uint64_t consumed_bytes = 0;
};

// The A bit off again in an encapsulated packet's VXLAN header (a flow whose source asked the
// destination): its headers came from a template or entry built with A set.
inline void clear_policy_applied(rte_mbuf* m) {
  auto* o = rte_pktmbuf_mtod(m, VxlanOuterHeaders*);
  reinterpret_cast<std::uint8_t*>(&o->vxlan)[1] &= static_cast<std::uint8_t>(~kVxlanGbpPolicyApplied);
}

// A packet of a network with policy that no known flow let through, at its place in the burst:
// decided by enforce_pod_burst, then routed (pod_slow) with A set or, when its source asks the
// destination, clear.
[[gnu::noinline]] void pod_decide_alone(const ForwardingTables& tables, const PodBurstFacts& k, const PodPortEntry& pod,
                                        std::uint16_t rx_port, rte_mbuf* m, PolicyPass& pp, TxStage& tx,
                                        WorkerCounters& c) {
  std::uint16_t ask = 0;
  const std::uint32_t len = rte_pktmbuf_pkt_len(m);
  if (enforce_pod_burst(tables, pp.policy, pp.flows, pod, rx_port, &m, 1, c, &ask) == 0) {
    ++pp.consumed;
    pp.consumed_bytes += len;
    return;
  }
  pod_slow(tables, pod, rx_port, m, ask ? k.gbp_word & ~kGbpPolicyAppliedWord : k.gbp_word, tx, c);
}

// A network with services and no policy (service_nat.hpp): a burst whose every packet is a
// fast-path TCP/UDP packet to the VIP span of a flow already translated (its own entry, under
// the network's current services generation) is translated in the route passes, from the
// words they load: looked up after the first pass prefetched its bucket, rewritten
// (service_nat_detail::rewrite, as translate_pod_burst does) in the last pass just before it
// is routed, its flow hash taken over the translated tuple. Any other packet (a miss, a new
// flow, a reply, not the fast path's) makes the passes give the burst back untouched, before
// any packet was changed or tracked: translate_pod_burst then takes it whole, in order.
struct VipPass {
  ConntrackTable* table;
  std::uint64_t now;
  std::uint64_t span;           // ForwardingTables::service_vip_span
  FlowKeysOf keys;              // the network's VNI
  std::uint32_t generation;     // ForwardingTables::services_generation
};

// What a pod burst adds to its counters besides the encapsulations.
struct PodBurstTotals {
  std::uint64_t rx_bytes = 0, local_packets = 0, local_bytes = 0;
};

// The common pod burst: fast-path TCP/UDP packets to one destination that has a route (a
// training job's flows to one peer). One pass: check, hash, encapsulate, from the first
// packet on, until one does not fit (another destination, or anything the fast path does not
// take). Returns how many packets it handled; pod_burst_general takes the rest, in order.
// With policy (kPolicy): a packet of a flow not known ends the pass too.
template <bool kPolicy>
[[gnu::always_inline]] inline std::uint16_t pod_burst_one_destination(
    const ForwardingTables& t, const PodBurstFacts& k, std::uint32_t dst, const NextHopGroup& g,
    rte_mbuf** pkts, std::uint16_t n, std::uint16_t rx_port, EncapBatch& batch, PodBurstTotals& totals,
    WorkerCounters& c, PolicyPass* pp) {
  // Counts and template in locals, not in `batch`: a char store into a packet may alias any
  // memory whose address has left the function, so batch's fields would be reloaded and
  // stored around every packet.
  OuterTemplate tmpl;
  std::uint16_t n_up = batch.count;
  std::uint64_t packets = 0, bytes = 0, rx_bytes = 0;
  const VtepEntry* only = g.count == 1 ? &k.vteps[k.group_slots[g.first]] : nullptr;
  if (only) {
    tmpl.build(k, *only);
    if (!tmpl.resolved) return 0;  // the general passes drop and count, and ask for the MAC
  }
  // One packet; false: it does not fit, the general passes take it and the rest.
  auto one = [&](rte_mbuf* m) __attribute__((always_inline)) {
    const std::uint32_t pkt_len = rte_pktmbuf_pkt_len(m), first_len = rte_pktmbuf_data_len(m);
    const auto* p = rte_pktmbuf_mtod(m, const std::uint8_t*);
    if (first_len < kPodFastMinFirst) [[unlikely]] return false;
    // A super-packet's size on the wire is its segments'.
    const bool fits = pod_fast_l4_ok(p, first_len, pkt_len) & (pod_fast_src(p) == k.pod_ip_be) &
                      (pod_fast_dst(p) == dst) & (pod_fast_ip_total(p) <= k.mtu || gso_segments_fit(m, k.mtu));
    if (!fits) [[unlikely]] return false;
    const std::uint64_t addresses = pod_fast_hash_addresses(p), proto_ports = pod_fast_hash_proto_ports(p);
    KnownFlowCheck::Verdict verdict = KnownFlowCheck::Applied;
    if constexpr (kPolicy) {
      verdict = pp->known.check<true>(addresses, proto_ports, p, first_len);
      if (verdict == KnownFlowCheck::Unknown) [[unlikely]] return false;
    }
    rx_bytes += pkt_len;
    const std::uint32_t hash = flow_hash_words(addresses, proto_ports);
    if (!only) {  // ECMP: the template follows the VTEP
      const VtepEntry& v = k.vteps[ForwardingTables::pick_slot(k.group_slots, g, hash)];
      if (&v != tmpl.vtep) tmpl.build(k, v);
      if (!tmpl.resolved) [[unlikely]] {
        drop_unresolved(t, v.neighbor_slot, m, rx_port, c);
        return true;
      }
    }
    std::uint32_t len;
    if (prepend_outer(m, tmpl.checksum_base, hash, rx_port, c, &len, k.tag_flags, k.tci_of_tos, [&](VxlanOuterHeaders* o) {
          std::memcpy(o, &tmpl.headers, sizeof(VxlanOuterHeaders));
        })) [[likely]] {
      if (kPolicy && verdict == KnownFlowCheck::Asks) clear_policy_applied(m);
      batch.up[n_up++] = m;
      ++packets;
      bytes += len;
    }
    return true;
  };
  for (std::uint16_t j = 0; j < kPrefetchAhead && j < n; ++j) prefetch_data(pkts[j]);
  std::uint16_t i = 0;
  bool fitted = true;
  for (; fitted && i + kPrefetchAhead < n; ++i) {  // then the last few, nothing left to prefetch
    prefetch_data(pkts[i + kPrefetchAhead]);
    fitted = one(pkts[i]);
  }
  for (; fitted && i < n; ++i) fitted = one(pkts[i]);
  if (!fitted) --i;  // the one that did not fit is the general passes' first
  batch.count = n_up;
  batch.packets += packets;
  batch.bytes += bytes;
  totals.rx_bytes += rx_bytes;
  return i;
}

// Any pod burst, in three passes over it (l3fwd style), so that the table reads of different
// packets overlap instead of waiting one after another:
//   1. parse + checks (fast path), flow hash, prefetch the LPM first-level entry;
//   2. LPM lookup, whose entry carries the prefix's answer (no further table read), pick
//      the VTEP by flow hash, prefetch its entry;
//   3. in arrival order: encapsulate / deliver locally / drop; packets the fast path did not
//      take go through pod_slow here, in their place, so order is kept.
// With policy (kPolicy): the first pass also asks KnownFlowCheck; a packet of a flow not known
// goes to pod_decide_alone in the last pass, in its place.
// With services (kVip, VipPass): every packet a known translated flow's VIP packet, else false
// (nothing done, nothing counted); true otherwise.
template <bool kPolicy, bool kVip = false>
[[gnu::always_inline]] inline bool pod_burst_general(const ForwardingTables& tables, const PodBurstFacts& k,
                                         const PodPortEntry& pod, std::uint16_t rx_port, rte_mbuf** pkts,
                                         std::uint16_t n, EncapBatch& batch, PodBurstTotals& totals,
                                         TxStage& tx, WorkerCounters& counters, PolicyPass* pp,
                                         VipPass* vp = nullptr) {
  static_assert(!(kPolicy && kVip), "policy and services together take translate_pod_burst first");
  const std::uint64_t* t24 = tables.lpm().tbl24();
  const std::uint64_t* t8 = tables.lpm().tbl8();
  const std::uint32_t* a24 = tables.lpm().answers24();
  std::uint32_t dst[kMaxBurst], hash[kMaxBurst];
  [[maybe_unused]] std::uint32_t key_hash[kPolicy || kVip ? kMaxBurst : 1];  // with policy or VIPs: the conntrack key's
  [[maybe_unused]] ConntrackEntry* entry[kVip ? kMaxBurst : 1];            // with VIPs: the flow's translated entry
  std::uint64_t fast = 0;  // bit i: packet i passed the fast parse and the pod checks (and is a known flow)
  std::uint64_t asks = 0;  // with policy, bit i: packet i's flow asked the destination (A clear)
  std::uint64_t rx_bytes = 0;
  for (std::uint16_t j = 0; j < kPrefetchAhead && j < n; ++j) prefetch_data(pkts[j]);
  for (std::uint16_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) prefetch_data(pkts[i + kPrefetchAhead]);
    const rte_mbuf* m = pkts[i];
    const std::uint32_t pkt_len = rte_pktmbuf_pkt_len(m);
    rx_bytes += pkt_len;
    const auto* p = rte_pktmbuf_mtod(m, const std::uint8_t*);
    // Branch-free checks (one predictable branch for a first segment too short to read
    // from): a chain of early exits costs more than computing them all on a cached line.
    if (rte_pktmbuf_data_len(m) < kPodFastMinFirst) [[unlikely]] {
      if constexpr (kVip) return false;
      continue;
    }
    const std::uint32_t d = pod_fast_dst(p);
    const bool ok = pod_fast_l4_ok(p, rte_pktmbuf_data_len(m), pkt_len) & (pod_fast_src(p) == k.pod_ip_be) &
                    (d != k.gateway_ip_be) & (pod_fast_ip_total(p) <= k.mtu || gso_segments_fit(m, k.mtu));
    const std::uint64_t addresses = pod_fast_hash_addresses(p), proto_ports = pod_fast_hash_proto_ports(p);
    if constexpr (kVip) {
      // Within the VIP span, the L4 header's checksum in the first segment (the rewrite's).
      constexpr std::uint32_t kL4 = sizeof(EthernetHeader) + sizeof(Ipv4Header);
      const bool tcp = static_cast<std::uint8_t>(proto_ports) == kIpProtoTcp;
      if (!(ok & ForwardingTables::within_vip_span(vp->span, d) &
            (rte_pktmbuf_data_len(m) >= kL4 + (tcp ? 20u : 8u)))) [[unlikely]]
        return false;
      key_hash[i] = vp->keys.hash(addresses, proto_ports);
      vp->table->prefetch_hash(key_hash[i]);
      continue;  // its destination and flow hash are the backend's, after the lookup
    }
    if constexpr (kPolicy) {
      key_hash[i] = pp->known.key_hash(addresses, proto_ports);
      pp->known.prefetch(key_hash[i]);
    }
    fast |= static_cast<std::uint64_t>(ok) << i;
    dst[i] = d;
    hash[i] = flow_hash_words(addresses, proto_ports);
    if (a24) rte_prefetch0(a24 + (from_be32(d) >> 8));
  }
  // With VIPs: the memo of the route loop's lookups (a packet of the flow before takes its
  // entry: a stream's burst is one lookup). Bit 63 is never set: no first match.
  [[maybe_unused]] ConntrackEntry* memo = nullptr;
  [[maybe_unused]] std::uint64_t memo_addresses = 0, memo_proto_ports = 1ull << 63;
  if constexpr (kVip) fast = n == 64 ? ~0ull : (1ull << n) - 1;
  // A pod's burst mostly goes to few destinations (a training job's peers): a packet with
  // the destination of the one before it takes that one's answer, without a lookup. The LPM
  // entry holds the prefix's answer (FoldedAnswer): for a route to one VTEP, that VTEP
  // (no group or slot read); otherwise the group, whose slot the flow hash picks. So lookup,
  // resolve and the VTEP's pick are one pass; the VTEP's entry is prefetched for the last pass.
  const VtepEntry* vtep[kMaxBurst];
  const EndpointEntry* local[kMaxBurst];
  Destination last{};
  const VtepEntry* last_vtep = nullptr;  // set when the answer named the VTEP itself
  std::uint32_t last_dst = 0;
  if constexpr (kPolicy || kVip) {
    // The first packet of the fast set may leave it below (a flow not known), so not the
    // complement of its destination: no packet of the set goes to the gateway (the pod checks;
    // a VIP flow's backend that is the gateway gives the burst back).
    last_dst = k.gateway_ip_be;
  } else if (fast) {
    last_dst = ~dst[__builtin_ctzll(fast)];  // no match for the first packet
  }
  for (std::uint64_t bits = fast; bits; bits &= bits - 1) {
    const unsigned i = static_cast<unsigned>(__builtin_ctzll(bits));
    if constexpr (kPolicy) {
      // The lookup, a loop after the one that prefetched its bucket (so that the burst's misses
      // overlap); a flow not known leaves the fast set (decided alone in the last pass).
      const rte_mbuf* m = pkts[i];
      const auto* p = rte_pktmbuf_mtod(m, const std::uint8_t*);
      const KnownFlowCheck::Verdict v = pp->known.check<false>(pod_fast_hash_addresses(p), pod_fast_hash_proto_ports(p),
                                                               p, rte_pktmbuf_data_len(m), key_hash[i]);
      if (v == KnownFlowCheck::Unknown) [[unlikely]] {
        fast &= ~(std::uint64_t{1} << i);
        continue;
      }
      asks |= static_cast<std::uint64_t>(v == KnownFlowCheck::Asks) << i;
    }
    if constexpr (kVip) {
      // The lookup, a loop after the one that prefetched its bucket. The destination and the
      // flow hash are the translated tuple's, as the route pass would read them after
      // translate_pod_burst. Nothing has changed the burst yet: any doubt gives it back.
      const auto* p = rte_pktmbuf_mtod(pkts[i], const std::uint8_t*);
      const std::uint64_t addresses = pod_fast_hash_addresses(p), proto_ports = pod_fast_hash_proto_ports(p);
      if (((addresses ^ memo_addresses) | (proto_ports ^ memo_proto_ports)) != 0) {
        const ConntrackHit hit = vp->table->find(vp->keys.key(addresses, proto_ports), key_hash[i], vp->now);
        if (!hit || hit.direction != FlowDirection::Original || !hit.entry->has_nat ||
            hit.entry->policy != vp->generation) [[unlikely]]
          return false;
        memo = hit.entry;
        memo_addresses = addresses;
        memo_proto_ports = proto_ports;
      }
      entry[i] = memo;
      const NatTarget to = memo->nat();
      if (to.ip_be == k.gateway_ip_be) [[unlikely]] return false;
      dst[i] = to.ip_be;
      hash[i] = flow_hash_words((addresses & 0xffffffffull) | std::uint64_t{to.ip_be} << 32,
                                (proto_ports & ~(0xffffull << 24)) | std::uint64_t{to.port_be} << 24);
    }
    if (dst[i] != last_dst) {  // a shared prefix resolves per destination, so key on it
      last_dst = dst[i];
      last = Destination{};
      last_vtep = nullptr;
      if (t24) [[likely]] {
        // The mirror first (half the first level's lines); the entry itself when its answer is
        // not a direct VTEP (a group, an endpoint, a second level, another network's prefix).
        std::uint64_t entry = 0;
        if (std::uint32_t v; ForwardingTables::lookup_direct_vtep(a24, t24, t8, k.network, from_be32(last_dst), &v,
                                                                  &entry)) [[likely]] {
          last_vtep = &k.vteps[v];
          rte_prefetch0(last_vtep);
        } else {
          last = tables.resolve_entry(k.network, last_dst, entry);
        }
      }
    }
    local[i] = last.endpoint;
    vtep[i] = last_vtep;
    if (last.group) {
      vtep[i] = &k.vteps[ForwardingTables::pick_slot(k.group_slots, *last.group, hash[i])];
      rte_prefetch0(vtep[i]);
    }
  }
  std::uint64_t local_packets = 0, local_bytes = 0;
  for (std::uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    if (!((fast >> i) & 1)) [[unlikely]] {
      batch.stage(tx, k.uplink, counters);  // keep the uplink's order
      if constexpr (kPolicy) {
        pod_decide_alone(tables, k, pod, rx_port, m, *pp, tx, counters);
      } else {
        pod_slow(tables, pod, rx_port, m, k.gbp_word, tx, counters);
      }
      continue;
    }
    if constexpr (kVip) {
      // Tracked and translated here, in order, just before it is routed (nothing before this
      // pass changed the burst: a packet that did not qualify gave it back whole).
      auto* ip = rte_pktmbuf_mtod_offset(m, std::uint8_t*, sizeof(EthernetHeader));
      std::uint8_t* l4 = ip + sizeof(Ipv4Header);
      const std::uint8_t protocol = ip[9];
      constexpr unsigned kTcpFlags = 13;
      vp->table->track_lazy(
          ConntrackHit{entry[i], FlowDirection::Original},
          [&] { return protocol == kIpProtoTcp ? l4[kTcpFlags] : std::uint8_t{0}; }, vp->now);
      const NatTarget to = entry[i]->nat();
      service_nat_detail::rewrite(m, ip, l4, protocol, 16, 2, to.ip_be, to.port_be);
    }
    if (vtep[i]) [[likely]] {
      if (k.path_mtus && over_path_mtu(tables, pod, *vtep[i], m, rx_port, tx, counters)) [[unlikely]] continue;
      if (batch.add(tables, k, *vtep[i], m, hash[i], rx_port, counters) && kPolicy && ((asks >> i) & 1)) [[unlikely]]
        clear_policy_applied(m);
    } else if (const EndpointEntry* ep = local[i]) {
      set_macs(m, ep->mac, k.gateway_mac);
      local_offload(m);
      ++local_packets;
      local_bytes += rte_pktmbuf_pkt_len(m);
      tx.stage(ep->port, m, counters);
    } else {
      drop(m, DropReason::NoRoute, rx_port, counters);
    }
  }
  totals.rx_bytes += rx_bytes;
  totals.local_packets += local_packets;
  totals.local_bytes += local_bytes;
  if constexpr (kVip) counters.services.translated.add(n);
  return true;
}

// The packets of a pod burst after services and policy: routed and encapsulated with the
// VXLAN header's first word from `gbp_word` (VtepEntry::gbp_word_of the pod's identity, with
// the A bit where egress policy was applied), or delivered locally; rx counted here.
// With policy (kPolicy, pp): every packet decided on the way (PolicyPass); gbp_word has A set.
// With services (kVip, vp): the general passes translate too, or give the burst back (false:
// nothing done or counted; translate_pod_burst takes it).
template <bool kPolicy, bool kVip = false>
bool route_pod_burst(const ForwardingTables& tables, const PodPortEntry& pod, std::uint16_t rx_port, rte_mbuf** pkts,
                     std::uint16_t n, std::uint32_t gbp_word, TxStage& tx, WorkerCounters& counters,
                     PolicyPass* pp = nullptr, VipPass* vp = nullptr) {
  const NetworkEntry& net = tables.network(pod.network);
  const PodBurstFacts k{pod.network, pod.ip_be, net.gateway_ip_be, net.mtu, net.vni_field_be,
                        gbp_word, tables.uplink_port(), tables.vtep_entries(), tables.group_slots(),
                        tables.neighbors().words(),
                        tables.path_mtus() && tables.path_mtus()->any() ? tables.path_mtus() : nullptr,
                        net.gateway_mac, tables.underlay_tag().tx_flags,
                        tables.underlay_tag().tci_of_tos.data()};
  EncapBatch batch;
  PodBurstTotals totals;
  std::uint16_t done = 0;
  const std::uint64_t* t24 = tables.lpm().tbl24();
  // One pass when the first and last packets go to the same destination (it has a route,
  // and is not the gateway) and no path MTU is in force; the general passes otherwise.
  // The first packet must be one the fast path takes before its "destination" is looked up:
  // the same bytes of an IPv6 frame (a new pod's router solicitations and DAD) are part of
  // its source address, and their lookups read first-level LPM pages all over the address
  // space (seen as the soak's dataplane growing with every pod that came up).
  const rte_mbuf* first = pkts[0];
  const rte_mbuf* last = pkts[n - 1];
  if (!kVip && t24 && !k.path_mtus && rte_pktmbuf_data_len(first) >= kPodFastMinFirst &&
      rte_pktmbuf_data_len(last) >= kPodFastMinFirst &&
      pod_fast_l4_ok(rte_pktmbuf_mtod(first, const std::uint8_t*), rte_pktmbuf_data_len(first),
                     rte_pktmbuf_pkt_len(first))) {
    const std::uint32_t dst = pod_fast_dst(rte_pktmbuf_mtod(first, const std::uint8_t*));
    if (dst == pod_fast_dst(rte_pktmbuf_mtod(last, const std::uint8_t*)) && dst != k.gateway_ip_be) {
      const Destination d =
          tables.resolve_entry(k.network, dst, LpmTable::lookup_in(t24, tables.lpm().tbl8(), from_be32(dst)));
      if (d.group)
        done = pod_burst_one_destination<kPolicy>(tables, k, dst, *d.group, pkts, n, rx_port, batch, totals, counters, pp);
    }
  }
  if (done < n &&
      !pod_burst_general<kPolicy, kVip>(tables, k, pod, rx_port, pkts + done, static_cast<std::uint16_t>(n - done),
                                        batch, totals, tx, counters, pp, vp))
    return false;  // kVip only, with done 0: nothing changed
  batch.stage(tx, k.uplink, counters);
  // What enforce_pod_burst consumed it counted itself (rx_bytes holds fast-path packets only).
  counters.ports[rx_port].rx_packets.add(kPolicy ? n - pp->consumed : n);
  counters.ports[rx_port].rx_bytes.add(kPolicy ? totals.rx_bytes - pp->consumed_bytes : totals.rx_bytes);
  VniCounters& vc = counters.vnis[net.counter_slot];
  if (batch.packets) {
    vc.encap_packets.add(batch.packets);
    vc.encap_bytes.add(batch.bytes);
  }
  if (totals.local_packets) {
    vc.local_packets.add(totals.local_packets);
    vc.local_bytes.add(totals.local_bytes);
  }
  return true;
}

}  // namespace

// Pod bursts: the common one (one destination with a route) in one pass, from its first packet
// on; whatever is left in the general three passes. See pipeline.hpp for what happens to which
// packet.
std::uint16_t process_pod_burst(const ForwardingTables& tables, std::uint16_t rx_port,
                                rte_mbuf** pkts, std::uint16_t n, TxStage& tx,
                                WorkerCounters& counters, ServiceFlows* flows) {
  if (n == 0) return 0;
  const PodPortEntry* pod = tables.pod_port(rx_port);
  if (!pod) [[unlikely]] {
    drop_burst(pkts, n, rx_port, DropReason::UnknownPodPort, counters);
    return n;
  }
  const std::uint16_t received = n;
  // Network policy (policy_enforce.hpp): networks without one pay this pointer's test.
  const NetworkPolicyEntry* policy = tables.network_policy(pod->network);
  const bool services = tables.network_has_services(pod->network);
  // Global services and policy keep a pod's flows with its owner worker (docs/conntrack.md),
  // which resumes the burst there and counts it.
  if ((services || policy) && flows && flows->hand_over && !flows->mine(rx_port)) [[unlikely]] {
    for (std::uint16_t i = 0; i < n; ++i) {
      pkts[i]->port = rx_port;
      if (!flows->hand_over(flows->hand_over_context, flows->owner(rx_port), HandoverStage::PodBurst, pkts[i])) {
        counters.ports[rx_port].rx_packets.add(1);
        counters.ports[rx_port].rx_bytes.add(rte_pktmbuf_pkt_len(pkts[i]));
        drop(pkts[i], DropReason::ServiceHandoverFull, rx_port, counters);
      }
    }
    return received;
  }
  // Global services (service_nat.hpp): translated before routing, so that the rest of the
  // pipeline sees the backend's address; networks without services pay this one byte's test.
  const std::uint32_t gbp_word = VtepEntry::gbp_word_of(pod->identity_be);
  if (services) [[unlikely]] {
    // A burst of known translated flows' VIP packets (VipPass): translated in the route passes;
    // given back when any packet is not one (nothing changed), then the whole burst as below.
    // Not with policy (translate first, then the policy decides the backend's tuple).
    const rte_mbuf* first = pkts[0];
    const std::uint64_t span = tables.service_vip_span(pod->network);
    if (!policy && flows && flows->table && (flows->workers == 1 || flows->hand_over) &&
        rte_pktmbuf_data_len(first) >= kPodFastMinFirst &&
        ForwardingTables::within_vip_span(span, pod_fast_dst(rte_pktmbuf_mtod(first, const std::uint8_t*)))) {
      const std::uint32_t vni = tables.network(pod->network).vni;
      VipPass vp{flows->table, flows->now, span, FlowKeysOf(vni), tables.services_generation(pod->network)};
      if (route_pod_burst<false, true>(tables, *pod, rx_port, pkts, n, gbp_word, tx, counters, nullptr, &vp))
        return received;
    }
    ServiceFlows none;
    n = translate_pod_burst(tables, flows ? *flows : none, *pod, pkts, n, rx_port, tx, counters);
    if (n == 0) return received;
  }
  if (policy) [[unlikely]] {
    if (flows && flows->table) [[likely]] {
      // Decided as the route passes read each packet (PolicyPass), in the burst's order.
      PolicyPass pp{*policy, flows, KnownFlowCheck(*policy, flows->table, *flows, tables.network(pod->network).vni)};
      route_pod_burst<true>(tables, *pod, rx_port, pkts, n, gbp_word | kGbpPolicyAppliedWord, tx, counters, &pp);
      return received;
    }
    // No connection table (--conntrack-flows 0): every packet decided alone; those whose
    // source asked the destination go last, with A clear.
    std::uint16_t ask = 0;
    n = enforce_pod_burst(tables, *policy, flows, *pod, rx_port, pkts, n, counters, &ask);
    const std::uint16_t applied = static_cast<std::uint16_t>(n - ask);
    if (applied) route_pod_burst<false>(tables, *pod, rx_port, pkts, applied, gbp_word | kGbpPolicyAppliedWord, tx, counters);
    if (ask) route_pod_burst<false>(tables, *pod, rx_port, pkts + applied, ask, gbp_word, tx, counters);
    return received;
  }
  route_pod_burst<false>(tables, *pod, rx_port, pkts, n, gbp_word, tx, counters);
  return received;
}

}  // namespace vxfed::dataplane
