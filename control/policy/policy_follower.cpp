#include "control/policy/policy_follower.hpp"

#include <algorithm>

#include <boost/asio/post.hpp>

#include "control/federation/store_access.hpp"
#include "control/node/node_state.hpp"
#include "federation/schema.hpp"

namespace vxfed::control {

namespace asio = boost::asio;
namespace fed = ::vxfed::federation;

std::vector<LocalPod> local_pods(const std::vector<v1::EndpointInfo>& endpoints) {
  std::vector<LocalPod> out;
  for (const auto& info : endpoints) {
    const auto& e = info.spec();
    auto ns = e.pod().find("K8S_POD_NAMESPACE");
    auto name = e.pod().find("K8S_POD_NAME");
    if (ns == e.pod().end() || name == e.pod().end() || ns->second.empty() || name->second.empty()) continue;
    out.push_back(LocalPod{e.network(), ns->second, name->second, NodeState::endpoint_id(e.container_id(), e.ifname()),
                           info.vni()});
  }
  return out;
}

std::uint32_t endpoint_identity(const PolicyFeed& feed, const v1::EndpointInfo& endpoint) {
  auto pod = local_pods({endpoint});
  return pod.empty() ? 0 : feed.number_of(pod.front());
}

std::uint32_t endpoint_identity(const PolicyView& view, const v1::EndpointInfo& endpoint) {
  auto pod = local_pods({endpoint});
  return pod.empty() ? 0 : view.number_of(pod.front());
}

Result<std::unique_ptr<PolicyFollower>> PolicyFollower::create(asio::io_context& io, const Config& config,
                                                               std::shared_ptr<spdlog::logger> log, LocalPods local_pods,
                                                               Identities identities, PolicyPublisher::Sink publish) {
  if (!config.federation.enabled) return make_error("network policy needs the federation store (no federation section)");
  auto client = fed::EtcdClient::create(etcd_options(config));
  if (!client) return make_error(config.source + ": federation: " + client.error());
  return std::unique_ptr<PolicyFollower>(
      new PolicyFollower(io, config, std::move(*client), std::move(log), std::move(local_pods), std::move(identities),
                         std::move(publish)));
}

PolicyFollower::PolicyFollower(asio::io_context& io, const Config& config, std::unique_ptr<fed::EtcdClient> client,
                               std::shared_ptr<spdlog::logger> log, LocalPods local_pods, Identities identities,
                               PolicyPublisher::Sink publish)
    : io_(io),
      node_(config.node.name),
      client_(std::move(client)),
      store_(std::make_unique<fed::PolicyStore>(*client_, fed::PolicyStoreOptions{})),
      log_(std::move(log)),
      local_pods_(std::move(local_pods)),
      identities_(std::move(identities)),
      retry_timer_(io),
      locals_timer_(io),
      maintain_timer_(io),
      compile_(std::make_unique<PolicyCompileWorker>(
          io, config.cluster.name, std::move(publish), [this](const PolicyCompileWorker::Result& r) { compiled(r); },
          log_->should_log(spdlog::level::debug), PolicyCompileWorker::BeforeCompile{}, cluster_cidrs_of(config))),
      worker_(std::make_unique<StoreWorker>()) {}

PolicyFollower::~PolicyFollower() {
  *alive_ = false;
  retry_timer_.cancel();
  locals_timer_.cancel();
  maintain_timer_.cancel();
  watch_.reset();    // its thread uses the client
  compile_.reset();  // its thread: the compile in progress ends, nothing delivered after
  worker_.reset();   // the list in progress uses the client
}

void PolicyFollower::start() {
  auto alive = alive_;
  // The watch first, then the list: a change between the two is both listed and an event.
  watch_ = client_->watch_prefix(
      fed::keys::policy_root(), 0,
      [this, alive](const std::vector<fed::WatchEvent>&, std::int64_t) {
        const auto seen = PolicyPublisher::Clock::now();
        asio::post(io_, [this, alive, seen] {
          if (!*alive) return;
          if (!change_seen_) change_seen_ = seen;
          relist("a change under v1/policy/");
        });
      },
      [this, alive](bool connected, const std::string& detail) {
        asio::post(io_, [this, alive, connected, detail] {
          if (!*alive) return;
          if (connected) {
            if (!stats_.watching) relist("the watch is (re)established");
            stats_.watching = true;
            return;
          }
          if (stats_.watching) {
            ++stats_.watch_breaks;
            log_->warn("policy: the watch of v1/policy/ broke ({}); it is re-established by itself", detail);
          }
          stats_.watching = false;
        });
      });
  relist("start");
  watch_locals();
  maintain_later(kMaintainFirst);
}

void PolicyFollower::relist(const char* why) {
  if (listing_) {
    again_ = true;
    return;
  }
  listing_ = true;
  again_ = false;
  listing_change_ = change_seen_;
  change_seen_.reset();
  log_->debug("policy: listing the store ({})", why);
  auto alive = alive_;
  worker_->post([this, alive] {
    auto snapshot = store_->list();
    asio::post(io_, [this, alive, snapshot = std::move(snapshot)]() mutable {
      if (*alive) listed(std::move(snapshot));
    });
  });
}

void PolicyFollower::listed(fed::StoreResult<fed::PolicySnapshot> snapshot) {
  listing_ = false;
  if (!snapshot) {
    ++stats_.list_failures;
    if (!failing_)
      log_->warn("policy: cannot list the store ({}); the compiled tables stay as they are, retrying", snapshot.error());
    failing_ = true;
    if (listing_change_) change_seen_ = listing_change_;  // older than any seen since: the retry's start
    retry_later();
    return;
  }
  if (failing_) log_->info("policy: the store answers again");
  failing_ = false;
  retry_delay_ = kRetryMin;
  ++stats_.listings;
  pods_ = local_pods_();
  std::sort(pods_.begin(), pods_.end());
  listed_once_ = true;
  // Compiled, built and compared on the compile thread; the entries reach the sink, and the
  // identities the endpoints, in compiled() on the io thread.
  compile_->listing(std::move(*snapshot), pods_, stats_.listings == 1, listing_change_);
  listing_change_.reset();
  if (again_) relist("changes during the last list");
}

void PolicyFollower::compiled(const PolicyCompileWorker::Result& result) {
  const auto& report = result.report;
  const auto revision = result.view->revision;
  stats_.records_skipped += report.skipped.size();
  for (const auto& s : report.skipped) log_->warn("policy: left out at revision {}: {}", revision, s);
  if (report.changed()) {
    ++stats_.updates;
    stats_.last_update = report.duration;
    stats_.max_update = std::max(stats_.max_update, report.duration);
    stats_.total_update += report.duration;
    for (const auto& line : report.changes) log_->debug("policy: {} (revision {})", line, revision);
    if (!result.summary.empty()) log_->debug("policy: {}", result.summary);
  }
  if (identities_) identities_(*result.view);
}

void PolicyFollower::retry_later() {
  retry_timer_.expires_after(retry_delay_);
  retry_delay_ = std::min(retry_delay_ * 2, std::chrono::duration_cast<std::chrono::milliseconds>(kRetryMax));
  auto alive = alive_;
  retry_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (!ec && *alive) relist("retry");
  });
}

