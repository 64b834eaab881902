#include "bgp/route_source.hpp"

#include <sys/stat.h>

#include "bgp/vty_client.hpp"

#include <spdlog/spdlog.h>

#include "bgp/route_cache.hpp"
#include "bgp/route_table.hpp"

namespace vxfed::bgp {

namespace asio = boost::asio;

RouteSource::RouteSource(asio::io_context& io, RouteSourceOptions options, std::shared_ptr<spdlog::logger> log)
    : options_(std::move(options)),
      log_(log ? std::move(log) : spdlog::default_logger()),
      save_timer_(io),
      preserve_timer_(io),
      start_timer_(io) {}

Result<std::unique_ptr<RouteSource>> RouteSource::create(asio::io_context& io, RouteSourceOptions options,
                                                         std::shared_ptr<spdlog::logger> log) {
  return create(
      io, std::move(options),
      [&io](AdapterOptions adapter_options) -> Result<std::unique_ptr<AdapterInterface>> {
        auto adapter = Adapter::create(io, std::move(adapter_options));
        if (!adapter) return make_error(adapter.error());
        return std::unique_ptr<AdapterInterface>(std::move(*adapter));
      },
      std::move(log));
}

Result<std::unique_ptr<RouteSource>> RouteSource::create(asio::io_context& io, RouteSourceOptions options,
                                                         const AdapterFactory& make_adapter,
                                                         std::shared_ptr<spdlog::logger> log) {
  std::unique_ptr<RouteSource> source(new RouteSource(io, std::move(options), std::move(log)));
  AdapterOptions adapter_options;
  adapter_options.config = source->options_.config;
  adapter_options.vtep = source->options_.vtep;
  adapter_options.advertise = source->options_.advertise;
  adapter_options.vni_of = source->options_.vni_of;
  auto* self = source.get();
  adapter_options.on_routes = [self](const RouteUpdate& update) { self->deliver(update); };
  auto adapter = make_adapter(std::move(adapter_options));
  if (!adapter) return make_error("bgp: " + adapter.error());
  source->adapter_ = std::move(*adapter);
  source->network_vnis_ = source->peer_network_vnis();
  return source;
}

RouteSource::~RouteSource() { stop(); }

void RouteSource::start(Sink sink, std::function<bool()> start_when, std::chrono::milliseconds start_wait) {
  sink_ = std::move(sink);
  replay_cache();
  if (!start_when) {
    try_start();
    return;
  }
  wait_to_start(std::move(start_when), std::chrono::steady_clock::now() + start_wait);
}

void RouteSource::wait_to_start(std::function<bool()> start_when, std::chrono::steady_clock::time_point deadline) {
  if (start_when() || std::chrono::steady_clock::now() >= deadline) {
    try_start();
    return;
  }
  start_timer_.expires_after(std::chrono::milliseconds(20));
  start_timer_.async_wait([this, start_when = std::move(start_when), deadline](const boost::system::error_code& ec) {
    if (!ec) wait_to_start(start_when, deadline);
  });
}

void RouteSource::stop() {
  start_timer_.cancel();
  save_timer_.cancel();
  preserve_timer_.cancel();
  if (cache_writer_.joinable()) cache_writer_.join();
  if (!sink_) return;  // never started
  if (!preserving_) save_cache();
  adapter_->stop();
  sink_ = nullptr;
}

void RouteSource::networks_changed() {
  refresh_advertised();
  auto now = peer_network_vnis();
  if (now == network_vnis_) return;  // no peer's network changed: nothing to re-resolve
  network_vnis_ = std::move(now);
  log_->info("bgp: a peer's network was added, removed or renumbered; re-resolving learned routes");
  adapter_->networks_changed();
}

void RouteSource::refresh_advertised() {
  if (!options_.advertise_of) return;
  auto now = options_.advertise_of();
  if (now == options_.advertise) return;
  log_->info("bgp: this node's blocks changed: advertising {} prefixes (was {})", now.size(), options_.advertise.size());
  options_.advertise = now;
  adapter_->set_advertised(std::move(now));
}

Status RouteSource::reconfigure(BgpConfig config, std::vector<net::Ipv4Prefix> advertise) {
  BgpConfig kept = config;
  if (auto ok = adapter_->reconfigure(std::move(config), advertise); !ok) return ok;
  options_.config = std::move(kept);
  options_.advertise = std::move(advertise);
  network_vnis_ = peer_network_vnis();  // the adapter re-resolved under the new peers
  return {};
}

void RouteSource::set_gbp_mark(bool mark, std::function<void(Status)> done) {
  options_.config.gbp_mark = mark;
  adapter_->set_gbp_mark(mark, std::move(done));
}

std::vector<std::optional<std::uint32_t>> RouteSource::peer_network_vnis() const {
  std::vector<std::optional<std::uint32_t>> out;
  for (const auto& p : options_.config.peers)
    if (p.vni == 0 && options_.vni_of) out.push_back(options_.vni_of(p.network));
  return out;
}

void RouteSource::replay_cache() {
  if (options_.cache_path.empty()) return;
  auto cached = load_route_cache(options_.cache_path);
  if (!cached) {
    log_->warn("bgp: ignoring the route cache: {}", cached.error());
    return;
  }
  if (cached->empty()) return;
  // Each route gets the peer and VNI it would get if zebra sent it now: peers or networks
  // may have changed while vxfedd was down.
  RouteUpdate out;
  std::size_t unresolved = 0;
  for (auto& route : *cached) {
    const Attribution a = attribute(options_.config.peers, options_.vni_of, route.prefix);
    if (a.vni == 0) {
      ++unresolved;
      continue;
    }
    route.vni = a.vni;
    route.peer = options_.config.peers[static_cast<std::size_t>(a.peer)].address;
    out.upserts.push_back(std::move(route));
  }
  if (unresolved > 0)
    log_->info("bgp: {} cached routes have no peer or network now; not replayed", unresolved);
  if (out.upserts.empty()) return;
  preserving_ = true;
  sink_(out);
  const std::chrono::seconds preserve_for(options_.config.restart_time_s);
  log_->info("bgp: forwarding on {} routes of the previous run until the first FPM resync (at most {} s)",
             out.upserts.size(), preserve_for.count());
  preserve_timer_.expires_after(preserve_for);
  preserve_timer_.async_wait([this, preserve_for](const boost::system::error_code& ec) {
    if (ec || !preserving_) return;
    log_->warn("bgp: no full table from zebra within {} s; dropping the routes kept from the previous run",
               preserve_for.count());
    RouteUpdate full;
    full.full = true;
    full.upserts = adapter_->routes();
    deliver(full);
  });
}

// (Failing here made vxfedd exit, taking the CNI API down with it, whenever FRR was down.)
std::chrono::milliseconds start_retry_delay(std::uint64_t failures, std::chrono::milliseconds cap) {
  // FRR started with (or just after) vxfedd, as in a DaemonSet's roll: its bgpd answers within
  // a second, and a 5 s wait before the next try was most of a node's time without its block
  // advertised. So 0.25, 0.5, 1, 2 s, then every `cap`: a node without FRR costs a few quick
  // frr-reload failures, then one every cap.
  const auto shift = std::min<std::uint64_t>(failures ? failures - 1 : 0, 20);  // 250 ms << 20 > any cap
  return std::min(cap, std::chrono::milliseconds(250) * (std::int64_t{1} << shift));
}

void RouteSource::try_start() {
  auto ok = adapter_->start();
  if (ok) {
    if (start_failures_ > 0) log_->info("bgp: adapter started after {} failed attempts", start_failures_);
    return;
  }
  if (start_failures_++ % 12 == 0)
    log_->error("{} (retrying within {} ms; BGP routes wait for it)", ok.error(), options_.start_retry.count());
  retry_at_ = std::chrono::steady_clock::now() + start_retry_delay(start_failures_, options_.start_retry);
  bgpd_socket_seen_ = bgpd_socket_identity();
  wait_to_retry();
}

// The bgpd vty socket's inode, 0 when there is none: a new bgpd (FRR started or restarted)
// makes a new one.
std::uint64_t RouteSource::bgpd_socket_identity() const {
  struct stat st {};
  const std::string path = vty_socket_path(options_.config.frr.vty_socket_dir, "bgpd");
  return ::stat(path.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
}

void RouteSource::wait_to_retry() {
  // Every 250 ms: the retry is due, or a new bgpd socket appeared (FRR came up: try now
  // rather than at the back-off's next step).
  const auto now = std::chrono::steady_clock::now();
  start_timer_.expires_after(std::min<std::chrono::steady_clock::duration>(
      std::chrono::milliseconds(250), retry_at_ > now ? retry_at_ - now : std::chrono::steady_clock::duration::zero()));
  start_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    const auto identity = bgpd_socket_identity();
    if (std::chrono::steady_clock::now() >= retry_at_ || (identity != 0 && identity != bgpd_socket_seen_)) {
      try_start();
      return;
    }
    wait_to_retry();
  });
}

