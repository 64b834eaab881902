#include "bgp/adapter.hpp"

#include "common/peer_credentials.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <utility>

#include "bgp/frr_apply.hpp"
#include "bgp/frr_render.hpp"
#include "bgp/gbp_mark_commands.hpp"
#include "bgp/instance_kind.hpp"
#include "bgp/privileged_port.hpp"
#include "bgp/process.hpp"
#include "bgp/vty_client.hpp"

namespace vxfed::bgp {

namespace asio = boost::asio;

Adapter::Adapter(asio::io_context& io, AdapterOptions opts)
    : io_(io),
      opts_(std::move(opts)),
      table_(opts_.config.peers, opts_.vni_of),
      resync_timer_(io),
      stale_timer_(io),
      poll_timer_(io),
      restart_hold_(std::chrono::seconds(opts_.config.restart_time_s)),
      // FRR writes its pid files beside its vty sockets (Debian: /run/frr, alias /var/run/frr).
      bgpd_pid_file_(frr_run_dir(opts_.config.frr.vty_socket_dir) + "/bgpd.pid"),
      alive_(std::make_shared<std::atomic<bool>>(true)) {
  for (const auto& p : opts_.config.peers) {
    PeerStatus s;
    s.address = p.address.str();
    s.remote_asn = p.remote_asn;
    s.cluster = p.cluster;
    peers_.push_back(s);
  }
}

Result<std::unique_ptr<Adapter>> Adapter::create(asio::io_context& io, AdapterOptions opts) {
  if (!opts.config.enabled) return make_error("bgp: the adapter needs an enabled bgp config");
  if (opts.vtep.value == 0) return make_error("bgp: the node's VTEP IP is required (next hop of our routes)");
  if (!opts.vni_of) {
    for (const auto& p : opts.config.peers) {
      if (p.vni == 0) {
        return make_error("bgp: peer " + p.address.str() + " names network '" + p.network +
                          "' but no network->VNI lookup was given");
      }
    }
  }
  return std::unique_ptr<Adapter>(new Adapter(io, std::move(opts)));
}

namespace {

std::string read_pid_file(const std::string& path) {
  std::ifstream in(path);
  std::string pid;
  if (in) in >> pid;
  return pid;
}

// What the running bgpd holds, over its vty socket, where an apply needs to know: for a new
// bgpd (is it bare?) and with the BMP feed (does it still hold the default instance?), and only
// when applying with frr-reload. nullopt: not asked, or no answer.
// `show running-config` is an enable-node command: a vty socket starts in the view node, where
// bgpd answers "% Unknown command" (which once made every new bgpd look bare).
std::optional<BgpInstanceKind> running_kind(const BgpConfig& c, bool new_bgpd) {
  if (c.frr.apply != ApplyMode::kReload || !(new_bgpd || c.feed == Feed::kBmp)) return std::nullopt;
  auto shown = run_vty_commands(vty_socket_path(c.frr.vty_socket_dir, "bgpd"), {"enable", "show running-config"},
                                std::chrono::seconds(10));
  if (!shown || shown->failed != 0) return std::nullopt;
  return running_instance_kind(shown->output);
}

// The BMP feed while the running bgpd still holds the default instance (a node moving from
// the FPM feed): the view must not replace it in place (instance_kind.hpp).
bool bmp_from_default_instance(const BgpConfig& c, std::optional<BgpInstanceKind> kind) {
  return c.feed == Feed::kBmp && kind == BgpInstanceKind::kDefault;
}

// Applies `wanted` (whose rendered text is `file_text`). With `bmp_in_default_instance` the
// running bgpd gets its default instance with the BMP target, through a side file, and
// frr.conf the view, which bgpd's next start loads.
Result<ApplyReport> apply_config(const BgpConfig& wanted, net::Ipv4Addr vtep, const std::vector<net::Ipv4Prefix>& advertise,
                                 const std::string& file_text, bool bmp_in_default_instance) {
  if (!bmp_in_default_instance) return apply_frr_config(wanted.frr, file_text);
  BgpConfig now = wanted;
  now.bmp_in_default_instance = true;
  FrrSettings running = wanted.frr;
  running.config_path += ".running";
  auto r = apply_frr_config(running, render_frr_config(RenderInput{&now, vtep, advertise}));
  if (!r) return r;
  if (auto st = write_config_file(wanted.frr.config_path, file_text); !st) return make_error(st.error());
  return r;
}

// The first apply to a bgpd waits until frr-node.sh has loaded frr.conf into it (frr_apply.hpp,
// BgpdLoad), at most this long; then it applies anyway. frr-node.sh's load takes ~1 s.
constexpr std::chrono::seconds kBgpdLoadWait{10};

// Returns the pid of the bgpd the apply then goes to (`bgpd`, or the one the wait saw).
std::string await_bgpd_load(const FrrSettings& frr, std::string bgpd) {
  if (frr.apply == ApplyMode::kNone) return bgpd;
  const std::string dir = frr_run_dir(frr.vty_socket_dir);
  if (wait_for_bgpd_load(dir, std::chrono::milliseconds(0)).state != BgpdLoad::kLoading) return bgpd;
  spdlog::info("bgp: bgpd{} is still loading frr.conf (frr-node.sh's {}/{}): the first apply to it waits for "
               "that load (at most {} s)", bgpd.empty() ? "" : " (pid " + bgpd + ")", dir, kFrrNodeLoadFile,
               kBgpdLoadWait.count());
  const BgpdLoadWait w = wait_for_bgpd_load(dir, kBgpdLoadWait);
  if (w.state == BgpdLoad::kLoading)
    spdlog::warn("bgp: bgpd{} has not finished loading frr.conf after {:.1f} s (frr-node.sh's {}): applying anyway",
                 w.bgpd_pid.empty() ? "" : " (pid " + w.bgpd_pid + ")", w.waited_s, kFrrNodeLoadFile);
  else
    spdlog::info("bgp: bgpd (pid {}) has loaded frr.conf ({:.2f} s later): applying", w.bgpd_pid, w.waited_s);
  return w.bgpd_pid.empty() ? bgpd : w.bgpd_pid;
}

}  // namespace

BgpConfig Adapter::file_config() const {
  BgpConfig c = opts_.config;
  c.bmp_in_default_instance = false;
  return c;
}

void Adapter::note_instance(bool bmp_in_default_instance) {
  const bool was = opts_.config.bmp_in_default_instance;
  if (bmp_in_default_instance && !was)
    spdlog::warn("bgp: bgpd still runs the default instance (a node moving from the FPM feed): bgp.feed: bmp is "
                 "served from it (its BMP target added, no session reset); frr.conf holds the view '{}', which "
                 "bgpd loads at its next start: restart the FRR container to finish the move", kBgpViewName);
  if (!bmp_in_default_instance && was)
    spdlog::info("bgp: bgpd runs the view '{}' now: the move from the default instance is complete", kBgpViewName);
  opts_.config.bmp_in_default_instance = bmp_in_default_instance;
}

Adapter::~Adapter() {
  stop();
  if (poll_thread_.joinable()) poll_thread_.join();
  join_apply();
}

void Adapter::join_apply() {
  if (apply_thread_.joinable()) apply_thread_.join();
}

Status Adapter::apply() {
  join_apply();  // never two frr-reloads at once
  const BgpConfig wanted = file_config();
  std::string text = render_frr_config(RenderInput{&wanted, opts_.vtep, opts_.advertise});
  std::string bgpd = read_pid_file(bgpd_pid_file_);
  if (bgpd != applied_to_bgpd_) bgpd = await_bgpd_load(wanted.frr, std::move(bgpd));
  const bool in_default = bmp_from_default_instance(wanted, running_kind(wanted, false));
  auto r = apply_config(wanted, opts_.vtep, opts_.advertise, text, in_default);
  if (!r) return make_error("bgp: " + r.error());
  note_instance(in_default);
  applied_to_bgpd_ = bgpd;
  rendered_ = std::move(text);
  ++applies_;
  last_apply_seconds_ = r->seconds;
  spdlog::info("bgp: FRR config applied with {} ({} peers, {} advertised CIDRs) in {:.2f} s",
               to_string(opts_.config.frr.apply), opts_.config.peers.size(), opts_.advertise.size(),
               r->seconds);
  if (!r->output.empty()) spdlog::debug("bgp: FRR tool output: {}", r->output);  // redacted
  if (r->lines_refused_but_in_force)
    spdlog::info("bgp: frr-reload re-ran lines FRR already held (graceful-restart modes) and they were refused; "
                 "the running config holds the whole file");
  return {};
}

Status Adapter::open_fpm() {
  FpmServer::Handlers h;
  h.on_connect = [this] { on_fpm_connect(); };
  h.on_disconnect = [this] {
    resync_timer_.cancel();
    spdlog::info("bgp: FPM connection lost; keeping {} routes until zebra resyncs", table_.size());
  };
  h.on_route = [this](const fpm::RouteMessage& m) { on_route(m); };
  h.on_batch_end = [this] { on_batch_end(); };
  asio::ip::tcp::endpoint ep(asio::ip::address_v4(opts_.config.fpm.listen.value), opts_.config.fpm.port);
  // Whoever binds the port first gets zebra's table: only a privileged port (privileged_port.hpp).
  auto unprivileged = unprivileged_port_start();
  if (!unprivileged) return make_error("bgp: " + unprivileged.error());
  if (auto st = require_privileged_port("bgp.fpm.port", opts_.config.fpm.port, *unprivileged); !st)
    return make_error("bgp: " + st.error());
  auto zebra = uid_of_user(opts_.config.fpm.zebra_user);
  if (!zebra) return make_error("bgp.fpm.zebra_user: " + zebra.error() + " (the user FRR's zebra runs as)");
  auto s = FpmServer::create(io_, ep, std::move(h), FpmAcceptPolicy{*zebra});
  if (!s) return make_error("bgp: " + s.error());
  server_ = std::move(*s);
  return {};
}

Status Adapter::open_bmp() {
  const BmpSettings& b = opts_.config.bmp;
  asio::ip::tcp::endpoint ep(asio::ip::address_v4(b.listen.value), b.port);
  // bgpd connects out: whoever binds the port first would get its table (privileged_port.hpp).
  auto unprivileged = unprivileged_port_start();
  if (!unprivileged) return make_error("bgp: " + unprivileged.error());
  if (auto st = require_privileged_port("bgp.bmp.port", b.port, *unprivileged); !st)
    return make_error("bgp: " + st.error());
  auto bgpd = uid_of_user(b.bgpd_user);
  if (!bgpd) return make_error("bgp.bmp.bgpd_user: " + bgpd.error() + " (the user FRR's bgpd runs as)");
  if (!rib_) {
    BmpRibOptions o;
    o.stale_limit = bmp_stale_time();
    BmpRib::Handlers rh;
    rh.on_route = [this](const fpm::RouteMessage& m) { table_.apply(m); };
    // Posted: the RIB calls it from inside its own update; the table is rebuilt after.
    rh.on_full_table = [this, alive = alive_] {
      asio::post(io_, [this, alive] {
        if (alive->load()) on_bmp_full_table();
      });
    };
    // A Peer Down whose routes bgpd may keep (graceful restart): bgpd's status decides, now.
    rh.ask_bgpd = [this, alive = alive_] {
      asio::post(io_, [this, alive] {
        if (!alive->load()) return;
        if (polling_)
          poll_again_ = true;
        else
          poll_peers();
      });
    };
    rib_ = std::make_unique<BmpRib>(std::move(rh), o);
  }
  BmpStation::Handlers h = rib_handlers(*rib_);
  auto connected = std::move(h.on_connect);
  h.on_connect = [this, connected = std::move(connected)] {
    if (connected) connected();
    spdlog::info("bgp: bgpd connected over BMP; {} routes kept until its peers have re-sent theirs", table_.size());
  };
  auto lost = std::move(h.on_disconnect);
  h.on_disconnect = [this, lost = std::move(lost)](const std::string& why) {
    if (lost) lost(why);
    stale_timer_.cancel();
    spdlog::info("bgp: BMP session lost ({}); keeping {} routes until bgpd reconnects", why, table_.size());
  };
  auto batch = std::move(h.on_batch_end);
  h.on_batch_end = [this, batch = std::move(batch)] {
    if (batch) batch();
    on_batch_end();
    arm_stale_timer();
  };
  auto s = BmpStation::create(io_, ep, std::move(h), LocalPeerPolicy{*bgpd});
  if (!s) return make_error("bgp: " + s.error());
  bmp_ = std::move(*s);
  return {};
}

void Adapter::arm_stale_timer() {
  const auto due = rib_ ? rib_->stale_deadline() : std::nullopt;
  if (!due) return;
  stale_timer_.expires_at(*due);
  stale_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || !rib_) return;
    const auto swept = rib_->stats().swept_by_limit;
    rib_->expire_stale(BmpRib::Clock::now());
    if (rib_->stats().swept_by_limit != swept)
      spdlog::info("bgp: {} BMP route(s) bgpd did not re-send within {} s swept", rib_->stats().swept_by_limit - swept,
                   bmp_stale_time().count());
    flush();
    arm_stale_timer();
  });
}

