// The global-service families (docs/services.md, "Metrics"): one series per service of the
// federation and backend state, so a service whose backends are all "node down" or whose
// strategy allows none from this node shows on a dashboard before a client notices.
#include "control/metrics/metrics_text.hpp"

namespace vxfed::control {

using metrics::Exposition;
using metrics::Type;

void render_service_metrics(Exposition& w, const ServiceFigures& s) {
  std::uint64_t programmed = 0;
  for (const auto& p : s.services) programmed += p.programmed ? 1 : 0;
  w.family("vxfedd_services", Type::gauge,
           "Federated services, programmed into the dataplane's tables or not (no VIP, or the node does not "
           "serve services.network).")
      .sample(programmed, {{"state", "programmed"}})
      .sample(static_cast<std::uint64_t>(s.services.size()) - programmed, {{"state", "not_programmed"}});
  w.family("vxfedd_service_backends_allowed", Type::gauge,
           "Backends the service's strategy gives new flows from this node now (0: flows to the VIP are dropped).");
  for (const auto& p : s.services) w.sample(p.allowed, {{"service", p.service}});
  w.family("vxfedd_service_backends", Type::gauge,
           "The service's backends by state as this node sees them (node_down: ready but not reached: no route "
           "or local endpoint covers it).");
  for (const auto& p : s.services)
    w.sample(p.ready, {{"service", p.service}, {"state", "ready"}})
        .sample(p.not_ready, {{"service", p.service}, {"state", "not_ready"}})
        .sample(p.node_down, {{"service", p.service}, {"state", "node_down"}});
  if (s.have_flows) {
    w.family("vxfedd_service_backend_flows", Type::gauge,
             "Translated flows of the service live on the backend in this node's forwarder now (its connection "
             "tables' census).");
    for (const auto& b : s.backend_flows)
      w.sample(b.flows, {{"service", b.service}, {"cluster", b.cluster}, {"backend", b.backend}});
    w.family("vxfedd_service_backend_new_flows_total", Type::counter,
             "New flows of the service this node's forwarder gave the backend since it started.");
    for (const auto& b : s.backend_flows)
      w.sample(b.new_flows, {{"service", b.service}, {"cluster", b.cluster}, {"backend", b.backend}});
  }
  w.gauge("vxfedd_services_watching", "1 while the watch of the store's v1/services/ is established.",
          s.watching ? 1 : 0);
  w.counter("vxfedd_services_listings_total", "Listings of the store's services compiled (one per change burst).",
            s.listings);
  w.counter("vxfedd_services_list_failures_total", "Listings of the store's services that failed (retried).",
            s.list_failures);
  w.counter("vxfedd_services_watch_breaks_total", "Times the watch of v1/services/ broke (re-established by itself).",
            s.watch_breaks);
  w.counter("vxfedd_service_compiles_total",
            "Services compiled into entries (on a listing that changed them, or a route or endpoint change "
            "behind a backend).",
            s.compiles);
}

}  // namespace vxfed::control
