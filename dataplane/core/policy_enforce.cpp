// Network policy in the workers: see policy_enforce.hpp for what is checked where.
#include "dataplane/core/policy_enforce.hpp"

#include <bit>
#include <cstddef>
#include <cstring>
#include <span>

#include "dataplane/core/flow_hash.hpp"
#include "dataplane/core/mbuf_offload.hpp"
#include "dataplane/core/pipeline_common.hpp"

namespace vxfed::dataplane {

using namespace pipeline_detail;

namespace {

// What a decision needs from a packet (Ethernet + IPv4 in the first segment).
struct PolicyPacket {
  FlowTuple tuple;             // in the policy zone; ICMP echo: the identifier in both ports
  std::uint32_t hash = 0;      // conntrack_key_hash(tuple): the table's key, and the memo's first test
  std::uint8_t tcp_flags = 0;

  // TCP/UDP destination port, host order; 0 for other protocols (an ICMP echo's tuple holds
  // its identifier there). Only a decision reads it, so it is not kept per packet.
  std::uint16_t port() const {
    return tuple.protocol == kIpProtoTcp || tuple.protocol == kIpProtoUdp ? wire::from_be16(tuple.dst_port_be) : 0;
  }
};

std::uint16_t read_be16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }

// False for what is no IPv4 packet (ARP, IPv6, a truncated header): policy does not apply, the
// pipeline decides. Non-first fragments have ports 0 (no reassembly: docs/conntrack.md).
[[gnu::always_inline]] inline bool read_packet(const rte_mbuf* m, std::uint32_t vni, PolicyPacket* out) {
  const std::uint32_t len = rte_pktmbuf_data_len(m);
  const auto* p = rte_pktmbuf_mtod(m, const std::uint8_t*);
  constexpr std::uint32_t kIp = sizeof(EthernetHeader);
  if (len < kIp + 20) return false;
  // EtherType 0x0800 and IP version 4 in one load (bytes 12-15: 08 00, version/IHL, TOS),
  // then a header of 20 bytes or more that fits: one branch.
  std::uint32_t type_version;
  std::memcpy(&type_version, p + 12, 4);
  constexpr std::uint8_t kWant[4] = {0x08, 0x00, 0x40, 0x00}, kMask[4] = {0xff, 0xff, 0xf0, 0x00};
  const std::uint32_t ihl = (p[kIp] & 0x0fu) * 4u;
  if (((type_version & std::bit_cast<std::uint32_t>(kMask)) != std::bit_cast<std::uint32_t>(kWant)) | (ihl < 20) |
      (kIp + ihl > len))
    return false;
  const std::uint8_t* ip = p + kIp;
  FlowTuple& t = out->tuple;
  // Addresses, then ports and VNI, each with one store (set_ports_and_vni: the key compare
  // reads them back as 8-byte words), the hash from the registers.
  std::uint64_t addresses;
  std::memcpy(&addresses, ip + 12, 8);  // both addresses (adjacent in both)
  std::memcpy(&t.src_ip_be, &addresses, 8);
  const std::uint8_t protocol = ip[9];
  t.protocol = protocol;
  std::uint32_t ports = 0;
  out->tcp_flags = 0;
  const std::uint32_t l4 = kIp + ihl;
  if ((read_be16(ip + 6) & 0x1fff) != 0) {
    // a non-first fragment: ports 0
  } else if ((protocol == kIpProtoTcp || protocol == kIpProtoUdp) && l4 + 4 <= len) {
    std::memcpy(&ports, p + l4, 4);  // both ports
    if (protocol == kIpProtoTcp && l4 + 14 <= len) out->tcp_flags = p[l4 + 13];
  } else if (protocol == kIpProtoIcmp && l4 + 8 <= len && (p[l4] == 8 || p[l4] == 0)) {
    std::uint16_t identifier;  // echo request/reply: the identifier, in both ports
    std::memcpy(&identifier, p + l4 + 4, 2);
    ports = identifier | std::uint32_t{identifier} << 16;
  }
  set_ports_and_vni(t, ports, vni | kPolicyZone);
  out->hash = conntrack_key_hash(addresses, protocol, ports, vni);
  return true;
}

// The conntrack policy word (kAskBit, kLocalBit: policy_enforce.hpp).
std::uint32_t policy_word(const NetworkPolicyEntry& policy, bool ask, bool local) {
  return policy.generation << 2 | (local ? kLocalBit : 0u) | (ask ? kAskBit : 0u);
}

void count_rx_one(rte_mbuf* m, std::uint16_t port, WorkerCounters& c) {
  c.ports[port].rx_packets.add(1);
  c.ports[port].rx_bytes.add(rte_pktmbuf_pkt_len(m));
}

net::Ipv4Addr host(std::uint32_t ip_be) { return net::Ipv4Addr::from_network(ip_be); }

// A refused new flow, counted per local pod (PolicyPortDrops, docs/policy.md "Drops per
// policy"): `port` is the pod port of the local pod it was decided for. Deny path only.
void count_refusal(WorkerCounters& c, std::uint16_t port, DropReason why) {
  PolicyPortDrops& d = c.policy_drops[port];
  switch (why) {
    case DropReason::PolicyDeniedEgress: d.denied_egress.add(1); break;
    case DropReason::PolicyDeniedIngress: d.denied_ingress.add(1); break;
    case DropReason::PolicyDeniedRemoteEgress: d.denied_remote_egress.add(1); break;
    case DropReason::PolicyForgedIdentity: d.forged_identity.add(1); break;
    default: break;
  }
}

// A flow's entry, if it has one (tracked). One decided under another generation of the policy
// is decided again by its original direction, which carries what the decision needs (the
// source's identity where it is remote): such a packet gets a miss (the entry erased); a reply
// passes on the old verdict until then (a TCP stream's ACKs come soon; a flow whose original
// direction stays silent keeps it until it times out).
ConntrackHit known_flow(ConntrackTable* table, const NetworkPolicyEntry& policy, const PolicyPacket& pk,
                        std::uint64_t now) {
  if (!table) return {};
  const ConntrackHit hit = table->find(pk.tuple, pk.hash, now);
  if (!hit) return hit;
  if (!decided_under(policy, hit.entry->policy) && hit.direction == FlowDirection::Original) {
    table->erase(hit.entry);
    return {};
  }
  table->track(hit, pk.tcp_flags, now);
  return hit;
}

// An ICMP error (destination unreachable, time exceeded, parameter problem) to the sender of
// a packet of a tracked flow, quoting that packet: RELATED to the flow, as Linux's conntrack
// calls it, so it passes whatever the rules say about ICMP (a path MTU's "fragmentation
// needed" must reach an isolated pod's TCP sender), without a decision and without an entry
// of its own. The error's destination must be the quoted packet's source.
bool related_icmp_error(const ConntrackTable* table, const rte_mbuf* m, std::uint32_t vni, std::uint64_t now) {
  if (!table) return false;
  const std::uint32_t len = rte_pktmbuf_data_len(m);
  const auto* p = rte_pktmbuf_mtod(m, const std::uint8_t*);
  constexpr std::uint32_t kIp = sizeof(EthernetHeader);
  if (len < kIp + 20 || p[kIp + 9] != kIpProtoIcmp) return false;
  const std::uint32_t l4 = kIp + (p[kIp] & 0x0fu) * 4u;
  if (l4 >= len) return false;
  FlowTuple quoted;
  if (!icmp_error_quoted_tuple(std::span<const std::uint8_t>(p + l4, len - l4), vni | kPolicyZone, &quoted)) return false;
  std::uint32_t error_dst;
  std::memcpy(&error_dst, p + kIp + 16, 4);
  return error_dst == quoted.src_ip_be && table->find_icmp_error(quoted, now);
}

// Starts tracking an allowed flow; false when the table has no room (the caller drops).
bool track_new(ConntrackTable* table, const PolicyPacket& pk, std::uint32_t word, std::uint64_t now) {
  if (!table) return true;  // no table (--conntrack-flows 0): every packet is decided alone
  const InsertStatus s = table->insert(pk.tuple, nullptr, word, pk.tcp_flags, now).status;
  return s != InsertStatus::TableFull && s != InsertStatus::ProbeFull;
}

// A delivery's new flow (or one to decide again): the destination pod's egress/ingress
// tables, then tracking. Out of line: the known flow's path stays small.
[[gnu::noinline]] bool decide_new_delivery(const ForwardingTables& tables, const NetworkPolicyEntry& policy,
                                           ConntrackTable* table, std::uint64_t now, const PodPortEntry* pod,
                                           const PolicyPacket& pk, rte_mbuf* m, std::uint16_t port,
                                           std::uint16_t source_identity, bool policy_applied, std::uint16_t rx_port,
                                           WorkerCounters& c) {
  if (pk.tuple.protocol == kIpProtoIcmp && related_icmp_error(table, m, pk.tuple.vni & 0xffffffu, now)) return true;
  c.policy.new_flows.add(1);
  const policy::PolicyTables& pt = *policy.tables;
  // The GBP trust check (policy_trust.hpp): an identity claimed for an inner source outside
  // its cluster is forged; a local pod's packet (its source a local endpoint) is not checked.
  if (policy.trust && !policy.trust->admits(source_identity, host(pk.tuple.src_ip_be).value) &&
      !tables.resolve(pod->network, pk.tuple.src_ip_be).endpoint) {
    c.policy.denied.add(1);
    count_refusal(c, port, DropReason::PolicyForgedIdentity);
    drop(m, DropReason::PolicyForgedIdentity, rx_port, c);
    return false;
  }
  const std::uint16_t identity = wire::from_be16(pod->identity_be);
  DropReason why = DropReason::PolicyDeniedIngress;
  bool ok = true;
  if (!policy_applied && !pt.remote_egress_of.empty() &&
      pt.remote_egress_of[source_identity] != policy::PolicyTables::kNoTable) {
    ok = policy::decide_remote_egress(pt, source_identity, identity, host(pk.tuple.dst_ip_be), pk.tuple.protocol, pk.port());
    why = DropReason::PolicyDeniedRemoteEgress;
  }
  const std::uint32_t local = policy.local_of_port[port];
  if (ok && local != NetworkPolicyEntry::kNotSelected) {
    ok = policy::decide_ingress(pt, local, source_identity, host(pk.tuple.src_ip_be), pk.tuple.protocol, pk.port());
    why = DropReason::PolicyDeniedIngress;
  }
  if (!ok) {
    c.policy.denied.add(1);
    count_refusal(c, port, why);
    drop(m, why, rx_port, c);
    return false;
  }
  c.policy.allowed.add(1);
  const bool local_source = policy_applied && tables.resolve(pod->network, pk.tuple.src_ip_be).endpoint;
  if (!track_new(table, pk, policy_word(policy, false, local_source), now)) {
    drop(m, DropReason::PolicyConntrackFull, rx_port, c);
    return false;
  }
  return true;
}

// The destination pod's owner decides a delivery (admit_delivery, admit_handed_over): a known
// flow's packet passes on its lookup here, the rest goes to decide_new_delivery.
[[gnu::always_inline]] inline bool decide_delivery(const ForwardingTables& tables, const NetworkPolicyEntry& policy,
                                                   ServiceFlows* flows, rte_mbuf* m, std::uint16_t port,
                                                   std::uint16_t source_identity, bool policy_applied,
                                                   std::uint16_t rx_port, WorkerCounters& c) {
  const PodPortEntry* pod = tables.pod_port(port);
  if (!pod) return true;  // the pipeline's own checks drop it
  PolicyPacket pk;
  if (!read_packet(m, tables.network(pod->network).vni, &pk)) return true;
  ConntrackTable* table = flows ? flows->table : nullptr;
  const std::uint64_t now = flows ? flows->now : 0;
  if (known_flow(table, policy, pk, now)) return true;
  return decide_new_delivery(tables, policy, table, now, pod, pk, m, port, source_identity, policy_applied, rx_port, c);
}

// Whether the destination of an AskDestination flow can answer: every VTEP its route may
// pick takes VXLAN-GBP. Toward one that does not (a release before policy, `gbp: false`, a
// kernel peer without `gbp`) the packet would leave plain, with no identity and no A bit, and
// nobody would check its egress: the source refuses it instead, as it refuses what no rule
// allows (docs/policy.md, "Mixed releases"). No route: let through, the pipeline drops it as
// such. Asked for a flow's first packet only.
bool destination_can_decide(const ForwardingTables& tables, std::uint16_t network, std::uint32_t dst_ip_be) {
  const Destination d = tables.resolve(network, dst_ip_be);
  if (d.group == nullptr) return true;
  const std::uint32_t* slots = tables.group_slots() + d.group->first;
  for (std::uint32_t i = 0; i < d.group->count; ++i)
    if (tables.vtep(slots[i]).gbp == 0) return false;
  return true;
}

}  // namespace