void Adapter::tell_rib_bgpd_peers(std::chrono::steady_clock::time_point polled_at) {
  if (!rib_ || !rib_->wants_bgpd_peers()) return;
  std::vector<BgpdPeer> peers;
  for (const auto& p : peers_) {
    auto address = net::Ipv4Addr::parse(p.address);
    if (!address) continue;
    peers.push_back(BgpdPeer{*address, p.state == "Established", p.prefixes_accepted, p.prefixes_stale,
                             p.end_of_rib_received});
  }
  // When this bgpd started: its pid file's mtime (written at start), on the steady clock.
  auto started = std::chrono::steady_clock::time_point{};
  std::error_code ec;
  const auto written = std::filesystem::last_write_time(bgpd_pid_file_, ec);
  if (!ec) {
    const auto age = std::filesystem::file_time_type::clock::now() - written;
    started = std::chrono::steady_clock::now() - std::chrono::duration_cast<std::chrono::steady_clock::duration>(age);
  } else {
    started = std::chrono::steady_clock::now();  // unknown: as if it had just started
  }
  rib_->bgpd_peers(peers, polled_at, started);
  flush();
}

void Adapter::on_bmp_full_table() {
  // bgpd has re-sent every peer's table: what the RIB holds is the whole truth. Rebuild the
  // table from it (a route the RIB never re-emitted because it did not change is still there)
  // and hand the consumer a full table, which ends a restarted vxfedd's replayed routes.
  table_.begin_resync();
  rib_->replay();
  end_resync("BMP table complete");
}

