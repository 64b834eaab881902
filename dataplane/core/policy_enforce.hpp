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

#include <bit>
#include <cstdint>
#include <cstring>

#include "dataplane/core/conntrack.hpp"
#include "dataplane/core/counters.hpp"
#include "dataplane/core/flow_hash.hpp"
#include "dataplane/core/parse.hpp"
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
// then the last *ask_destination of them with A clear. Counts rx for what it consumes. The
// route passes call it for one packet at a time (a flow KnownFlowCheck does not know); a whole
// burst goes through it only without a connection table.
std::uint16_t enforce_pod_burst(const ForwardingTables& tables, const NetworkPolicyEntry& policy, ServiceFlows* flows,
                                const PodPortEntry& pod, std::uint16_t rx_port, rte_mbuf** pkts, std::uint16_t n,
                                WorkerCounters& c, std::uint16_t* ask_destination);

// The conntrack entry's policy word of a policy flow: the generation of the NetworkPolicyEntry
// it was decided under (30 bits) above two facts of the flow: kLocalBit, both ends are local
// pods (a packet of it may have to be handed to the other pod's owner, so its destination is
// looked up; otherwise a known flow's packet needs no lookup but the table's); kAskBit, the
// source asked the destination (its packets leave with A clear).
inline constexpr std::uint32_t kAskBit = 1, kLocalBit = 2;

// Whether a conntrack entry's policy word was decided under the policy as it is now.
inline bool decided_under(const NetworkPolicyEntry& policy, std::uint32_t word) {
  return (word >> 2) == (policy.generation & 0x3fffffffu);
}

// Pod side, in the route pass of a network with policy (pod_burst.cpp): whether a fast-path
// TCP/UDP packet from the pod belongs to a flow already decided, from the words the route pass
// loaded for its flow hash. Known: a live entry of the current generation (a reply: any), not a
// flow between two local pods while workers hand over; tracked here. Anything else is Unknown:
// the route pass hands the packet to enforce_pod_burst, in its place. One per burst: it keeps a
// memo of the packet before (a stream's burst is one lookup; its entry's state and time would
// not change again within the burst).
class KnownFlowCheck {
 public:
  enum Verdict : std::uint8_t { Unknown, Applied, Asks };  // Asks: known, sent with A clear

  // The table's key hash of a packet's words, and its home bucket prefetched.
  std::uint32_t key_hash(std::uint64_t addresses, std::uint64_t proto_ports) const {
    return keys_.hash(addresses, proto_ports);
  }
  void prefetch(std::uint32_t hash) const { table_->prefetch_hash(hash); }

  // `table` non-null; vni: the network's.
  KnownFlowCheck(const NetworkPolicyEntry& policy, ConntrackTable* table, const ServiceFlows& flows, std::uint32_t vni)
      : table_(table),
        now_(flows.now),
        keys_(vni | kPolicyZone),
        expect_((policy.generation & 0x3fffffffu) << 2),
        local_unknown_(flows.hand_over != nullptr ? kLocalBit : 0u),
        original_mask_(~(kAskBit | kLocalBit) | local_unknown_) {}

