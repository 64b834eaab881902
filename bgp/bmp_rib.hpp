// Routes learned over BMP, per monitored peer (pure logic, no I/O, no clock of its own).
//
// bgpd, running as a BGP view, reports each peer's post-policy routes (bmp_session.hpp). The
// RIB keeps them per peer (PeerKey -> prefix -> next hop) and gives its owner what zebra would
// have sent over FPM, so bgp::RouteTable::apply stays the one consumer-facing table: for every
// prefix whose union of next hops across peers changed, one fpm::RouteMessage (RTPROT_BGP,
// table main, family AF_INET, the union sorted and unique, at most fpm::kMaxNextHops: ECMP when
// peers give different next hops; is_delete once no peer has the prefix).
//
// Semantics (docs/bgp.md, "Learning routes (BMP)"):
//   - A prefix stays while at least one peer has it.
//   - Peer Down withdraws that peer's routes at once. A Peer Down, route or End-of-RIB for a
//     peer not up changes nothing (counted).
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

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
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
};

// One peer as bgpd's own status reports it (the adapter's poll of `show bgp view ... neighbors`).
struct BgpdPeer {
  net::Ipv4Addr address;
  bool established = false;
  std::uint32_t accepted = 0;  // prefixes bgpd holds from it after inbound policy
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
};

class BmpRib {
 public:
  using Clock = std::chrono::steady_clock;
  struct Handlers {
    std::function<void(const fpm::RouteMessage&)> on_route;
    std::function<void()> on_full_table;
  };

  explicit BmpRib(Handlers handlers, BmpRibOptions options = {});

  // The BMP feed, as BmpStation hands it (bmp_station.hpp: rib_handlers()).
  void session_started(Clock::time_point now);  // Initiation
  void session_lost();                          // connection closed or stream broken
  void peer_up(const bmp::PeerKey& peer);
  void peer_down(const bmp::PeerKey& peer);
  void update(const bmp::PeerKey& peer, const bmp::Update& update);

  // bgpd's own view of its peers, polled at `polled_at` from a bgpd running since
  // `bgpd_started`, ends the resync where BMP alone cannot (FRR 8.4 sends End-of-RIB only in
  // the table it dumps at Initiation: not for a peer that comes up later, nor for a peer that
  // is down; a Peer Down of a peer that was never up in this session is ignored). During a
  // resync, poll_settle after session_started(), for each peer still awaited:
  //   - bgpd has it Established and the routes re-sent by it cover bgpd's accepted count: its
  //     table is through; its routes still stale are swept.
  //   - bgpd has it down (or does not know it) and bgpd has run new_bgpd_grace: it is not
  //     coming back with routes; its stale routes are swept.
  // Once no peer is awaited and every peer bgpd has Established is up here, the table is whole
  // (on_full_table), also when there was no peer at all.
  void bgpd_peers(const std::vector<BgpdPeer>& peers, Clock::time_point polled_at, Clock::time_point bgpd_started);

  // Sweeps every stale route once stale_limit has passed since session_started() (and
  // completes the resync); nothing otherwise. Call from a timer.
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
  struct Entry {
    net::Ipv4Addr next_hop;
    bool stale = false;
  };
  struct Peer {
    bool up = false;  // in the current session
    std::map<net::Ipv4Prefix, Entry> routes;
  };

  void changed(const net::Ipv4Prefix& prefix);  // recompute the union, emit when it differs
  fpm::RouteMessage message(const net::Ipv4Prefix& prefix, const std::vector<std::uint32_t>& next_hops) const;
  void sweep(Peer& peer, bool by_limit);
  void finish_resync_if_done();
  void finish_resync();

  Handlers handlers_;
  BmpRibOptions options_;
  std::map<bmp::PeerKey, Peer> peers_;
  std::map<net::Ipv4Prefix, std::vector<std::uint32_t>> given_;  // what the consumer holds
  bool session_up_ = false;
  bool resyncing_ = false;
  Clock::time_point resync_since_{};
  std::set<bmp::PeerKey> awaiting_eor_;  // during a resync
  bool awaited_any_ = false;
  BmpRibStats stats_;
};

}  // namespace vxfed::bgp