std::uint16_t enforce_pod_burst(const ForwardingTables& tables, const NetworkPolicyEntry& policy, ServiceFlows* flows,
                                const PodPortEntry& pod, std::uint16_t rx_port, rte_mbuf** pkts, std::uint16_t n,
                                WorkerCounters& c, std::uint16_t* ask_destination) {
  const policy::PolicyTables& pt = *policy.tables;
  ConntrackTable* table = flows ? flows->table : nullptr;
  const std::uint64_t now = flows ? flows->now : 0;
  const std::uint32_t local_src = policy.local_of_port[rx_port];
  const std::uint16_t identity = wire::from_be16(pod.identity_be);
  const NetworkEntry& net = tables.network(pod.network);
  rte_mbuf* ask[kMaxBurst];
  std::uint16_t n_ask = 0, kept = 0;
  // The last packet let through (slot[memo_slot]) and its outcome; each packet is read into
  // the other slot, so keeping it as the memo costs no copy.
  PolicyPacket slot[2];
  std::uint32_t memo_slot = 0;
  bool memo_valid = false, memo_asks = false;
  const EndpointEntry* memo_ep = nullptr;
  for (std::uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    PolicyPacket& pk = slot[memo_slot ^ 1];
    const PolicyPacket& memo = slot[memo_slot];
    // Not IPv4, or not from the pod's address: the pipeline answers or drops it.
    if (!read_packet(m, net.vni, &pk) || pk.tuple.src_ip_be != pod.ip_be || pk.tuple.dst_ip_be == net.gateway_ip_be) {
      pkts[kept++] = m;
      continue;
    }
    const EndpointEntry* ep = nullptr;
    bool asks = false;
    if (memo_valid && pk.hash == memo.hash && pk.tuple == memo.tuple && pk.tcp_flags == memo.tcp_flags) {
      // The packet before was this flow's, with the same flags (a stream's burst): its
      // outcome, without the table (its entry's state and time would not change).
      asks = memo_asks;
      ep = memo_ep;
    } else if (const ConntrackHit hit = known_flow(table, policy, pk, now)) {
      asks = hit.direction == FlowDirection::Original && (hit.entry->policy & kAskBit);  // replies: A set
      if ((hit.entry->policy & kLocalBit) && flows && flows->hand_over)
        ep = tables.resolve(pod.network, pk.tuple.dst_ip_be).endpoint;
    } else if (pk.tuple.protocol == kIpProtoIcmp && related_icmp_error(table, m, net.vni, now)) {
      ep = tables.resolve(pod.network, pk.tuple.dst_ip_be).endpoint;  // passes, A set, no entry
    } else {
      ep = tables.resolve(pod.network, pk.tuple.dst_ip_be).endpoint;
      c.policy.new_flows.add(1);
      bool ok = true;
      DropReason why = DropReason::PolicyDeniedEgress;
      if (ep) {  // both pods here: the whole egress, then the destination's ingress
        const PodPortEntry* dst_pod = tables.pod_port(ep->port);
        const std::uint16_t dst_identity = dst_pod ? wire::from_be16(dst_pod->identity_be) : 0;
        if (local_src != NetworkPolicyEntry::kNotSelected)
          ok = policy::decide_local_egress(pt, local_src, dst_identity, host(pk.tuple.dst_ip_be), pk.tuple.protocol, pk.port());
        const std::uint32_t local_dst = policy.local_of_port[ep->port];
        if (ok && local_dst != NetworkPolicyEntry::kNotSelected) {
          ok = policy::decide_ingress(pt, local_dst, identity, host(pk.tuple.src_ip_be), pk.tuple.protocol, pk.port());
          why = DropReason::PolicyDeniedIngress;
        }
      } else if (local_src != NetworkPolicyEntry::kNotSelected) {
        const auto v = policy::decide_egress_at_source(pt, local_src, host(pk.tuple.dst_ip_be), pk.tuple.protocol, pk.port());
        asks = v == policy::EgressAtSource::AskDestination;
        ok = v == policy::EgressAtSource::Allow || (asks && destination_can_decide(tables, pod.network, pk.tuple.dst_ip_be));
      }
      if (!ok) {
        c.policy.denied.add(1);
        // The source's egress at the source pod; the local destination's ingress at that pod.
        count_refusal(c, why == DropReason::PolicyDeniedIngress ? ep->port : rx_port, why);
        count_rx_one(m, rx_port, c);
        drop(m, why, rx_port, c);
        continue;
      }
      c.policy.allowed.add(1);
      if (!track_new(table, pk, policy_word(policy, asks, ep != nullptr), now)) {
        count_rx_one(m, rx_port, c);
        drop(m, DropReason::PolicyConntrackFull, rx_port, c);
        continue;
      }
    }
    memo_slot ^= 1;  // pk is the memo now
    memo_asks = asks;
    memo_ep = ep;
    memo_valid = table != nullptr;
    // A local pod of another owner: its owner delivers it and keeps the flow on its side too.
    if (ep && flows && flows->hand_over && !flows->mine(ep->port)) {
      count_rx_one(m, rx_port, c);
      set_macs(m, ep->mac, net.gateway_mac);
      local_offload(m);
      VniCounters& vc = c.vnis[net.counter_slot];
      vc.local_packets.add(1);
      vc.local_bytes.add(rte_pktmbuf_pkt_len(m));
      m->hash.usr = handover_word(identity, true);
      hand_over_delivery(*flows, ep->port, m, rx_port, c);
      continue;
    }
    if (asks) {
      ask[n_ask++] = m;
    } else {
      pkts[kept++] = m;
    }
  }
  for (std::uint16_t j = 0; j < n_ask; ++j) pkts[kept++] = ask[j];
  *ask_destination = n_ask;
  return kept;
}