void Adapter::end_resync(const char* what) {
  table_.end_resync();
  spdlog::info("bgp: {}: {} routes, {} swept", what, table_.size(), table_.stats().swept);
  RouteUpdate full = table_.take_full();
  if (opts_.on_routes) opts_.on_routes(full);
}

std::chrono::seconds Adapter::bmp_stale_time() const {
  const auto& c = opts_.config;
  return std::chrono::seconds(c.bmp.stale_time_s ? c.bmp.stale_time_s : c.restart_time_s);
}

void Adapter::close_feed() {
  resync_timer_.cancel();
  stale_timer_.cancel();
  if (server_) server_->stop();
  server_.reset();
  if (bmp_) bmp_->stop();
  bmp_.reset();
}

Status Adapter::start() {
  if (started_) return {};
  // The GBP mark was decided before this first apply (the forwarder answered first): the bgpd
  // running now gets it in place at once when it holds our route-map without it, not after the
  // frr-reload's second (early_gbp_mark_commands), and our routes are sent again after the apply
  // too, not at bgpd's route-map delay timer (5 s); `soft out` resets nothing.
  if (send_again_at_start_ && opts_.config.gbp_mark && opts_.config.frr.apply == ApplyMode::kReload) {
    const std::string vty = vty_socket_path(opts_.config.frr.vty_socket_dir, "bgpd");
    auto shown = run_vty_commands(vty, {"enable", "show running-config"}, std::chrono::seconds(10));
    const auto early = shown && !shown->failed ? early_gbp_mark_commands(shown->output) : std::vector<std::string>{};
    if (!early.empty()) {
      auto set = run_vty_commands(vty, early, std::chrono::seconds(10));
      if (set && !set->failed)
        spdlog::info("bgp: the GBP mark set in the running bgpd before the first apply, our routes sent again");
      else
        spdlog::warn("bgp: the GBP mark could not be set in the running bgpd before the first apply (it comes with "
                     "it): {}", set ? set->output : set.error());
    }
  }
  if (auto st = apply(); !st) return st;
  if (std::exchange(send_again_at_start_, false)) {
    auto sent = run_vty_commands(vty_socket_path(opts_.config.frr.vty_socket_dir, "bgpd"),
                                 {"enable", send_routes_again_command(opts_.config)}, std::chrono::seconds(10));
    if (!sent || sent->failed)
      spdlog::warn("bgp: sending our routes again with the GBP mark failed (they go when bgpd's route-map delay "
                   "timer fires): {}", sent ? sent->output : sent.error());
  }
  if (auto st = open_feed(); !st) return st;
  started_ = true;
  check_bgpd_pid();  // the bgpd we start with: no hold
  poll_peers();
  return {};
}

