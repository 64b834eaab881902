// The path between the node's own kernel and a pod, beside the dataplane. Pods sit behind
// vxfed-dataplane and the node's kernel has no address on the pod network, so without this the
// node cannot reach its own pods: no kubelet probe, no hostPort (portmap DNATs into a kernel
// with no route to the pod), no node-local agent (docs/cni.md, "The node and its pods").
//
// Each attachment gets, on its own veth (so deleting the veth removes all of it):
// - node side: the node hop address kNodeHop/32 on the host end, a /32 route to the pod's
//   address through the host end and a permanent neighbour entry with the pod's MAC: the
//   node's kernel sends straight into the veth, from kNodeHop. The dataplane never sees those
//   frames (outgoing on the host end: its sockets set PACKET_IGNORE_OUTGOING).
// - pod side: kNodeHop/32 on-link with a permanent neighbour entry with the host end's MAC:
//   the pod answers the node to the host end's MAC, which the node's kernel takes and the
//   dataplane's pod-socket filter leaves alone (PACKET_HOST), instead of the gateway's.
//   Routes with "gw": kNodeHop (the chained conflist's default route) send other traffic the
//   same way.
#pragma once

#include <string>

#include "cni/netlink.hpp"
#include "common/net/ipv4.hpp"
#include "common/net/mac.hpp"
#include "common/result.hpp"

namespace vxfed::cni {

// 169.254.118.1: link-local (never routed off the node), 118.x after the 'v' of the gateway
// MACs 02:76:78 — and not Calico's 169.254.1.1, which a primary network beside a vxfed
// secondary one may already route in the same pod.
inline constexpr net::Ipv4Addr kNodeHop{0xA9FE7601u};

// In the pod, before routes via kNodeHop are added.
vxfed::Status add_pod_side(Netlink& pod_nl, int pod_index, const net::Mac& host_end_mac);
// On the node, once the host end is up (a route to a link that is down is refused).
vxfed::Status add_node_side(Netlink& host_nl, int host_index, net::Ipv4Addr pod_ip, const net::Mac& pod_mac);
// CHECK: empty when both sides are in place, else what is missing.
vxfed::Result<std::string> node_path_problem(Netlink& host_nl, int host_index, Netlink& pod_nl, int pod_index,
                                             net::Ipv4Addr pod_ip);

}  // namespace vxfed::cni
