// vxfed-dataplane's counters (GetCounters, polled by vxfedd) as Prometheus families.
#include "control/metrics/metrics_text.hpp"

#include <string>

namespace vxfed::control {

namespace dpv1 = ::vxfed::dataplane::v1;
using metrics::Exposition;
using metrics::Type;

namespace {

metrics::Histogram histogram_of(const dpv1::Histogram& h) {
  return metrics::Histogram::from_parts({h.upper_bounds().begin(), h.upper_bounds().end()},
                                        {h.bucket_counts().begin(), h.bucket_counts().end()}, h.sum(), h.count());
}

}  // namespace

void render_dataplane_metrics(Exposition& w, const MetricsInput& in) {
  if (!in.have_counters) return;
  const auto& c = in.counters;
  w.gauge("vxfed_dataplane_counters_age_seconds", "Age of the dataplane counters below (vxfedd polls them).",
          in.counters_age_s);

  struct PortMetric {
    const char* name;
    const char* help;
    std::uint64_t (*get)(const dpv1::PortCounters&);
  };
  const PortMetric ports[] = {
      {"vxfed_dataplane_port_rx_packets_total", "Packets received per port and queue.", [](const auto& p) { return p.rx_packets(); }},
      {"vxfed_dataplane_port_rx_bytes_total", "Bytes received per port and queue.", [](const auto& p) { return p.rx_bytes(); }},
      {"vxfed_dataplane_port_tx_packets_total", "Packets sent per port and queue.", [](const auto& p) { return p.tx_packets(); }},
      {"vxfed_dataplane_port_tx_bytes_total", "Bytes sent per port and queue.", [](const auto& p) { return p.tx_bytes(); }},
      {"vxfed_dataplane_port_drops_total", "Packets dropped per port and queue (ring drops included).", [](const auto& p) { return p.drops(); }},
      {"vxfed_dataplane_port_ring_drops_total", "Frames the kernel dropped on a full af_packet RX ring, per port and queue.", [](const auto& p) { return p.ring_drops(); }},
  };
  for (const auto& m : ports) {
    w.family(m.name, Type::counter, m.help);
    for (const auto& p : c.ports()) w.sample(m.get(p), {{"port", p.name()}, {"queue", std::to_string(p.queue())}});
  }

  if (in.per_vni) {
    struct VniMetric {
      const char* name;
      const char* help;
      std::uint64_t (*get)(const dpv1::VniCounters&);
    };
    const VniMetric vnis[] = {
        {"vxfed_dataplane_vni_encap_packets_total", "Packets encapsulated per VNI.", [](const auto& v) { return v.encap_packets(); }},
        {"vxfed_dataplane_vni_encap_bytes_total", "Bytes encapsulated per VNI.", [](const auto& v) { return v.encap_bytes(); }},
        {"vxfed_dataplane_vni_decap_packets_total", "Packets decapsulated per VNI.", [](const auto& v) { return v.decap_packets(); }},
        {"vxfed_dataplane_vni_decap_bytes_total", "Bytes decapsulated per VNI.", [](const auto& v) { return v.decap_bytes(); }},
        {"vxfed_dataplane_vni_local_packets_total", "Packets delivered pod to pod on this node per VNI.", [](const auto& v) { return v.local_packets(); }},
        {"vxfed_dataplane_vni_local_bytes_total", "Bytes delivered pod to pod on this node per VNI.", [](const auto& v) { return v.local_bytes(); }},
    };
    for (const auto& m : vnis) {
      w.family(m.name, Type::counter, m.help);
      for (const auto& v : c.vnis())
        if (in.vnis_of_networks.count(v.vni())) w.sample(m.get(v), {{"vni", std::to_string(v.vni())}});
    }
  }

  w.family("vxfed_dataplane_drops_total", Type::counter, "Packets dropped by the dataplane, by reason.");
  for (const auto& d : c.drops()) w.sample(d.packets(), {{"reason", d.reason()}});

  w.family("vxfed_dataplane_worker_loops_total", Type::counter, "Worker loop iterations (one poll of every port).");
  for (const auto& s : c.workers()) w.sample(s.loops(), {{"worker", std::to_string(s.worker())}});
  w.family("vxfed_dataplane_worker_busy_loops_total", Type::counter, "Worker loop iterations that moved packets.");
  for (const auto& s : c.workers()) w.sample(s.busy_loops(), {{"worker", std::to_string(s.worker())}});
  w.family("vxfed_dataplane_worker_busy_seconds_total", Type::counter,
           "Time workers spent in iterations that moved packets; its rate is the busy ratio.");
  for (const auto& s : c.workers()) w.sample(s.busy_seconds(), {{"worker", std::to_string(s.worker())}});
  w.family("vxfed_dataplane_worker_idle_sleeps_total", Type::counter, "Naps and blocks of idle workers.");
  for (const auto& s : c.workers()) w.sample(s.sleeps(), {{"worker", std::to_string(s.worker())}});

  // Global services' and network policy's per-worker work (docs/conntrack.md, docs/policy.md
  // "Enforcement in the forwarder"); their drops are in vxfed_dataplane_drops_total by reason.
  struct WorkerMetric {
    const char* name;
    const char* help;
    std::uint64_t (*get)(const dpv1::WorkerStats&);
  };
  const WorkerMetric worker_flows[] = {
      {"vxfed_dataplane_service_new_flows_total", "Flows to a service VIP:port given a backend and tracked.", [](const auto& s) { return s.service_new_flows(); }},
      {"vxfed_dataplane_service_translated_total", "Packets whose destination became a service backend's.", [](const auto& s) { return s.service_translated(); }},
      {"vxfed_dataplane_service_replies_translated_total", "Packets whose source became the VIP:port again (replies, ICMP errors).", [](const auto& s) { return s.service_replies_translated(); }},
      {"vxfed_dataplane_service_repicked_total", "Tracked service flows given a new backend because theirs left the service.", [](const auto& s) { return s.service_repicked(); }},
      {"vxfed_dataplane_handed_over_total", "Packets handed to the worker owning their local pod's flows (services and policy).", [](const auto& s) { return s.service_handed_over(); }},
      {"vxfed_dataplane_policy_flows_decided_total", "Flows of networks with a NetworkPolicy decided (a first packet, or one whose policy was replaced).", [](const auto& s) { return s.policy_new_flows(); }},
      {"vxfed_dataplane_policy_flows_allowed_total", "Decided flows the policy let through (then tracked: their replies pass).", [](const auto& s) { return s.policy_allowed(); }},
      {"vxfed_dataplane_policy_flows_denied_total", "Decided flows the policy dropped (policy_denied_* drop reasons).", [](const auto& s) { return s.policy_denied(); }},
  };
  for (const auto& m : worker_flows) {
    w.family(m.name, Type::counter, m.help);
    for (const auto& s : c.workers()) w.sample(m.get(s), {{"worker", std::to_string(s.worker())}});
  }

  if (c.has_tables()) {
    const auto& t = c.tables();
    w.family("vxfed_dataplane_table_entries", Type::gauge, "Entries of the tables the workers use now.")
        .sample(std::uint64_t{t.networks()}, {{"table", "networks"}})
        .sample(std::uint64_t{t.endpoints()}, {{"table", "endpoints"}})
        .sample(std::uint64_t{t.routes()}, {{"table", "routes"}})
        .sample(std::uint64_t{t.vteps()}, {{"table", "vteps"}})
        .sample(std::uint64_t{t.neighbors()}, {{"table", "neighbors"}});
  }
  w.family("vxfed_dataplane_table_updates_total", Type::counter, "Table updates applied, by kind.")
      .sample(c.snapshots_applied(), {{"kind", "snapshot"}})
      .sample(c.deltas_applied(), {{"kind", "delta"}});
  w.counter("vxfed_dataplane_table_updates_refused_total", "Snapshots and Deltas refused as invalid.",
            c.requests_refused());
  if (c.has_table_update_seconds()) {
    w.family("vxfed_dataplane_table_update_duration_seconds", Type::histogram,
             "Snapshot or Delta received to new tables in force (validate, build, RCU grace period).")
        .histogram(histogram_of(c.table_update_seconds()));
  }
  // VXLAN Group Policy (docs/dataplane.md): received; enforced where the network has a NetworkPolicy.
  w.counter("vxfed_dataplane_gbp_rx_packets_total", "VXLAN-GBP packets received (G bit set), any group.",
            c.gbp_rx_packets());
  w.counter("vxfed_dataplane_gbp_rx_policy_applied_total",
            "VXLAN-GBP packets received with the A bit (the sender applied its policy).", c.gbp_rx_policy_applied());
  w.family("vxfed_dataplane_api_rejected_total", Type::counter,
           "Dataplane API connections refused: peer neither root nor the dataplane's uid (SO_PEERCRED).")
      .sample(c.api_refused(), {{"reason", "permission_denied"}});
}

}  // namespace vxfed::control
