// The BGP route table fed by zebra's FPM stream: pure logic, no I/O.
//
// - A route message's next hops (gateways) are the remote VTEPs: the peer's outbound route-map
//   set them with `set ip next-hop <vtep>`.
// - A route's VNI comes from the first peer (config order) whose accept list matches the
//   prefix: its fixed `vni`, or its `network` resolved through VniLookup. FPM does not say
//   which peer a route came from; config validation forbids ambiguous overlaps.
// - Only RTPROT_BGP routes of the main table are learned. A non-BGP RTM_NEWROUTE for a prefix
//   we hold means zebra now forwards that prefix elsewhere: ours is removed.
// - max-prefix, enforced here too: FRR 8.4 checks maximum-prefix only when an UPDATE arrives
//   and counts only paths whose next hop is already resolved, so a burst can slip past it
//   (measured, docs/bgp.md). When more routes than a peer's max_prefix are attributed to it,
//   none of that peer's routes is given to the consumer until the count is back under
//   (unless the peer is max_prefix_warning_only: then it is counted and installed).
// - Next hops must lie in the peer's cluster's vtep_ranges (when configured): every next hop
//   becomes a VTEP allowed to send us VXLAN, so one outside them is refused and counted; a
//   route left with none is withheld (RouteTableStats::no_allowed_next_hop).
// - Resync (mark and sweep): when zebra (re)connects it resends its whole table; begin_resync()
//   marks every route stale, each resent route is unmarked, end_resync() removes the rest.
// - Held deletes: while the local bgpd restarts (the adapter decides when: docs/bgp.md,
//   "bgpd restarts"), zebra's deletes of BGP routes are held: the consumer keeps the route;
//   one zebra sends again is no longer held; release_held() removes what is still held.
// - The GBP mark (gbp_mark.hpp) is kept per route as the message gave it and handed on in
//   RemoteRoute::gbp_mark; a change of it alone is a change (an upsert). The rule that makes a
//   VTEP take GBP from it is vxfedd's, over every route (bgp/gbp_vteps.hpp).
// Changes accumulate and are taken as one RouteUpdate (common/routes.hpp) with
// take_pending(); every route given out carries its VNI and its peer's address.
#pragma once

#include <cstdint>
#include <functional>
#include <memory_resource>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bgp/config.hpp"
#include "bgp/fpm_parser.hpp"
#include "common/routes.hpp"

namespace vxfed::bgp {

// network name -> VNI; nullopt while the network is unknown to the daemon.
using VniLookup = std::function<std::optional<std::uint32_t>(const std::string& network)>;

// Whose route a prefix is and which VNI it gets: the first peer (config order) whose accept
// list matches; its fixed `vni`, or its `network` resolved through `vni_of`.
struct Attribution {
  int peer = -1;          // index into the peers; -1: no accept list matches
  std::uint32_t vni = 0;  // 0: the peer's network has no VNI (yet)
};
Attribution attribute(const std::vector<PeerConfig>& peers, const VniLookup& vni_of, const net::Ipv4Prefix& prefix);

struct RouteTableStats {
  std::uint64_t route_messages = 0;  // IPv4 route messages applied
  std::uint64_t upserts = 0;         // changes emitted as upserts
  std::uint64_t removals = 0;        // changes emitted as removals
  std::uint64_t non_bgp_ignored = 0;
  std::uint64_t other_table_ignored = 0;
  std::uint64_t no_peer = 0;         // prefix matched no peer's accept list (dropped)
  std::uint64_t no_next_hop = 0;     // NEWROUTE without a gateway: treated as unreachable
  std::uint64_t swept = 0;           // removed by end_resync()
  std::uint64_t resyncs = 0;
  std::uint64_t max_prefix_exceeded = 0;  // times a peer went over its max_prefix
  std::uint64_t unresolved = 0;      // current routes whose network has no VNI yet
  std::uint64_t withheld = 0;        // current routes withheld (peer over max_prefix)
  std::uint64_t next_hops_refused = 0;    // next hops outside the peer's vtep_ranges (per message)
  std::uint64_t no_allowed_next_hop = 0;  // current routes withheld: no next hop in vtep_ranges
  std::uint64_t deletes_held = 0;         // zebra deletes held while bgpd restarted
  std::uint64_t held_released = 0;        // of those, routes removed by release_held()
};

class RouteTable {
 public:
  RouteTable(std::vector<PeerConfig> peers, VniLookup vni_of, std::uint32_t table_id = fpm::kRtTableMain);

