// vxfedd's BGP route source (bgp/route_source.hpp) from its config: VTEP = node.vtep_ip,
// advertised = this node's blocks (for a network without one: cluster.pod_cidrs, else its
// subnet), asked again whenever the networks change; VNIs from NodeState's networks,
// the route cache in the state directory. Construction only: the source itself lives in bgp/.
#pragma once

#include <memory>
#include <vector>

#include <utility>  // before asio: boost 1.74 awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <spdlog/logger.h>

#include "bgp/route_source.hpp"
#include "control/daemon/daemon_config.hpp"
#include "control/node/node_state.hpp"
#include "proto/control.pb.h"

namespace vxfed::control {

// nullptr when the config has no enabled `bgp:` section. `state` must outlive the source.
// `make_adapter`: empty for FRR's (bgp::Adapter); tests pass a fake. The GBP mark starts off:
// the forwarder's version is not known yet (dataplane_takes_gbp below); the daemon turns it on
// with reconfigure_bgp_route_source once the forwarder says it takes GBP.
Result<std::unique_ptr<bgp::RouteSource>> make_bgp_route_source(boost::asio::io_context& io, const Config& config,
                                                                 const NodeState& state,
                                                                 std::shared_ptr<spdlog::logger> log,
                                                                 const bgp::AdapterFactory& make_adapter = {});
// A reloaded config (SIGHUP), or a forwarder of another version, applied to a running source.
// `dataplane_gbp`: the node's forwarder takes VXLAN-GBP (dataplane_takes_gbp).
Status reconfigure_bgp_route_source(bgp::RouteSource& source, const Config& config, const NodeState& state,
                                    bool dataplane_gbp = false);

// Whether a forwarder reporting `version` (DataplaneStatus.version) takes VXLAN-GBP: 0.2.0 and
// later do; the previous release, 0.1.0, drops every VXLAN packet whose flags are not 0x08. ""
// (not known yet) or unreadable: no. The node's blocks carry the GBP mark only when node.gbp
// and its forwarder takes GBP: during a rolling upgrade the next vxfedd may run beside the
// previous forwarder for a while (docs/bgp.md, "The GBP mark").
bool dataplane_takes_gbp(const std::string& version);

// What vxfedd advertises, with its VTEP as next hop: each network's block of this node (the
// other nodes of the cluster own the rest of the subnet and advertise their own blocks). A
// network without a block (one node per cluster, no federation store) is the whole cluster:
// cluster.pod_cidrs, else the network's subnet; so is a node without networks, unless it is
// federated (its blocks come from the store). Sorted, without duplicates.
std::vector<net::Ipv4Prefix> advertised_prefixes(const Config& config, const NodeState& state);

// The rule behind it, on a network's block ("" if none) and subnet: NodeState's networks at run
// time, the config's networks when it is read (so --check-config refuses what a start refuses).
struct NetworkPrefixes {
  std::string block;
  std::string subnet;
};
std::vector<net::Ipv4Prefix> advertised_prefixes(const std::vector<std::string>& pod_cidrs, bool federated,
                                                 const std::vector<NetworkPrefixes>& networks);

// `vxfedctl peers`.
v1::PeerInfo peer_info(const bgp::PeerStatus& status);

}  // namespace vxfed::control
