// Per-worker counters: written by one worker without atomics' locked instructions (relaxed
// load+store), read by the control thread at any time (relaxed loads; sums across workers).
// Per-VNI counters are indexed by a slot that stays the VNI's across table generations.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/result.hpp"  // common/
#include "dataplane/core/drop_reasons.hpp"

namespace vxfed::dataplane {

// Port indexes (docs/pod-ports.md): DPDK ethdev ports keep their ids below kMaxEthdevPorts
// (>= RTE_MAX_ETHPORTS, checked in pipeline.cpp); the runtime's pod ports take the indexes
// above, up to kMaxPodPorts of them. Counters, the TX stage and the tables' pod entries are
// indexed by this index.
constexpr std::uint32_t kMaxEthdevPorts = 64;
constexpr std::uint32_t kMaxPodPorts = 1024;
constexpr std::uint32_t kMaxPorts = kMaxEthdevPorts + kMaxPodPorts;
constexpr std::uint32_t kMaxVniSlots = 4096;  // distinct VNIs over the life of the process

// A counter with one writer: plain add on x86, no lock prefix; readable from other threads.
struct Counter {
  std::atomic<std::uint64_t> value{0};
  [[gnu::always_inline]] void add(std::uint64_t n) {
    value.store(value.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::uint64_t get() const { return value.load(std::memory_order_relaxed); }
};

struct PortCounters {
  Counter rx_packets, rx_bytes, tx_packets, tx_bytes, drops;
};

struct VniCounters {
  Counter encap_packets, encap_bytes, decap_packets, decap_bytes, local_packets, local_bytes;
};

// VXLAN-GBP packets taken from the uplink (docs/dataplane.md "VXLAN Group Policy"): counted when
// the parser accepted the header, before the tables' checks (which count their own drops).
struct GroupPolicyCounters {
  Counter rx_packets;            // G bit set: a Group Policy ID read
  Counter rx_policy_applied;     // of those, with the A bit (the sender applied policy)
};

// Global services' translation (service_nat.hpp): what the worker's connection table did.
struct ServiceCounters {
  Counter new_flows;             // flows to a VIP:port given a backend and tracked
  Counter translated;            // packets whose destination became a backend's (Original)
  Counter replies_translated;    // packets whose source became the VIP:port again (Reply, ICMP errors)
  Counter repicked;              // flows whose backend left the service, given a new one
  Counter handed_over;           // packets put on another worker's hand-over ring (its client pod's owner)
};

// Network policy (policy_enforce.hpp): the worker's decisions on new flows of networks with a
// NetworkPolicy. Packets of a known flow (its connection-tracking entry) are not counted here.
struct PolicyCounters {
  Counter new_flows;             // flows decided (a first packet, or one whose entry's policy was replaced)
  Counter allowed;               // of those, let through
  Counter denied;                // of those, dropped (policy_denied_*)
};

// Refused new flows per local pod (docs/policy.md, "Drops per policy"), by the pod port of the
// local pod the flow was decided for: the source for its own egress, the destination for the
// rest. Written on the deny path only (a known flow never touches it); the runtime reports it
// per endpoint and vxfedd attributes it to the pod's isolating policies.
struct PolicyPortDrops {
  Counter denied_egress;         // policy_denied_egress: the pod's egress refused it (at the source)
  Counter denied_ingress;        // policy_denied_ingress: the pod's ingress refused it
  Counter denied_remote_egress;  // policy_denied_remote_egress: the remote source's egress, toward this pod
  Counter forged_identity;       // policy_forged_identity: toward this pod
};

// One per worker, allocated by the runtime (new or rte_zmalloc; ~255 KiB), cache-line aligned
// so that workers never share a line.
struct alignas(64) WorkerCounters {
  PortCounters ports[kMaxPorts];           // by port index; this worker's queue of each port
  alignas(64) Counter drops[kDropReasonCount];   // by DropReason
  alignas(64) VniCounters vnis[kMaxVniSlots];    // by VniCounterSlots slot
  alignas(64) GroupPolicyCounters group_policy;
  alignas(64) ServiceCounters services;
  alignas(64) PolicyCounters policy;
  alignas(64) PolicyPortDrops policy_drops[kMaxPorts];  // by pod port
  void drop(DropReason r, std::uint16_t port, std::uint64_t n = 1) {
    drops[static_cast<std::uint32_t>(r)].add(n);
    ports[port].drops.add(n);
  }
};

// VNI -> counter slot, control thread only. Slots are never recycled, so a VNI's counters
// survive table swaps and removal/re-adding.
class VniCounterSlots {
 public:
  Result<std::uint16_t> slot_for(std::uint32_t vni);
  std::optional<std::uint16_t> find(std::uint32_t vni) const;
  // (vni, slot) pairs in order of assignment, for reporting.
  const std::vector<std::pair<std::uint32_t, std::uint16_t>>& all() const { return order_; }

 private:
  std::unordered_map<std::uint32_t, std::uint16_t> slots_;
  std::vector<std::pair<std::uint32_t, std::uint16_t>> order_;
};

}  // namespace vxfed::dataplane
