// The BGP adapter facade that the BGP route source owns (bgp/route_source.hpp, docs/bgp.md).
//
// Lifecycle: create() validates; start() renders the FRR config, applies it through FRR's
// tools (blocking, ~1-2 s with frr-reload) and opens the FPM server; zebra connects and
// streams its selected routes; the adapter turns them into RemoteRoutes and calls on_routes
// with deltas, and with a full table after every resync. Peer status is polled from vtysh
// in a helper thread every frr.status_interval_ms.
//
// Threading: everything runs on the io_context passed to create(); call the adapter only from
// that thread. Callbacks are invoked on it.
//
// Resync: when zebra (re)connects it resends every route. Routes it does not resend are
// removed once the stream has been quiet for fpm.resync_settle_ms and at least
// fpm.resync_min_ms have passed since the connection (a restarted zebra needs bgpd to
// re-learn its routes first); then on_routes gets {full = true}. When zebra disconnects the
// routes stay: the dataplane keeps forwarding on them.
//
// bgpd restarts (zebra stays): with graceful_restart, zebra's deletes are held from the moment
// bgpd's pid file names a new bgpd until its peers are back with their routes
// (restart_hold.hpp, docs/bgp.md "bgpd restarts").
#pragma once

#include <atomic>
#include <utility>  // before asio: Boost 1.74 awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "bgp/bmp_rib.hpp"
#include "bgp/bmp_station.hpp"
#include "bgp/config.hpp"
#include "bgp/fpm_server.hpp"
#include "bgp/peer_status.hpp"
#include "bgp/restart_hold.hpp"
#include "bgp/route_table.hpp"
#include "common/routes.hpp"

namespace vxfed::bgp {

struct AdapterStats {
  Feed feed = Feed::kFpm;
  bool feed_connected = false;        // the feed's session (zebra's FPM or bgpd's BMP) is up
  bool fpm_connected = false;
  std::uint64_t fpm_connections = 0;
  std::uint64_t frames = 0;
  std::uint64_t messages = 0;
  std::uint64_t malformed = 0;        // frames + messages dropped as malformed
  std::uint64_t stream_errors = 0;
  std::uint64_t fpm_refused = 0;       // connections refused: not loopback, not zebra's user, busy
  std::uint64_t fpm_refused_not_loopback = 0, fpm_refused_wrong_user = 0, fpm_refused_busy = 0;
  std::uint64_t non_bgp_ignored = 0;
  std::uint64_t no_peer = 0;
  std::uint64_t unresolved_routes = 0;
  std::uint64_t resyncs = 0;
  std::uint64_t swept = 0;
  std::uint64_t max_prefix_exceeded = 0;
  std::uint64_t withheld = 0;          // routes of peers over max_prefix, not installed
  std::uint64_t deletes_held = 0;      // zebra deletes held while our bgpd restarted
  std::uint64_t held_released = 0;     // of those, removed once its peers were back
  std::uint64_t bgpd_restarts = 0;     // new bgpd processes seen (pid file)
  bool holding_deletes = false;
  std::uint64_t next_hops_refused = 0;    // next hops outside their cluster's vtep_ranges
  std::uint64_t no_allowed_next_hop = 0;  // routes withheld: none of their next hops allowed
  std::uint64_t routes = 0;
  std::uint64_t applies = 0;
  double last_apply_seconds = 0;
  bool resyncing = false;
  // The BMP feed (feed == kBmp): the station and the per-peer routes (bmp_station.hpp, bmp_rib.hpp).
  BmpStats bmp;
  BmpRibStats bmp_rib;
};

struct AdapterOptions {
  BgpConfig config;
  net::Ipv4Addr vtep;                       // our VTEP: next hop of everything we advertise
  std::vector<net::Ipv4Prefix> advertise;   // this node's blocks
  VniLookup vni_of;                    // network name -> VNI
  std::function<void(const RouteUpdate&)> on_routes;
  // Optional: called on the io thread after each peer status poll.
  std::function<void(const std::vector<PeerStatus>&)> on_peers;
};

// What the route source needs of an adapter: the seam that lets its unit tests replace FRR
// and FPM with a fake (tests/bgp/fake_adapter.hpp). Adapter below is the real one.
class AdapterInterface {
 public:
  virtual ~AdapterInterface() = default;
  virtual Status start() = 0;
  virtual void stop() = 0;
  virtual Status reconfigure(BgpConfig config, std::vector<net::Ipv4Prefix> advertise) = 0;
  // Re-resolves every route's VNI through AdapterOptions::vni_of; changes go to on_routes.
  virtual void networks_changed() = 0;
  // What we advertise changed (this node's blocks): FRR's config is re-applied without
  // blocking the caller (frr-reload takes seconds); failures are logged. Before start():
  // only stored.
  virtual void set_advertised(std::vector<net::Ipv4Prefix> advertise) = 0;
  // The GBP mark on what we advertise (docs/bgp.md, "The GBP mark") changed: set in bgpd and
  // our routes sent again at once (gbp_mark_commands.hpp), off the io thread, after any apply
  // that runs; `done` gets the result on the io thread. One call at a time: the caller waits for
  // `done` before the next (GbpMarkFollower owns the coalescing and the retries); a call while
  // one waits is refused (done with an error). Before start(): stored, done({}).
  virtual void set_gbp_mark(bool mark, std::function<void(Status)> done) = 0;
  virtual std::vector<RemoteRoute> routes() const = 0;  // every route given out, in force
  virtual std::vector<PeerStatus> peers() const = 0;
  virtual AdapterStats stats() const = 0;
};
using AdapterFactory = std::function<Result<std::unique_ptr<AdapterInterface>>(AdapterOptions options)>;

class Adapter : public AdapterInterface {
 public:
  static Result<std::unique_ptr<Adapter>> create(boost::asio::io_context& io, AdapterOptions opts);
  ~Adapter() override;