void Adapter::stop() {
  if (!started_) return;
  started_ = false;
  alive_->store(false);
  alive_ = std::make_shared<std::atomic<bool>>(true);
  applying_ = reapply_ = false;
  if (mark_waiting_) {  // never started: its caller hears so
    auto done = std::move(*mark_waiting_);
    mark_waiting_.reset();
    if (done) done(make_error("bgp: the adapter stopped before the GBP mark was applied"));
  }
  poll_timer_.cancel();
  close_feed();
}

Status Adapter::reconfigure(BgpConfig config, std::vector<net::Ipv4Prefix> advertise) {
  const bool feed_changed = !(config.fpm == opts_.config.fpm) || !(config.bmp == opts_.config.bmp) ||
                            config.feed != opts_.config.feed || config.restart_time_s != opts_.config.restart_time_s;
  BgpConfig old = opts_.config;
  auto old_adv = opts_.advertise;
  // What bgpd runs is not a key of the YAML: it carries over (note_instance).
  config.bmp_in_default_instance = opts_.config.bmp_in_default_instance;
  opts_.config = std::move(config);
  opts_.advertise = std::move(advertise);
  // Not started (FRR not up yet): start() applies whatever is current then.
  if (auto st = started_ ? apply() : Status{}; !st) {
    opts_.config = std::move(old);
    opts_.advertise = std::move(old_adv);
    return st;
  }
  table_.set_peers(opts_.config.peers);
  flush();
  {
    std::vector<PeerStatus> fresh;
    for (const auto& p : opts_.config.peers) {
      PeerStatus s;
      s.address = p.address.str();
      s.remote_asn = p.remote_asn;
      s.cluster = p.cluster;
      for (const auto& o : peers_) {
        if (o.address == s.address) s = o;
      }
      s.remote_asn = p.remote_asn;
      s.cluster = p.cluster;
      fresh.push_back(s);
    }
    peers_ = std::move(fresh);
  }
  if (feed_changed && started_) {
    close_feed();
    // A new session re-sends everything; a fresh RIB takes the new stale limit. The table keeps
    // the routes until then (the RIB's first full table sweeps what is gone).
    rib_.reset();
    if (auto st = open_feed(); !st) return st;
  }
  return {};
}

