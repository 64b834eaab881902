#include "control/policy/policy_drops.hpp"

#include <set>
#include <vector>

#include "common/metrics/exposition.hpp"

namespace vxfed::control {

namespace {

std::array<std::uint64_t, 4> counts_of(const dp::PolicyEndpointDrops& d) {
  return {d.denied_egress(), d.denied_ingress(), d.denied_remote_egress(), d.forged_identity()};
}

// The view's local identity of an endpoint's pod, nullptr when it has none.
const PolicyView::Local* local_of(const PolicyView& view, const PolicyView::Pod& pod) {
  if (!pod.local) return nullptr;
  const auto n = view.networks.find(pod.network);
  if (n == view.networks.end() || *pod.local >= n->second.locals.size()) return nullptr;
  return &n->second.locals[*pod.local];
}

// The policies a refusal of kind `i` (kPodDropReasons' order) at this pod counts for: its
// egress isolators for its own egress; its ingress isolators for ingress and a forged
// identity; none for a remote source's egress.
const std::vector<std::string>* isolators(const PolicyView::Local* local, std::size_t i) {
  if (!local || i == 2) return nullptr;
  return i == 0 ? &local->egress_policies : &local->ingress_policies;
}

}  // namespace

void PolicyDropLedger::update(const PolicyView& view, const dp::Counters& counters) {
  std::map<std::string, std::array<std::uint64_t, 4>> next;
  for (const auto& d : counters.policy_drops()) {
    const auto now = counts_of(d);
    next[d.endpoint_id()] = now;
    const auto was = last_.find(d.endpoint_id());
    const PolicyView::Pod* pod = nullptr;
    if (const auto p = view.pods_by_endpoint.find(d.endpoint_id()); p != view.pods_by_endpoint.end()) pod = &p->second;
    const PolicyView::Local* local = pod ? local_of(view, *pod) : nullptr;
    for (std::size_t i = 0; i < 4; ++i) {
      const std::uint64_t before = was == last_.end() || was->second[i] > now[i] ? 0 : was->second[i];
      const std::uint64_t moved = now[i] - before;
      if (moved == 0) continue;
      const auto* policies = isolators(local, i);
      if (!policies || policies->empty()) {
        by_policy_[{"", kPodDropDirections[i], kPodDropReasons[i]}] += moved;
        continue;
      }
      for (const auto& p : *policies) by_policy_[{p, kPodDropDirections[i], kPodDropReasons[i]}] += moved;
    }
  }
  last_ = std::move(next);
}

v1::PolicyDropsReport PolicyDropLedger::report(const PolicyView& view, const dp::Counters* counters) const {
  v1::PolicyDropsReport r;
  r.set_have_counters(counters != nullptr);
  for (const auto& [key, n] : by_policy_) {
    auto* c = r.add_policies();
    c->set_policy(std::get<0>(key));
    c->set_direction(std::get<1>(key));
    c->set_reason(std::get<2>(key));
    c->set_packets(n);
  }
  if (!counters) return r;
  std::set<std::string> with_entry;
  for (const auto& [network, p] : view.published) with_entry.insert(network);
  for (const auto& d : counters->policy_drops()) {
    const auto p = view.pods_by_endpoint.find(d.endpoint_id());
    if (p == view.pods_by_endpoint.end() || !with_entry.count(p->second.network)) continue;
    const PolicyView::Pod& pod = p->second;
    auto* row = r.add_pods();
    row->set_network(pod.network);
    row->set_namespace_(pod.namespace_name);
    row->set_name(pod.name);
    row->set_endpoint_id(d.endpoint_id());
    row->set_ip(d.ip());
    if (const auto n = view.numbers.find({pod.namespace_name, pod.name}); n != view.numbers.end())
      row->set_identity(n->second);
    if (const PolicyView::Local* local = local_of(view, pod)) {
      for (const auto& s : local->ingress_policies) row->add_ingress_policies(s);
      for (const auto& s : local->egress_policies) row->add_egress_policies(s);
    }
    row->set_denied_egress(d.denied_egress());
    row->set_denied_ingress(d.denied_ingress());
    row->set_denied_remote_egress(d.denied_remote_egress());
    row->set_forged_identity(d.forged_identity());
  }
  for (const auto& w : counters->workers()) {
    r.set_flows_decided(r.flows_decided() + w.policy_new_flows());
    r.set_flows_allowed(r.flows_allowed() + w.policy_allowed());
    r.set_flows_denied(r.flows_denied() + w.policy_denied());
  }
  for (const auto& d : counters->drops())
    if (d.reason().rfind("policy_", 0) == 0) (*r.mutable_reasons())[d.reason()] = d.packets();
  return r;
}

std::string render_policy_drop_metrics(const v1::PolicyDropsReport& report) {
  metrics::Exposition w;
  w.family("vxfedd_policy_drops_total", metrics::Type::counter,
           "New flows the forwarder refused on this node, per isolating policy of the local pod they were decided for "
           "(a drop at a pod two policies isolate counts for each), direction and drop reason.");
  for (const auto& c : report.policies())
    if (!c.policy().empty())
      w.sample(c.packets(), {{"policy", c.policy()}, {"direction", c.direction()}, {"reason", c.reason()}});
  w.family("vxfedd_policy_drops_unattributed_total", metrics::Type::counter,
           "Refused new flows no isolating policy of the local pod explains: a remote source's egress, a forged "
           "identity or a refusal at a pod no policy isolates in that direction.");
  for (const auto& c : report.policies())
    if (c.policy().empty()) w.sample(c.packets(), {{"direction", c.direction()}, {"reason", c.reason()}});
  w.family("vxfedd_policy_pod_drops_total", metrics::Type::counter,
           "Refused new flows per local pod of a network with policy, as the forwarder counts them since the pod's "
           "port was attached, per drop reason.");
  for (const auto& p : report.pods()) {
    const std::uint64_t n[4] = {p.denied_egress(), p.denied_ingress(), p.denied_remote_egress(), p.forged_identity()};
    for (std::size_t i = 0; i < 4; ++i)
      w.sample(n[i], {{"network", p.network()}, {"namespace", p.namespace_()}, {"pod", p.name()},
                      {"reason", kPodDropReasons[i]}});
  }
  return w.take();
}

}  // namespace vxfed::control