  Status start() override;
  void stop() override;
  Status reconfigure(BgpConfig config, std::vector<net::Ipv4Prefix> advertise) override;
  void networks_changed() override;
  void set_advertised(std::vector<net::Ipv4Prefix> advertise) override;
  void set_gbp_mark(bool mark, std::function<void(Status)> done) override;

  std::vector<RemoteRoute> routes() const override { return table_.snapshot(); }
  std::vector<PeerStatus> peers() const override;
  AdapterStats stats() const override;
  const BgpConfig& config() const { return opts_.config; }
  // The config text last applied, passwords redacted (safe to log or show).
  std::string rendered_config_redacted() const;
  std::uint16_t fpm_port() const { return server_ ? server_->port() : 0; }
  std::uint16_t bmp_port() const { return bmp_ ? bmp_->port() : 0; }

 private:
  Adapter(boost::asio::io_context& io, AdapterOptions opts);
  Status apply();
  // new_bgpd: bgpd's pid changed since the last apply. One without a `router bgp` (its own
  // load of frr.conf failed) is loaded whole with vtysh -f before the usual frr-reload (which
  // cannot see that this bgpd lacks the route-maps zebra has), then soft-cleared; one that
  // loaded its config gets only the frr-reload (adapter.cpp says why).
  // send_again: our routes are sent again after the apply (a soft clear out: a changed GBP mark
  // reaches the peers now, not when bgpd's route-map delay timer fires). done: told the result.
  void apply_in_background(bool new_bgpd = false, std::function<void(Status)> done = nullptr,
                           bool send_again = false);
  // The GBP mark alone, in place in bgpd when the rest of what it runs is what we last applied
  // (gbp_mark_commands.hpp); else, or when that fails, a whole apply that sends again.
  void apply_mark_in_background(std::function<void(Status)> done);
  // After an apply's result: a GBP mark waiting, then a changed advertised list.
  void next_apply(bool new_bgpd);
  void join_apply();
  Status open_fpm();
  // The BMP feed: bgpd (a view) streams each peer's routes to our station; the per-peer RIB
  // turns them into what RouteTable takes (bmp_rib.hpp says why the table still sits behind it).
  Status open_bmp();
  Status open_feed() { return opts_.config.feed == Feed::kBmp ? open_bmp() : open_fpm(); }
  void close_feed();
  void on_bmp_full_table();
  // Ends a resync of the table (either feed): sweeps what was not sent again, logs `what`
  // with the counts and hands the consumer the full table.
  void end_resync(const char* what);
  // bgp.bmp.stale_time, or the restart time when it is 0.
  std::chrono::seconds bmp_stale_time() const;
  // bgpd's polled peer status to the RIB: ends a resync BMP alone cannot (bmp_rib.hpp).
  void tell_rib_bgpd_peers(std::chrono::steady_clock::time_point polled_at);
  void arm_stale_timer();
  void on_fpm_connect();
  void on_batch_end();
  void arm_resync_timer();
  void flush();
  void poll_peers();
  void on_route(const fpm::RouteMessage& m);
  // Reads bgpd's pid file; a new bgpd opens the restart hold.
  void check_bgpd_pid();
  void end_restart_hold();

