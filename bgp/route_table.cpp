#include "route_table.hpp"

#include <algorithm>

namespace vxfed::bgp {

RouteTable::RouteTable(std::vector<PeerConfig> peers, VniLookup vni_of, std::uint32_t table_id)
    : peers_(std::move(peers)), vni_of_(std::move(vni_of)), table_id_(table_id) {}

void RouteTable::set_peers(std::vector<PeerConfig> peers) {
  peers_ = std::move(peers);
  reresolve();
}

void RouteTable::resolve(Entry& e) const {
  e.peer = -1;
  e.vni = 0;
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    if (!peers_[i].accepts(e.prefix)) continue;
    e.peer = static_cast<int>(i);
    if (peers_[i].vni != 0) {
      e.vni = peers_[i].vni;
    } else if (vni_of_) {
      e.vni = vni_of_(peers_[i].network).value_or(0);
    }
    return;
  }
}

LearnedRoute RouteTable::to_route(const Entry& e) const {
  LearnedRoute r;
  r.prefix = e.prefix;
  r.vteps = e.vteps;
  r.vni = e.vni;
  if (e.peer >= 0) {
    r.network = peers_[e.peer].network;
    r.peer = peers_[e.peer].address.str();
  }
  return r;
}

void RouteTable::emit_upsert(const Entry& e, bool consumer_had_it) {
  if (e.vni == 0) return;
  auto [it, fresh] = pending_.try_emplace(pending_key(e.vni, e.prefix));
  if (fresh) it->second.consumer_had_it = consumer_had_it;
  it->second.removed = false;
  it->second.route = to_route(e);
  ++stats_.upserts;
}

void RouteTable::emit_removal(const Entry& e) {
  if (e.vni == 0) return;  // never emitted, nothing to take back
  auto [it, fresh] = pending_.try_emplace(pending_key(e.vni, e.prefix));
  if (fresh) it->second.consumer_had_it = true;
  it->second.removed = true;
  it->second.route = LearnedRoute{};
  it->second.route.vni = e.vni;
  it->second.route.prefix = e.prefix;
  ++stats_.removals;
}

void RouteTable::remove(std::uint64_t k) {
  auto it = entries_.find(k);
  if (it == entries_.end()) return;
  emit_removal(it->second);
  entries_.erase(it);
}

void RouteTable::reresolve() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    Entry before = e;
    resolve(e);
    if (e.peer < 0) {
      ++stats_.no_peer;
      emit_removal(before);
      it = entries_.erase(it);
      continue;
    }
    if (before.vni != e.vni || before.peer != e.peer) {
      if (before.vni != e.vni) emit_removal(before);
      emit_upsert(e, before.vni == e.vni);
    }
    ++it;
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
    // zebra may leave the protocol unset on deletes; a delete of any BGP/unspecified route
    // for a prefix we hold removes it.
    if (msg.protocol == fpm::kRtprotBgp || msg.protocol == 0) {
      remove(k);
    } else {
      ++stats_.non_bgp_ignored;
    }
    return;
  }
  if (msg.protocol != fpm::kRtprotBgp) {
    ++stats_.non_bgp_ignored;
    remove(k);  // zebra selected another protocol's route for this prefix
    return;
  }
  Entry e;
  e.prefix = msg.prefix;
  for (std::uint8_t i = 0; i < msg.next_hop_count; ++i) {
    if (msg.next_hops[i].gateway != 0) e.vteps.push_back(Ipv4Addr{msg.next_hops[i].gateway});
  }
  std::sort(e.vteps.begin(), e.vteps.end());
  e.vteps.erase(std::unique(e.vteps.begin(), e.vteps.end()), e.vteps.end());
  if (e.vteps.empty()) {
    ++stats_.no_next_hop;  // blackhole/unreachable or zero next hops: no VTEP to send to
    remove(k);
    return;
  }
  resolve(e);
  if (e.peer < 0) {
    ++stats_.no_peer;
    remove(k);
    return;
  }
  auto it = entries_.find(k);
  if (it == entries_.end()) {
    emit_upsert(e, false);
    entries_.emplace(k, std::move(e));
    return;
  }
  Entry& old = it->second;
  old.stale = false;
  if (old.vteps == e.vteps && old.vni == e.vni && old.peer == e.peer) return;  // resent as is
  const bool same_key = old.vni == e.vni;
  if (!same_key) emit_removal(old);
  old = std::move(e);
  emit_upsert(old, same_key && old.vni != 0);
}

void RouteTable::begin_resync() {
  resyncing_ = true;
  ++stats_.resyncs;
  for (auto& [k, e] : entries_) e.stale = true;
}

void RouteTable::end_resync() {
  if (!resyncing_) return;
  resyncing_ = false;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.stale) {
      emit_removal(it->second);
      ++stats_.swept;
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
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

std::vector<LearnedRoute> RouteTable::snapshot() const {
  std::vector<LearnedRoute> out;
  out.reserve(entries_.size());
  for (const auto& [k, e] : entries_) {
    if (e.vni != 0) out.push_back(to_route(e));
  }
  std::sort(out.begin(), out.end(), [](const LearnedRoute& a, const LearnedRoute& b) {
    return std::tie(a.vni, a.prefix) < std::tie(b.vni, b.prefix);
  });
  return out;
}

RouteTableStats RouteTable::stats() const {
  RouteTableStats s = stats_;
  s.unresolved = 0;
  for (const auto& [k, e] : entries_) s.unresolved += e.vni == 0;
  return s;
}

}  // namespace vxfed::bgp
