#include "bgp/route_table.hpp"

#include <algorithm>
#include <bit>
#include <tuple>

namespace vxfed::bgp {

RouteTable::RouteTable(std::vector<PeerConfig> peers, VniLookup vni_of, std::uint32_t table_id)
    : peers_(std::move(peers)),
      vni_of_(std::move(vni_of)),
      table_id_(table_id),
      peer_counts_(peers_.size(), 0),
      over_limit_(peers_.size(), false),
      exceeded_(peers_.size(), false) {}

void RouteTable::set_peers(std::vector<PeerConfig> peers) {
  peers_ = std::move(peers);
  reresolve();
}

Attribution attribute(const std::vector<PeerConfig>& peers, const VniLookup& vni_of, const net::Ipv4Prefix& prefix) {
  Attribution a;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    if (!peers[i].accepts(prefix)) continue;
    a.peer = static_cast<int>(i);
    if (peers[i].vni != 0) {
      a.vni = peers[i].vni;
    } else if (vni_of) {
      a.vni = vni_of(peers[i].network).value_or(0);
    }
    break;
  }
  return a;
}

// Which next hops of `offered` lie in `ranges` (all of them when no ranges are configured),
// bit i for offered[i].
static std::uint32_t allowed_next_hops(const VtepList& offered, const std::vector<net::Ipv4Prefix>& ranges) {
  std::uint32_t allowed = 0;
  for (std::size_t i = 0; i < offered.size(); ++i) {
    if (ranges.empty() ||
        std::any_of(ranges.begin(), ranges.end(), [&](const net::Ipv4Prefix& r) { return r.contains(offered[i]); }))
      allowed |= std::uint32_t{1} << i;
  }
  return allowed;
}

VtepList RouteTable::vteps_of(const Entry& e) {
  VtepList out;
  for (std::size_t i = 0; i < e.offered.size(); ++i)
    if (e.allowed & (std::uint32_t{1} << i)) out.push_back(e.offered[i]);
  return out;
}

void RouteTable::resolve(Entry& e) const {
  const Attribution a = attribute(peers_, vni_of_, e.prefix);
  e.peer = a.peer;
  e.vni = a.vni;
  e.allowed = allowed_next_hops(e.offered, e.peer < 0 ? std::vector<net::Ipv4Prefix>{}
                                                      : peers_[static_cast<std::size_t>(e.peer)].vtep_ranges);
}

bool RouteTable::withholds(int peer) const {
  const auto i = static_cast<std::size_t>(peer);
  return over_limit_[i] && !peers_[i].max_prefix_warning_only;
}

std::uint32_t RouteTable::desired_vni(const Entry& e) const {
  if (e.peer < 0 || e.vni == 0 || e.allowed == 0 || withholds(e.peer)) return 0;
  return e.vni;
}

RemoteRoute RouteTable::to_route(const Entry& e) const {
  RemoteRoute r;
  r.prefix = e.prefix;
  r.vteps = vteps_of(e);
  r.vni = e.vni;
  r.gbp_mark = e.gbp_mark;
  if (e.peer >= 0) r.peer = peers_[static_cast<std::size_t>(e.peer)].address;
  return r;
}

void RouteTable::withdraw(Entry& e) {
  if (e.emitted_vni == 0) return;
  auto [it, fresh] = pending_.try_emplace(pending_key(e.emitted_vni, e.prefix));
  if (fresh) it->second.consumer_had_it = true;
  it->second.removed = true;
  it->second.route = RemoteRoute{};
  it->second.route.vni = e.emitted_vni;
  it->second.route.prefix = e.prefix;
  ++stats_.removals;
  e.emitted_vni = 0;
}

void RouteTable::sync(Entry& e, bool changed) {
  const std::uint32_t want = desired_vni(e);
  if (want == e.emitted_vni && !(want != 0 && changed)) return;
  const bool had_it = want != 0 && want == e.emitted_vni;
  if (e.emitted_vni != want) withdraw(e);
  if (want == 0) return;
  auto [it, fresh] = pending_.try_emplace(pending_key(want, e.prefix));
  if (fresh) it->second.consumer_had_it = had_it;
  it->second.removed = false;
  it->second.route = to_route(e);
  ++stats_.upserts;
  e.emitted_vni = want;
}

