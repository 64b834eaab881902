#include "control/federation/federation_link.hpp"

#include <algorithm>
#include <utility>

#include <boost/asio/post.hpp>

#include "common/net/ipv4.hpp"
#include "control/federation/store_access.hpp"
#include "control/node/node_state.hpp"

namespace vxfed::control {

namespace asio = boost::asio;
namespace fed = ::vxfed::federation;

unsigned FederationLink::block_length_of(const NetworkConfig& network) {
  if (network.block_prefix_len != 0) return network.block_prefix_len;
  const auto subnet = net::Ipv4Prefix::parse(network.subnet);
  return std::max<unsigned>(fed::kDefaultBlockLength, subnet ? subnet->len : 0);
}

Result<std::unique_ptr<FederationLink>> FederationLink::create(asio::io_context& io, const Config& config,
                                                               std::shared_ptr<spdlog::logger> log) {
  fed::EtcdOptions options = etcd_options(config);
  options.attempt_timeout_ms = 0;  // the library's: 250 ms, doubled after a pass without any reply
  // Each call's attempts, member by member: at info when it was not one quick answer (a silent
  // member, an election, a failure), else at debug.
  options.on_call = [log, first_attempt_ms = std::min<std::uint32_t>(250, config.federation.request_timeout_ms)](
                        const fed::CallTrace& trace) {
    const bool plain = trace.ok && trace.attempts.size() == 1 && trace.took_ms < first_attempt_ms;
    log->log(plain || (!trace.ok && trace.one_pass) ? spdlog::level::debug : spdlog::level::info, "federation: etcd {}",
             trace.str());
  };
  auto client = fed::EtcdClient::create(options);
  if (!client) return make_error(config.source + ": federation: " + client.error());
  return std::unique_ptr<FederationLink>(new FederationLink(io, config, std::move(*client), std::move(log)));
}

FederationLink::FederationLink(asio::io_context& io, const Config& config, std::unique_ptr<fed::EtcdClient> client,
                               std::shared_ptr<spdlog::logger> log)
    : io_(io),
      settings_(config.federation),
      node_(config.node.name),
      client_(std::move(client)),
      log_(std::move(log)),
      keep_alive_timer_(io),
      reconcile_timer_(io),
      api_worker_(std::make_unique<StoreWorker>()),
      worker_(std::make_unique<StoreWorker>()) {
  fed::FederationOptions options;
  options.node = config.node.name;
  options.vtep = config.node.vtep_ip;
  options.cluster = config.cluster.name;
  options.gbp = config.node.gbp;
  options.pools.pools = config.pools;   // seeds an empty store; the store's pools win after
  options.pools.hold_down_ms = config.hold_down_ms;
  options.node_ttl_s = settings_.node_ttl_seconds;
  options.block_release_after_ms = settings_.block_release_after_seconds * 1000;
  store_ = std::make_unique<fed::FederationStore>(*client_, options);
}

FederationLink::~FederationLink() {
  stopped_ = true;
  api_worker_.reset();  // their work uses store_ and client_
  worker_.reset();
}

std::chrono::milliseconds FederationLink::api_budget() const {
  return std::chrono::milliseconds(std::min(settings_.request_timeout_ms, kMaxApiBudgetMs));
}

std::vector<fed::Membership> FederationLink::apply_changes(std::vector<fed::Membership> snapshot,
                                                           const std::vector<Change>& changes) {
  for (const auto& c : changes) {
    std::erase_if(snapshot, [&](const fed::Membership& m) { return m.network == c.membership.network; });
    if (c.joined) snapshot.push_back(c.membership);
  }
  return snapshot;
}

std::uint64_t FederationLink::note_change(Change change) {
  std::lock_guard lock(changes_mutex_);
  change.id = next_change_++;
  changes_.push_back(std::move(change));
  return changes_.back().id;
}

void FederationLink::settle_change(std::uint64_t id) {
  std::lock_guard lock(changes_mutex_);
  for (auto& c : changes_)
    if (c.id == id) c.pending = false;
}

void FederationLink::note_wait(const char* what, const std::string& network, std::chrono::steady_clock::time_point asked) {
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - asked).count();
  log_->log(waited >= 50 ? spdlog::level::info : spdlog::level::debug,
            "federation: {} of network '{}' waited {} ms for the store (the worker's queue and the store lock)", what,
            network, waited);
}