void RouteSource::save_cache() {
  if (options_.cache_path.empty()) return;
  if (auto ok = save_route_cache(options_.cache_path, adapter_->routes()); !ok)
    log_->warn("bgp: route cache not written: {}", ok.error());
}

void RouteSource::save_cache_in_background() {
  if (cache_writing_) {  // the write in progress has older routes: once more after it
    schedule_save();
    return;
  }
  if (cache_writer_.joinable()) cache_writer_.join();
  cache_writing_ = true;
  cache_writer_ = std::thread([this, routes = adapter_->routes()] {
    if (auto ok = save_route_cache(options_.cache_path, routes); !ok)
      log_->warn("bgp: route cache not written: {}", ok.error());
    cache_writing_ = false;
  });
}

// The cache only has to be recent, not exact: the resync after a restart corrects it.
void RouteSource::schedule_save() {
  if (save_pending_ || options_.cache_path.empty()) return;
  save_pending_ = true;
  save_timer_.expires_after(options_.save_interval);
  save_timer_.async_wait([this](const boost::system::error_code& ec) {
    save_pending_ = false;
    if (!ec && !preserving_) save_cache_in_background();
  });
}

void RouteSource::deliver(const RouteUpdate& update) {
  if (update.full && preserving_) {
    preserving_ = false;
    preserve_timer_.cancel();
  }
  // While replayed routes are in force the cache keeps them (a second restart needs them too).
  if (!preserving_) schedule_save();
  if (sink_) sink_(update);
}

}  // namespace vxfed::bgp
