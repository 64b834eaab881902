// Encodes route messages the way zebra's dplane_fpm_nl does (netlink RTM_NEWROUTE /
// RTM_DELROUTE inside FPM frames). Used by tests, the fuzz seed corpus and the synthetic FPM
// sender of perf/bgp; vxfedd itself only decodes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bgp/fpm_parser.hpp"

namespace vxfed::bgp::fpm {

// Appends one netlink route message for `r` (RTA_DST, RTA_TABLE, RTA_PRIORITY, RTA_GATEWAY and
// RTA_OIF for one next hop, RTA_MULTIPATH for several or when r.multipath is set).
void append_route_message(std::vector<std::uint8_t>& out, const RouteMessage& r);

// Wraps netlink bytes into one FPM frame (header + payload). Payloads over 65531 bytes do not
// fit a frame: the caller splits them.
void append_frame(std::vector<std::uint8_t>& out, const std::vector<std::uint8_t>& netlink,
                  std::uint8_t version = kVersion, std::uint8_t type = kTypeNetlink);

// A BGP unicast route in the main table with the given next hops.
RouteMessage make_bgp_route(const net::Ipv4Prefix& prefix, std::initializer_list<std::uint32_t> gateways,
                            bool is_delete = false);

}  // namespace vxfed::bgp::fpm
