// Network policy as this node compiles it (docs/policy.md, "Metrics"): what the follower
// holds from the store, the compiled tables per network and per local identity, how long the
// compiles take, and the store's refusals and collector runs.
#include "common/metrics/exposition.hpp"
#include "control/policy/policy_metrics.hpp"

namespace vxfed::control {

using metrics::Exposition;
using metrics::Type;

namespace {

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

std::string render_policy_metrics(const PolicyFollower& follower, std::optional<std::uint64_t> exhausted_refusals) {
  Exposition w;
  const auto& s = follower.stats();
  const auto& view = follower.view();
  w.gauge("vxfedd_policy_policies", "MultiNetworkPolicies held from the federation store, every cluster's.",
          static_cast<double>(view.policies));
  w.gauge("vxfedd_policy_identities", "Identity numbers held from the store (allocated or held down).",
          static_cast<double>(view.identities));
  w.gauge("vxfedd_policy_store_revision", "The federation store's revision of the last listing of v1/policy/.",
          static_cast<double>(view.revision));
  w.family("vxfedd_policy_local_identities", Type::gauge,
           "Identities of the pods attached here, per network (1 is the unlabelled identity of a namespace).");
  for (const auto& [network, n] : view.networks)
    w.sample(static_cast<std::uint64_t>(n.locals.size()), {{"network", network}});
  w.family("vxfedd_policy_tables_bytes", Type::gauge, "Bytes of the compiled policy tables, per network.");
  for (const auto& [network, n] : view.networks)
    w.sample(static_cast<std::uint64_t>(n.table_bytes), {{"network", network}});
  // What each local identity's tables say, so a policy's effect on this node's pods is visible
  // before the forwarder enforces it.
  w.family("vxfedd_policy_local_isolated", Type::gauge,
           "1 when some policy isolates the local identity in that direction (what is not let through is denied).");
  for (const auto& [network, n] : view.networks) {
    for (const auto& l : n.locals) {
      const auto id = std::to_string(l.number);
      const auto& ns = l.namespace_name;
      w.sample(l.ingress_isolated, {{"network", network}, {"namespace", ns}, {"identity", id}, {"direction", "ingress"}})
          .sample(l.egress_isolated, {{"network", network}, {"namespace", ns}, {"identity", id}, {"direction", "egress"}});
    }
  }
  w.family("vxfedd_policy_local_peers", Type::gauge,
           "Peer identities listed in the local identity's table (those some selector rule lets through).");
  for (const auto& [network, n] : view.networks) {
    for (const auto& l : n.locals) {
      const auto id = std::to_string(l.number);
      const auto& ns = l.namespace_name;
      w.sample(static_cast<std::uint64_t>(l.ingress_peers),
               {{"network", network}, {"namespace", ns}, {"identity", id}, {"direction", "ingress"}})
          .sample(static_cast<std::uint64_t>(l.egress_peers),
                  {{"network", network}, {"namespace", ns}, {"identity", id}, {"direction", "egress"}});
    }
  }
  // What went to the forwarder (docs/policy.md, "Publishing to the forwarder").
  const auto& ps = view.publication;
  w.counter("vxfedd_policy_publications_total", "NetworkPolicy entries sent to the forwarder (changed ones only).",
            ps.upserts);
  w.counter("vxfedd_policy_publication_removals_total", "NetworkPolicy entries removed from the forwarder.", ps.removals);
  w.counter("vxfedd_policy_publication_unchanged_total",
            "NetworkPolicy entries rebuilt after a change and not sent: equal to what the forwarder has.", ps.unchanged);
  w.gauge("vxfedd_policy_publication_last_bytes", "Serialized bytes of the last NetworkPolicy entry sent.",
          static_cast<double>(ps.last_bytes));
  w.gauge("vxfedd_policy_publication_latency_last_seconds",
          "A store change seen by the watch -> its NetworkPolicy entries handed to the dataplane client (the last).",
          seconds(ps.last_latency));
  w.gauge("vxfedd_policy_publication_latency_max_seconds", "The same, the longest since start.", seconds(ps.max_latency));
  w.gauge("vxfedd_policy_publication_build_last_seconds",
          "Building and comparing the NetworkPolicy entries after the last change (on the policy compile thread).",
          seconds(ps.last_build));
  w.gauge("vxfedd_policy_publication_build_max_seconds", "The same, the longest since start.", seconds(ps.max_build));
  w.family("vxfedd_policy_published_bytes", Type::gauge, "Serialized bytes of the network's entry in force, per network.");
  for (const auto& [network, p] : view.published)
    w.sample(static_cast<std::uint64_t>(p.bytes), {{"network", network}, {"vni", std::to_string(p.vni)}});
  w.family("vxfedd_policy_published_endpoints", Type::gauge, "Pods mapped to a local table in the network's entry.");
  for (const auto& [network, p] : view.published)
    w.sample(static_cast<std::uint64_t>(p.endpoints), {{"network", network}, {"vni", std::to_string(p.vni)}});
  w.family("vxfedd_policy_published_local_tables", Type::gauge,
           "Local identities (an ingress and an egress table each) in the network's entry.");
  for (const auto& [network, p] : view.published)
    w.sample(static_cast<std::uint64_t>(p.local_tables), {{"network", network}, {"vni", std::to_string(p.vni)}});
  w.family("vxfedd_policy_published_generation", Type::gauge,
           "Entries of the network sent since start (its generation as vxfedd counts it).");
  for (const auto& [network, p] : view.published)
    w.sample(p.generation, {{"network", network}, {"vni", std::to_string(p.vni)}});
  w.gauge("vxfedd_policy_watching", "1 while the watch of the store's v1/policy/ is established.", s.watching ? 1 : 0);
  w.counter("vxfedd_policy_listings_total", "Listings of v1/policy/ fed to the compilers (one per change burst).",
            s.listings);
  w.counter("vxfedd_policy_list_failures_total", "Listings of v1/policy/ that failed (retried; the tables stay).",
            s.list_failures);
  w.counter("vxfedd_policy_watch_breaks_total", "Times the watch of v1/policy/ broke (re-established by itself).",
            s.watch_breaks);
  w.counter("vxfedd_policy_records_skipped_total", "Store records left out because they did not read.",
            s.records_skipped);
  w.counter("vxfedd_policy_updates_total",
            "Changes fed to the compilers (a listing or the attached pods that changed something).", s.updates);
  w.gauge("vxfedd_policy_update_last_seconds", "Duration of the last change fed to the compilers.",
          seconds(s.last_update));
  w.gauge("vxfedd_policy_update_max_seconds", "The longest change fed to the compilers since start.",
          seconds(s.max_update));
  w.gauge("vxfedd_policy_update_busy_seconds", "Time spent feeding changes to the compilers since start.",
          seconds(s.total_update));
  if (exhausted_refusals)
    w.counter("vxfedd_policy_identity_exhausted_total",
              "Policy applies through this vxfedd refused because the identity numbers ran out.", *exhausted_refusals);
  w.gauge("vxfedd_policy_collector", "1 when this node is the federation's collector and runs the identity collector.",
          s.collector ? 1 : 0);
  w.counter("vxfedd_policy_collector_runs_total", "Identity collector runs (PolicyStore::maintain) on this node.",
            s.maintain_runs);
  w.counter("vxfedd_policy_collector_failures_total", "Identity collector runs or collector checks that failed.",
            s.maintain_failures);
  w.counter("vxfedd_policy_identities_released_total", "Numbers without users the collector held down.", s.released);
  w.counter("vxfedd_policy_identities_forgotten_total", "Held numbers the collector freed after their hold-down.",
            s.forgotten);
  return w.take();
}

}  // namespace vxfed::control