  boost::asio::io_context& io_;
  AdapterOptions opts_;
  RouteTable table_;
  std::unique_ptr<FpmServer> server_;
  std::unique_ptr<BmpRib> rib_;        // the BMP feed's routes per peer (kept across station restarts)
  std::unique_ptr<BmpStation> bmp_;
  boost::asio::steady_timer stale_timer_;
  boost::asio::steady_timer resync_timer_;
  boost::asio::steady_timer poll_timer_;
  std::chrono::steady_clock::time_point connected_at_{};
  std::chrono::steady_clock::time_point last_message_at_{};
  std::string rendered_;
  std::uint64_t applies_ = 0;
  double last_apply_seconds_ = 0;
  std::vector<PeerStatus> peers_;
  RestartHold restart_hold_;
  std::string bgpd_pid_file_;
  std::chrono::steady_clock::time_point pid_checked_at_{};
  std::uint64_t bgpd_restarts_ = 0;
  std::vector<std::string> over_limit_;
  std::vector<std::string> over_limit_kept_;  // warning-only peers over their limit
  std::thread poll_thread_;
  // Only the poll thread touches it (one at a time): when a reflector redial was last logged.
  std::chrono::steady_clock::time_point redial_logged_at_{};
  // The config as frr.conf gets it: the view with the BMP feed, whatever bgpd runs now.
  BgpConfig file_config() const;
  // Records in opts_.config whether the running bgpd holds the default instance although the
  // feed is bmp (a node moving from FPM): status and clear commands then address it, not the
  // view (instance_kind.hpp). Logs the move's start and end.
  void note_instance(bool bmp_in_default_instance);
  std::thread apply_thread_;   // set_advertised(): frr-reload off the io thread
  bool applying_ = false;      // apply_thread_ runs; its result is posted back
  bool reapply_ = false;       // the advertised list changed again meanwhile
  // set_gbp_mark()'s call while another apply ran: started when that one ends (at most one).
  std::optional<std::function<void(Status)>> mark_waiting_;
  bool send_again_at_start_ = false;  // set_gbp_mark() before start(): its apply carries the mark
  // The bgpd (its pid file's content) the last successful apply reached. Another one — FRR
  // restarted, and its own load of frr.conf may have failed or found an older file — gets the
  // config again at the next peer poll (frr-reload changes nothing where it is in force).
  std::string applied_to_bgpd_;
  // The next attempt at a new bgpd after one that failed (kReapplyInterval apart).
  static constexpr std::chrono::seconds kReapplyInterval{5};
  std::chrono::steady_clock::time_point reapply_not_before_{};
  void reapply_to_new_bgpd();
  std::shared_ptr<std::atomic<bool>> alive_;
  bool polling_ = false;
  bool poll_again_ = false;  // the BMP RIB asked for bgpd's status while a poll was under way
  bool started_ = false;
};

}  // namespace vxfed::bgp