void PolicyFollower::watch_locals() {
  locals_timer_.expires_after(kLocalsInterval);
  auto alive = alive_;
  locals_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || !*alive) return;
    // Before the first listing there is nothing to compile against: that listing reads them.
    if (listed_once_) {
      auto pods = local_pods_();
      std::sort(pods.begin(), pods.end());
      if (pods != pods_) {
        pods_ = std::move(pods);
        // Published even when the compilers are unchanged: an endpoint's mapping may have
        // changed alone. The identities follow when it is compiled (compiled()).
        compile_->locals(pods_);
      } else if (identities_) {
        identities_(compile_->view());
      }
    }
    watch_locals();
  });
}

void PolicyFollower::maintain_later(std::chrono::milliseconds after) {
  maintain_timer_.expires_after(after);
  auto alive = alive_;
  maintain_timer_.async_wait([this, alive](const boost::system::error_code& ec) {
    if (ec || !*alive) return;
    worker_->post([this, alive] {
      struct Done {
        bool held = false;       // somebody holds v1/collector
        bool collector = false;  // this node
        std::optional<fed::StoreResult<fed::MaintenanceReport>> report;
        std::string error;
      };
      auto done = std::make_shared<Done>();
      auto holder = client_->get(fed::keys::collector());
      if (!holder) {
        done->error = holder.error();
      } else {
        done->held = !holder->kvs.empty();
        done->collector = done->held && holder->kvs.front().value == node_;
        if (done->collector) done->report = store_->maintain(system_unix_ms());
      }
      asio::post(io_, [this, alive, done] {
        if (!*alive) return;
        // Nobody elected yet (the federation link elects one at its first reconcile), or the
        // store away: look again soon rather than in a minute.
        maintain_later(done->held && done->error.empty() ? kMaintainInterval : kMaintainFirst);
        stats_.collector = done->collector;
        if (!done->error.empty() || (done->report && !*done->report)) {
          ++stats_.maintain_failures;
          log_->debug("policy: identity collector: {}", done->error.empty() ? done->report->error() : done->error);
          return;
        }
        if (!done->report) return;
        ++stats_.maintain_runs;
        const auto& r = **done->report;
        stats_.released += r.released;
        stats_.forgotten += r.forgotten;
        if (r.released + r.forgotten > 0)
          log_->info("policy: identity collector: {} numbers without users held down, {} hold-downs ended", r.released,
                     r.forgotten);
      });
    });
  });
}

}  // namespace vxfed::control
