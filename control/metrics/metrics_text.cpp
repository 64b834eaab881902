#include "control/metrics/metrics_text.hpp"

namespace vxfed::control {

using metrics::Exposition;
using metrics::Type;

void render_vxfedd_metrics(Exposition& w, const MetricsInput& in) {
  w.family("vxfedd_build_info", Type::gauge, "Always 1; the version label names the vxfedd build.")
      .sample(std::uint64_t{1}, {{"version", in.version}});
  w.gauge("vxfedd_uptime_seconds", "Seconds since vxfedd started.", static_cast<double>(in.uptime_s));
  w.gauge("vxfedd_networks", "Networks defined on this node.", static_cast<double>(in.networks));
  w.gauge("vxfedd_endpoints", "Endpoints (pod attachments) on this node.", static_cast<double>(in.endpoints));
  w.gauge("vxfedd_endpoints_not_in_dataplane",
          "Endpoints the dataplane does not have (not yet acknowledged, or refused).",
          static_cast<double>(in.endpoints_not_in_dataplane));
  w.gauge("vxfedd_routes", "Remote routes in effect.", static_cast<double>(in.routes));
  w.family("vxfedd_vnis", Type::gauge, "VNI allocations by state.")
      .sample(in.vnis_allocated, {{"state", "in_use"}})
      .sample(in.vnis_held, {{"state", "held"}});

  w.family("vxfedd_vni_pool_size", Type::gauge, "VNIs in the pool's ranges.");
  for (const auto& p : in.pools) w.sample(p.size, {{"pool", p.name}});
  w.family("vxfedd_vni_pool_allocated", Type::gauge, "VNIs of the pool given to networks.");
  for (const auto& p : in.pools) w.sample(p.allocated, {{"pool", p.name}});
  w.family("vxfedd_vni_pool_held", Type::gauge, "VNIs of the pool held down after release.");
  for (const auto& p : in.pools) w.sample(p.held, {{"pool", p.name}});
  w.family("vxfedd_vni_pool_exhausted_total", Type::counter, "Allocations the pool refused because it was full.");
  for (const auto& p : in.pools) w.sample(p.exhausted, {{"pool", p.name}});

  w.family("vxfedd_store_write_duration_seconds", Type::histogram,
           "Journal append and fdatasync of a state store (an API answer waits for it).");
  for (const auto& [name, h] : in.stores)
    if (h != nullptr) w.histogram(*h, {{"store", name}});

  w.gauge("vxfedd_dataplane_connected", "1 when connected to vxfed-dataplane.", in.dataplane_connected ? 1 : 0);
  w.gauge("vxfedd_dataplane_ready", "1 when the dataplane applied the snapshot.", in.dataplane_ready ? 1 : 0);
  w.gauge("vxfedd_dataplane_generation", "Last table generation sent.", static_cast<double>(in.dataplane_generation));
  w.gauge("vxfedd_dataplane_acked_generation", "Last table generation acknowledged.",
          static_cast<double>(in.dataplane_acked_generation));
  w.counter("vxfedd_dataplane_connects_total", "Connections made to the dataplane.", in.dataplane_connects);
  w.counter("vxfedd_dataplane_snapshots_total", "Snapshots sent.", in.dataplane_snapshots);
  w.counter("vxfedd_dataplane_snapshots_refused_total", "Snapshots the dataplane refused.", in.dataplane_snapshots_refused);
  w.counter("vxfedd_dataplane_deltas_total", "Deltas sent.", in.dataplane_deltas);
  w.counter("vxfedd_dataplane_deltas_refused_total", "Deltas the dataplane refused.", in.dataplane_deltas_refused);
  w.counter("vxfedd_dataplane_endpoints_refused_total", "Endpoints the dataplane refused.", in.dataplane_endpoints_refused);
  w.gauge("vxfedd_dataplane_last_sync_seconds", "Connect to snapshot applied, last time.", in.dataplane_last_sync_ms / 1000.0);
  w.gauge("vxfedd_dataplane_deltas_queued", "Deltas waiting to be sent to the dataplane.",
          static_cast<double>(in.dataplane_deltas_queued));
  w.gauge("vxfedd_dataplane_deltas_in_flight", "Deltas sent and not answered yet.",
          static_cast<double>(in.dataplane_deltas_in_flight));
  w.gauge("vxfedd_dataplane_oldest_unacked_change_seconds",
          "Age of the oldest table change the dataplane has not acknowledged (0: none).",
          in.dataplane_oldest_unacked_age_s);
  if (in.dataplane_delta_latency != nullptr) {
    w.family("vxfedd_dataplane_delta_duration_seconds", Type::histogram,
             "Table change published to the dataplane's acknowledgement of its Delta (queue wait included).")
        .histogram(*in.dataplane_delta_latency);
  }

  w.counter("vxfedd_api_connections_total", "API connections accepted.", in.api_connections);
  if (in.api != nullptr) {
    w.family("vxfedd_api_requests_total", Type::counter, "API requests answered, by operation and code.");
    for (const auto& [op, f] : in.api->by_op)
      for (int code = 0; code < static_cast<int>(std::size(f.by_code)); ++code)
        if (code == 0 || f.by_code[code] != 0)  // ok always; errors once seen (bounded: 9 codes)
          w.sample(f.by_code[code], {{"op", op}, {"code", error_code_name(static_cast<v1::ErrorCode>(code))}});
    w.family("vxfedd_api_request_duration_seconds", Type::histogram,
             "Time to answer an API request, persistence included, by operation.");
    for (const auto& [op, f] : in.api->by_op) w.histogram(f.latency, {{"op", op}});
    w.counter("vxfedd_api_attach_waits_total", "Attaches that waited for the dataplane to carry the endpoint.",
              in.api->attach_waits);
    w.counter("vxfedd_api_attach_wait_timeouts_total",
              "Attaches the dataplane did not take in time (the endpoint was detached again).",
              in.api->attach_wait_timeouts);
  }
  w.family("vxfedd_api_rejected_total", Type::counter, "API connections closed for bad input or credentials.")
      .sample(in.api_denied, {{"reason", "permission_denied"}})
      .sample(in.api_bad_frames, {{"reason", "bad_frame"}})
      .sample(in.api_malformed, {{"reason", "malformed"}})
      .sample(in.api_unknown, {{"reason", "unknown_request"}});
  w.counter("vxfedd_metrics_scrapes_total", "GET /metrics answered.", in.metrics_server.requests);
  w.family("vxfedd_metrics_rejected_total", Type::counter,
           "Requests to the metrics endpoint refused (it serves GET /metrics only).")
      .sample(in.metrics_server.rejected_method, {{"reason", "method"}})
      .sample(in.metrics_server.rejected_not_found, {{"reason", "not_found"}})
      .sample(in.metrics_server.rejected_too_large, {{"reason", "too_large"}})
      .sample(in.metrics_server.rejected_timeout, {{"reason", "timeout"}});
  w.counter("vxfedd_metrics_listen_failures_total",
            "Attempts to bind the metrics port that failed (another process held it; retried every 2 s).",
            in.metrics_server.listen_failures);
  w.counter("vxfedd_config_reloads_total", "Config reloads applied.", in.config_reloads);
  w.counter("vxfedd_config_reload_failures_total", "Config reloads refused.", in.config_reload_failures);
  if (in.federation_enabled) {
    w.gauge("vxfedd_federation_available", "1 when the federation store answered the last call.",
            in.federation_available ? 1 : 0);
    w.counter("vxfedd_federation_unavailable_total", "Federation store calls that found it unreachable.",
              in.federation_unavailable);
    w.counter("vxfedd_federation_reconciles_total", "Local copy re-asserted to the federation store.",
              in.federation_reconciles);
    w.counter("vxfedd_federation_restored_total", "Records the store had lost, restored from this node.",
              in.federation_restored);
    w.counter("vxfedd_federation_conflicts_total", "Store and local copy disagreed (the node kept its own).",
              in.federation_conflicts);
    w.gauge("vxfedd_networks_pending", "Config networks waiting for the federation store.",
            static_cast<double>(in.networks_pending));
  }
}

std::string render_metrics(const MetricsInput& in) {
  Exposition w;
  render_vxfedd_metrics(w, in);
  render_dataplane_metrics(w, in);
  if (in.bgp) render_bgp_metrics(w, *in.bgp);
  render_bpf_metrics(w, in);
  if (in.services) render_service_metrics(w, *in.services);
  return w.take();
}

}  // namespace vxfed::control