std::string FederationLink::needs_store(const std::string& network, const std::string& why) const {
  return "network '" + network + "' needs the federation store, and " + why +
         " (networks this node has keep working; try again when it is back)";
}

void FederationLink::saw(const fed::StoreError* error) {
  if (stopped_) return;
  if (error == nullptr) {
    const std::uint64_t id = client_->cluster_id();
    const bool replaced = cluster_id_ != 0 && id != 0 && id != cluster_id_;
    if (id != 0) cluster_id_ = id;
    if (!available_) {
      available_ = true;
      ++stats_.reconnects;
      log_->info("federation store {} answers again: re-asserting this node's networks", client_->describe());
      asio::post(io_, [this] { reconcile("reconnected"); });
    } else if (replaced) {
      log_->warn("federation store {} is a different cluster now (cluster id changed): re-asserting this node's networks",
                 client_->describe());
      asio::post(io_, [this] { reconcile("store replaced"); });
    }
    return;
  }
  if (error->code != fed::Code::unavailable) return;
  ++stats_.unavailable;
  if (available_) {
    available_ = false;
    log_->warn("{}; networks and pods this node has keep working, new networks and blocks wait for it", error->message);
  }
}

Result<NetworkGrant> FederationLink::join(const NetworkConfig& network, v1::ErrorCode* code) {
  if (auto it = prefetched_.find(network.name); it != prefetched_.end() && it->second.ask == network) {
    const NetworkGrant grant = it->second.grant;
    settle_change(it->second.change);  // the caller stores it in the node's copy now
    prefetched_.erase(it);
    if (code) *code = v1::OK;
    return grant;
  }
  const auto asked = std::chrono::steady_clock::now();
  const auto end = asked + api_budget();
  std::unique_lock lock(store_gate_.api(), std::defer_lock);
  const bool locked = lock.try_lock_until(end);
  note_wait("join", network.name, asked);
  if (!locked) {
    // The worker is inside a store call that has not come back: the store is slow or has no
    // quorum. Waiting longer would hold the io thread for it.
    if (code) *code = v1::UNAVAILABLE;
    return make_error(needs_store(network.name, "federation store " + client_->describe() +
                                                    " did not answer within " + std::to_string(api_budget().count()) +
                                                    " ms (a background call to it is still waiting)"));
  }
  fed::NetworkRequest request{network.name, network.labels, network.pinned_vni, network.subnet, block_length_of(network)};
  fed::CallDeadline deadline(end);
  auto joined = store_->join(request, system_unix_ms());
  if (joined) note_change(Change{true, *joined});
  lock.unlock();
  saw(joined ? nullptr : &joined.store_error());
  if (!joined) {
    if (code) *code = api_code(joined.code());
    if (joined.code() == fed::Code::unavailable) return make_error(needs_store(network.name, joined.error()));
    return make_error(joined.error());
  }
  if (code) *code = v1::OK;
  log_->info("federation: network '{}' has VNI {}, this node's block {}", network.name, joined->vni, joined->block);
  return NetworkGrant{joined->vni, joined->pool, joined->block};
}

namespace {

// One prepare() in flight: answered once, by the worker's outcome or by the timer.
struct PendingPrepare {
  PendingPrepare(asio::io_context& io, NetworkAllocator::Prepared done) : timer(io), done(std::move(done)) {}
  asio::steady_timer timer;
  NetworkAllocator::Prepared done;
  bool answered = false;
};

}  // namespace

