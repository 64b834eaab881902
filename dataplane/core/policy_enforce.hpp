// Network policy in the forwarder's workers (docs/policy.md, "Enforcement in the forwarder"):
// a network's NetworkPolicyEntry (policy_entry.hpp) decides a flow's first packet with the
// reference functions of policy/tables.hpp; the verdict is kept in the worker's connection
// table (conntrack.hpp, shared with global services: the same table, its own key zone), so the
// flow's later packets and its replies pass on one lookup. Networks without a policy never get
// here (one pointer test per burst).
//
// Where each check runs, and on which worker (the owner model of docs/conntrack.md: a local
// pod's flows live with the worker that owns its pod port, port % workers):
//   pod side (enforce_pod_burst, owner of the source pod): a flow's first packet is decided
//     by the source's egress: toward a remote pod decide_egress_at_source (Deny: dropped;
//     Allow: sent with the GBP A bit; AskDestination: A clear, the destination checks the
//     selector rules), toward a local pod decide_local_egress then the destination's
//     decide_ingress. A packet of a flow the pod received is a reply: it passes.
//   delivery (admit_delivery, owner of the destination pod): after decapsulation, or from a
//     local pod of another owner: the source identity from the GBP header (0 without one),
//     decide_remote_egress when A is clear and the identity has a remote-egress table, then
//     decide_ingress with the inner source address. A packet of a flow the pod opened is a
//     reply: it passes.
// A flow's entry carries the generation of the NetworkPolicyEntry it was decided under: a
// packet of the flow's original direction that finds an entry of another generation (the
// policy or the network's endpoints changed) erases it and is decided again as a new flow;
// replies pass on the old verdict until then.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>

#include "dataplane/core/conntrack.hpp"
#include "dataplane/core/counters.hpp"
#include "dataplane/core/service_nat.hpp"
#include "dataplane/core/tables.hpp"
#include "dataplane/core/tx_stage.hpp"

namespace vxfed::dataplane {

// Policy flows' keys carry this bit in FlowTuple::vni (a zone of their own): a service's
// translated flow and a policy flow over the same addresses never meet in the table.
inline constexpr std::uint32_t kPolicyZone = 1u << 31;

// The source identity and A bit of a packet handed to the destination pod's owner, kept in
// the mbuf's hash.usr while it crosses the ring (set only by the policy code, read only for
// networks with policy): kHandoverMark in the top byte, A in bit 16, the identity below.
inline constexpr std::uint32_t kHandoverMark = 0xa5u << 24;
inline std::uint32_t handover_word(std::uint16_t identity, bool policy_applied) {
  return kHandoverMark | (policy_applied ? 1u << 16 : 0u) | identity;
}

// Pod side, for a network with policy: decides the first packet of each new flow from `pod`
// (port rx_port), drops what its egress (or, toward a local pod, the destination's ingress)
// refuses, hands a packet for a local pod of another owner to that owner (counted as local
// traffic here), and compacts the rest to pkts[0..kept): first those to send with the A bit,
// then the last *ask_destination of them with A clear. Counts rx for what it consumes.
std::uint16_t enforce_pod_burst(const ForwardingTables& tables, const NetworkPolicyEntry& policy, ServiceFlows* flows,
                                const PodPortEntry& pod, std::uint16_t rx_port, rte_mbuf** pkts, std::uint16_t n,
                                WorkerCounters& c, std::uint16_t* ask_destination);

// Delivery to local pod port `port` of a network with policy, m decapsulated (Ethernet first).
// On the port's owner: decided (true: deliver it) or dropped and counted (false). On another
// worker with hand-over: handed to the owner with source_identity and A (false: consumed).
bool admit_delivery(const ForwardingTables& tables, const NetworkPolicyEntry& policy, ServiceFlows* flows,
                    rte_mbuf* m, std::uint16_t port, std::uint16_t source_identity, bool policy_applied,
                    std::uint16_t rx_port, WorkerCounters& c);

// The owner's side of the hand-over (HandoverStage::Deliver), before deliver_handed_over():
// packets for pods of networks with policy are decided with the identity and A bit they
// carry; refused ones are dropped. Returns how many are left, compacted in order.
std::uint16_t admit_handed_over(const ForwardingTables& tables, ServiceFlows& flows, rte_mbuf** pkts, std::uint16_t n,
                                WorkerCounters& c);

}  // namespace vxfed::dataplane
