// Global services' load balancing in the forwarder (docs/conntrack.md, docs/services.md): a
// packet from a local pod to VIP:port of its network gets a backend per flow (Maglev over the
// backends vxfedd sent, ServiceEntry), is tracked in the worker's ConntrackTable and translated
// to backend:target_port; packets of the flow's reply direction delivered to the client get
// VIP:port back as their source. Checksums are updated incrementally; a packet whose L4
// checksum is still pending (a pod's partial-checksum or GSO super-packet, docs/pod-ports.md)
// has only its pseudo-header sum adjusted (the addresses, not the ports).
//
// One table per worker. A flow's entry lives with the worker that owns its local client pod
// (owner = the pod's port index % workers, docs/conntrack.md "One table per worker"): with
// several workers, a packet that needs the table of another worker is handed to it through
// `hand_over` (the runtime's SPSC rings), tagged with the stage it resumes at. Without
// `hand_over` (and more than one worker) VIP packets are dropped (service_needs_one_worker).
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <cstring>

#include "dataplane/core/conntrack.hpp"
#include "dataplane/core/counters.hpp"
#include "dataplane/core/service_counters.hpp"
#include "dataplane/core/mbuf_offload.hpp"
#include "dataplane/core/tables.hpp"
#include "dataplane/core/tx_stage.hpp"
#include "dataplane/core/wire/ipv4.hpp"

namespace vxfed::dataplane {

// The translation's rewrite, shared by translate_pod_burst and the route passes
// (pod_burst.cpp), which translate a known flow's VIP packet as they route it.
namespace service_nat_detail {

inline constexpr std::uint32_t kTcpChecksum = 16, kUdpChecksum = 6;

// One's complement arithmetic on the 16-bit words as they sit in memory (the sum does not
// depend on the byte order it is taken in, RFC 1071).
inline std::uint16_t load16(const std::uint8_t* p) {
  std::uint16_t x;
  std::memcpy(&x, p, 2);
  return x;
}
inline void store16(std::uint8_t* p, std::uint16_t x) { std::memcpy(p, &x, 2); }
inline std::uint32_t words_of(std::uint32_t x) { return (x & 0xffff) + (x >> 16); }
inline std::uint32_t not_words_of(std::uint32_t x) { return (~x & 0xffff) + (~x >> 16); }
// The 32-bit sum's halves added with the end-around carry: the high half of s plus s rotated
// by 16 is high + low + the carry out of the low halves' sum (the two-step fold's result).
inline std::uint16_t fold(std::uint32_t s) {
  return static_cast<std::uint16_t>((s + (s >> 16 | s << 16)) >> 16);
}
// Rewrites one address (at ip + addr_offset) and the port at l4 + port_offset, with the
// checksums: the address's change is summed once and applied to both the IPv4 header's and
// the L4 checksum (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m')), with one fold each.
// `ip`, `l4`: the headers in the first segment (TCP/UDP, the checksum field within it).
[[gnu::always_inline]] inline void rewrite(rte_mbuf* m, std::uint8_t* ip, std::uint8_t* l4, std::uint8_t protocol,
                                           unsigned addr_offset, unsigned port_offset, std::uint32_t ip_be,
                                           std::uint16_t port_be) {
  std::uint32_t old_ip;
  std::memcpy(&old_ip, ip + addr_offset, 4);
  const std::uint16_t old_port = load16(l4 + port_offset);
  std::memcpy(ip + addr_offset, &ip_be, 4);
  store16(l4 + port_offset, port_be);
  const std::uint32_t address_change = not_words_of(old_ip) + words_of(ip_be);
  store16(ip + 10, static_cast<std::uint16_t>(~fold(static_cast<std::uint16_t>(~load16(ip + 10)) + address_change)));
  std::uint8_t* l4sum = l4 + (protocol == wire::kIpProtoTcp ? kTcpChecksum : kUdpChecksum);
  const std::uint16_t l4c = load16(l4sum);
  // Pending: as received (RX_L4_CKSUM_NONE), or already handed on as a TX checksum request
  // (after decap_offload/local_offload); either way the field holds the pseudo-header's sum
  // (not its complement), and the ports are summed later, with the payload. Both cases in one
  // expression: the field's complement taken (or not) before and after the sum.
  const std::uint64_t ol = m->ol_flags;
  const bool pending = offload_detail::rx_pending(ol) | ((ol & RTE_MBUF_F_TX_L4_MASK) != 0);
  const bool udp = protocol == wire::kIpProtoUdp;
  if (!pending && udp && l4c == 0) return;  // UDP checksum 0: none
  const std::uint32_t flip = pending ? 0u : 0xffffu;
  const std::uint32_t port_change = pending ? 0u : static_cast<std::uint16_t>(~old_port) + std::uint32_t{port_be};
  std::uint16_t sum = static_cast<std::uint16_t>(fold((l4c ^ flip) + address_change + port_change) ^ flip);
  if (!pending && udp && sum == 0) sum = 0xffff;
  store16(l4sum, sum);
}
}  // namespace service_nat_detail

// Where a handed-over packet resumes on its owner.
enum class HandoverStage : std::uint8_t {
  PodBurst,  // as received from pod port m->port: process_pod_burst
  Deliver,   // for local pod port m->port, MACs and offload flags set: translate_delivered, stage
};

// A worker's connection tracking, handed to the burst functions (null: no translation).
struct ServiceFlows {
  ConntrackTable* table = nullptr;
  std::uint32_t workers = 1;   // the forwarder's
  std::uint32_t worker = 0;    // this worker's index
  std::uint64_t now = 0;       // the table's ticks (the TSC), set by the worker once per loop
  // Several workers: enqueues m for worker `to` at `stage` (false: its ring is full). Null
  // with several workers: VIP packets are dropped (service_needs_one_worker).
  bool (*hand_over)(void* context, std::uint32_t to, HandoverStage stage, rte_mbuf* m) = nullptr;
  void* hand_over_context = nullptr;
  // New flows per backend (service_counters.hpp), counted where a backend is picked; null: not.
  ServiceCounterSlots* backend_counters = nullptr;