void FederationLink::prepare(const NetworkConfig& network, Prepared done) {
  const auto end = std::chrono::steady_clock::now() + api_budget();
  auto pending = std::make_shared<PendingPrepare>(io_, std::move(done));
  pending->timer.expires_at(end);
  pending->timer.async_wait([this, pending, name = network.name](const boost::system::error_code& ec) {
    if (ec || pending->answered) return;
    pending->answered = true;
    // The worker has not come to it, or its call has not come back: the store is slow or has
    // no quorum. The request gets its answer now; the worker's, if it comes, is dropped.
    pending->done(v1::UNAVAILABLE, needs_store(name, "federation store " + client_->describe() +
                                                         " did not answer within " +
                                                         std::to_string(api_budget().count()) + " ms"));
  });
  api_worker_->post([this, pending, network, end, asked = std::chrono::steady_clock::now()] {
    if (std::chrono::steady_clock::now() >= end) {  // the timer answered
      note_wait("prepare", network.name, asked);
      return;
    }
    fed::NetworkRequest request{network.name, network.labels, network.pinned_vni, network.subnet, block_length_of(network)};
    std::optional<fed::Membership> joined;
    Outcome outcome;
    std::uint64_t change = 0;
    {
      std::unique_lock lock(store_gate_.api(), std::defer_lock);
      if (!lock.try_lock_until(end)) {  // the timer answers
        note_wait("prepare", network.name, asked);
        return;
      }
      note_wait("prepare", network.name, asked);
      fed::CallDeadline deadline(end);
      auto r = store_->join(request, system_unix_ms());
      outcome = outcome_of(r);
      if (r) {
        joined = *r;
        change = note_change(Change{true, *r, /*pending=*/true, 0});
      }
    }
    asio::post(io_, [this, pending, network, joined, outcome, change] {
      if (stopped_) return;
      saw(outcome);
      if (pending->answered) {
        // Refused by the timer meanwhile: the node does not take the network, and the next
        // reconcile leaves the membership the store granted.
        if (change) settle_change(change);
        return;
      }
      pending->answered = true;
      pending->timer.cancel();
      if (outcome) {
        const auto code = api_code(outcome->code);
        pending->done(code, outcome->code == fed::Code::unavailable ? needs_store(network.name, outcome->message)
                                                                    : outcome->message);
        return;
      }
      log_->info("federation: network '{}' has VNI {}, this node's block {}", network.name, joined->vni, joined->block);
      prefetched_[network.name] = Prefetched{network, NetworkGrant{joined->vni, joined->pool, joined->block}, change};
      pending->done(v1::OK, {});
      // Not taken (the request failed on the node, or the network was added meanwhile):
      // forgotten; the next reconcile leaves the membership unless the node has the network.
      if (auto it = prefetched_.find(network.name); it != prefetched_.end() && it->second.change == change) {
        prefetched_.erase(it);
        settle_change(change);
      }
    });
  });
}

void FederationLink::claim_more(const NetworkConfig& network, MoreClaimed done) {
  const auto end = std::chrono::steady_clock::now() + api_budget();
  auto pending = std::make_shared<PendingPrepare>(io_, [done](v1::ErrorCode code, const std::string& text) { done(code, text); });
  pending->timer.expires_at(end);
  pending->timer.async_wait([this, pending, name = network.name](const boost::system::error_code& ec) {
    if (ec || pending->answered) return;
    pending->answered = true;
    pending->done(v1::UNAVAILABLE, needs_store(name, "federation store " + client_->describe() + " did not answer within " +
                                                         std::to_string(api_budget().count()) + " ms"));
  });
  api_worker_->post([this, pending, name = network.name, subnet = network.subnet, end, asked = std::chrono::steady_clock::now()] {
    if (std::chrono::steady_clock::now() >= end) {  // the timer answered
      note_wait("block claim", name, asked);
      return;
    }
    Outcome outcome;
    std::string block;
    {
      std::unique_lock lock(store_gate_.api(), std::defer_lock);
      if (!lock.try_lock_until(end)) {  // the timer answers
        note_wait("block claim", name, asked);
        return;
      }
      note_wait("block claim", name, asked);
      fed::CallDeadline deadline(end);
      auto r = store_->claim_more(name, subnet);
      outcome = outcome_of(r);
      if (r) {
        block = *r;
        std::lock_guard changes(changes_mutex_);
        claimed_.push_back(Claimed{name, block, false});
      }
    }
    asio::post(io_, [this, pending, name, block, outcome] {
      if (stopped_) return;
      saw(outcome);
      // In the node's copy once done() below has run, or never (answered by the timer, or not
      // saved): the snapshot of the next reconcile says which, and that one gives it back if so.
      const auto settle = [this, &name, &block] {
        std::lock_guard changes(changes_mutex_);
        for (auto& c : claimed_)
          if (c.network == name && c.block == block) c.settled = true;
      };
      if (pending->answered) {
        settle();
        return;
      }
      pending->answered = true;
      pending->timer.cancel();
      if (outcome) {
        pending->done(api_code(outcome->code), outcome->code == fed::Code::unavailable
                                                   ? needs_store(name, outcome->message)
                                                   : outcome->message);
        return;
      }
      ++stats_.blocks_claimed;
      log_->info("federation: network '{}': this node's blocks are full, claimed {}", name, block);
      pending->done(v1::OK, block);
      settle();
    });
  });
}

