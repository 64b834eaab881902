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
  for (auto& [key, peer] : peers_) {
    peer.up = false;  // until this session's Peer Up
    end_gr(peer);     // a peer kept across a restart is awaited like every other one
    awaiting_eor_.insert(key);
    awaited_any_ = true;
  }
  for (auto& [k, paths] : routes_)
    for (Path& path : paths) path.stale = true;
  stats_.stale = stats_.routes;
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
  auto it = peers_.find(key);
  if (it == peers_.end()) {
    // 65,536 peers at once in one bgpd's BMP feed: none past them is taken (its routes would
    // count as a peer's not up).
    const auto slot = free_slot();
    if (!slot) {
      ++stats_.unknown_peer;
      return;
    }
    it = peers_.emplace(key, Peer{}).first;
    it->second.slot = *slot;
  }
  Peer& peer = it->second;
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
      peer.routes > 0) {
    // bgpd may be keeping them as helper: keep them stale until its status says.
    peer.up = false;
    for (auto& [k, paths] : routes_) {
      Path* path = path_of(paths, peer.slot);
      if (!path) continue;
      if (!path->stale) ++stats_.stale;
      path->stale = true;
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
  // Withdraw at once, in prefix order.
  stats_.peer_down_withdrawn += peer.routes;
  for (RouteKey k : keys_of(peer, false)) remove_path(routes_.find(k), peer);
  peers_.erase(it);
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
    auto r = routes_.find(key_of(prefix));
    if (r == routes_.end()) continue;
    const Path* path = path_of(r->second, peer.slot);
    if (!path) continue;
    if (peer.gr == Gr::back && path->stale) {
      // Not what the restarted peer said: bgpd still holds its stale path (docs/bgp.md).
      ++stats_.gr_stale_withdraw_kept;
      continue;
    }
    remove_path(r, peer);
  }
  if (!update.announced.empty() && update.next_hop) {
    const std::uint32_t next_hop = update.next_hop->value;
    for (const auto& prefix : update.announced) {
      const RouteKey k = key_of(prefix);
      auto [r, inserted] = routes_.try_emplace(k);
      Paths& paths = r->second;
      Path* path = path_of(paths, peer.slot);
      if (!path) {
        const Union before = union_of(paths);
        paths.push_back(Path{next_hop, peer.slot, false, update.gbp_mark});
        ++peer.routes;
        ++stats_.routes;
        if (inserted) ++stats_.prefixes;
        emit_if_changed(k, before, union_of(paths));
        continue;
      }
      if (path->stale) {
        path->stale = false;  // re-sent after a reconnect: valid again
        --stats_.stale;
      }
      if (path->next_hop != next_hop || path->gbp_mark != update.gbp_mark) {
        const Union before = union_of(paths);
        path->next_hop = next_hop;
        path->gbp_mark = update.gbp_mark;
        emit_if_changed(k, before, union_of(paths));
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
  std::erase_if(peers_, [](const auto& kv) { return !kv.second.up && kv.second.routes == 0; });
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
  if (!it->second.up && it->second.routes == 0) return peers_.erase(it);
  return std::next(it);
}

bool BmpRib::table_through(const Peer& peer, const BgpdPeer& report) const {
  if (!report.established || !peer.up) return false;
  // A peer offered Graceful Restart sends End-of-RIB after its table (RFC 4724); until bgpd has
  // it, bgpd's accepted count may be of a table still arriving (0 right after the session came
  // up: measured with a restarted bgpd on the BMP feed, docs/bgp.md).
  if (peer.sent_gr.present && !report.end_of_rib) return false;
  return fresh_routes(peer) >= report.accepted;
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
  std::erase_if(peers_, [](const auto& kv) { return !kv.second.up && kv.second.routes == 0; });
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
  for (RouteKey k : keys_of(peer, true)) {
    remove_path(routes_.find(k), peer);
    ++stats_.stale_swept;
    if (by_limit) ++stats_.swept_by_limit;
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

BmpRib::Union BmpRib::union_of(const Paths& paths) {
  Union u;
  u.gbp_mark = !paths.empty();
  for (const Path& path : paths) {
    u.next_hops.push_back(path.next_hop);
    u.gbp_mark = u.gbp_mark && path.gbp_mark;
  }
  std::sort(u.next_hops.begin(), u.next_hops.end());
  u.next_hops.erase(std::unique(u.next_hops.begin(), u.next_hops.end()), u.next_hops.end());
  return u;
}

BmpRib::Path* BmpRib::path_of(Paths& paths, std::uint16_t slot) {
  for (Path& path : paths)
    if (path.peer == slot) return &path;
  return nullptr;
}

void BmpRib::emit_if_changed(RouteKey key, const Union& before, const Union& after) {
  if (before == after) return;  // another peer's path left the union as it was
  const auto msg = message(key, after);
  ++stats_.messages;
  if (msg.next_hops_truncated) ++stats_.next_hops_truncated;
  if (handlers_.on_route) handlers_.on_route(msg);
}

void BmpRib::remove_path(Routes::iterator it, Peer& peer) {
  Paths& paths = it->second;
  auto path = std::find_if(paths.begin(), paths.end(), [&](const Path& p) { return p.peer == peer.slot; });
  if (path == paths.end()) return;
  const Union before = union_of(paths);
  if (path->stale) --stats_.stale;
  paths.erase(path);
  --peer.routes;
  --stats_.routes;
  const RouteKey key = it->first;
  if (paths.empty()) {
    routes_.erase(it);
    --stats_.prefixes;
    emit_if_changed(key, before, Union{});
    return;
  }
  emit_if_changed(key, before, union_of(paths));
}

std::vector<BmpRib::RouteKey> BmpRib::keys_of(const Peer& peer, bool stale_only) const {
  std::vector<RouteKey> keys;
  keys.reserve(stale_only ? 0 : peer.routes);
  for (const auto& [k, paths] : routes_)
    for (const Path& path : paths)
      if (path.peer == peer.slot && (path.stale || !stale_only)) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::size_t BmpRib::fresh_routes(const Peer& peer) const {
  std::size_t fresh = 0;
  for (const auto& [k, paths] : routes_)
    for (const Path& path : paths) fresh += path.peer == peer.slot && !path.stale ? 1 : 0;
  return fresh;
}

std::optional<std::uint16_t> BmpRib::free_slot() const {
  std::vector<bool> taken(std::size_t{1} << 16, false);
  for (const auto& [key, peer] : peers_) taken[peer.slot] = true;
  for (std::size_t slot = 0; slot < taken.size(); ++slot)
    if (!taken[slot]) return static_cast<std::uint16_t>(slot);
  return std::nullopt;
}

fpm::RouteMessage BmpRib::message(RouteKey key, const Union& given) const {
  const auto& next_hops = given.next_hops;
  // As zebra's dplane_fpm_nl sends a BGP route: RTM_NEWROUTE (or DEL), AF_INET, RTPROT_BGP,
  // RTN_UNICAST, the main table, metric 20 (eBGP's distance), RTA_MULTIPATH for ECMP.
  fpm::RouteMessage m;
  m.is_delete = next_hops.empty();
  m.family = 2;  // AF_INET
  m.protocol = fpm::kRtprotBgp;
  m.type = 1;  // RTN_UNICAST
  m.table = fpm::kRtTableMain;
  m.priority = 20;
  m.prefix = prefix_of(key);
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
  std::vector<RouteKey> keys;
  keys.reserve(routes_.size());
  for (const auto& [k, paths] : routes_) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  for (RouteKey k : keys) handlers_.on_route(message(k, union_of(routes_.at(k))));
}

std::size_t BmpRib::routes_of(const bmp::PeerKey& key) const {
  auto it = peers_.find(key);
  return it == peers_.end() ? 0 : it->second.routes;
}

std::map<bmp::PeerKey, std::size_t> BmpRib::routes_per_peer() const {
  std::map<bmp::PeerKey, std::size_t> out;
  for (const auto& [key, peer] : peers_) out[key] = peer.routes;
  return out;
}

}  // namespace vxfed::bgp
