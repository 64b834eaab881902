#include "bgp/bmp_rib.hpp"

#include <algorithm>

namespace vxfed::bgp {

PeerDownAction peer_down_action(const bmp::GracefulRestartCap& sent, const bmp::GracefulRestartCap& received,
                                const bmp::PeerDown& down) {
  // bgpd is a helper only with the capability in both OPENs (a peer in "Disable" mode sends none)
  // and the peer's naming IPv4 unicast with a restart time (RFC 4724: the routes of the AFI/SAFI
  // it lists are kept for at most the restart time).
  if (!sent.present || !received.present || !received.ipv4_unicast || received.restart_time_s == 0)
    return PeerDownAction::withdraw;
  constexpr std::uint8_t kCease = 6;
  switch (down.reason) {
    case bmp::kPeerDownLocalNotify:
    case bmp::kPeerDownRemoteNotify:
      // A NOTIFICATION ends graceful restart unless both sides sent the N bit (RFC 8538), and a
      // Cease (administrative shutdown / reset, Hard Reset) ends it anyway: FRR 8.4 flushed the
      // routes on a received Cease with N negotiated (docs/bgp.md, measured).
      if (!sent.notification || !received.notification || !down.notify_code || *down.notify_code == kCease)
        return PeerDownAction::withdraw;
      return PeerDownAction::keep_ask_bgpd;
    case bmp::kPeerDownLocalNoNotify:
      // FRR 8.4 sends this one (FSM event 0) for every local close: the peer's crash and a hold
      // timer expiry (routes kept) as well as `neighbor shutdown`, `clear bgp` and BFD down
      // (routes flushed). Only bgpd's status tells them apart.
    case bmp::kPeerDownRemoteNoNotify:
      // RFC 4724 keeps the routes when the peer's TCP session just closes; FRR 8.4 names its NSF
      // close reason 2 and this one the close it did not keep routes for: ask.
      return PeerDownAction::keep_ask_bgpd;
    default:  // 5 de-configured, and the later RFCs' local-RIB reasons
      return PeerDownAction::withdraw;
  }
}

BmpRib::BmpRib(Handlers handlers, BmpRibOptions options) : handlers_(std::move(handlers)), options_(options) {}

void BmpRib::session_started(Clock::time_point now) {
  ++stats_.sessions;
  session_up_ = true;
  resyncing_ = true;
  resync_since_ = now;
  // Whom to wait for: every peer we know (up before, or holding routes). A peer of the old
  // session that is not up in the new one never sends End-of-RIB: the limit ends the wait.
  awaiting_eor_.clear();
  awaited_any_ = false;
  std::uint64_t stale = 0;
  for (auto& [key, peer] : peers_) {
    peer.up = false;  // until this session's Peer Up
    end_gr(peer);     // a peer kept across a restart is awaited like every other one
    for (auto& [prefix, entry] : peer.routes) entry.stale = true;
    stale += peer.routes.size();
    awaiting_eor_.insert(key);
    awaited_any_ = true;
  }
  stats_.stale = stale;
  stats_.peers_up = 0;
}

void BmpRib::session_lost() {
  // Routes stay (the dataplane keeps forwarding while bgpd reconnects); the stale clock waits
  // for the next session, which marks everything again.
  session_up_ = false;
  for (auto& [key, peer] : peers_) peer.up = false;
  stats_.peers_up = 0;
}

void BmpRib::peer_up(const bmp::PeerKey& key, const bmp::PeerUp& up, Clock::time_point now) {
  auto& peer = peers_[key];
  if (!peer.up) ++stats_.peers_up;
  peer.up = true;
  peer.sent_gr = up.sent_gr;
  peer.received_gr = up.received_gr;
  if (peer.gr == Gr::asking || peer.gr == Gr::kept) {
    // Back from its restart: its stale routes wait for the table it re-sends.
    peer.gr = Gr::back;
    peer.gr_since = now;
    peer.gr_deadline = now + options_.gr_stale_path_limit;
  }
  if (resyncing_) {
    // A peer that comes up during the resync is waited for too (bgpd sends every Peer Up
    // right after Initiation, then the table and an End-of-RIB per peer).
    awaiting_eor_.insert(key);
    awaited_any_ = true;
  }
}

void BmpRib::peer_down(const bmp::PeerKey& key, const bmp::PeerDown& down, Clock::time_point now) {
  auto it = peers_.find(key);
  if (it == peers_.end() || !it->second.up) {
    ++stats_.unknown_peer;
    return;
  }
  --stats_.peers_up;
  Peer& peer = it->second;
  if (peer_down_action(peer.sent_gr, peer.received_gr, down) == PeerDownAction::keep_ask_bgpd &&
      !peer.routes.empty()) {
    // bgpd may be keeping them as helper: keep them stale until its status says.
    peer.up = false;
    for (auto& [prefix, entry] : peer.routes) {
      if (!entry.stale) ++stats_.stale;
      entry.stale = true;
    }
    if (peer.gr == Gr::none) ++stats_.gr_peers;
    peer.gr = Gr::asking;
    peer.gr_since = now;
    peer.gr_deadline = now + std::chrono::seconds(peer.received_gr.restart_time_s);
    ++stats_.gr_kept;
    if (resyncing_) {
      awaiting_eor_.erase(key);
      finish_resync_if_done();
    }
    if (handlers_.ask_bgpd) handlers_.ask_bgpd();
    return;
  }
  end_gr(peer);
  // Withdraw at once: move the routes out first, so that the unions computed below no longer
  // see them.
  auto routes = std::move(it->second.routes);
  peers_.erase(it);
  stats_.peer_down_withdrawn += routes.size();
  stats_.routes -= routes.size();
  for (const auto& [prefix, entry] : routes) {
    if (entry.stale) --stats_.stale;
    changed(prefix);
  }
  if (resyncing_) {
    awaiting_eor_.erase(key);
    finish_resync_if_done();
  }
}

void BmpRib::update(const bmp::PeerKey& key, const bmp::Update& update) {
  auto it = peers_.find(key);
  if (it == peers_.end() || !it->second.up) {
    ++stats_.unknown_peer;
    return;
  }
  Peer& peer = it->second;
  for (const auto& prefix : update.withdrawn) {
    auto r = peer.routes.find(prefix);
    if (r == peer.routes.end()) continue;
    if (peer.gr == Gr::back && r->second.stale) {
      // Not what the restarted peer said: bgpd still holds its stale path (docs/bgp.md).
      ++stats_.gr_stale_withdraw_kept;
      continue;
    }
    if (r->second.stale) --stats_.stale;
    peer.routes.erase(r);
    --stats_.routes;
    changed(prefix);
  }
  if (!update.announced.empty() && update.next_hop) {
    for (const auto& prefix : update.announced) {
      auto [r, inserted] = peer.routes.try_emplace(prefix, Entry{*update.next_hop, false, update.gbp_mark});
      if (inserted) {
        ++stats_.routes;
        changed(prefix);
        continue;
      }
      if (r->second.stale) {
        r->second.stale = false;  // re-sent after a reconnect: valid again
        --stats_.stale;
      }
      if (r->second.next_hop != *update.next_hop || r->second.gbp_mark != update.gbp_mark) {
        r->second.next_hop = *update.next_hop;
        r->second.gbp_mark = update.gbp_mark;
        changed(prefix);
      }
    }
  }
  if (update.end_of_rib) {
    ++stats_.end_of_ribs;
    sweep(peer, false);
    if (peer.gr == Gr::back) {
      ++stats_.gr_recovered;
      end_gr(peer);
    }
    if (resyncing_ && awaiting_eor_.erase(key)) finish_resync_if_done();
  }
}

void BmpRib::expire_stale(Clock::time_point now) {
  if (!session_up_) return;
  for (auto it = peers_.begin(); it != peers_.end();) {
    if (it->second.gr != Gr::none && now >= it->second.gr_deadline) {
      ++stats_.gr_expired;
      it = drop_stale(it);
    } else {
      ++it;
    }
  }
  if (!resyncing_ || now < resync_since_ + options_.stale_limit) return;
  // A peer kept across a graceful restart since has its own limit.
  for (auto& [key, peer] : peers_)
    if (peer.gr == Gr::none) sweep(peer, true);
  // Peers left with nothing and not up (never came back) are forgotten.
  std::erase_if(peers_, [](const auto& kv) { return !kv.second.up && kv.second.routes.empty(); });
  finish_resync();
}

bool BmpRib::wants_bgpd_peers() const {
  return session_up_ && (resyncing_ || stats_.gr_peers > 0);
}

void BmpRib::end_gr(Peer& peer) {
  if (peer.gr == Gr::none) return;
  peer.gr = Gr::none;
  --stats_.gr_peers;
}

std::map<bmp::PeerKey, BmpRib::Peer>::iterator BmpRib::drop_stale(std::map<bmp::PeerKey, Peer>::iterator it) {
  sweep(it->second, false);
  end_gr(it->second);
  if (!it->second.up && it->second.routes.empty()) return peers_.erase(it);
  return std::next(it);
}

bool BmpRib::table_through(const Peer& peer, const BgpdPeer& report) {
  if (!report.established || !peer.up) return false;
  // A peer offered Graceful Restart sends End-of-RIB after its table (RFC 4724); until bgpd has
  // it, bgpd's accepted count may be of a table still arriving (0 right after the session came
  // up: measured with a restarted bgpd on the BMP feed, docs/bgp.md).
  if (peer.sent_gr.present && !report.end_of_rib) return false;
  std::size_t fresh = 0;
  for (const auto& [prefix, entry] : peer.routes) fresh += entry.stale ? 0 : 1;
  return fresh >= report.accepted;
}

void BmpRib::gr_from_bgpd(const std::vector<BgpdPeer>& peers, Clock::time_point polled_at) {
  for (auto it = peers_.begin(); it != peers_.end();) {
    Peer& peer = it->second;
    if (peer.gr == Gr::none || polled_at < peer.gr_since) {
      ++it;
      continue;
    }
    const BgpdPeer* report = nullptr;
    for (const auto& p : peers)
      if (p.address == it->first.address) report = &p;
    if (peer.gr == Gr::back) {
      if (report && report->stale == 0 && table_through(peer, *report)) {
        ++stats_.gr_recovered;
        it = drop_stale(it);  // bgpd is through with the restart: what it did not re-send is gone
        continue;
      }
    } else if (report && report->stale > 0) {
      if (peer.gr == Gr::asking) ++stats_.gr_confirmed;
      peer.gr = Gr::kept;
    } else if (!report || (!report->established && report->accepted == 0)) {
      // bgpd keeps nothing of it (it flushed them at the Peer Down, gave up at its restart
      // timer, or the peer is no longer configured): neither do we.
      ++stats_.gr_dropped_by_bgpd;
      it = drop_stale(it);
      continue;
    } else if (peer.gr == Gr::asking && handlers_.ask_bgpd && polled_at < peer.gr_since + std::chrono::seconds(2)) {
      // bgpd is still at it (its routes neither stale nor gone): again at once for a while,
      // then at the owner's own polls.
      handlers_.ask_bgpd();
    }
    ++it;
  }
}

void BmpRib::bgpd_peers(const std::vector<BgpdPeer>& peers, Clock::time_point polled_at,
                        Clock::time_point bgpd_started) {
  if (!session_up_) return;
  if (stats_.gr_peers > 0) gr_from_bgpd(peers, polled_at);
  if (!resyncing_ || polled_at < resync_since_ + options_.poll_settle) return;
  auto report_of = [&](const net::Ipv4Addr& address) -> const BgpdPeer* {
    for (const auto& p : peers)
      if (p.address == address) return &p;
    return nullptr;
  };
  const bool bgpd_settled = polled_at >= bgpd_started + options_.new_bgpd_grace;
  for (auto it = awaiting_eor_.begin(); it != awaiting_eor_.end();) {
    auto peer = peers_.find(*it);
    const BgpdPeer* report = report_of(it->address);
    bool through = false;
    if (peer == peers_.end()) {
      through = true;
    } else if (report && report->established && peer->second.up) {
      through = table_through(peer->second, *report);
    } else if ((!report || !report->established) && bgpd_settled) {
      through = true;
    }
    if (!through) {
      ++it;
      continue;
    }
    if (peer != peers_.end()) {
      sweep(peer->second, false);
      ++stats_.settled_by_bgpd;
    }
    it = awaiting_eor_.erase(it);
  }
  if (!awaiting_eor_.empty()) return;
  for (const auto& p : peers) {
    if (!p.established) continue;
    const bool up_here = std::any_of(peers_.begin(), peers_.end(), [&](const auto& kv) {
      return kv.first.address == p.address && kv.second.up;
    });
    if (!up_here) return;  // its Peer Up and table are still on their way
  }
  std::erase_if(peers_, [](const auto& kv) { return !kv.second.up && kv.second.routes.empty(); });
  finish_resync();
}

std::optional<BmpRib::Clock::time_point> BmpRib::stale_deadline() const {
  if (!session_up_) return std::nullopt;
  std::optional<Clock::time_point> due;
  if (resyncing_) due = resync_since_ + options_.stale_limit;
  if (stats_.gr_peers > 0)
    for (const auto& [key, peer] : peers_)
      if (peer.gr != Gr::none && (!due || peer.gr_deadline < *due)) due = peer.gr_deadline;
  return due;
}

void BmpRib::sweep(Peer& peer, bool by_limit) {
  for (auto r = peer.routes.begin(); r != peer.routes.end();) {
    if (!r->second.stale) {
      ++r;
      continue;
    }
    const auto prefix = r->first;
    r = peer.routes.erase(r);
    --stats_.stale;
    --stats_.routes;
    ++stats_.stale_swept;
    if (by_limit) ++stats_.swept_by_limit;
    changed(prefix);
  }
}

void BmpRib::finish_resync_if_done() {
  if (awaited_any_ && awaiting_eor_.empty()) finish_resync();
}

void BmpRib::finish_resync() {
  if (!resyncing_) return;
  resyncing_ = false;
  awaiting_eor_.clear();
  ++stats_.full_tables;
  if (handlers_.on_full_table) handlers_.on_full_table();
}

void BmpRib::changed(const net::Ipv4Prefix& prefix) {
  Given now;
  now.gbp_mark = true;
  for (const auto& [key, peer] : peers_) {
    auto r = peer.routes.find(prefix);
    if (r == peer.routes.end()) continue;
    now.next_hops.push_back(r->second.next_hop.value);
    now.gbp_mark = now.gbp_mark && r->second.gbp_mark;
  }
  std::sort(now.next_hops.begin(), now.next_hops.end());
  now.next_hops.erase(std::unique(now.next_hops.begin(), now.next_hops.end()), now.next_hops.end());
  if (now.next_hops.empty()) now.gbp_mark = false;
  auto given = given_.find(prefix);
  if (now.next_hops.empty()) {
    if (given == given_.end()) return;  // never given: nothing to remove
    given_.erase(given);
    --stats_.prefixes;
  } else if (given == given_.end()) {
    given_.emplace(prefix, now);
    ++stats_.prefixes;
  } else if (given->second == now) {
    return;  // another peer's change left the union as it was
  } else {
    given->second = now;
  }
  const auto msg = message(prefix, now);
  ++stats_.messages;
  if (msg.next_hops_truncated) ++stats_.next_hops_truncated;
  if (handlers_.on_route) handlers_.on_route(msg);
}

fpm::RouteMessage BmpRib::message(const net::Ipv4Prefix& prefix, const Given& given) const {
  const std::vector<std::uint32_t>& next_hops = given.next_hops;
  // As zebra's dplane_fpm_nl sends a BGP route: RTM_NEWROUTE (or DEL), AF_INET, RTPROT_BGP,
  // RTN_UNICAST, the main table, metric 20 (eBGP's distance), RTA_MULTIPATH for ECMP.
  fpm::RouteMessage m;
  m.is_delete = next_hops.empty();
  m.family = 2;  // AF_INET
  m.protocol = fpm::kRtprotBgp;
  m.type = 1;  // RTN_UNICAST
  m.table = fpm::kRtTableMain;
  m.priority = 20;
  m.prefix = prefix;
  m.multipath = next_hops.size() > 1;
  m.next_hops_truncated = next_hops.size() > fpm::kMaxNextHops;
  for (std::uint32_t nh : next_hops) {
    if (m.next_hop_count == fpm::kMaxNextHops) break;
    m.next_hops[m.next_hop_count++] = fpm::NextHop{nh, 0, 1};
  }
  m.gbp_mark = given.gbp_mark;
  return m;
}

void BmpRib::replay() const {
  if (!handlers_.on_route) return;
  for (const auto& [prefix, given] : given_) handlers_.on_route(message(prefix, given));
}

std::size_t BmpRib::routes_of(const bmp::PeerKey& key) const {
  auto it = peers_.find(key);
  return it == peers_.end() ? 0 : it->second.routes.size();
}

std::map<bmp::PeerKey, std::size_t> BmpRib::routes_per_peer() const {
  std::map<bmp::PeerKey, std::size_t> out;
  for (const auto& [key, peer] : peers_) out[key] = peer.routes.size();
  return out;
}

}  // namespace vxfed::bgp
