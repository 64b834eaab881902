// This node's block of a network's subnet (vxfedd's GetNetwork `node_block`): the only
// addresses the node's pods may have, because the other nodes route the block, and nothing
// else of the subnet, to this node. Pure functions, no I/O:
//  - the delegated IPAM is handed the block: a host-local section without ranges gets one
//    range, the block inside the network's subnet, so one conflist serves every node;
//  - an address requested by the runtime or the config (runtimeConfig.ips, args.cni.ips,
//    CNI_ARGS IP=: cni/requested.hpp; static IPAM's addresses) outside the block is refused
//    before IPAM runs,
//    and an address IPAM returns outside it is refused after (code 7 both: the network
//    configuration does not fit this node).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cni/errors.hpp"
#include "cni/requested.hpp"
#include "common/net/ipv4.hpp"

namespace vxfed::cni {

// The addresses static IPAM's section assigns (ipam.addresses[].address), as addresses;
// entries that are not IPv4 interface addresses are skipped (static itself refuses them).
std::vector<net::Ipv4Addr> static_addresses(const nlohmann::json& netconf);

// Code 7 when an address the runtime asked for (cni/requested.hpp) or static IPAM assigns is
// not inside `block`.
Done check_requested_in_block(const Requested& wanted, const std::vector<net::Ipv4Addr>& static_ips,
                              const net::Ipv4Prefix& block, const std::string& network);
// The same against every block this node owns (GetNetwork node_blocks): inside any of them.
Done check_requested_in_blocks(const Requested& wanted, const std::vector<net::Ipv4Addr>& static_ips,
                               const std::vector<net::Ipv4Prefix>& blocks, const std::string& network);
// "10.244.0.0/28" or "blocks 10.244.0.0/28, 10.244.0.32/28", for messages.
std::string blocks_text(const std::vector<net::Ipv4Prefix>& blocks);

// Code 7 when host-local's own ranges (ipam.ranges[i][j], or the legacy ipam.subnet with its
// rangeStart/rangeEnd) are not inside `block` (none: this node has the whole `subnet`):
// host-local may hand out any address of a range and ADD refuses one outside the block, so
// such a config fails on this node (for `vxfed --check`, which asks vxfedd for the block).
// The error names the field (`where` + ".ipam.ranges[0][0]"), the range and the block. Nothing
// to check for another IPAM type or without ranges (vxfed fills in the block then).
Done check_ranges_in_block(const nlohmann::json& netconf, const std::optional<net::Ipv4Prefix>& block,
                           const net::Ipv4Prefix& subnet, const std::string& network, const std::string& where);

// Whether vxfed fills in the IPAM's ranges: host-local with no ranges (nor the legacy
// single-range `subnet`) of its own.
bool ipam_takes_node_range(const nlohmann::json& netconf);

// The netconf with ipam.ranges = [[{subnet, rangeStart, rangeEnd, gateway}]]: the pod's
// address is in `subnet` (its prefix length is the subnet's), taken from `block` without the
// block's first and last address; host-local skips the gateway itself.
nlohmann::json with_node_range(const nlohmann::json& netconf, const net::Ipv4Prefix& subnet,
                               const net::Ipv4Prefix& block, net::Ipv4Addr gateway);
// A node that owns several blocks: one range set holding one range per block, in order, so
// host-local hands out one address and moves on to the next range when one is full.
nlohmann::json with_node_ranges(const nlohmann::json& netconf, const net::Ipv4Prefix& subnet,
                                const std::vector<net::Ipv4Prefix>& blocks, net::Ipv4Addr gateway);

}  // namespace vxfed::cni
