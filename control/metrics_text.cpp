#include "control/metrics_text.hpp"

#include <fmt/format.h>

namespace vxfed::control {

namespace {

class Writer {
 public:
  void metric(const char* name, const char* type, const char* help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  }
  template <typename T>
  void value(const char* name, T v, const std::string& labels = {}) {
    out_ += labels.empty() ? fmt::format("{} {}\n", name, v) : fmt::format("{}{{{}}} {}\n", name, labels, v);
  }
  template <typename T>
  void single(const char* name, const char* type, const char* help, T v) {
    metric(name, type, help);
    value(name, v);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Label values are our own names, but escape anyway: a bad scrape is worse than an ugly label.
std::string esc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out;
}

}  // namespace

std::string render_metrics(const MetricsInput& in) {
  Writer w;
  w.single("vxfedd_uptime_seconds", "gauge", "Seconds since vxfedd started.", in.uptime_s);
  w.single("vxfedd_networks", "gauge", "Networks defined on this node.", in.networks);
  w.single("vxfedd_endpoints", "gauge", "Endpoints (pod attachments) on this node.", in.endpoints);
  w.single("vxfedd_routes", "gauge", "Remote routes in effect.", in.routes);
  w.metric("vxfedd_vnis", "gauge", "VNI allocations by state.");
  w.value("vxfedd_vnis", in.vnis_allocated, "state=\"in_use\"");
  w.value("vxfedd_vnis", in.vnis_held, "state=\"held\"");
  w.single("vxfedd_dataplane_connected", "gauge", "1 when connected to vxfed-dataplane.", in.dataplane_connected ? 1 : 0);
  w.single("vxfedd_dataplane_ready", "gauge", "1 when the dataplane applied the snapshot.", in.dataplane_ready ? 1 : 0);
  w.single("vxfedd_dataplane_generation", "gauge", "Last table generation sent.", in.dataplane_generation);
  w.single("vxfedd_dataplane_acked_generation", "gauge", "Last table generation acknowledged.", in.dataplane_acked_generation);
  w.single("vxfedd_dataplane_connects_total", "counter", "Connections made to the dataplane.", in.dataplane_connects);
  w.single("vxfedd_dataplane_snapshots_total", "counter", "Snapshots sent.", in.dataplane_snapshots);
  w.single("vxfedd_dataplane_snapshots_refused_total", "counter", "Snapshots the dataplane refused.", in.dataplane_snapshots_refused);
  w.single("vxfedd_dataplane_deltas_total", "counter", "Deltas sent.", in.dataplane_deltas);
  w.single("vxfedd_dataplane_deltas_refused_total", "counter", "Deltas the dataplane refused.", in.dataplane_deltas_refused);
  w.single("vxfedd_dataplane_endpoints_refused_total", "counter", "Endpoints the dataplane refused.", in.dataplane_endpoints_refused);
  w.single("vxfedd_dataplane_last_sync_milliseconds", "gauge", "Connect to snapshot applied, last time.", in.dataplane_last_sync_ms);
  w.single("vxfedd_api_connections_total", "counter", "API connections accepted.", in.api_connections);
  w.single("vxfedd_api_requests_total", "counter", "API requests handled.", in.api_requests);
  w.metric("vxfedd_api_errors_total", "counter", "API requests answered with an error, by code.");
  for (const auto& [code, n] : in.api_errors_by_code) w.value("vxfedd_api_errors_total", n, "code=\"" + esc(code) + "\"");
  w.metric("vxfedd_api_rejected_total", "counter", "API connections closed for bad input or credentials.");
  w.value("vxfedd_api_rejected_total", in.api_denied, "reason=\"permission_denied\"");
  w.value("vxfedd_api_rejected_total", in.api_bad_frames, "reason=\"bad_frame\"");
  w.value("vxfedd_api_rejected_total", in.api_malformed, "reason=\"malformed\"");
  w.value("vxfedd_api_rejected_total", in.api_unknown, "reason=\"unknown_request\"");
  w.single("vxfedd_config_reloads_total", "counter", "Config reloads applied.", in.config_reloads);
  w.single("vxfedd_config_reload_failures_total", "counter", "Config reloads refused.", in.config_reload_failures);
  if (in.federation_enabled) {
    w.single("vxfedd_federation_available", "gauge", "1 when the federation store answered the last call.",
             in.federation_available ? 1 : 0);
    w.single("vxfedd_federation_unavailable_total", "counter", "Federation store calls that found it unreachable.",
             in.federation_unavailable);
    w.single("vxfedd_federation_reconciles_total", "counter", "Local copy re-asserted to the federation store.",
             in.federation_reconciles);
    w.single("vxfedd_federation_restored_total", "counter", "Records the store had lost, restored from this node.",
             in.federation_restored);
    w.single("vxfedd_federation_conflicts_total", "counter", "Store and local copy disagreed (the node kept its own).",
             in.federation_conflicts);
    w.single("vxfedd_networks_pending", "gauge", "Config networks waiting for the federation store.", in.networks_pending);
  }
  if (in.have_counters) {
    const auto& c = in.counters;
    w.single("vxfed_dataplane_counters_age_seconds", "gauge", "Age of the dataplane counters below.", in.counters_age_s);
    struct PortMetric { const char* name; const char* help; std::uint64_t (*get)(const ::vxfed::dataplane::v1::PortCounters&); };
    const PortMetric ports[] = {
        {"vxfed_dataplane_port_rx_packets_total", "Packets received per port and queue.", [](const auto& p) { return p.rx_packets(); }},
        {"vxfed_dataplane_port_rx_bytes_total", "Bytes received per port and queue.", [](const auto& p) { return p.rx_bytes(); }},
        {"vxfed_dataplane_port_tx_packets_total", "Packets sent per port and queue.", [](const auto& p) { return p.tx_packets(); }},
        {"vxfed_dataplane_port_tx_bytes_total", "Bytes sent per port and queue.", [](const auto& p) { return p.tx_bytes(); }},
        {"vxfed_dataplane_port_drops_total", "Packets dropped per port and queue.", [](const auto& p) { return p.drops(); }},
    };
    for (const auto& m : ports) {
      w.metric(m.name, "counter", m.help);
      for (const auto& p : c.ports())
        w.value(m.name, m.get(p), fmt::format("port=\"{}\",queue=\"{}\"", esc(p.name()), p.queue()));
    }
    struct VniMetric { const char* name; const char* help; std::uint64_t (*get)(const ::vxfed::dataplane::v1::VniCounters&); };
    const VniMetric vnis[] = {
        {"vxfed_dataplane_vni_encap_packets_total", "Packets encapsulated per VNI.", [](const auto& v) { return v.encap_packets(); }},
        {"vxfed_dataplane_vni_encap_bytes_total", "Bytes encapsulated per VNI.", [](const auto& v) { return v.encap_bytes(); }},
        {"vxfed_dataplane_vni_decap_packets_total", "Packets decapsulated per VNI.", [](const auto& v) { return v.decap_packets(); }},
        {"vxfed_dataplane_vni_decap_bytes_total", "Bytes decapsulated per VNI.", [](const auto& v) { return v.decap_bytes(); }},
        {"vxfed_dataplane_vni_local_packets_total", "Packets delivered pod to pod on this node per VNI.", [](const auto& v) { return v.local_packets(); }},
        {"vxfed_dataplane_vni_local_bytes_total", "Bytes delivered pod to pod on this node per VNI.", [](const auto& v) { return v.local_bytes(); }},
    };
    for (const auto& m : vnis) {
      w.metric(m.name, "counter", m.help);
      for (const auto& v : c.vnis()) w.value(m.name, m.get(v), fmt::format("vni=\"{}\"", v.vni()));
    }
    w.metric("vxfed_dataplane_drops_total", "counter", "Packets dropped by the dataplane, by reason.");
    for (const auto& d : c.drops()) w.value("vxfed_dataplane_drops_total", d.packets(), "reason=\"" + esc(d.reason()) + "\"");
  }
  return w.take();
}

}  // namespace vxfed::control
