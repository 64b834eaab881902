// The BGP route source vxfedd hosts: the FRR adapter's routes (bgp/adapter.hpp), handed on
// as RouteUpdates (common/routes.hpp) with the VNIs already resolved, plus what a daemon
// needs around the adapter. control/federation/bgp_from_config.hpp builds it from vxfedd's config.
//
// - Restarts: the routes learned are cached in a file (bgp/route_cache.hpp). A restarted
//   vxfedd replays them at start(), before its first dataplane snapshot, so the dataplane
//   keeps forwarding while zebra re-sends its table over FPM; the adapter's first full table
//   (after its resync) replaces them. If none comes within bgp.restart_time (FRR down), the
//   replayed routes are dropped. Replayed routes get the VNI their peer's network has now.
// - Advertised: this node's blocks (RouteSourceOptions::advertise_of), re-asked whenever the
//   networks change; when they differ the adapter re-applies FRR's config in a helper thread
//   (frr-reload takes 1-10 s: the API call that added the network does not wait for it).
// - Networks: a peer's routes get the VNI of its `network`, looked up through VniLookup. The
//   host calls networks_changed() whenever its networks change (vxfedd: NodeState's
//   observer, on every add/remove/renumber from the API or a reload); when a peer's network
//   got, lost or changed its VNI the adapter re-resolves at once: routes learned before
//   their network existed are installed, routes of a removed network are withdrawn.
// - FRR not up yet (boot order) or restarting: start() does not fail; the adapter's start is
//   retried (0.25 s, doubling to start_retry, and at once when a new bgpd vty socket appears)
//   while the host serves everything else.
//
// Threading: everything on the io_context given to create(); the sink is called on it.
#pragma once

#include <chrono>
#include <cstdint>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>  // before asio: Boost 1.74 awaitable.hpp needs std::exchange
#include <vector>

#include <boost/asio.hpp>
#include <spdlog/logger.h>

#include "bgp/adapter.hpp"
#include "common/routes.hpp"

namespace vxfed::bgp {

struct RouteSourceOptions {
  BgpConfig config;                        // bgp.enabled
  net::Ipv4Addr vtep;                      // our VTEP: next hop of what we advertise
  std::vector<net::Ipv4Prefix> advertise;  // what we advertise at start: this node's blocks
  // What we advertise now, asked at every networks_changed() (a new network brings a new
  // block); a change re-applies FRR's config. Empty: `advertise` stays as given.
  std::function<std::vector<net::Ipv4Prefix>()> advertise_of;
  VniLookup vni_of;                        // the host's networks: name -> VNI
  std::string cache_path;                  // "": no route cache
  std::chrono::milliseconds start_retry{5000};
  std::chrono::milliseconds save_interval{2000};  // at most one cache write per interval
};

// The wait before the adapter's next start after `failures` failed ones (>= 1): 0.25 s
// doubling up to `cap` (RouteSourceOptions::start_retry).
std::chrono::milliseconds start_retry_delay(std::uint64_t failures, std::chrono::milliseconds cap);

class RouteSource {
 public:
  using Sink = std::function<void(const RouteUpdate& update)>;

  // With the real FRR adapter.
  static Result<std::unique_ptr<RouteSource>> create(boost::asio::io_context& io, RouteSourceOptions options,
                                                     std::shared_ptr<spdlog::logger> log);
  // With any adapter (tests: a fake). The factory gets the options with on_routes set.
  static Result<std::unique_ptr<RouteSource>> create(boost::asio::io_context& io, RouteSourceOptions options,
                                                     const AdapterFactory& make_adapter,
                                                     std::shared_ptr<spdlog::logger> log);
  ~RouteSource();

  // Replays the route cache into `sink`, then starts the adapter (retrying until it starts).
  // With `start_when`, the adapter's first attempt waits until it returns true (polled every
  // 20 ms), at most `start_wait`: the adapter's start (frr-reload, seconds on a loaded node)
  // blocks the io thread, and vxfedd must send the dataplane its tables first (a rolling
  // update's new dataplane forwards nothing until then).
  void start(Sink sink, std::function<bool()> start_when = {},
             std::chrono::milliseconds start_wait = std::chrono::seconds(5));
  // Writes the cache (unless replayed routes are still in force) and stops the adapter.
  void stop();
  // The host's networks changed: re-resolve if a peer's network got, lost or changed its VNI;
  // re-advertise if this node's blocks changed.
  void networks_changed();
  const std::vector<net::Ipv4Prefix>& advertised() const { return options_.advertise; }
  // A reloaded config (SIGHUP): re-applies FRR's config, re-resolves under the new peers.
  Status reconfigure(BgpConfig config, std::vector<net::Ipv4Prefix> advertise);
  // The GBP mark alone: FRR's config re-applied off the io thread (AdapterInterface::set_gbp_mark).
  void set_gbp_mark(bool mark, std::function<void(Status)> done);

  std::vector<PeerStatus> peers() const { return adapter_->peers(); }
  AdapterStats stats() const { return adapter_->stats(); }
  bool connected() const { return adapter_->stats().feed_connected; }  // FPM or BMP
  // Replayed routes from the previous run are in force (no full table from zebra yet).
  bool preserving() const { return preserving_; }

 private:
  RouteSource(boost::asio::io_context& io, RouteSourceOptions options, std::shared_ptr<spdlog::logger> log);
  void replay_cache();
  void refresh_advertised();
  void try_start();
  std::vector<std::optional<std::uint32_t>> peer_network_vnis() const;
  void save_cache();           // now, on this thread (at stop)
  void save_cache_in_background();
  void schedule_save();
  void deliver(const RouteUpdate& update);

  RouteSourceOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<AdapterInterface> adapter_;
  Sink sink_;
  std::uint64_t start_failures_ = 0;
  std::chrono::steady_clock::time_point retry_at_{};  // the next start attempt, by the back-off
  std::uint64_t bgpd_socket_seen_ = 0;                // bgpd's vty socket at the last attempt
  std::uint64_t bgpd_socket_identity() const;
  void wait_to_retry();
  void wait_to_start(std::function<bool()> start_when, std::chrono::steady_clock::time_point deadline);
  bool preserving_ = false;   // routes of the previous run in force, no full table yet
  bool save_pending_ = false;
  std::vector<std::optional<std::uint32_t>> network_vnis_;  // of bgp.peers[].network, last seen
  boost::asio::steady_timer save_timer_;
  boost::asio::steady_timer preserve_timer_;
  boost::asio::steady_timer start_timer_;
  // The periodic save writes on a thread of its own: 130,000 routes are ~11 MB of text, tens
  // of milliseconds the route updates behind it would otherwise wait. One write at a time;
  // the routes are copied on the io_context's thread first.
  std::thread cache_writer_;
  std::atomic<bool> cache_writing_{false};
};

}  // namespace vxfed::bgp