void Adapter::set_advertised(std::vector<net::Ipv4Prefix> advertise) {
  opts_.advertise = std::move(advertise);
  if (!started_) return;  // start() applies what is current
  if (applying_) {
    reapply_ = true;      // the running apply has an older list: once more when it is done
    return;
  }
  apply_in_background();
}

void Adapter::set_gbp_mark(bool mark, std::function<void(Status)> done) {
  if (mark_waiting_) {  // the caller's one-at-a-time broken: no second owner of the order here
    if (done) done(make_error("bgp: a GBP mark change waits already: one at a time (GbpMarkFollower)"));
    return;
  }
  opts_.config.gbp_mark = mark;
  if (!started_) {  // start() applies what is current, and sends our routes again
    send_again_at_start_ = true;
    if (done) done({});
    return;
  }
  if (applying_) {
    mark_waiting_ = std::move(done);  // the running apply has the previous mark: after it
    return;
  }
  apply_mark_in_background(std::move(done));
}

void Adapter::apply_mark_in_background(std::function<void(Status)> done) {
  const BgpConfig wanted = file_config();
  std::string text = render_frr_config(RenderInput{&wanted, opts_.vtep, opts_.advertise});
  BgpConfig other_mark = wanted;
  other_mark.gbp_mark = !wanted.gbp_mark;
  // In place only where bgpd holds what we last applied, the mark's line aside (or with it,
  // when a whole apply carried it already): then that line is all that changes.
  const bool same_bgpd = read_pid_file(bgpd_pid_file_) == applied_to_bgpd_;
  const bool in_place = opts_.config.frr.apply == ApplyMode::kReload && !rendered_.empty() && same_bgpd &&
                        (rendered_ == text ||
                         rendered_ == render_frr_config(RenderInput{&other_mark, opts_.vtep, opts_.advertise}));
  if (!in_place) {
    reapply_ = false;  // the whole apply renders the advertised list now wanted too
    apply_in_background(!same_bgpd, std::move(done), true);
    return;
  }
  join_apply();
  applying_ = true;
  auto alive = alive_;
  const std::string vty = vty_socket_path(opts_.config.frr.vty_socket_dir, "bgpd");
  // The instance bgpd runs now (the default one on a node moving from FPM), not the file's.
  std::vector<std::string> commands = gbp_mark_commands(opts_.config, wanted.gbp_mark);
  apply_thread_ = std::thread([this, alive, path = wanted.frr.config_path, text = std::move(text), vty,
                               commands = std::move(commands), mark = wanted.gbp_mark,
                               done = std::move(done)]() mutable {
    const auto started = std::chrono::steady_clock::now();
    // The file first: an FRR that restarts from here on loads the mark.
    Status st = write_config_file(path, text);
    if (st) {
      auto reply = run_vty_commands(vty, commands, std::chrono::seconds(10));
      if (!reply) st = make_error("bgpd's vty: " + reply.error());
      else if (reply->failed) st = make_error("bgpd refused " + std::to_string(reply->failed) + " of the commands: " + reply->output);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    asio::post(io_, [this, alive, st = std::move(st), text = std::move(text), seconds, mark,
                     done = std::move(done)]() mutable {
      if (!alive->load()) return;
      applying_ = false;
      if (!st) {
        spdlog::warn("bgp: the GBP mark could not be set in bgpd in place ({}); applying the whole FRR config", st.error());
        reapply_ = false;
        apply_in_background(false, std::move(done), true);
        return;
      }
      rendered_ = std::move(text);
      ++applies_;
      last_apply_seconds_ = seconds;
      spdlog::info("bgp: the GBP mark {} in bgpd and our routes sent again in {:.3f} s (frr.conf written)",
                   mark ? "set" : "removed", seconds);
      if (done) done(Status{});
      next_apply(false);
    });
  });
}

void Adapter::next_apply(bool new_bgpd) {
  if (mark_waiting_) {
    auto done = std::move(*mark_waiting_);
    mark_waiting_.reset();
    apply_mark_in_background(std::move(done));
    return;
  }
  if (reapply_) {
    reapply_ = false;
    apply_in_background(new_bgpd);
  }
}

void Adapter::apply_in_background(bool new_bgpd, std::function<void(Status)> mark_done, bool send_again) {
  join_apply();
  applying_ = true;
  BgpConfig wanted = file_config();
  std::string text = render_frr_config(RenderInput{&wanted, opts_.vtep, opts_.advertise});
  const std::size_t count = opts_.advertise.size();
  auto alive = alive_;
  std::string bgpd = read_pid_file(bgpd_pid_file_);
  const bool first_to_bgpd = new_bgpd || bgpd != applied_to_bgpd_;
  const std::string vty = vty_socket_path(opts_.config.frr.vty_socket_dir, "bgpd");
  apply_thread_ = std::thread([this, alive, wanted = std::move(wanted), vtep = opts_.vtep, advertise = opts_.advertise,
                               text = std::move(text), count, bgpd = std::move(bgpd), new_bgpd, first_to_bgpd, vty,
                               mark_done = std::move(mark_done), send_again]() mutable {
    const FrrSettings& frr = wanted.frr;
    if (first_to_bgpd) bgpd = await_bgpd_load(frr, std::move(bgpd));
    // A new bgpd that loaded frr.conf itself (an FRR restart: graceful restart at work) only
    // gets the usual frr-reload, a no-op where its file was current. A bare one (its own load
    // failed) is loaded whole first: frr-reload alone would miss the route-maps and
    // prefix-lists, as it diffs against vtysh's running config, which merges every daemon's,
    // so zebra's copies make them look present while this bgpd has none ("route-map not
    // found": every route denied, both ways). vtysh -f's own exit status is not the verdict:
    // a few lines are refused where they are not new or not valid in bgpd's present state
    // (graceful-restart modes); the frr-reload after it is, and removes what is left over.
    // Then the peers' routes are asked for and sent again (a soft clear), as a session may
    // have come up before its route-maps existed.
    // Which instance it holds also says whether a node moving from FPM to BMP still runs the
    // default one (instance_kind.hpp): then it gets the BMP target there, and the view waits.
    const std::optional<BgpInstanceKind> kind = running_kind(wanted, new_bgpd);
    const bool bare = new_bgpd && kind == BgpInstanceKind::kNone;
    const bool in_default = bmp_from_default_instance(wanted, kind);
    if (bare) {
      FrrSettings load = frr;
      load.apply = ApplyMode::kVtysh;
      if (auto loaded = apply_frr_config(load, text); !loaded)
        spdlog::info("bgp: the whole-config load of the bare bgpd refused some lines (frr-reload follows): {}",
                     loaded.error());
    }
    auto r = apply_config(wanted, vtep, advertise, text, in_default);
    if (r && bare) {
      // `clear` is an enable-node command: a vty socket starts in the view node ("Unknown command").
      auto cleared = run_vty_commands(vty, soft_clear_commands(wanted), std::chrono::seconds(10));
      if (!cleared || cleared->failed)
        spdlog::warn("bgp: soft clear of the new bgpd's peers failed: {}", cleared ? cleared->output : cleared.error());
    }
    if (r && send_again) {  // the GBP mark changed: to the peers now, not at bgpd's route-map delay timer
      BgpConfig running = wanted;
      running.bmp_in_default_instance = in_default;
      auto sent = run_vty_commands(vty, {"enable", send_routes_again_command(running)},
                                   std::chrono::seconds(10));
      if (!sent || sent->failed)
        spdlog::warn("bgp: sending our routes again after the GBP mark's change failed (they go when bgpd's "
                     "route-map delay timer fires): {}", sent ? sent->output : sent.error());
    }
    asio::post(io_, [this, alive, r = std::move(r), text = std::move(text), count, bgpd = std::move(bgpd),
                     new_bgpd, in_default, mark_done = std::move(mark_done)]() mutable {
      if (!alive->load()) return;  // stopped meanwhile (stop() cleared applying_)
      applying_ = false;
      if (r) {
        note_instance(in_default);
        applied_to_bgpd_ = std::move(bgpd);
        rendered_ = std::move(text);
        ++applies_;
        last_apply_seconds_ = r->seconds;
        spdlog::info("bgp: FRR config applied with {} advertised CIDRs in {:.2f} s (in the background)", count,
                     r->seconds);
      } else {
        spdlog::warn("bgp: the FRR config is not applied: {} (tried again at the next change, or the next "
                     "peer poll when bgpd is a new one)", r.error());
      }
      if (mark_done) mark_done(r ? Status{} : Status(make_error(r.error())));
      next_apply(new_bgpd);
    });
  });
}

void Adapter::networks_changed() {
  table_.reresolve();
  flush();
}

void Adapter::on_fpm_connect() {
  connected_at_ = std::chrono::steady_clock::now();
  last_message_at_ = connected_at_;
  table_.begin_resync();
  spdlog::info("bgp: zebra connected over FPM; resync started ({} routes marked stale)", table_.size());
  arm_resync_timer();
}

void Adapter::on_batch_end() {
  last_message_at_ = std::chrono::steady_clock::now();
  auto over = table_.peers_over_limit();
  if (over != over_limit_) {
    for (const auto& p : over) {
      if (std::find(over_limit_.begin(), over_limit_.end(), p) == over_limit_.end()) {
        spdlog::warn("bgp: peer {} is over its max_prefix: none of its routes is installed", p);
      }
    }
    over_limit_ = over;
  }
  auto kept = table_.peers_over_limit_kept();
  if (kept != over_limit_kept_) {
    for (const auto& p : kept)
      if (std::find(over_limit_kept_.begin(), over_limit_kept_.end(), p) == over_limit_kept_.end())
        spdlog::warn("bgp: peer {} is over its max_prefix (warning-only: its routes stay installed)", p);
    over_limit_kept_ = kept;
  }
  flush();
}

void Adapter::arm_resync_timer() {
  const auto& f = opts_.config.fpm;
  auto due = std::max(connected_at_ + std::chrono::milliseconds(f.resync_min_ms),
                      last_message_at_ + std::chrono::milliseconds(f.resync_settle_ms));
  resync_timer_.expires_at(due);
  resync_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || !table_.resyncing()) return;
    const auto& f2 = opts_.config.fpm;
    auto now = std::chrono::steady_clock::now();
    if (now < connected_at_ + std::chrono::milliseconds(f2.resync_min_ms) ||
        now < last_message_at_ + std::chrono::milliseconds(f2.resync_settle_ms)) {
      arm_resync_timer();  // messages kept arriving: wait for the stream to settle
      return;
    }
    end_resync("FPM resync complete");
  });
}