void FederationLink::left(const std::string& network) {
  fed::Membership gone;
  gone.network = network;
  note_change(Change{false, gone});
  // Best effort, and never a wait: what is not recorded now, the next reconcile records (the
  // node's copy no longer has the network).
  std::unique_lock lock(store_gate_.api(), std::try_to_lock);
  if (!lock.owns_lock()) {
    log_->info("federation: leaving network '{}' is left to the next reconcile (the store is busy)", network);
    return;
  }
  fed::CallDeadline deadline(std::chrono::steady_clock::now() + api_budget());
  auto ok = store_->leave(network, system_unix_ms());
  lock.unlock();
  saw(ok ? nullptr : &ok.store_error());
  if (!ok) log_->warn("federation: leaving network '{}' is not recorded yet ({}); the next reconcile does it", network, ok.error());
}

void FederationLink::start() {
  worker_->post([this] {
    std::int64_t lease = 0;
    Outcome outcome;
    {
      std::lock_guard lock(store_gate_.background());
      auto registered = store_->register_node(system_unix_ms());
      outcome = outcome_of(registered);
      lease = store_->lease();
    }
    asio::post(io_, [this, outcome, lease] {
      if (stopped_) return;
      saw(outcome);
      if (!outcome)
        log_->info("federation: node '{}' registered with {} (lease {}, {} s)", node_, client_->describe(), lease,
                   settings_.node_ttl_seconds);
      else
        log_->warn("federation: node '{}' could not register yet: {}", node_, outcome->message);
      reconcile("start");
      schedule_keep_alive();
      schedule_reconcile();
    });
  });
}

void FederationLink::stop() {
  stopped_ = true;
  keep_alive_timer_.cancel();
  reconcile_timer_.cancel();
  api_worker_->stop();
  worker_->stop();
}

void FederationLink::schedule_keep_alive() {
  const unsigned period_s = available_ ? std::max(1u, settings_.node_ttl_seconds / 3) : 1;
  keep_alive_timer_.expires_after(std::chrono::seconds(period_s));
  keep_alive_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    worker_->post([this] {
      Outcome outcome;
      // The keep-alive itself does not hold the store (the client is thread-safe, the lease id
      // is all it needs): an API request does not wait behind it through an election. Only a
      // lease to (re)grant, none yet or expired, goes through the store, which registers.
      std::int64_t lease = 0;
      {
        std::lock_guard lock(store_gate_.background());
        lease = store_->lease();
      }
      bool renewed = false;
      if (lease != 0) {
        auto ttl = client_->lease_keep_alive(lease);
        renewed = static_cast<bool>(ttl);
        if (!ttl && ttl.code() != fed::Code::not_found) outcome = ttl.store_error();
      }
      if (!renewed && !outcome) {
        std::lock_guard lock(store_gate_.background());
        outcome = outcome_of(store_->keep_alive(system_unix_ms()));
      }
      asio::post(io_, [this, outcome] {
        if (stopped_) return;
        saw(outcome);
        if (outcome && outcome->code != fed::Code::unavailable) log_->error("federation: keep-alive: {}", outcome->message);
        schedule_keep_alive();
      });
    });
  });
}

void FederationLink::schedule_reconcile() {
  reconcile_timer_.expires_after(std::chrono::seconds(settings_.reconcile_interval_seconds));
  reconcile_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    reconcile("periodic");
    schedule_reconcile();
  });
}

namespace {

// What a reconcile on the worker brings back to the io thread.
struct ReconcileDone {
  std::vector<std::optional<fed::StoreError>> outcomes;  // every call's, in order, for saw()
  std::optional<fed::ReconcileReport> report;
  std::optional<std::size_t> released;
};

}  // namespace

