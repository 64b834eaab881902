#include "control/policy/policy_compile_worker.hpp"

#include <boost/asio/post.hpp>
#include <fmt/format.h>

#include "policy/tables.hpp"

namespace vxfed::control {

namespace asio = boost::asio;
namespace fed = ::vxfed::federation;
namespace pol = ::vxfed::policy;

std::uint16_t PolicyView::number_of(const LocalPod& pod) const {
  auto it = numbers.find({pod.namespace_name, pod.name});
  return it == numbers.end() ? pol::kPeerUnlabelled : it->second;
}

PolicyView view_of(const PolicyFeed& feed, const PolicyPublisher& publisher, const std::vector<LocalPod>& pods) {
  PolicyView v;
  v.policies = feed.policies();
  v.identities = feed.identities();
  v.revision = feed.revision();
  for (const auto& [network, compiler] : feed.compilers()) {
    auto& n = v.networks[network];
    const auto& t = compiler->tables();
    n.table_bytes = t.bytes();
    const auto& locals = compiler->locals();
    for (std::size_t i = 0; i < locals.size(); ++i) {
      PolicyView::Local l;
      l.number = static_cast<std::uint16_t>(locals[i].number);
      l.namespace_name = locals[i].identity.namespace_name;
      if (i < t.local_ingress.size()) {
        l.ingress_isolated = t.local_ingress[i].isolated;
        l.ingress_peers = t.local_ingress[i].peers.size();
      }
      if (i < t.local_egress.size()) {
        l.egress_isolated = t.local_egress[i].isolated;
        l.egress_peers = t.local_egress[i].peers.size();
      }
      l.ingress_policies = compiler->isolating(i, pol::Direction::Ingress);
      l.egress_policies = compiler->isolating(i, pol::Direction::Egress);
      n.locals.push_back(std::move(l));
    }
  }
  for (const auto& pod : pods) {
    v.numbers[{pod.namespace_name, pod.name}] = feed.number_of(pod);
    if (pod.endpoint_id.empty()) continue;
    PolicyView::Pod& p = v.pods_by_endpoint[pod.endpoint_id];
    p.network = pod.network;
    p.namespace_name = pod.namespace_name;
    p.name = pod.name;
    const auto c = feed.compilers().find(pod.network);
    if (c != feed.compilers().end())
      if (auto local = local_index_of(feed, *c->second, pod)) p.local = *local;
  }
  v.published = publisher.published();
  v.publication = publisher.stats();
  return v;
}

struct PolicyCompileWorker::Outcome {
  Result result;
  std::vector<dp::NetworkPolicy> upserts;
  std::vector<std::uint32_t> removals;
  bool complete = false;
  bool publish = false;  // the publisher called the sink
  std::optional<PolicyPublisher::Clock::time_point> change_seen;
};

PolicyCompileWorker::PolicyCompileWorker(asio::io_context& io, std::string cluster, PolicyPublisher::Sink sink,
                                         Done done, bool summaries, BeforeCompile before, ClusterCidrs clusters)
    : io_(io),
      sink_(std::move(sink)),
      done_(std::move(done)),
      summaries_(summaries),
      before_(std::move(before)),
      feed_(std::move(cluster)),
      // The publisher's sink only records: the entries are handed to sink_ on the io thread.
      publisher_([this](const std::vector<dp::NetworkPolicy>& upserts, const std::vector<std::uint32_t>& removals,
                        bool complete) {
        sent_.upserts = upserts;
        sent_.removals = removals;
        sent_.complete = complete;
        sent_.called = true;
      }, std::move(clusters)),
      thread_(std::make_unique<StoreWorker>()) {}

PolicyCompileWorker::~PolicyCompileWorker() {
  *alive_ = false;
  thread_.reset();  // the compile in progress ends before the feed and the publisher go
}

void PolicyCompileWorker::listing(fed::PolicySnapshot snapshot, std::vector<LocalPod> pods, bool publish_always,
                                  std::optional<PolicyPublisher::Clock::time_point> change_seen) {
  const auto generation = ++posted_;
  thread_->post([this, generation, snapshot = std::move(snapshot), pods = std::move(pods), publish_always,
                 change_seen]() mutable {
    compile(generation, std::move(snapshot), std::move(pods), publish_always, change_seen);
  });
}

void PolicyCompileWorker::locals(std::vector<LocalPod> pods) {
  const auto generation = ++posted_;
  thread_->post([this, generation, pods = std::move(pods)]() mutable {
    compile(generation, std::nullopt, std::move(pods), true, std::nullopt);
  });
}

void PolicyCompileWorker::compile(std::uint64_t generation, std::optional<fed::PolicySnapshot> snapshot,
                                  std::vector<LocalPod> pods, bool publish_always,
                                  std::optional<PolicyPublisher::Clock::time_point> change_seen) {
  if (before_) before_();
  auto outcome = std::make_shared<Outcome>();
  auto& r = outcome->result;
  r.generation = generation;
  r.listing = snapshot.has_value();
  r.report = snapshot ? feed_.update(*snapshot, pods) : feed_.update_locals(pods);
  if (r.report.changed() || publish_always) {
    sent_ = Sent{};
    // No change_seen here: the latency ends where the sink has the entries, on the io thread.
    publisher_.update(feed_, pods, std::nullopt);
    outcome->publish = sent_.called;
    outcome->upserts = std::move(sent_.upserts);
    outcome->removals = std::move(sent_.removals);
    outcome->complete = sent_.complete;
  }
  outcome->change_seen = change_seen;
  if (summaries_ && r.report.changed()) {
    std::size_t locals = 0, bytes = 0;
    for (const auto& [network, compiler] : feed_.compilers()) {
      locals += compiler->locals().size();
      bytes += compiler->tables().bytes();
    }
    r.summary = fmt::format(
        "compiled in {:.3f} ms: {} policies, {} identities; {} local identities on {} networks ({} added, {} "
        "replacements, {} networks built, {} dropped); {} bytes of tables",
        std::chrono::duration<double, std::milli>(r.report.duration).count(), feed_.policies(), feed_.identities(),
        locals, feed_.compilers().size(), r.report.locals_added, r.report.locals_replaced, r.report.networks_built,
        r.report.networks_dropped, bytes);
  }
  auto view = std::make_shared<PolicyView>(view_of(feed_, publisher_, pods));
  view->generation = generation;
  r.view = std::move(view);
  auto alive = alive_;
  asio::post(io_, [this, alive, outcome] {
    if (*alive) deliver(*outcome);
  });
}

void PolicyCompileWorker::deliver(Outcome& o) {
  if (o.result.generation <= delivered_) return;  // older than what is in force (see "Order")
  delivered_ = o.result.generation;
  if (o.publish && sink_) sink_(o.upserts, o.removals, o.complete);
  if (o.publish && (!o.upserts.empty() || !o.removals.empty()) && o.change_seen) {
    const auto latency = PolicyPublisher::Clock::now() - *o.change_seen;
    last_latency_ = latency;
    max_latency_ = std::max(max_latency_, latency);
    ++latency_samples_;
  }
  auto view = std::const_pointer_cast<PolicyView>(o.result.view);
  view->publication.last_latency = last_latency_;
  view->publication.max_latency = max_latency_;
  view->publication.latency_samples = latency_samples_;
  view_ = o.result.view;
  if (done_) done_(o.result);
}

}  // namespace vxfed::control
