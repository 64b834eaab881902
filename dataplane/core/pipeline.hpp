// The packet pipeline: burst functions a worker calls with what it received. Every mbuf
// passed in is consumed: staged on a TX queue in `tx` or freed and counted by drop reason.
// No allocation (except mbufs for generated ICMP replies), locks, syscalls or logging.
//
// Uplink (process_uplink_burst):
//   unicast to another MAC than the uplink's -> dropped (not_our_mac)
//   ARP request for our VTEP IPv4 -> reply on the uplink (in place)
//   ARP from a known VTEP (reply or request) -> its MAC is learned into the neighbour cache
//   ICMP fragmentation-needed about our own VXLAN packet toward a known VTEP -> that VTEP's
//            path MTU is lowered (icmp_frag_needed_learned); other ICMP -> icmp_ignored
//   VXLAN -> validate (parse_uplink_frame), VTEP known, VNI configured, VTEP allowed for the
//            VNI, inner destination a local endpoint of that VNI, inner size <= network MTU,
//            inner source routed on that VNI to the sending VTEP (else inner_source_spoofed),
//            inner TTL > 1 (else inner_ttl_expired) -> strip the outer headers, TTL - 1 (one
//            router hop: the gateway), inner dst MAC = pod MAC, src MAC = gateway MAC,
//            stage on the endpoint's port
//   anything else -> dropped by reason
// Pod port (process_pod_burst):
//   ARP request for the network's gateway -> reply to the pod (in place)
//   IPv4 from the pod's own address:
//     destination a local endpoint of the same VNI -> MACs rewritten as above, staged there
//     else longest-prefix match in the VNI -> VTEP by flow hash -> 50-byte outer header
//     prepended (neighbour MAC, DF, TTL 64, TOS copied from the inner packet, UDP source
//     49152 + flow hash % 16384, VXLAN VNI) -> staged on the uplink
//     over the network MTU: DF set -> ICMP fragmentation-needed (next-hop MTU = network MTU)
//     back to the pod; DF clear -> dropped (too_big_no_df; see docs/dataplane-pipeline.md)
//     over the path MTU toward the chosen VTEP (learned from the underlay's ICMP
//     fragmentation-needed, path_mtu.hpp) - 50: the same, naming that size (path_too_big_*)
// Multi-segment mbufs are handled: headers must sit in the first segment (else dropped as
// headers_split); payload segments are carried as they are.
#pragma once

#include <cstdint>

#include <rte_mbuf.h>

#include "dataplane/core/counters.hpp"
#include "dataplane/core/drop_reasons.hpp"
#include "dataplane/core/tables.hpp"
#include "dataplane/core/tx_stage.hpp"

namespace vxfed::dataplane {

struct ServiceFlows;  // service_nat.hpp

// Packets received on the uplink (tables.uplink_port()). n <= kMaxBurst. Returns n.
// `flows`: the worker's connection tracking for global services (service_nat.hpp); null: no
// translation (packets to a VIP find no route).
std::uint16_t process_uplink_burst(const ForwardingTables& tables, rte_mbuf** pkts,
                                   std::uint16_t n, TxStage& tx, WorkerCounters& counters,
                                   ServiceFlows* flows = nullptr);

// Packets received on a pod port. n <= kMaxBurst. Returns n.
std::uint16_t process_pod_burst(const ForwardingTables& tables, std::uint16_t rx_port,
                                rte_mbuf** pkts, std::uint16_t n, TxStage& tx,
                                WorkerCounters& counters, ServiceFlows* flows = nullptr);

// Frees a burst, counting rx on the port and one drop reason (e.g. NoTables before the first
// snapshot arrives).
void drop_burst(rte_mbuf** pkts, std::uint16_t n, std::uint16_t rx_port, DropReason reason,
                WorkerCounters& counters);

// Writes an ARP request "who has target_ip_be, tell sender_ip_be" from sender_mac, broadcast,
// into m (reset to a 42-byte frame). For the runtime's neighbour resolution
// (NeighborCache::take_wanted). Returns false if m has no room.
bool build_arp_request(rte_mbuf* m, const wire::MacAddress& sender_mac,
                       std::uint32_t sender_ip_be, std::uint32_t target_ip_be);

}  // namespace vxfed::dataplane