// The snapshot of the node's networks is taken here, on the io thread; the store calls run on
// the worker, and the io thread hears back (bookkeeping, then the config networks waiting for
// the store, which join on the io thread). One at a time: one asked for meanwhile runs after.
void FederationLink::reconcile(const char* why) {
  if (state_ == nullptr || stopped_) return;
  if (reconciling_) {
    reconcile_again_ = why;
    return;
  }
  reconciling_ = true;
  // Further blocks empty for the grace period leave the node's copy first: this reconcile
  // then finds them in the store and not in the copy, and gives them back.
  for (const auto& dropped : state_->drop_empty_blocks(settings_.empty_block_release_seconds * 1000)) {
    ++stats_.blocks_released;
    log_->info("federation: block {} had no endpoint for {} s: given back to the store", dropped,
               settings_.empty_block_release_seconds);
  }
  std::vector<fed::Membership> local;
  for (const auto& n : state_->local_networks())
    local.push_back(fed::Membership{n.config.name, n.vni, n.pool, n.config.labels, block_length_of(n.config), n.block,
                                    n.more_blocks});
  {
    // What the snapshot holds is no longer a change; a join prepare() made that the node has
    // not stored yet still is.
    std::lock_guard lock(changes_mutex_);
    std::erase_if(changes_, [](const Change& c) { return !c.pending; });
    std::erase_if(claimed_, [](const Claimed& c) { return c.settled; });
  }
  worker_->post([this, why, local = std::move(local)]() mutable {
    auto done = std::make_shared<ReconcileDone>();
    // Each step holds the store on its own: an API request waiting meanwhile goes between
    // them. The node's networks are applied to the store in one hold (a join in the middle of
    // that would be left again: it is not in the snapshot).
    const std::uint64_t now = system_unix_ms();
    {
      std::lock_guard lock(store_gate_.background());
      {
        std::lock_guard changes(changes_mutex_);
        local = apply_changes(std::move(local), changes_);
        for (auto& m : local)  // claimed after the snapshot, or on their way into the node's copy
          for (const auto& c : claimed_)
            if (c.network == m.network && std::find(m.more_blocks.begin(), m.more_blocks.end(), c.block) == m.more_blocks.end())
              m.more_blocks.push_back(c.block);
      }
      auto report = store_->reconcile(local, now);
      done->outcomes.push_back(outcome_of(report));
      if (report) done->report = *report;
    }
    if (done->report) {
      // Gone nodes and ended hold-downs: one node (the collector) scans for the federation.
      std::unique_lock lock(store_gate_.background());
      auto collector = store_->collector();
      lock.unlock();
      done->outcomes.push_back(outcome_of(collector));
      if (collector && *collector) {
        lock.lock();
        auto released = store_->collect_gone_nodes(now);
        lock.unlock();
        done->outcomes.push_back(outcome_of(released));
        if (released) done->released = *released;
        lock.lock();
        done->outcomes.push_back(outcome_of(store_->expire_hold_downs(now)));
      }
    }
    asio::post(io_, [this, why, done] {
      reconciling_ = false;
      if (stopped_) return;
      for (const auto& outcome : done->outcomes) saw(outcome);
      if (!done->report) {
        const auto& error = *done->outcomes.front();
        if (error.code != fed::Code::unavailable) log_->error("federation: reconcile ({}): {}", why, error.message);
      } else {
        const auto& report = *done->report;
        ++stats_.reconciles;
        stats_.restored += report.restored;
        stats_.conflicts += report.conflicts.size();
        for (const auto& c : report.conflicts) log_->error("federation: {}", c);
        if (report.restored > 0 || report.left > 0)
          log_->info("federation: reconcile ({}): {} records restored from this node's copy, {} memberships left", why,
                     report.restored, report.left);
        if (state_->pending_count() > 0)
          for (const auto& note : state_->retry_pending()) log_->info("federation: {}", note);
        if (done->released && *done->released > 0) {
          stats_.nodes_released += *done->released;
          log_->info("federation: released the blocks of {} nodes gone for over {} s", *done->released,
                     settings_.block_release_after_seconds);
        }
      }
      if (const char* again = std::exchange(reconcile_again_, nullptr)) reconcile(again);
    });
  });
}

}  // namespace vxfed::control