  // New peer list (reconfigure) or network changes: re-resolves every route, emitting deltas.
  void set_peers(std::vector<PeerConfig> peers);
  void reresolve();

  void apply(const fpm::RouteMessage& msg);

  // While on, zebra's deletes of BGP routes we hold are held (see above).
  void hold_deletes(bool on) { holding_ = on; }
  bool holding_deletes() const { return holding_; }
  // Removes the routes whose delete is still held (zebra did not send them again). Returns
  // how many.
  std::size_t release_held();
  std::size_t held() const { return held_.size(); }

  void begin_resync();
  void end_resync();
  bool resyncing() const { return resyncing_; }

  RouteUpdate take_pending();
  bool has_pending() const { return !pending_.empty(); }
  // The complete table as one full update (clears pending changes: the full table supersedes them).
  RouteUpdate take_full();
  // Every route the consumer should hold.
  std::vector<RemoteRoute> snapshot() const;
  std::size_t size() const { return entries_.size(); }
  // Peers (by address) currently over their max_prefix.
  std::vector<std::string> peers_over_limit() const;
  // Peers over their max_prefix with max_prefix_warning_only: counted, their routes installed.
  std::vector<std::string> peers_over_limit_kept() const;
  RouteTableStats stats() const;

 private:
  struct Entry {
    net::Ipv4Prefix prefix;
    VtepList offered;  // next hops as zebra sent them (sorted, unique, at most fpm::kMaxNextHops)
    // Which of them the peer's vtep_ranges allow, bit i for offered[i] (vteps_of()): one word
    // instead of a second list per route (130,000 routes: docs/federation.md "Scale").
    std::uint32_t allowed = 0;
    int peer = -1;               // index into peers_; -1: none matched
    std::uint32_t vni = 0;       // 0: unresolved
    std::uint32_t emitted_vni = 0;  // the key the consumer holds this route under; 0: none
    bool stale = false;
    bool gbp_mark = false;  // every path carries the GBP mark (BMP only: FPM has no communities)
  };
  static_assert(fpm::kMaxNextHops <= 32, "Entry::allowed has a bit per next hop");
  // The next hops the consumer gets: those of `offered` the peer's vtep_ranges allow.
  static VtepList vteps_of(const Entry& e);
  static std::uint64_t key(const net::Ipv4Prefix& p) { return (std::uint64_t{p.addr} << 8) | p.len; }
  static std::uint64_t pending_key(std::uint32_t vni, const net::Ipv4Prefix& p) {
    return (std::uint64_t{vni} << 40) | key(p);
  }
  void resolve(Entry& e) const;
  bool withholds(int peer) const;  // peer over max_prefix and not warning-only
  std::uint32_t desired_vni(const Entry& e) const;
  RemoteRoute to_route(const Entry& e) const;
  // Brings what the consumer holds for `e` in line with what it should hold. `changed`: the
  // route's content (VTEPs, peer) changed, so an upsert is due even under the same key.
  void sync(Entry& e, bool changed);
  void withdraw(Entry& e);  // the consumer must no longer hold e
  void erase(std::uint64_t k);
  void count(int peer, int delta);
  void check_limits();

  std::vector<PeerConfig> peers_;
  VniLookup vni_of_;
  std::uint32_t table_id_;
  // The routes live in a pool of their own: they are allocated during a burst among many
  // short-lived buffers (FPM batches, updates, deltas), and in the general heap the pages those
  // leave free stay pinned by routes scattered between them (at 130,000 routes vxfedd held
  // twice its live data). A pool keeps freed routes for new ones; it does not shrink.
  std::pmr::unsynchronized_pool_resource entries_pool_;
  std::pmr::unordered_map<std::uint64_t, Entry> entries_{&entries_pool_};
  std::vector<std::uint32_t> peer_counts_;
  std::vector<bool> over_limit_;  // over max_prefix and withheld
  std::vector<bool> exceeded_;    // over max_prefix (withheld or, warning-only, kept)
  // Pending changes coalesced per (vni, prefix) so that a batch never both upserts and removes
  // one key, and never removes a key the consumer was never given.
  struct PendingOp {
    bool consumer_had_it = false;
    bool removed = false;
    RemoteRoute route;
  };
  std::unordered_map<std::uint64_t, PendingOp> pending_;
  bool resyncing_ = false;
  bool holding_ = false;
  std::unordered_set<std::uint64_t> held_;  // keys whose delete is held
  RouteTableStats stats_;
};

}  // namespace vxfed::bgp
