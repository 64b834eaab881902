#include "bgp/bmp_rib.hpp"

#include <algorithm>

namespace vxfed::bgp {

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

void BmpRib::peer_up(const bmp::PeerKey& key) {
  auto& peer = peers_[key];
  if (!peer.up) ++stats_.peers_up;
  peer.up = true;
  if (resyncing_) {
    // A peer that comes up during the resync is waited for too (bgpd sends every Peer Up
    // right after Initiation, then the table and an End-of-RIB per peer).
    awaiting_eor_.insert(key);
    awaited_any_ = true;
  }
}

void BmpRib::peer_down(const bmp::PeerKey& key) {
  auto it = peers_.find(key);
  if (it == peers_.end() || !it->second.up) {
    ++stats_.unknown_peer;
    return;
  }
  --stats_.peers_up;
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
    if (r->second.stale) --stats_.stale;
    peer.routes.erase(r);
    --stats_.routes;
    changed(prefix);
  }
  if (!update.announced.empty() && update.next_hop) {
    for (const auto& prefix : update.announced) {
      auto [r, inserted] = peer.routes.try_emplace(prefix, Entry{*update.next_hop, false});
      if (inserted) {
        ++stats_.routes;
        changed(prefix);
        continue;
      }
      if (r->second.stale) {
        r->second.stale = false;  // re-sent after a reconnect: valid again
        --stats_.stale;
      }
      if (r->second.next_hop != *update.next_hop) {
        r->second.next_hop = *update.next_hop;
        changed(prefix);
      }
    }
  }
  if (update.end_of_rib) {
    ++stats_.end_of_ribs;
    sweep(peer, false);
    if (resyncing_ && awaiting_eor_.erase(key)) finish_resync_if_done();
  }
}

void BmpRib::expire_stale(Clock::time_point now) {
  const auto deadline = stale_deadline();
  if (!deadline || now < *deadline) return;
  for (auto& [key, peer] : peers_) sweep(peer, true);
  // Peers left with nothing and not up (never came back) are forgotten.
  std::erase_if(peers_, [](const auto& kv) { return !kv.second.up && kv.second.routes.empty(); });
  finish_resync();
}

void BmpRib::bgpd_peers(const std::vector<BgpdPeer>& peers, Clock::time_point polled_at,
                        Clock::time_point bgpd_started) {
  if (!resyncing_ || !session_up_ || polled_at < resync_since_ + options_.poll_settle) return;
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
      std::size_t fresh = 0;
      for (const auto& [prefix, entry] : peer->second.routes) fresh += entry.stale ? 0 : 1;
      through = fresh >= report->accepted;
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
  if (!resyncing_ || !session_up_) return std::nullopt;
  return resync_since_ + options_.stale_limit;
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
  std::vector<std::uint32_t> next_hops;
  for (const auto& [key, peer] : peers_) {
    auto r = peer.routes.find(prefix);
    if (r != peer.routes.end()) next_hops.push_back(r->second.next_hop.value);
  }
  std::sort(next_hops.begin(), next_hops.end());
  next_hops.erase(std::unique(next_hops.begin(), next_hops.end()), next_hops.end());
  auto given = given_.find(prefix);
  if (next_hops.empty()) {
    if (given == given_.end()) return;  // never given: nothing to remove
    given_.erase(given);
    --stats_.prefixes;
  } else if (given == given_.end()) {
    given_.emplace(prefix, next_hops);
    ++stats_.prefixes;
  } else if (given->second == next_hops) {
    return;  // another peer's change left the union as it was
  } else {
    given->second = next_hops;
  }
  const auto msg = message(prefix, next_hops);
  ++stats_.messages;
  if (msg.next_hops_truncated) ++stats_.next_hops_truncated;
  if (handlers_.on_route) handlers_.on_route(msg);
}

fpm::RouteMessage BmpRib::message(const net::Ipv4Prefix& prefix, const std::vector<std::uint32_t>& next_hops) const {
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
  return m;
}

void BmpRib::replay() const {
  if (!handlers_.on_route) return;
  for (const auto& [prefix, next_hops] : given_) handlers_.on_route(message(prefix, next_hops));
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
