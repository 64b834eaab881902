// Service translation (service_nat.hpp): per packet of a network with services, one parse of
// the IPv4 and TCP/UDP headers in the first segment, one (network, VIP) probe, one conntrack
// lookup; the rewrite updates the IPv4 and L4 checksums incrementally (RFC 1624).
#include "dataplane/core/service_nat.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <optional>
#include <span>

#include "dataplane/core/flow_hash.hpp"
#include "dataplane/core/mbuf_offload.hpp"
#include "dataplane/core/parse_inline.hpp"
#include "dataplane/core/pipeline_common.hpp"
#include "dataplane/core/tx_stage.hpp"
#include "dataplane/core/wire/icmp.hpp"
#include "dataplane/core/wire/ipv4.hpp"

namespace vxfed::dataplane {

using namespace pipeline_detail;
using namespace service_nat_detail;

namespace {

constexpr std::uint32_t kIp = sizeof(EthernetHeader);
constexpr std::uint32_t kTcpFlags = 13;
constexpr std::uint8_t kIcmpTimeExceeded = 11, kIcmpParameterProblem = 12;

// The headers of one packet as the translation needs them (pointers into the first segment).
struct PacketView {
  std::uint8_t* ip = nullptr;
  std::uint8_t* l4 = nullptr;       // TCP/UDP/ICMP header; null when not in the first segment
  std::uint32_t l4_len = 0;         // bytes of L4 in the first segment
  std::uint8_t protocol = 0;
  bool fragment = false;
  bool ports = false;               // TCP/UDP, not a fragment, its ports in the first segment
  std::uint8_t tcp_flags = 0;
  FlowTuple tuple;                  // ports 0 unless TCP/UDP with its header present
};

// A burst's views, left uninitialised: view_packet() starts each packet's view afresh, and only
// the packets it parsed are read (a default-initialised array of 64 cost ~100 instructions a
// packet in a memset, measured: docs/services.md "Cost").
union ViewSlot {
  ViewSlot() {}
  PacketView v;
};

// False: not IPv4 in the first segment (then nothing here applies to it).
[[gnu::always_inline]] inline bool view_packet(rte_mbuf* m, std::uint32_t vni, PacketView* v) {
  const std::uint32_t len = rte_pktmbuf_data_len(m);
  auto* p = rte_pktmbuf_mtod(m, std::uint8_t*);
  if (len < kIp + sizeof(Ipv4Header) || p[12] != 0x08 || p[13] != 0x00) return false;
  std::uint8_t* ip = p + kIp;
  const std::uint32_t ihl = (ip[0] & 0x0fu) * 4u;
  if ((ip[0] >> 4) != 4 || ihl < sizeof(Ipv4Header) || len < kIp + ihl) return false;
  new (v) PacketView;
  v->ip = ip;
  v->protocol = ip[9];
  v->fragment = ((ip[6] & 0x3f) | ip[7]) != 0;  // MF or an offset
  // The addresses with one store, the ports and VNI with another (set_ports_and_vni): the
  // conntrack key's hash and compare read them back as 8-byte words.
  std::memcpy(&v->tuple.src_ip_be, ip + 12, 8);
  v->tuple.protocol = v->protocol;
  std::uint32_t ports = 0;  // 0 unless TCP/UDP with its header present
  const std::uint32_t l4_len = len - kIp - ihl;
  const std::uint32_t need = v->protocol == kIpProtoTcp ? 20u : 8u;
  if (!v->fragment && l4_len >= need) {
    v->l4 = ip + ihl;
    v->l4_len = l4_len;
    if (v->protocol == kIpProtoTcp || v->protocol == kIpProtoUdp) {
      v->ports = true;
      std::memcpy(&ports, v->l4, 4);
      if (v->protocol == kIpProtoTcp) v->tcp_flags = v->l4[kTcpFlags];
    }
  }
  set_ports_and_vni(v->tuple, ports, vni);
  return true;
}

// A checksum field (the complement of the sum) after 32-bit word `from` became `to`.
void checksum_replace32(std::uint8_t* field, std::uint32_t from, std::uint32_t to) {
  const std::uint16_t hc = load16(field);
  store16(field, static_cast<std::uint16_t>(~fold(static_cast<std::uint16_t>(~hc) + not_words_of(from) + words_of(to))));
}
void set_destination(rte_mbuf* m, PacketView& v, NatTarget to) {
  rewrite(m, v.ip, v.l4, v.protocol, 16, 2, to.ip_be, to.port_be);
}
void set_source(rte_mbuf* m, PacketView& v, std::uint32_t ip_be, std::uint16_t port_be) {
  rewrite(m, v.ip, v.l4, v.protocol, 12, 0, ip_be, port_be);
}

// A new flow's backend: Maglev's pick for the flow hash, but never the client itself (hairpin
// is excluded: the client's own reply to itself would not come through us to be translated
// back); then the next slots' backends. kNoBackend when there is none.
std::uint32_t pick_backend(const ServiceEntry& s, const FlowTuple& t) {
  const std::uint32_t h = flow_hash(t.src_ip_be, t.dst_ip_be, t.protocol, t.src_port_be, t.dst_port_be);
  const std::uint32_t b = s.pick(h);
  if (b == ServiceEntry::kNoBackend || s.backend_ip_be[b] != t.src_ip_be) [[likely]] return b;
  const std::size_t size = s.slots.size();
  const std::size_t at = static_cast<std::size_t>((std::uint64_t{h} * size) >> 32);
  for (std::size_t k = 1; k < size; ++k) {
    const std::uint32_t other = s.slots[(at + k) % size];
    if (s.backend_ip_be[other] != t.src_ip_be) return other;
  }
  return ServiceEntry::kNoBackend;
}

// A packet to VIP:port (`port` of service `s`): its flow's backend, found or picked and
// tracked, written in. Returns the drop reason, or nothing when translated.
// `generation`: the network's services_generation(), read before `s` was found; a flow's entry
// keeps the one its backend was last checked under (in its `policy` word).
std::optional<DropReason> to_backend(ServiceFlows& flows, const ServiceEntry& s, const ServicePortEntry& port, rte_mbuf* m,
                      PacketView& v, std::uint32_t hash, std::uint32_t generation, WorkerCounters& c) {
  ConntrackTable& table = *flows.table;
  ConntrackHit hit = table.find(v.tuple, hash, flows.now);
  // The flow's own entry with its backend (else a new flow, or a tuple of another kind).
  bool translated = hit && hit.direction == FlowDirection::Original && hit.entry->has_nat;
  if (translated && hit.entry->policy != generation) [[unlikely]] {
    // A service of the network changed since the flow's backend was checked: kept while that
    // backend is still in the set (weight 0 included: draining keeps flows), else the flow is
    // picked again.
    ConntrackEntry* e = hit.entry;
    if (s.backend_index(e->nat().ip_be) != ServiceEntry::kNoBackend && e->nat().port_be == port.target_port_be) {
      e->policy = generation;
    } else {
      table.erase(e);
      hit = {};
      translated = false;
      c.services.repicked.add(1);
    }
  }
  if (!translated) {
    const std::uint32_t b = pick_backend(s, v.tuple);
    if (b == ServiceEntry::kNoBackend) return DropReason::ServiceNoBackend;
    const NatTarget nat{s.backend_ip_be[b], port.target_port_be};
    const InsertResult r = table.insert(v.tuple, &nat, generation, v.tcp_flags, flows.now);
    switch (r.status) {
      case InsertStatus::Inserted:
        c.services.new_flows.add(1);
        if (flows.backend_counters && !s.backend_slot.empty()) flows.backend_counters->add_new_flow(flows.worker, s.backend_slot[b]);
        break;
      case InsertStatus::Exists: break;
      case InsertStatus::TableFull: return DropReason::ServiceConntrackFull;
      case InsertStatus::ProbeFull: return DropReason::ServiceProbeFull;
      case InsertStatus::Clash: return DropReason::ServiceClash;
      case InsertStatus::Invalid: return DropReason::ServiceFlowInvalid;
    }
    hit = r.hit;
    // The tuple is a plain flow's, or another flow's reply: nothing to translate it to.
    if (!hit || !hit.entry->has_nat || hit.direction != FlowDirection::Original) return DropReason::ServiceClash;
    if (r.status == InsertStatus::Exists) table.track(hit, v.tcp_flags, flows.now);
  } else {
    table.track(hit, v.tcp_flags, flows.now);
  }
  set_destination(m, v, hit.entry->nat());
  return std::nullopt;  // counted by the caller, once per burst
}

// A packet in a service flow's reply direction: VIP:port back as its source.
bool reply_from_vip(ServiceFlows& flows, rte_mbuf* m, PacketView& v, WorkerCounters& c) {
  const ConntrackHit hit = flows.table->find(v.tuple, flows.now);
  if (!hit || hit.direction != FlowDirection::Reply || !hit.entry->has_nat) return false;
  flows.table->track(hit, v.tcp_flags, flows.now);
  set_source(m, v, hit.entry->original.dst_ip_be, hit.entry->original.dst_port_be);
  c.services.replies_translated.add(1);
  return true;
}

// An ICMP error to the client about a packet it sent to a backend through the VIP (the quote
// is client -> backend:target): the quote's destination, and the error's source when it is
// the backend, become VIP:port again; the quote's IPv4 checksum and the ICMP checksum are
// recomputed (the quote's L4 checksum is left: a quote may be cut short).
bool icmp_error_back(ServiceFlows& flows, PacketView& v, WorkerCounters& c) {
  const std::uint8_t type = v.l4[0];
  if (type != kIcmpDestUnreachable && type != kIcmpTimeExceeded && type != kIcmpParameterProblem) return false;
  FlowTuple quoted;
  if (!icmp_error_quoted_tuple(std::span<const std::uint8_t>(v.l4, v.l4_len), v.tuple.vni, &quoted)) return false;
  const ConntrackHit hit = flows.table->find_icmp_error(quoted, flows.now);
  if (!hit || hit.direction != FlowDirection::Reply || !hit.entry->has_nat) return false;
  const FlowTuple& original = hit.entry->original;
  std::uint8_t* q = v.l4 + sizeof(IcmpHeader);
  const std::uint32_t q_ihl = (q[0] & 0x0fu) * 4u;
  std::memcpy(q + 16, &original.dst_ip_be, 4);
  store16(q + 10, 0);
  store16(q + 10, to_be16(ipv4_checksum(q, q_ihl)));
  if (quoted.protocol == kIpProtoTcp || quoted.protocol == kIpProtoUdp) store16(q + q_ihl + 2, original.dst_port_be);
  if (v.tuple.src_ip_be == hit.entry->nat().ip_be) {
    std::memcpy(v.ip + 12, &original.dst_ip_be, 4);
    checksum_replace32(v.ip + 10, v.tuple.src_ip_be, original.dst_ip_be);
  }
  std::uint32_t ip_total = static_cast<std::uint32_t>(v.ip[2]) << 8 | v.ip[3];
  const std::uint32_t icmp_len = std::min<std::uint32_t>(ip_total - static_cast<std::uint32_t>(v.l4 - v.ip), v.l4_len);
  store16(v.l4 + 2, 0);
  store16(v.l4 + 2, to_be16(ipv4_checksum(v.l4, icmp_len)));
  c.services.replies_translated.add(1);
  return true;
}

// A local backend's reply (or ICMP error) to a local client, its source made the VIP's again:
// delivered here, since the pipeline's source check would take the VIP for a spoofed address.
// False (nothing done): not such a packet, or one the pipeline must see (over the MTU, not to
// a local endpoint, or not from the pod's own address: the pipeline drops it).
bool local_reply(const ForwardingTables& tables, ServiceFlows& flows, const PodPortEntry& pod, rte_mbuf* m,
                 PacketView& v, std::uint16_t rx_port, TxStage& tx, WorkerCounters& c) {
  if (v.tuple.src_ip_be != pod.ip_be) return false;
  const NetworkEntry& net = tables.network(pod.network);
  const std::uint32_t total = static_cast<std::uint32_t>(v.ip[2]) << 8 | v.ip[3];
  if (total > net.mtu && !gso_segments_fit(m, net.mtu)) return false;
  const auto ep = tables.endpoint(pod.network, v.tuple.dst_ip_be);
  if (!ep) return false;
  if (!flows.mine(ep->port) && flows.hand_over) {
    // The destination pod's flows live with its owner: delivered there, translated there.
    set_macs(m, ep->mac, net.gateway_mac);
    local_offload(m);
    VniCounters& vc = c.vnis[net.counter_slot];
    vc.local_packets.add(1);
    vc.local_bytes.add(rte_pktmbuf_pkt_len(m));
    hand_over_delivery(flows, ep->port, m, rx_port, c);
    return true;
  }
  if (!flows.table || flows.table->size() == 0) return false;
  const bool translated = v.protocol == kIpProtoIcmp ? icmp_error_back(flows, v, c) : reply_from_vip(flows, m, v, c);
  if (!translated) return false;
  set_macs(m, ep->mac, net.gateway_mac);
  local_offload(m);
  VniCounters& vc = c.vnis[net.counter_slot];
  vc.local_packets.add(1);
  vc.local_bytes.add(rte_pktmbuf_pkt_len(m));
  tx.stage(ep->port, m, c);
  return true;
}

}  // namespace

std::uint16_t translate_pod_burst(const ForwardingTables& tables, ServiceFlows& flows, const PodPortEntry& pod,
                                  rte_mbuf** pkts, std::uint16_t n, std::uint16_t rx_port, TxStage& tx,
                                  WorkerCounters& c) {
  const std::uint16_t network = pod.network;
  // Packets to other addresses matter only when they may be a local backend's reply (the
  // table holds flows, or another worker's may).
  const bool replies_possible = flows.table && (flows.table->size() != 0 || (flows.workers > 1 && flows.hand_over));
  // First pass, every packet: its destination against the network's span of VIPs (one
  // compare). Within it, a whole TCP/UDP packet in IPv4 without options (the fast path's
  // words, parse_inline.hpp) is hashed from its header words and its conntrack bucket
  // prefetched: it is looked up first (third pass), and a hit on its flow's translated entry
  // under the network's current services generation needs neither the services map nor the
  // packet's view. Other packets within the span are probed in the services map (a pod's burst
  // mostly goes to few destinations, so a destination like the one before takes that one's
  // answer). Nothing else is read, and a burst with nothing to translate ends here.
  const std::uint64_t span = tables.service_vip_span(network);
  const ServiceEntry* services[kMaxBurst];
  std::uint64_t vip = 0;   // bit i: packet i is IPv4 to a service's VIP
  std::uint64_t ipv4 = 0;  // bit i: packet i is IPv4 (a first segment that holds the header)
  std::uint64_t fast = 0;  // bit i: packet i is looked up by its words first (key_*[i], hashes[i])
  std::uint32_t last_dst = 0;
  const ServiceEntry* last = nullptr;
  bool looked_up = false;
  // The service at `dst`: a destination like the one before takes that one's answer.
  auto service_at = [&](std::uint32_t dst) {
    if (dst != last_dst || !looked_up) {
      last_dst = dst;
      last = tables.service(network, dst);
      looked_up = true;
    }
    return last;
  };
  std::uint16_t start = 0;
  if (!replies_possible) {
    // The common burst has no packet to a VIP: one compare each of the raw destination word
    // against the span (what is not IPv4 the pass below rules out). The first packet within
    // it starts that pass; those before it are neither VIP traffic nor possible replies.
    for (; start < n; ++start) {
      const rte_mbuf* m = pkts[start];
      if (rte_pktmbuf_data_len(m) < kIp + sizeof(Ipv4Header)) [[unlikely]]
        continue;
      std::uint32_t dst;
      std::memcpy(&dst, rte_pktmbuf_mtod(m, const std::uint8_t*) + kIp + 16, 4);
      if (ForwardingTables::within_vip_span(span, dst)) break;
    }
    if (start == n) [[likely]] return n;
  }
  // The words path needs the table on this worker (with several workers and no hand-over, VIP
  // packets are dropped below).
  ConntrackTable* const table = flows.table && (flows.workers == 1 || flows.hand_over) ? flows.table : nullptr;
  const std::uint32_t vni = tables.network(network).vni;
  // Read before any probe of the map (services_generation()).
  const std::uint32_t generation = tables.services_generation(network);
  const FlowKeysOf keys(vni);
  std::uint64_t key_addresses[kMaxBurst], key_proto_ports[kMaxBurst];  // the words path's (FlowKeysOf)
  std::uint32_t hashes[kMaxBurst];
  for (std::uint16_t i = start; i < n; ++i) {
    const rte_mbuf* m = pkts[i];
    const auto* p = rte_pktmbuf_mtod(m, const std::uint8_t*);
    const std::uint32_t len = rte_pktmbuf_data_len(m);
    if (len < kIp + sizeof(Ipv4Header) || p[12] != 0x08 || p[13] != 0x00) [[unlikely]]
      continue;
    std::uint32_t dst;
    std::memcpy(&dst, p + kIp + 16, 4);
    ipv4 |= 1ull << i;
    if (!ForwardingTables::within_vip_span(span, dst)) {
      services[i] = nullptr;
      continue;
    }
    // The tuple view_packet() would give (IPv4 without options, not a fragment, TCP/UDP with
    // its header in the first segment), from the words.
    const std::uint8_t protocol = p[kIp + 9];
    if (table && len >= kIp + sizeof(Ipv4Header) + (protocol == kIpProtoTcp ? 20u : 8u) &&
        ipv4_plain_tcp_udp(p + kIp)) [[likely]] {
      key_addresses[i] = pod_fast_hash_addresses(p);
      key_proto_ports[i] = pod_fast_hash_proto_ports(p);  // IHL 5: the ports right after the IPv4 header
      hashes[i] = keys.hash(key_addresses[i], key_proto_ports[i]);
      table->prefetch_hash(hashes[i]);
      fast |= 1ull << i;
      continue;
    }
    services[i] = service_at(dst);
    vip |= static_cast<std::uint64_t>(services[i] != nullptr) << i;
  }
  const std::uint64_t candidates = (replies_possible ? ipv4 : vip) & ~fast;
  if ((candidates | fast) == 0) [[likely]] return n;
  // Second pass, the other packets that may need the table: parse, hash the flows to a VIP and
  // prefetch their conntrack buckets, so that the burst's lookups overlap (docs/conntrack.md:
  // -7 to -40 %).
  ViewSlot views[kMaxBurst];  // valid where `parsed` has the packet's bit
  std::uint64_t parsed = 0;
  for (std::uint64_t bits = candidates; bits; bits &= bits - 1) {
    const unsigned i = static_cast<unsigned>(__builtin_ctzll(bits));
    PacketView& v = views[i].v;
    if (!view_packet(pkts[i], vni, &v)) [[unlikely]]
      continue;  // not IPv4 after all (options cut short): the pipeline decides
    parsed |= 1ull << i;
    if (((vip >> i) & 1) && flows.table && v.ports) hashes[i] = flows.table->prefetch(v.tuple);
  }
  // Third pass, in arrival order: translate; drop or deliver here what must not go on.
  std::uint64_t gone = 0;  // bit i: packet i was dropped, or delivered here
  std::uint64_t translated = 0;
  // The last hit on the words path and its key: a packet with the same key (the same flow,
  // --flow-run) takes it without a lookup. Nothing in between changes that entry's outcome (a
  // packet of another path of the same flow finds it under the same generation).
  ConntrackHit memo;
  std::uint64_t memo_addresses = 0, memo_proto_ports = 0;
  for (std::uint64_t bits = parsed | fast; bits; bits &= bits - 1) {
    const unsigned i = static_cast<unsigned>(__builtin_ctzll(bits));
    rte_mbuf* m = pkts[i];
    if ((fast >> i) & 1) {
      auto* p = rte_pktmbuf_mtod(m, std::uint8_t*);
      const std::uint8_t protocol = p[kIp + 9];
      const std::uint64_t addresses = key_addresses[i], proto_ports = key_proto_ports[i];
      ConntrackHit hit;
      if (memo && addresses == memo_addresses && proto_ports == memo_proto_ports) {
        hit = memo;
      } else {
        hit = table->find(keys.key(addresses, proto_ports), hashes[i], flows.now);
      }
      if (hit && hit.direction == FlowDirection::Original && hit.entry->has_nat &&
          hit.entry->policy == generation) [[likely]] {
        // The flow's translated entry, checked under the network's current services: its
        // service, port and backend are still in force.
        std::uint8_t* ip = p + kIp;
        std::uint8_t* l4 = ip + sizeof(Ipv4Header);
        table->track(hit, protocol == kIpProtoTcp ? l4[kTcpFlags] : 0, flows.now);
        const NatTarget to = hit.entry->nat();
        rewrite(m, ip, l4, protocol, 16, 2, to.ip_be, to.port_be);
        ++translated;
        memo = hit;
        memo_addresses = addresses;
        memo_proto_ports = proto_ports;
        continue;
      }
      // Anything else (a new flow, a service changed, a reply, no VIP): as the other packets.
      std::uint32_t dst;
      std::memcpy(&dst, p + kIp + 16, 4);
      services[i] = service_at(dst);
      vip |= static_cast<std::uint64_t>(services[i] != nullptr) << i;
      if (!services[i] && !replies_possible) continue;
      if (!view_packet(m, vni, &views[i].v)) [[unlikely]]
        continue;
    }
    PacketView& v = views[i].v;
    std::optional<DropReason> why;
    if ((vip >> i) & 1) {
      const ServiceEntry& s = *services[i];
      const bool l4 = v.ports;
      const ServicePortEntry* port = l4 ? s.port(v.protocol, v.tuple.dst_port_be) : nullptr;
      // Not a port of the service (or no connection table): left as it is; the VIP has no
      // route, so the pipeline drops it as no_route.
      if (!l4 && (v.fragment || !v.l4)) {
        why = DropReason::ServiceUnparsable;
      } else if (port && flows.table) {
        // (With several workers this burst is on its pod's owner: process_pod_burst hands it over.)
        if (flows.workers > 1 && !flows.hand_over) {
          why = DropReason::ServiceNeedsOneWorker;
        } else {
          why = to_backend(flows, s, *port, m, v, hashes[i], generation, c);
          translated += !why;
        }
      }
    } else if (v.l4 && !v.fragment &&
               (v.protocol == kIpProtoTcp || v.protocol == kIpProtoUdp || v.protocol == kIpProtoIcmp)) {
      // A local backend's reply to a local client, or an ICMP error to that client.
      if (local_reply(tables, flows, pod, m, v, rx_port, tx, c)) {
        c.ports[rx_port].rx_packets.add(1);
        c.ports[rx_port].rx_bytes.add(rte_pktmbuf_pkt_len(m));
        gone |= 1ull << i;
        continue;
      }
    }
    if (why) [[unlikely]] {
      c.ports[rx_port].rx_packets.add(1);
      c.ports[rx_port].rx_bytes.add(rte_pktmbuf_pkt_len(m));
      drop(m, *why, rx_port, c);
      gone |= 1ull << i;
    }
  }
  if (translated) c.services.translated.add(translated);
  if (gone == 0) [[likely]] return n;
  std::uint16_t kept = 0;
  for (std::uint16_t i = 0; i < n; ++i)
    if (!((gone >> i) & 1)) pkts[kept++] = pkts[i];
  return kept;
}

bool hand_over_delivery(ServiceFlows& flows, std::uint16_t port, rte_mbuf* m, std::uint16_t rx_port,
                        WorkerCounters& c) {
  if (flows.mine(port) || !flows.hand_over) return false;
  m->port = port;
  if (!flows.hand_over(flows.hand_over_context, flows.owner(port), HandoverStage::Deliver, m))
    drop(m, DropReason::ServiceHandoverFull, rx_port, c);
  return true;
}

void deliver_handed_over(const ForwardingTables& tables, ServiceFlows& flows, rte_mbuf** pkts, std::uint16_t n,
                         TxStage& tx, WorkerCounters& c) {
  for (std::uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    const std::uint16_t port = m->port;
    const PodPortEntry* pod = tables.pod_port(port);
    std::uint32_t dst = 0;
    if (rte_pktmbuf_data_len(m) >= kIp + sizeof(Ipv4Header)) std::memcpy(&dst, rte_pktmbuf_mtod(m, std::uint8_t*) + kIp + 16, 4);
    // The port changed hands while the packet was in the ring (a ring outlives grace periods).
    if (!pod || pod->ip_be != dst) [[unlikely]] {
      drop(m, DropReason::NoEndpoint, port, c);
      continue;
    }
    if (tables.network_has_services(pod->network)) translate_delivered(tables, flows, tables.network(pod->network), m, c);
    tx.stage(port, m, c);
  }
}

void translate_delivered(const ForwardingTables& /*tables*/, ServiceFlows& flows, const NetworkEntry& net, rte_mbuf* m,
                         WorkerCounters& c) {
  if (!flows.table || flows.table->size() == 0) return;
  PacketView v;
  if (!view_packet(m, net.vni, &v) || v.fragment || !v.l4) return;
  if (v.protocol == kIpProtoTcp || v.protocol == kIpProtoUdp) {
    reply_from_vip(flows, m, v, c);
  } else if (v.protocol == kIpProtoIcmp) {
    icmp_error_back(flows, v, c);
  }
}

}  // namespace vxfed::dataplane
