// The BGP adapter's figures and FRR's peer status (bgp/adapter.hpp) as Prometheus families.
// Peers are the configured ones (bgp.peers), never what FRR reports beyond them.
#include "control/metrics/metrics_text.hpp"

#include <algorithm>
#include <array>
#include <string>

namespace vxfed::control {

using metrics::Exposition;
using metrics::Type;

namespace {

// FRR's bgpState values, and ours for "FRR did not answer": a fixed set for the state label.
constexpr std::array<const char*, 9> kStates = {"Idle",        "Connect",     "Active",   "OpenSent", "OpenConfirm",
                                                "Established", "Clearing",    "Deleted",  "Unknown"};

std::string state_label(const std::string& frr_state) {
  for (const char* s : kStates)
    if (frr_state == s) return s;
  return "Unknown";
}

// session: ibgp (this cluster's reflector; cluster is then this node's own) or ebgp (another
// cluster's node or reflector), so an alert can say which kind of session is down.
// The BMP feed (bgp.feed: bmp): bgpd's session to our station and the routes per peer.
void write_bmp_feed(Exposition& w, const bgp::AdapterStats& s) {
  const auto& b = s.bmp;
  const auto& r = s.bmp_rib;
  w.gauge("vxfed_bgp_bmp_connected", "1 while bgpd's BMP session to vxfedd's station is up.", b.connected ? 1 : 0);
  w.counter("vxfed_bgp_bmp_connections_total", "BMP sessions accepted from bgpd.", b.connections);
  w.family("vxfed_bgp_bmp_refused_total", Type::counter, "BMP connections refused, by reason.")
      .sample(b.refused_not_loopback, {{"reason", "not_loopback"}})
      .sample(b.refused_wrong_user, {{"reason", "wrong_user"}})
      .sample(b.refused_busy, {{"reason", "busy"}});
  static constexpr std::array<const char*, 7> kTypes = {"route_monitoring", "statistics", "peer_down",  "peer_up",
                                                        "initiation",       "termination", "route_mirroring"};
  auto& messages = w.family("vxfed_bgp_bmp_messages_total", Type::counter, "BMP messages received from bgpd, by type.");
  for (std::size_t i = 0; i < kTypes.size() && i < b.messages.size(); ++i) messages.sample(b.messages[i], {{"type", kTypes[i]}});
  auto& ignored = w.family("vxfed_bgp_bmp_ignored_total", Type::counter,
                           "BMP messages or parts that changed no route, by reason (malformed ones included).");
  for (std::size_t i = 0; i < b.ignored.size(); ++i)
    ignored.sample(b.ignored[i], {{"reason", bgp::bmp::to_string(static_cast<bgp::bmp::Ignored>(i))}});
  w.counter("vxfed_bgp_bmp_implied_peer_ups_total",
            "Monitored peers taken as up from their first route: FRR 8.4 sent no Peer Up (an OPEN collision).",
            b.implied_peer_ups);
  w.counter("vxfed_bgp_bmp_framing_errors_total", "BMP sessions closed for a framing error (bgpd reconnects and resends).",
            b.framing_errors);
  w.gauge("vxfed_bgp_bmp_peers_up", "Monitored BGP peers up, as bgpd's BMP feed reports them.",
          static_cast<double>(r.peers_up));
  w.gauge("vxfed_bgp_bmp_stale_routes", "Routes kept from before a BMP reconnect and not yet re-sent.",
          static_cast<double>(r.stale));
  w.counter("vxfed_bgp_bmp_stale_swept_total", "Stale routes removed (End-of-RIB or the stale time limit).",
            r.stale_swept);
  w.counter("vxfed_bgp_bmp_peer_down_withdrawn_total", "Routes withdrawn because their peer went down.",
            r.peer_down_withdrawn);
  w.counter("vxfed_bgp_bmp_full_tables_total", "Full tables after a BMP (re)connect.", r.full_tables);
}

metrics::Labels peer_labels(const bgp::PeerStatus& p) {
  return {{"peer", p.address}, {"cluster", p.cluster}, {"session", p.ibgp ? "ibgp" : "ebgp"}};
}

}  // namespace

void render_bgp_metrics(Exposition& w, const BgpFigures& bgp) {
  w.family("vxfed_bgp_peer_up", Type::gauge, "1 when the BGP session with the peer is Established.");
  for (const auto& p : bgp.peers) w.sample(p.state == "Established", peer_labels(p));
  w.family("vxfed_bgp_peer_state", Type::gauge, "1 for the peer's current BGP state (FRR's), 0 for the others.");
  for (const auto& p : bgp.peers) {
    const std::string now = state_label(p.state);
    for (const char* s : kStates) {
      auto labels = peer_labels(p);
      labels.push_back({"state", s});
      w.sample(now == s, labels);
    }
  }
  w.family("vxfed_bgp_peer_uptime_seconds", Type::gauge, "Seconds the session has been Established (0: not up).");
  for (const auto& p : bgp.peers) w.sample(p.uptime_s, peer_labels(p));
  w.family("vxfed_bgp_peer_prefixes_received", Type::gauge, "Prefixes the peer sent (FRR 8.4: = accepted, docs/bgp.md).");
  for (const auto& p : bgp.peers) w.sample(std::uint64_t{p.prefixes_received}, peer_labels(p));
  w.family("vxfed_bgp_peer_prefixes_accepted", Type::gauge, "Prefixes accepted from the peer after inbound policy.");
  for (const auto& p : bgp.peers) w.sample(std::uint64_t{p.prefixes_accepted}, peer_labels(p));
  w.family("vxfed_bgp_peer_prefixes_advertised", Type::gauge, "Prefixes advertised to the peer.");
  for (const auto& p : bgp.peers) w.sample(std::uint64_t{p.prefixes_advertised}, peer_labels(p));
  w.family("vxfed_bgp_peer_prefixes_stale", Type::gauge, "Prefixes of the peer kept as stale by graceful restart.");
  for (const auto& p : bgp.peers) w.sample(std::uint64_t{p.prefixes_stale}, peer_labels(p));
  w.family("vxfed_bgp_peer_connections_dropped_total", Type::counter,
           "Established sessions with the peer that went down (FRR's count: restarts with bgpd).");
  for (const auto& p : bgp.peers) w.sample(std::uint64_t{p.connections_dropped}, peer_labels(p));
  w.family("vxfed_bgp_peer_prefixes_denied_total", Type::counter,
           "Routes of the peer FRR's inbound policy refused (outside its accept list), counted at each evaluation; "
           "FRR's count since bgpd started.");
  for (const auto& p : bgp.peers) w.sample(p.prefixes_denied, peer_labels(p));
  w.family("vxfed_bgp_peer_max_prefix_exceeded", Type::gauge,
           "1 while FRR holds the session down because the peer went over its max_prefix.");
  for (const auto& p : bgp.peers) w.sample(p.max_prefix_overflow, peer_labels(p));
  w.family("vxfed_bgp_peer_max_prefix_teardowns_total", Type::counter,
           "Sessions FRR closed because the peer went over its max_prefix (seen while vxfedd ran).");
  for (const auto& p : bgp.peers) w.sample(p.max_prefix_teardowns, peer_labels(p));

  if (bgp.md5_failure) {
    w.family("vxfed_bgp_tcp_md5_rejected_total", Type::counter,
             "TCP segments the kernel rejected for their MD5 signature (BGP with a wrong or missing password), "
             "in vxfedd's network namespace.")
        .sample(*bgp.md5_failure, {{"reason", "wrong_signature"}})
        .sample(bgp.md5_not_found.value_or(0), {{"reason", "unsigned"}})   // we hold a key, it sent none
        .sample(bgp.md5_unexpected.value_or(0), {{"reason", "no_key"}});   // it signed, we hold no key
  }

  const auto& s = bgp.stats;
  w.gauge("vxfed_bgp_routes", "Routes learned from FRR (over FPM or BMP).", static_cast<double>(s.routes));
  w.family("vxfed_bgp_routes_withheld", Type::gauge, "Routes learned but not installed, by reason.")
      .sample(s.withheld, {{"reason", "over_max_prefix"}})
      .sample(s.unresolved_routes, {{"reason", "no_network"}})
      .sample(s.no_allowed_next_hop, {{"reason", "next_hop_not_allowed"}});
  w.counter("vxfed_bgp_next_hops_refused_total",
            "Next hops from zebra outside their cluster's bgp.vtep_ranges (refused: they would become allowed VTEPs).",
            s.next_hops_refused);
  w.family("vxfed_bgp_route_messages_ignored_total", Type::counter, "Route messages from zebra not used, by reason.")
      .sample(s.no_peer, {{"reason", "outside_accept_list"}})
      .sample(s.non_bgp_ignored, {{"reason", "not_bgp"}});
  w.counter("vxfed_bgp_max_prefix_exceeded_total", "Times a peer went over its max_prefix (its routes withheld).",
            s.max_prefix_exceeded);
  // One feed's families: the other's would read as a feed that is down (VxfedFpmDisconnected).
  if (s.feed == bgp::Feed::kFpm) {
    w.gauge("vxfed_bgp_fpm_connected", "1 while zebra's FPM connection is up.", s.fpm_connected ? 1 : 0);
    w.counter("vxfed_bgp_fpm_connections_total", "FPM connections accepted from zebra.", s.fpm_connections);
    w.family("vxfed_bgp_fpm_refused_total", Type::counter, "FPM connections refused, by reason.")
        .sample(s.fpm_refused_not_loopback, {{"reason", "not_loopback"}})
        .sample(s.fpm_refused_wrong_user, {{"reason", "wrong_user"}})
        .sample(s.fpm_refused_busy, {{"reason", "busy"}});
    w.counter("vxfed_bgp_fpm_messages_total", "Netlink messages received over FPM.", s.messages);
    w.family("vxfed_bgp_fpm_errors_total", Type::counter, "FPM input dropped, by kind.")
        .sample(s.malformed, {{"kind", "malformed"}})
        .sample(s.stream_errors, {{"kind", "stream"}});
    w.counter("vxfed_bgp_fpm_resyncs_total", "Full-table resyncs completed after zebra (re)connected.", s.resyncs);
    w.counter("vxfed_bgp_fpm_swept_total", "Routes removed at a resync because zebra did not resend them.", s.swept);
    w.gauge("vxfed_bgp_fpm_resyncing", "1 while a resync is in progress.", s.resyncing ? 1 : 0);
    w.counter("vxfed_bgp_bgpd_restarts_total", "New bgpd processes seen (its pid file) while vxfedd ran.", s.bgpd_restarts);
    w.gauge("vxfed_bgp_fpm_holding_deletes", "1 while zebra's deletes are held after a bgpd restart.",
            s.holding_deletes ? 1 : 0);
    w.counter("vxfed_bgp_fpm_deletes_held_total", "Zebra deletes held while bgpd restarted (the route kept).",
              s.deletes_held);
    w.counter("vxfed_bgp_fpm_held_removed_total",
              "Held routes removed when the restart hold ended (their peer did not send them again).", s.held_released);
  } else {
    write_bmp_feed(w, s);
  }
  w.counter("vxfed_bgp_frr_applies_total", "FRR configurations applied.", s.applies);
  w.gauge("vxfed_bgp_frr_last_apply_seconds", "Duration of the last FRR configuration apply.", s.last_apply_seconds);
}

}  // namespace vxfed::control
