// Renders FRR's integrated configuration (frr.conf) for vxfed's eBGP peering. Pure: the same
// input always gives the same text, byte for byte, so applying it twice changes nothing.
//
// What it renders (docs/bgp.md has an annotated example):
// - zebra: `fpm address <listen> port <port>` and `no fpm use-next-hop-groups` so that
//   dplane_fpm_nl streams every selected route, next hops inline, to our FPM server.
// - `ip prefix-list vxfed-out`: exactly the CIDRs we advertise (exact length match), and
//   `route-map vxfed-out`: permits them and sets our VTEP as next hop (`set ip next-hop`) and,
//   when config.gbp_mark, the GBP mark (`set large-community`, gbp_mark.hpp).
// - per peer `ip prefix-list vxfed-in-<addr>` from its accept list (exact unless ge/le) and
//   `route-map vxfed-in-<addr>`: permits only those. Everything else hits the route-map's
//   implicit deny. Policies in both directions satisfy Debian's `bgp ebgp-requires-policy`.
// - `router bgp`: router-id, graceful restart, `no bgp network import-check` (our CIDRs are
//   not in the RIB as routes: they are announced for the dataplane), one `network` per CIDR,
//   neighbours with timers, password, bfd, graceful-restart, ebgp-multihop, update-source,
//   maximum-prefix.
#pragma once

#include <string>
#include <vector>

#include "bgp/config.hpp"

namespace vxfed::bgp {

struct RenderInput {
  const BgpConfig* config = nullptr;
  net::Ipv4Addr vtep;                      // next hop of everything we advertise
  std::vector<net::Ipv4Prefix> advertise;  // our cluster's CIDRs (merged with config->advertise)
};

// The names FRR objects get; stable, so that reloads match the running config.
// " view vxfed" with the BMP feed (bgpd runs as a BGP view), "" with FPM (the default
// instance): what goes after `router bgp ASN` and after `show bgp`/`clear bgp` in vty commands.
std::string bgp_instance_suffix(const BgpConfig& config);

std::string outbound_route_map_name();
// "route-map vxfed-out permit 10": the outbound route-map's one entry, which the GBP mark's
// `set large-community` belongs to (gbp_mark_commands.hpp changes it in place).
std::string outbound_route_map_entry();
std::string inbound_route_map_name(const PeerConfig& peer);

std::string render_frr_config(const RenderInput& in);

// The same text with every password replaced by "<redacted>": what may be logged.
std::string redact_frr_text(const std::string& text);

// "maximum-prefix N restart M" or "maximum-prefix N warning-only", as FRR prints it.
std::string maximum_prefix_clause(std::uint32_t limit, std::uint32_t restart_min, bool warning_only);

}  // namespace vxfed::bgp
