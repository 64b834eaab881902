// Routes learned over BMP, per monitored peer (pure logic, no I/O, no clock of its own).
//
// bgpd, running as a BGP view, reports each peer's post-policy routes (bmp_session.hpp). The
// RIB keeps each peer's path to every prefix (below) and gives its owner what zebra would
// have sent over FPM, so bgp::RouteTable::apply stays the one consumer-facing table: for every
// prefix whose union of next hops across peers changed, one fpm::RouteMessage (RTPROT_BGP,
// table main, family AF_INET, the union sorted and unique, at most fpm::kMaxNextHops: ECMP when
// peers give different next hops; is_delete once no peer has the prefix). The message's
// gbp_mark is set when every peer's path of the prefix carries the GBP mark (one path without
// it, e.g. the previous release's node announcing the same block, clears it); a change of it
// alone is a change too.
//
// How it is kept (docs/bgp.md, "Learning routes (BMP)": memory): one record per prefix holding
// each peer's path to it (next hop, stale, GBP mark; a node's two reflectors fit inline), in a
// hash table whose nodes live in a pool of their own, and no copy of what the consumer holds:
// that is always the union of the record's paths (every change to a path is emitted when it
// changes the union), so the union before and after a change is what decides whether to emit.
// Peers are known by a small slot number in the paths; per-peer work walks every record.
//
// Semantics (docs/bgp.md, "Learning routes (BMP)"):
//   - A prefix stays while at least one peer has it.
//   - Peer Down withdraws that peer's routes at once, unless bgpd may keep them as its
//     graceful-restart helper (peer_down_action(): both OPENs of the Peer Up carry the Graceful
//     Restart capability, the peer's with IPv4 unicast and a restart time, and the reason is
//     not one after which bgpd flushes). Then the routes stay, stale, and bgpd is asked
//     (Handlers::ask_bgpd, bgpd_peers()): it has them stale -> kept until the peer is back and
//     has re-sent them (its End-of-RIB, or bgpd's status: Established, nothing stale, every
//     accepted route re-sent) or until the peer's restart time runs out (then the
//     stale-path limit once it is back); bgpd has none -> withdrawn. A withdrawal of a stale
//     route of a peer back from a restart is not taken (FRR 8.4 sends some right after the
//     Peer Up, then announces the route again): the route stays stale until re-sent or swept.
//     A Peer Down, route or End-of-RIB for a peer not up changes nothing (counted).
//   - session_started() (bgpd's Initiation, i.e. a BMP (re)connect) marks every route of every
//     peer stale: bgpd resends its table. A route re-sent is valid again; a peer's End-of-RIB
//     sweeps that peer's routes still stale.
//   - FRR sends no End-of-RIB when the station was connected before the peer came up, and a
//     peer that never comes back up would keep its stale routes forever: stale_limit after
//     session_started, expire_stale() sweeps whatever is still stale.
//   - session_lost() (TCP closed, framing error) keeps every route and stops the stale clock:
//     the dataplane keeps forwarding while bgpd reconnects; the next session_started() marks
//     again.
//   - Full table: after session_started(), once every peer that was known before it or came up
//     since has sent its End-of-RIB or gone down (or at stale_limit), on_full_table() is called
//     once: the resync is over and what the RIB holds is bgpd's table. With no peer known
//     (a fresh RIB, or bgpd with no session up) only the limit ends the resync.
//
// How the adapter uses it: feed it from BmpStation (bmp_station.hpp: create(io, ep, rib, ...)),
// hand on_route to RouteTable::apply, call expire_stale(now) from a timer (stale_deadline() says
// when it has work). Do NOT begin_resync() the RouteTable on a BMP reconnect: the RIB emits only
// changes, so a route unchanged across the reconnect is never re-sent. On on_full_table() the
// adapter may rebuild the consumer's view whole: RouteTable::begin_resync(), replay(),
// end_resync().
#pragma once

