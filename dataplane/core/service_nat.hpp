// Global services' load balancing in the forwarder (docs/conntrack.md, docs/services.md): a
// packet from a local pod to VIP:port of its network gets a backend per flow (Maglev over the
// backends vxfedd sent, ServiceEntry), is tracked in the worker's ConntrackTable and translated
// to backend:target_port; packets of the flow's reply direction delivered to the client get
// VIP:port back as their source. Checksums are updated incrementally; a packet whose L4
// checksum is still pending (a pod's partial-checksum or GSO super-packet, docs/pod-ports.md)
// has only its pseudo-header sum adjusted (the addresses, not the ports).
//
// One table per worker, one worker only for now: with several workers a reply could meet
// another worker's table, so VIP packets are dropped (service_needs_one_worker) instead of being
// translated one way only.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>

#include "dataplane/core/conntrack.hpp"
#include "dataplane/core/counters.hpp"
#include "dataplane/core/tables.hpp"
#include "dataplane/core/tx_stage.hpp"

namespace vxfed::dataplane {

// A worker's connection tracking, handed to the burst functions (null: no translation).
struct ServiceFlows {
  ConntrackTable* table = nullptr;
  std::uint32_t workers = 1;   // the forwarder's; > 1: VIP packets dropped (see above)
  std::uint64_t now = 0;       // the table's ticks (the TSC), set by the worker once per loop
};

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