void RouteTable::count(int peer, int delta) {
  if (peer < 0) return;
  auto& c = peer_counts_[static_cast<std::size_t>(peer)];
  c = static_cast<std::uint32_t>(static_cast<int>(c) + delta);
}

void RouteTable::check_limits() {
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    const bool exceeded = peer_counts_[i] > peers_[i].max_prefix;
    if (exceeded && !exceeded_[i]) ++stats_.max_prefix_exceeded;
    exceeded_[i] = exceeded;
    const bool over = exceeded && !peers_[i].max_prefix_warning_only;  // withheld
    if (over == over_limit_[i]) continue;
    over_limit_[i] = over;
    for (auto& [k, e] : entries_) {
      if (e.peer == static_cast<int>(i)) sync(e, false);
    }
  }
}

void RouteTable::erase(std::uint64_t k) {
  held_.erase(k);
  auto it = entries_.find(k);
  if (it == entries_.end()) return;
  withdraw(it->second);
  count(it->second.peer, -1);
  entries_.erase(it);
}

void RouteTable::reresolve() {
  peer_counts_.assign(peers_.size(), 0);
  over_limit_.resize(peers_.size(), false);
  exceeded_.resize(peers_.size(), false);
  // offered stays as it is: the VTEPs given change with the allowed mask.
  std::unordered_map<std::uint64_t, std::tuple<int, std::uint32_t, std::uint32_t>> before;
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    const int old_peer = e.peer;
    before[it->first] = {e.peer, e.vni, e.allowed};
    resolve(e);
    if (e.peer < 0) {
      ++stats_.no_peer;
      withdraw(e);
      it = entries_.erase(it);
      continue;
    }
    count(e.peer, +1);
    ++it;
    (void)old_peer;
  }
  // Limits first (they decide what is emitted), then every entry in line with them.
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    exceeded_[i] = peer_counts_[i] > peers_[i].max_prefix;
    over_limit_[i] = exceeded_[i] && !peers_[i].max_prefix_warning_only;
  }
  for (auto& [k, e] : entries_) {
    const auto& b = before[k];
    sync(e, std::get<0>(b) != e.peer || std::get<1>(b) != e.vni || std::get<2>(b) != e.allowed);
  }
}

void RouteTable::apply(const fpm::RouteMessage& msg) {
  if (msg.family != 2) return;
  if (msg.table != table_id_) {
    ++stats_.other_table_ignored;
    return;
  }
  ++stats_.route_messages;
  const std::uint64_t k = key(msg.prefix);
  if (msg.is_delete) {
    // zebra may leave the protocol unset on deletes; a delete of a BGP/unspecified route for
    // a prefix we hold removes it.
    if (msg.protocol == fpm::kRtprotBgp || msg.protocol == 0) {
      if (holding_ && entries_.count(k)) {
        if (held_.insert(k).second) ++stats_.deletes_held;
        return;
      }
      erase(k);
      check_limits();
    } else {
      ++stats_.non_bgp_ignored;
    }
    return;
  }
  held_.erase(k);  // zebra has a route for it again: whatever follows decides
  if (msg.protocol != fpm::kRtprotBgp) {
    ++stats_.non_bgp_ignored;
    erase(k);  // zebra selected another protocol's route for this prefix
    check_limits();
    return;
  }
  Entry e;
  e.prefix = msg.prefix;
  e.gbp_mark = msg.gbp_mark;
  for (std::uint8_t i = 0; i < msg.next_hop_count; ++i) {
    if (msg.next_hops[i].gateway != 0) e.offered.push_back(net::Ipv4Addr{msg.next_hops[i].gateway});
  }
  std::sort(e.offered.begin(), e.offered.end());
  e.offered.erase(std::unique(e.offered.begin(), e.offered.end()), e.offered.end());
  if (e.offered.empty()) {
    ++stats_.no_next_hop;  // blackhole/unreachable or zero next hops: no VTEP to send to
    erase(k);
    check_limits();
    return;
  }
  resolve(e);
  if (e.peer < 0) {
    ++stats_.no_peer;
    erase(k);
    check_limits();
    return;
  }
  stats_.next_hops_refused += e.offered.size() - static_cast<std::size_t>(std::popcount(e.allowed));
  auto it = entries_.find(k);
  if (it == entries_.end()) {
    count(e.peer, +1);
    auto& stored = entries_.emplace(k, std::move(e)).first->second;
    check_limits();  // may withhold this peer's routes (this one included)
    sync(stored, true);
    return;
  }
  Entry& old = it->second;
  old.stale = false;
  const bool changed =
      vteps_of(old) != vteps_of(e) || old.peer != e.peer || old.vni != e.vni || old.gbp_mark != e.gbp_mark;
  // The next hops offered may change without the allowed ones changing: both kept together.
  old.offered = std::move(e.offered);
  old.allowed = e.allowed;
  if (!changed) return;  // resent as is
  count(old.peer, -1);
  count(e.peer, +1);
  old.gbp_mark = e.gbp_mark;
  old.peer = e.peer;
  old.vni = e.vni;
  check_limits();
  sync(old, true);
}