void Adapter::flush() {
  if (!table_.has_pending()) return;
  RouteUpdate u = table_.take_pending();
  if (u.empty()) return;
  if (opts_.on_routes) opts_.on_routes(u);
}

void Adapter::check_bgpd_pid() {
  // The BMP feed keeps a restarted bgpd's routes itself: stale until its peers re-send them
  // (bmp_rib.hpp); nothing to hold.
  if (!opts_.config.graceful_restart || opts_.config.feed == Feed::kBmp) return;
  pid_checked_at_ = std::chrono::steady_clock::now();
  const std::string pid = read_pid_file(bgpd_pid_file_);
  if (!restart_hold_.on_pid(pid, pid_checked_at_)) return;
  ++bgpd_restarts_;
  table_.hold_deletes(true);
  spdlog::info("bgp: a new bgpd (pid {}): holding zebra's deletes until {} peer(s) are back with their routes "
               "(at most {} s)", pid, restart_hold_.awaited().size(), opts_.config.restart_time_s);
}

void Adapter::on_route(const fpm::RouteMessage& m) {
  // A delete may be zebra sweeping a restarted bgpd's routes: look at the pid file first (at
  // most every 100 ms: a withdrawal of many routes reads it once).
  if (m.is_delete && !restart_hold_.holding() &&
      std::chrono::steady_clock::now() - pid_checked_at_ > std::chrono::milliseconds(100))
    check_bgpd_pid();
  table_.apply(m);
}