  std::uint32_t owner(std::uint16_t pod_port) const { return pod_port % workers; }
  bool mine(std::uint16_t pod_port) const { return workers == 1 || owner(pod_port) == worker; }
};

// A packet that must be delivered to local pod port `port` by another worker (the port's
// owner): handed over (true), or dropped as service_handover_full (true: consumed either way);
// false when this worker owns the port (the caller delivers it, after translate_delivered).
bool hand_over_delivery(ServiceFlows& flows, std::uint16_t port, rte_mbuf* m, std::uint16_t rx_port, WorkerCounters& c);

// The owner's side of HandoverStage::Deliver: the packets another worker handed over for pods
// this worker owns (m->port each): translated back where they are a service flow's replies,
// staged on their port; a port that no longer carries the packet's destination: dropped.
void deliver_handed_over(const ForwardingTables& tables, ServiceFlows& flows, rte_mbuf** pkts, std::uint16_t n,
                         TxStage& tx, WorkerCounters& c);

// Pod side, before routing, for a network with services (ForwardingTables::network_has_services):
// translates in place the packets of pkts[0..n) from `pod` that go to a VIP:port (destination),
// delivers the local backend's replies to a local client with the VIP:port as their source
// (staged on `tx` here: the pipeline's source check would refuse them), drops (and counts, rx
// included) what cannot be translated, and compacts the rest to the front in order. Returns
// how many are left for the pipeline.
std::uint16_t translate_pod_burst(const ForwardingTables& tables, ServiceFlows& flows, const PodPortEntry& pod,
                                  rte_mbuf** pkts, std::uint16_t n, std::uint16_t rx_port, TxStage& tx,
                                  WorkerCounters& c);

// A packet (Ethernet + IPv4) about to be delivered to a local pod of a network with services,
// after decapsulation: a service flow's reply gets VIP:port back as its source; an ICMP error
// about a translated packet gets its quote and source translated back.
void translate_delivered(const ForwardingTables& tables, ServiceFlows& flows, const NetworkEntry& net, rte_mbuf* m,
                         WorkerCounters& c);

}  // namespace vxfed::dataplane