bool admit_delivery(const ForwardingTables& tables, const NetworkPolicyEntry& policy, ServiceFlows* flows,
                    rte_mbuf* m, std::uint16_t port, std::uint16_t source_identity, bool policy_applied,
                    std::uint16_t rx_port, WorkerCounters& c) {
  if (flows && flows->hand_over && !flows->mine(port)) {
    m->hash.usr = handover_word(source_identity, policy_applied);
    hand_over_delivery(*flows, port, m, rx_port, c);
    return false;
  }
  return decide_delivery(tables, policy, flows, m, port, source_identity, policy_applied, rx_port, c);
}

std::uint16_t admit_handed_over(const ForwardingTables& tables, ServiceFlows& flows, rte_mbuf** pkts, std::uint16_t n,
                                WorkerCounters& c) {
  std::uint16_t kept = 0;
  for (std::uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    const PodPortEntry* pod = tables.pod_port(m->port);
    const NetworkPolicyEntry* policy = pod ? tables.network_policy(pod->network) : nullptr;
    if (policy) {
      const std::uint32_t word = m->hash.usr;
      const bool marked = (word & 0xff000000u) == kHandoverMark;  // else: handed over before the policy came
      const auto identity = static_cast<std::uint16_t>(marked ? word & 0xffffu : 0u);
      const bool applied = marked && ((word >> 16) & 1u);
      if (!decide_delivery(tables, *policy, &flows, m, m->port, identity, applied, m->port, c)) continue;
    }
    pkts[kept++] = m;
  }
  return kept;
}

}  // namespace vxfed::dataplane