void Adapter::end_restart_hold() {
  table_.hold_deletes(false);
  const std::size_t removed = table_.release_held();
  spdlog::info("bgp: restart hold over ({}): {} held route(s) removed", restart_hold_.closed_because(), removed);
  flush();
}

void Adapter::poll_peers() {
  if (!started_) return;
  if (!polling_) {
    if (poll_thread_.joinable()) poll_thread_.join();
    polling_ = true;
    std::vector<std::string> commands = peer_status_commands(opts_.config);
    const std::string socket = vty_socket_path(opts_.config.frr.vty_socket_dir, "bgpd");
    BgpConfig cfg = opts_.config;
    auto alive = alive_;
    const auto polled_at = std::chrono::steady_clock::now();
    // Straight to bgpd's vty socket, not through vtysh: a vtysh start costs ~90 ms of CPU
    // (vty_client.hpp), this ~1 ms. A thread still, so a busy bgpd never stalls the loop.
    poll_thread_ = std::thread([this, socket, commands = std::move(commands), cfg = std::move(cfg), alive,
                                polled_at] {
      auto r = run_vty_commands(socket, commands, std::chrono::seconds(10));
      std::vector<PeerStatus> status = parse_peer_status(cfg, r ? r->output : std::string());
      if (!r) spdlog::debug("bgp: peer status poll failed: {}", r.error());
      // A reflector that restarted only listens, and bgpd, its helper, waits for it to dial:
      // dial it (peer_status.hpp, redial_commands; docs/bgp.md, "Graceful restart").
      if (auto redial = redial_commands(cfg, status); !redial.empty()) {
        auto k = run_vty_commands(socket, redial, std::chrono::seconds(10));
        const auto now = std::chrono::steady_clock::now();
        if (!k || k->failed)
          spdlog::warn("bgp: dialing the reflector bgpd waits for passively failed: {}",
                       k ? k->output : k.error());
        else if (now - redial_logged_at_ > std::chrono::seconds(60))
          spdlog::info("bgp: a reflector session is down and bgpd, its graceful-restart helper, only waits for it "
                       "(NSF passive): dialing it ({}; logged once a minute)", redial.back());
        if (now - redial_logged_at_ > std::chrono::seconds(60)) redial_logged_at_ = now;
      }
      const bool answered = r && r->output.find('{') != std::string::npos;
      asio::post(io_, [this, status = std::move(status), alive, polled_at, answered] {
        if (!alive->load()) return;
        polling_ = false;
        // Only keep entries for peers still configured.
        std::vector<PeerStatus> kept;
        for (const auto& p : opts_.config.peers) {
          for (const auto& s : status) {
            if (s.address == p.address.str()) kept.push_back(s);
          }
        }
        check_bgpd_pid();  // first: a poll of a bgpd that is already gone decides nothing
        reapply_to_new_bgpd();
        carry_peer_counters(peers_, kept);
        peers_ = std::move(kept);
        if (restart_hold_.on_peers(peers_, polled_at, std::chrono::steady_clock::now())) end_restart_hold();
        if (answered) tell_rib_bgpd_peers(polled_at);
        if (opts_.on_peers) opts_.on_peers(peers_);
        if (poll_again_) {
          poll_again_ = false;
          poll_peers();
        }
      });
    });
  }
  poll_timer_.expires_after(std::chrono::milliseconds(opts_.config.frr.status_interval_ms));
  poll_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) poll_peers();
  });
}

