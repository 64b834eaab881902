// Renders frr.conf for a cluster's route reflector (bgp.role: route-reflector): plain FRR bgpd
// between the cluster's nodes and the other clusters' reflectors. Pure, deterministic, and as
// `show running-config` prints it (frr-reload then changes nothing when nothing changed).
// docs/bgp.md ("Route reflection") has the design and an annotated example.
//
// - Nodes: one peer group `vxfed-nodes` (iBGP, route-reflector-client, BFD, timers, password,
//   maximum-prefix) fed by `bgp listen range`: the config names no node, so a node that joins
//   or leaves changes nothing here and a node's sessions are O(1): one per reflector.
//   Inbound: blocks inside the cluster's pod CIDRs only (`vxfed-cluster`, any length).
//   Outbound to nodes: everything the reflector holds (its cluster's blocks and the others').
// - Other clusters' reflectors: eBGP, `attribute-unchanged next-hop` so that every block keeps
//   its node's VTEP as next hop and a packet goes straight to the node that hosts the pod,
//   `advertisement-interval 0` (a withdrawn block leaves at once). Outbound: this cluster's
//   blocks only (no transit); inbound: the peer's accept list (default: its cluster's CIDRs,
//   any length).
// - `table-map vxfed-no-fib`: the reflector forwards nothing itself, so no route goes to its
//   zebra and kernel (at 130,000 routes that is most of a reflector's work and memory).
// - Graceful restart as configured (default on, with preserve-fw-state): a restarting
//   reflector's routes stay with its nodes and peers; the nodes' side is helper only.
//   A restarted reflector stays read-only (`update-delay`) until the other reflectors are back
//   with their routes, so that its nodes get no End-of-RIB without them; BFD toward another
//   reflector checks the C bit, so that a BFD down does not end a graceful restart between them.
#pragma once

#include <string>

#include "bgp/config.hpp"

namespace vxfed::bgp {

std::string render_reflector_config(const BgpConfig& config);

}  // namespace vxfed::bgp