#include <boost/container/small_vector.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory_resource>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "bgp/bmp_session.hpp"
#include "bgp/fpm_parser.hpp"

namespace vxfed::bgp {

struct BmpRibOptions {
  // After a (re)connect, routes not re-sent by then are swept. Default: BGP's restart time.
  std::chrono::milliseconds stale_limit{120'000};
  // bgpd's own word on its peers (bgpd_peers()) is taken only from a poll this long after the
  // session started: bgpd first sends the Peer Ups and tables it has.
  std::chrono::milliseconds poll_settle{3'000};
  // A peer bgpd reports down has its stale routes swept only once bgpd has run this long: a
  // bgpd that has just (re)started has its sessions still coming up.
  std::chrono::milliseconds new_bgpd_grace{30'000};
  // A graceful-restart peer back up has its stale routes swept this long after its Peer Up
  // if neither its End-of-RIB nor bgpd's status ended the wait (FRR's stale-path-time).
  std::chrono::milliseconds gr_stale_path_limit{360'000};
};

// What a Peer Down does to the peer's routes (bmp_rib.hpp, docs/bgp.md "Graceful restart on the
// BMP feed").
enum class PeerDownAction : std::uint8_t {
  withdraw,       // bgpd flushes them: no graceful restart, or a reason after which it does not keep
  keep_ask_bgpd,  // bgpd may keep them as helper: kept (stale) until bgpd's status says
};
// sent / received: the Graceful Restart capability of bgpd's OPEN and of the peer's, from the
// Peer Up.
PeerDownAction peer_down_action(const bmp::GracefulRestartCap& sent, const bmp::GracefulRestartCap& received,
                                const bmp::PeerDown& down);

// One peer as bgpd's own status reports it (the adapter's poll of `show bgp view ... neighbors`).
struct BgpdPeer {
  net::Ipv4Addr address;
  bool established = false;
  std::uint32_t accepted = 0;  // prefixes bgpd holds from it after inbound policy
  std::uint32_t stale = 0;     // of which kept stale by graceful restart
  bool end_of_rib = false;     // bgpd has this session's End-of-RIB (IPv4 unicast) from it
};

struct BmpRibStats {
  std::uint64_t peers_up = 0;          // now
  std::uint64_t routes = 0;            // now: (peer, prefix) entries
  std::uint64_t prefixes = 0;          // now: prefixes given to the consumer
  std::uint64_t stale = 0;             // now: entries marked stale, not yet re-sent
  std::uint64_t sessions = 0;          // session_started() calls
  std::uint64_t stale_swept = 0;       // entries removed by End-of-RIB or the limit
  std::uint64_t swept_by_limit = 0;    // of which by the limit
  std::uint64_t end_of_ribs = 0;
  std::uint64_t peer_down_withdrawn = 0;  // entries removed by Peer Down
  std::uint64_t unknown_peer = 0;      // peer_down / update for a peer not up: ignored
  std::uint64_t full_tables = 0;
  std::uint64_t settled_by_bgpd = 0;   // peers whose wait bgpd's own status ended (bgpd_peers())
  std::uint64_t messages = 0;          // RouteMessages emitted
  std::uint64_t next_hops_truncated = 0;  // messages whose union had more than kMaxNextHops
  // Graceful restart (peer_down_action()).
  std::uint64_t gr_peers = 0;              // now: peers whose routes are kept across a restart
  std::uint64_t gr_kept = 0;               // Peer Downs whose routes were kept, bgpd asked
  std::uint64_t gr_confirmed = 0;          // of which bgpd had them stale
  std::uint64_t gr_dropped_by_bgpd = 0;    // of which bgpd had none (or gave them up later)
  std::uint64_t gr_expired = 0;            // peers swept at their restart / stale-path limit
  std::uint64_t gr_recovered = 0;          // peers back whose re-sent table ended the wait
  std::uint64_t gr_stale_withdraw_kept = 0;  // withdrawals of a stale route after the peer's return
};

class BmpRib {
 public:
  using Clock = std::chrono::steady_clock;
  struct Handlers {
    std::function<void(const fpm::RouteMessage&)> on_route;
    std::function<void()> on_full_table;
    // A Peer Down left routes that only bgpd's status can decide about: call bgpd_peers() with
    // a poll taken from now on, soon.
    std::function<void()> ask_bgpd;
  };

  explicit BmpRib(Handlers handlers, BmpRibOptions options = {});

  // The BMP feed, as BmpStation hands it (bmp_station.hpp: rib_handlers()).
  void session_started(Clock::time_point now);  // Initiation
  void session_lost();                          // connection closed or stream broken
  // `up` carries both OPENs' Graceful Restart capabilities; without it (or with no capability)
  // a Peer Down withdraws at once. `now` times a graceful restart.
  void peer_up(const bmp::PeerKey& peer, const bmp::PeerUp& up = {}, Clock::time_point now = {});
  void peer_down(const bmp::PeerKey& peer, const bmp::PeerDown& down = {}, Clock::time_point now = {});
  void update(const bmp::PeerKey& peer, const bmp::Update& update);

  // bgpd's own view of its peers, polled at `polled_at` from a bgpd running since
  // `bgpd_started`, ends the resync where BMP alone cannot (FRR 8.4 sends End-of-RIB only in
  // the table it dumps at Initiation: not for a peer that comes up later, nor for a peer that
  // is down; a Peer Down of a peer that was never up in this session is ignored). During a
  // resync, poll_settle after session_started(), for each peer still awaited:
  //   - bgpd has it Established and the routes re-sent by it cover bgpd's accepted count (and
  //     bgpd has the peer's End-of-RIB when bgpd's OPEN offered Graceful Restart, after which
  //     the peer sends one: before it, bgpd's count may be of a table still arriving): its
  //     table is through; its routes still stale are swept.
  //   - bgpd has it down (or does not know it) and bgpd has run new_bgpd_grace: it is not
  //     coming back with routes; its stale routes are swept.
  // Once no peer is awaited and every peer bgpd has Established is up here, the table is whole
  // (on_full_table), also when there was no peer at all.
  //
  // For a peer kept across a graceful restart (at any time, a resync or not), a poll taken after
  // its Peer Down: bgpd holds routes of it stale -> kept; bgpd holds none (or does not know the
  // peer) -> withdrawn now; Established again with the peer's End-of-RIB, nothing stale and
  // every accepted route re-sent here -> its stale routes are swept.
  void bgpd_peers(const std::vector<BgpdPeer>& peers, Clock::time_point polled_at, Clock::time_point bgpd_started);
  // Whether bgpd_peers() has work: a resync, or a peer kept across a graceful restart.
  bool wants_bgpd_peers() const;

  // Sweeps every stale route once stale_limit has passed since session_started() (and
  // completes the resync), and the routes of a graceful-restart peer past its restart time (or
  // back, past gr_stale_path_limit); nothing otherwise. Call from a timer.
  void expire_stale(Clock::time_point now);
  // When expire_stale() will have work: nullopt when no resync is running (or the session is
  // lost: the clock waits for the next one).
  std::optional<Clock::time_point> stale_deadline() const;
  bool resyncing() const { return resyncing_; }

  // Emits every prefix held, as on_route messages (sorted by prefix).
  void replay() const;

  std::size_t routes_of(const bmp::PeerKey& peer) const;
  std::map<bmp::PeerKey, std::size_t> routes_per_peer() const;
  const BmpRibStats& stats() const { return stats_; }

 private:
  // One peer's path to a prefix.
  struct Path {
    std::uint32_t next_hop = 0;  // host order (net::Ipv4Addr::value)
    std::uint16_t peer = 0;      // the peer's slot (Peer::slot)
    bool stale = false;
    bool gbp_mark = false;  // the path carries the GBP mark (gbp_mark.hpp)
  };
  static_assert(sizeof(Path) == 8);
  // Every peer's path to one prefix, at most one per peer; two inline: one per reflector.
  using Paths = boost::container::small_vector<Path, 2>;
  // Prefixes as keys: address and length in one word (ordered as net::Ipv4Prefix is).
  using RouteKey = std::uint64_t;
  static RouteKey key_of(const net::Ipv4Prefix& p) { return (RouteKey{p.addr} << 8) | p.len; }
  static net::Ipv4Prefix prefix_of(RouteKey k) {
    return net::Ipv4Prefix{static_cast<std::uint32_t>(k >> 8), static_cast<std::uint8_t>(k & 0xff)};
  }
  using Routes = std::pmr::unordered_map<RouteKey, Paths>;
  enum class Gr : std::uint8_t {
    none,
    asking,  // down; routes kept stale until bgpd's status says whether it has them
    kept,    // down; bgpd has them stale: kept until the peer is back or its restart time
    back,    // up again; stale routes wait to be re-sent
  };
  struct Peer {
    std::uint16_t slot = 0;  // its paths' Path::peer; unique among peers_
    bool up = false;         // in the current session
    std::size_t routes = 0;  // prefixes it has a path to
    bmp::GracefulRestartCap sent_gr, received_gr;  // of its last Peer Up
    Gr gr = Gr::none;
    Clock::time_point gr_since{}, gr_deadline{};
  };

  // What the consumer holds of a prefix: the union of its paths' next hops (sorted, unique),
  // and whether every path carries the GBP mark.
  struct Union {
    boost::container::small_vector<std::uint32_t, 4> next_hops;
    bool gbp_mark = false;
    bool operator==(const Union&) const = default;
  };
  static Union union_of(const Paths& paths);
  static Path* path_of(Paths& paths, std::uint16_t slot);
  // Emits the prefix when its union changed from `before` to `after`.
  void emit_if_changed(RouteKey key, const Union& before, const Union& after);
  // Removes the path of `slot` from the record at `it` (the record too with its last path),
  // counts it and emits the change.
  void remove_path(Routes::iterator it, Peer& peer);
  // The keys of the prefixes `peer` has a path to (only stale ones when `stale_only`), sorted:
  // changes are emitted in prefix order.
  std::vector<RouteKey> keys_of(const Peer& peer, bool stale_only) const;
  std::size_t fresh_routes(const Peer& peer) const;
  // A slot no peer of peers_ has; nullopt when all are taken.
  std::optional<std::uint16_t> free_slot() const;
  fpm::RouteMessage message(RouteKey key, const Union& given) const;
  void sweep(Peer& peer, bool by_limit);
  void finish_resync_if_done();
  void end_gr(Peer& peer);
  // Sweeps its stale routes and ends its graceful restart; forgets it when it is down. Returns
  // the next iterator.
  std::map<bmp::PeerKey, Peer>::iterator drop_stale(std::map<bmp::PeerKey, Peer>::iterator it);
  void gr_from_bgpd(const std::vector<BgpdPeer>& peers, Clock::time_point polled_at);
  // bgpd has the peer's whole table of this session, and so has the RIB.
  bool table_through(const Peer& peer, const BgpdPeer& report) const;
  void finish_resync();

  Handlers handlers_;
  BmpRibOptions options_;
  std::map<bmp::PeerKey, Peer> peers_;
  // The routes live in a pool of their own, as RouteTable's do (route_table.hpp says why):
  // they arrive in a burst among many short-lived buffers.
  std::pmr::unsynchronized_pool_resource routes_pool_;
  Routes routes_{&routes_pool_};
  bool session_up_ = false;
  bool resyncing_ = false;
  Clock::time_point resync_since_{};
  std::set<bmp::PeerKey> awaiting_eor_;  // during a resync
  bool awaited_any_ = false;
  BmpRibStats stats_;
};

}  // namespace vxfed::bgp