void Adapter::reapply_to_new_bgpd() {
  if (applying_) return;  // its result sets applied_to_bgpd_; the next poll looks again
  const std::string pid = read_pid_file(bgpd_pid_file_);
  if (pid.empty() || pid == applied_to_bgpd_) return;
  // A failed apply is tried again, but not at every poll: each is a frr-reload run.
  const auto now = std::chrono::steady_clock::now();
  if (now < reapply_not_before_) return;
  reapply_not_before_ = now + kReapplyInterval;
  spdlog::info("bgp: bgpd is a new one (pid {}, the config went to {}): applying the FRR config to it", pid,
               applied_to_bgpd_.empty() ? "none" : applied_to_bgpd_);
  apply_in_background(true);
}

std::vector<PeerStatus> Adapter::peers() const { return peers_; }

AdapterStats Adapter::stats() const {
  AdapterStats s;
  s.feed = opts_.config.feed;
  if (bmp_) {
    s.bmp = bmp_->stats();
    s.feed_connected = s.bmp.connected;
  }
  if (rib_) s.bmp_rib = rib_->stats();
  if (server_) {
    const auto& f = server_->stats();
    s.fpm_connected = f.connected;
    s.feed_connected = f.connected;
    s.fpm_connections = f.connections;
    s.frames = f.frames;
    s.messages = f.messages;
    s.malformed = f.malformed_frames + f.malformed_messages;
    s.stream_errors = f.stream_errors;
    s.fpm_refused = f.refused_not_loopback + f.refused_wrong_user + f.refused_busy;
    s.fpm_refused_not_loopback = f.refused_not_loopback;
    s.fpm_refused_wrong_user = f.refused_wrong_user;
    s.fpm_refused_busy = f.refused_busy;
  }
  const auto t = table_.stats();
  s.non_bgp_ignored = t.non_bgp_ignored;
  s.no_peer = t.no_peer;
  s.unresolved_routes = t.unresolved;
  s.resyncs = t.resyncs;
  s.swept = t.swept;
  s.max_prefix_exceeded = t.max_prefix_exceeded;
  s.withheld = t.withheld;
  s.deletes_held = t.deletes_held;
  s.held_released = t.held_released;
  s.bgpd_restarts = bgpd_restarts_;
  s.holding_deletes = table_.holding_deletes();
  s.next_hops_refused = t.next_hops_refused;
  s.no_allowed_next_hop = t.no_allowed_next_hop;
  s.routes = table_.size();
  s.applies = applies_;
  s.last_apply_seconds = last_apply_seconds_;
  s.resyncing = table_.resyncing();
  return s;
}

std::string Adapter::rendered_config_redacted() const { return redact_frr_text(rendered_); }

}  // namespace vxfed::bgp