  // addresses, proto_ports: flow_hash_words' two words (pod_fast_hash_addresses,
  // pod_fast_hash_proto_ports); p, first_len: the packet's first segment (its TCP flags).
  // kMemo: test the packet before first (the one-destination pass, where a stream's burst
  // is one flow; the general pass's packets rarely repeat the one before), then take the key
  // hash; without: `hash` is key_hash() of the words, taken by the caller (with its prefetch).
  template <bool kMemo>
  [[gnu::always_inline]] Verdict check(std::uint64_t addresses, std::uint64_t proto_ports, const std::uint8_t* p,
                                       std::uint32_t first_len, std::uint32_t hash = 0) {
    constexpr std::uint32_t kTcpFlagsAt = 14 + 20 + 13;  // the fast path's packets have no IP options
    const auto tcp_flags = [&] {
      return static_cast<std::uint8_t>(proto_ports) == 6 && first_len > kTcpFlagsAt ? p[kTcpFlagsAt] : std::uint8_t{0};
    };
    // Addresses; protocol and ports (40 bits) with the TCP flags above them. Bit 63 is never
    // set, so the first packet never matches the memo.
    [[maybe_unused]] std::uint64_t rest = 0;
    if constexpr (kMemo) {
      rest = proto_ports | std::uint64_t{tcp_flags()} << 40;
      if (((addresses ^ memo_addresses_) | (rest ^ memo_rest_)) == 0) return memo_;
      hash = key_hash(addresses, proto_ports);
    }
    const ConntrackHit hit = table_->find(keys_.key(addresses, proto_ports), hash, now_);
    if (!hit) return Unknown;
    const std::uint32_t word = hit.entry->policy;
    Verdict v = Applied;
    // Most known flows: decided under this generation, egress applied, not between two local
    // pods: Applied whichever the direction, on one compare.
    if (word != expect_) [[unlikely]] {
      const bool original = hit.direction == FlowDirection::Original;
      // Original: decided under this generation, and not a local-to-local flow while workers
      // hand over; a reply: the latter only (the A bit is not tested).
      if ((word ^ expect_) & (original ? original_mask_ : local_unknown_)) return Unknown;
      if (original && (word & kAskBit)) v = Asks;
    }
    table_->track_lazy(hit, tcp_flags, now_);
    if constexpr (kMemo) {
      memo_ = v;
      memo_addresses_ = addresses;
      memo_rest_ = rest;
    }
    return v;
  }

 private:
  ConntrackTable* table_;
  std::uint64_t now_;
  FlowKeysOf keys_;  // the network's VNI, in the policy zone
  std::uint32_t expect_;         // the policy word of a flow decided under this generation (A and local clear)
  std::uint32_t local_unknown_;  // kLocalBit while workers hand over (such a flow is decided again), else 0
  std::uint32_t original_mask_;  // the bits of the policy word an original-direction packet tests
  Verdict memo_ = Unknown;
  std::uint64_t memo_addresses_ = 0, memo_rest_ = 1ull << 63;
};

// Delivery, before admit_delivery, on the uplink's fast path: a decapsulated packet (Ethernet
// first, first_len bytes in its first segment) for local pod port `port` on this worker, of a
// TCP/UDP flow already decided, passes on one lookup of the words it carries (tracked): true.
// False for anything else (another worker's pod, no table, not plain TCP/UDP over IPv4 without
// options, a fragment, no live entry, an original-direction packet of an entry decided under
// another generation): admit_delivery decides, as it would have without this. One per burst
// (what it reads of `flows` is read once).
class KnownDeliveryCheck {
 public:
  explicit KnownDeliveryCheck(ServiceFlows* flows)
      : table_(flows ? flows->table : nullptr),
        flows_(flows),
        now_(flows ? flows->now : 0),
        every_port_mine_(!flows || !flows->hand_over || flows->workers == 1) {}

  [[gnu::always_inline]] bool pass(const NetworkPolicyEntry& policy, const std::uint8_t* frame, std::uint32_t first_len,
                                   std::uint32_t vni, std::uint16_t port) {
    if (!table_ || !(every_port_mine_ || flows_->mine(port))) return false;
    constexpr std::uint32_t kIp = 14, kL4 = kIp + 20;
    if (first_len < kL4 + 4) [[unlikely]] return false;
    const std::uint8_t* ip = frame + kIp;
    if (!ipv4_plain_tcp_udp(ip)) return false;
    const std::uint8_t protocol = ip[9];
    std::uint64_t addresses;
    std::memcpy(&addresses, ip + 12, 8);
    std::uint32_t ports;
    std::memcpy(&ports, frame + kL4, 4);
    const std::uint64_t proto_ports = protocol | std::uint64_t{ports} << 8;
    const FlowKeysOf keys(vni | kPolicyZone);
    const std::uint8_t tcp_flags = protocol == 6 && first_len > kL4 + 13 ? frame[kL4 + 13] : 0;
    const ConntrackHit hit = table_->find(keys.key(addresses, proto_ports), keys.hash(addresses, proto_ports), now_);
    if (!hit) return false;
    if (hit.direction == FlowDirection::Original && !decided_under(policy, hit.entry->policy)) return false;
    table_->track(hit, tcp_flags, now_);
    return true;
  }

 private:
  ConntrackTable* table_;
  ServiceFlows* flows_;
  std::uint64_t now_;
  bool every_port_mine_;  // one worker, or no hand-over: no owner test per packet
};

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