void RouteTable::begin_resync() {
  resyncing_ = true;
  ++stats_.resyncs;
  for (auto& [k, e] : entries_) e.stale = true;
}

std::size_t RouteTable::release_held() {
  const std::vector<std::uint64_t> keys(held_.begin(), held_.end());
  for (const std::uint64_t k : keys) erase(k);
  stats_.held_released += keys.size();
  if (!keys.empty()) check_limits();
  return keys.size();
}

void RouteTable::end_resync() {
  if (!resyncing_) return;
  resyncing_ = false;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.stale) {
      held_.erase(it->first);
      withdraw(it->second);
      count(it->second.peer, -1);
      ++stats_.swept;
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  check_limits();
}

RouteUpdate RouteTable::take_pending() {
  RouteUpdate out;
  for (auto& [k, op] : pending_) {
    if (!op.removed) {
      out.upserts.push_back(std::move(op.route));
    } else if (op.consumer_had_it) {
      out.removals.push_back(RouteKey{op.route.vni, op.route.prefix});
    }
  }
  pending_.clear();
  return out;
}

RouteUpdate RouteTable::take_full() {
  pending_.clear();
  RouteUpdate out;
  out.full = true;
  out.upserts = snapshot();
  return out;
}

std::vector<RemoteRoute> RouteTable::snapshot() const {
  std::vector<RemoteRoute> out;
  out.reserve(entries_.size());
  for (const auto& [k, e] : entries_) {
    if (e.emitted_vni != 0) out.push_back(to_route(e));
  }
  std::sort(out.begin(), out.end(), [](const RemoteRoute& a, const RemoteRoute& b) {
    return std::tie(a.vni, a.prefix) < std::tie(b.vni, b.prefix);
  });
  return out;
}

std::vector<std::string> RouteTable::peers_over_limit() const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    if (over_limit_[i]) out.push_back(peers_[i].address.str());
  }
  return out;
}

std::vector<std::string> RouteTable::peers_over_limit_kept() const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    if (exceeded_[i] && !over_limit_[i]) out.push_back(peers_[i].address.str());
  }
  return out;
}

RouteTableStats RouteTable::stats() const {
  RouteTableStats s = stats_;
  s.unresolved = 0;
  s.withheld = 0;
  for (const auto& [k, e] : entries_) {
    s.unresolved += e.vni == 0;
    s.withheld += e.vni != 0 && e.peer >= 0 && withholds(e.peer);
    s.no_allowed_next_hop += e.peer >= 0 && e.allowed == 0;
  }
  return s;
}

}  // namespace vxfed::bgp
