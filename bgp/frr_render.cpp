#include "bgp/frr_render.hpp"

#include "bgp/gbp_mark.hpp"

#include <algorithm>
#include <sstream>

namespace vxfed::bgp {
namespace {

std::vector<net::Ipv4Prefix> advertised(const RenderInput& in) {
  std::vector<net::Ipv4Prefix> out = in.advertise;
  out.insert(out.end(), in.config->advertise.begin(), in.config->advertise.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string prefix_list_in(const PeerConfig& p) { return "vxfed-in-" + p.address.str(); }

}  // namespace

std::string bgp_instance_suffix(const BgpConfig& config) {
  return config.feed == Feed::kBmp && !config.bmp_in_default_instance ? std::string(" view ") + kBgpViewName
                                                                       : std::string();
}

std::string outbound_route_map_name() { return "vxfed-out"; }
std::string outbound_route_map_entry() { return "route-map " + outbound_route_map_name() + " permit 10"; }
std::string inbound_route_map_name(const PeerConfig& peer) { return prefix_list_in(peer); }

std::string render_frr_config(const RenderInput& in) {
  const BgpConfig& c = *in.config;
  const auto out_prefixes = advertised(in);
  std::ostringstream o;
  o << "! Rendered by vxfed (bgp/frr_render.cpp). Do not edit: vxfedd overwrites this file.\n"
    << "frr defaults traditional\n"
    << "!\n";
  if (c.feed == Feed::kFpm) {
    o << "! zebra streams its selected routes to vxfedd's FPM server\n"
      << "fpm address " << c.fpm.listen.str();
    // FRR prints the port only when it is not the default: render what `show running` shows, or
    // every reload would see a difference and reconnect the FPM session.
    if (c.fpm.port != kZebraDefaultFpmPort) o << " port " << c.fpm.port;
    o << "\n"
      << "no fpm use-next-hop-groups\n"
      << "!\n";
  }

  // Outbound: exactly our CIDRs. An empty list must still deny everything, not be missing.
  const std::string out = outbound_route_map_name();
  if (out_prefixes.empty()) {
    o << "ip prefix-list " << out << " seq 5 deny any\n";
  } else {
    int seq = 5;
    for (const auto& p : out_prefixes) {
      o << "ip prefix-list " << out << " seq " << seq << " permit " << p.str() << "\n";
      seq += 5;
    }
  }
  for (const auto& peer : c.peers) {
    int seq = 5;
    for (const auto& m : peer.accept) {
      o << "ip prefix-list " << prefix_list_in(peer) << " seq " << seq << " permit " << m.str() << "\n";
      seq += 5;
    }
  }
  o << "!\n"
    << outbound_route_map_entry() << "\n"
    << " match ip address prefix-list " << out << "\n"
    << " set ip next-hop " << in.vtep.str() << "\n";
  // The GBP mark: this node's registration says it takes VXLAN-GBP (docs/bgp.md, "The GBP mark").
  if (c.gbp_mark) o << " set large-community " << gbp_mark_text() << "\n";
  o << "exit\n"
    << "!\n";
  for (const auto& peer : c.peers) {
    o << "route-map " << inbound_route_map_name(peer) << " permit 10\n"
      << " match ip address prefix-list " << prefix_list_in(peer) << "\n"
      << "exit\n"
      << "!\n";
  }

  // With the BMP feed bgpd runs as a view: it tracks no next hop and installs nothing in zebra
  // (130,000 VTEPs as next hops never finish otherwise: docs/federation.md, "Scale"). Its
  // `network` statements are still advertised, and BFD still runs through bfdd.
  o << "router bgp " << c.asn << bgp_instance_suffix(c) << "\n"
    << " bgp router-id " << c.router_id.str() << "\n"
    << " no bgp network import-check\n";
  if (c.graceful_restart) {
    // preserve-fw-state: our restart advertises the F bit. The dataplane keeps forwarding on
    // the routes the adapter holds while FRR restarts, and without the F bit the helper
    // drops our stale routes the moment the new session comes up (RFC 4724 4.2; measured).
    o << " bgp graceful-restart\n"
      << " bgp graceful-restart preserve-fw-state\n";
    if (c.restart_time_s != 120) o << " bgp graceful-restart restart-time " << c.restart_time_s << "\n";
  }
  for (const auto& peer : c.peers) {
    const std::string n = " neighbor " + peer.address.str();
    o << n << " remote-as " << peer.remote_asn << "\n";
    if (peer.reflector)
      o << n << " description vxfed route reflector" << (peer.cluster.empty() ? "" : " of cluster " + peer.cluster) << "\n";
    else
      o << n << " description vxfed cluster " << peer.cluster << "\n";
    if (!peer.password.empty()) o << n << " password " << peer.password.reveal() << "\n";
    if (peer.ebgp_multihop) o << n << " ebgp-multihop " << peer.ebgp_multihop << "\n";
    if (!peer.update_source.empty()) o << n << " update-source " << peer.update_source << "\n";
    if (peer.bfd) o << n << " bfd\n";
    // Toward a reflector, BFD must not end the graceful restart the session's close starts: when
    // the reflector's FRR dies its BFD goes down too and, if that reaches bgpd before the TCP
    // close, the session stops without keeping the reflector's routes (docs/bgp.md, "Graceful
    // restart"). With the C bit checked bgpd ignores a BFD down of a graceful-restart peer that
    // says its BFD shares its control plane (the C bit clear, FRR's default). The reflector's
    // own BFD toward the node, which removes a dead node's blocks, is not affected.
    if (peer.bfd && peer.reflector) o << n << " bfd check-control-plane-failure\n";
    // Per-neighbour mode only where it differs from the global one. A reflector: the global
    // mode, full graceful restart with the F bit: the reflector keeps our blocks while our FRR
    // restarts (a container restart, a rolling update: the dataplane forwards on meanwhile;
    // issue 37 item 15: 5.4-10.3 s for the other nodes' pods as helper only, 0.02-0.05 s so).
    // A node that vanishes is still withdrawn BFD-fast: its session is still up when the
    // reflector's BFD goes down, and FRR ends it with Cease/BFD Down, a hard reset under
    // RFC 8538 that keeps nothing stale (the reflector has no check-control-plane-failure
    // toward nodes). Only in the second or so before BFD is up on a new session does a
    // vanished node wait out the hold time and then its restart time (docs/bgp.md).
    if (!peer.reflector && peer.graceful_restart && !c.graceful_restart) o << n << " graceful-restart\n";
    if (!peer.reflector && !peer.graceful_restart && c.graceful_restart) o << n << " graceful-restart-disable\n";
    o << n << " timers " << peer.keepalive_s << " " << peer.hold_s << "\n"
      << n << " timers connect " << peer.connect_retry_s << "\n";
  }
  o << " !\n"
    << " address-family ipv4 unicast\n";
  for (const auto& p : out_prefixes) o << "  network " << p.str() << "\n";
  for (const auto& peer : c.peers) {
    const std::string n = "  neighbor " + peer.address.str();
    // No `soft-reconfiguration inbound`: with it, FRR 8.4 stops enforcing maximum-prefix
    // (measured; docs/bgp.md). Inbound policy changes use ROUTE-REFRESH instead.
    o << n << " route-map " << inbound_route_map_name(peer) << " in\n"
      << n << " route-map " << out << " out\n"
      << n << " " << maximum_prefix_clause(peer.max_prefix, peer.max_prefix_restart_min, peer.max_prefix_warning_only)
      << "\n";
  }
  o << " exit-address-family\n";
  if (c.feed == Feed::kBmp) {
    // Post-policy Adj-RIB-In of every peer: what our inbound route-maps let in, per reflector,
    // to vxfedd's station. The order is what `show running-config` prints (frr-reload compares).
    o << " !\n"
      << " bmp targets " << kBgpViewName << "\n"
      << "  bmp monitor ipv4 unicast post-policy\n"
      << "  bmp connect " << c.bmp.listen.str() << " port " << c.bmp.port << " min-retry " << c.bmp.min_retry_ms
      << " max-retry " << c.bmp.max_retry_ms << "\n"
      << " exit\n";
  }
  o << "exit\n"
    << "!\n";
  return o.str();
}

std::string maximum_prefix_clause(std::uint32_t limit, std::uint32_t restart_min, bool warning_only) {
  const std::string head = "maximum-prefix " + std::to_string(limit);
  return warning_only ? head + " warning-only" : head + " restart " + std::to_string(restart_min);
}

std::string redact_frr_text(const std::string& text) {
  // Any line (of a config, a diff, vtysh output) with "password <word>" loses the word.
  std::string out;
  std::istringstream in(text);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    auto pos = line.find("password ");
    if (pos != std::string::npos) line = line.substr(0, pos) + "password <redacted>";
    out += (first ? "" : "\n") + line;
    first = false;
  }
  if (!text.empty() && text.back() == '\n') out += "\n";
  return out;
}

}  // namespace vxfed::bgp
