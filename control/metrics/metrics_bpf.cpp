// The per-pod eBPF programs' counters (bpf/: pinned per-CPU maps, summed) as Prometheus
// families, one set per endpoint with pinned programs.
#include "control/metrics/metrics_text.hpp"

namespace vxfed::control {

using metrics::Exposition;
using metrics::Type;

namespace {

metrics::Labels pod_labels(const PodBpfFigures& p) {
  return {{"network", p.network}, {"pod_namespace", p.pod_namespace}, {"pod_name", p.pod_name}, {"ifname", p.ifname}};
}

}  // namespace

void render_bpf_metrics(Exposition& w, const MetricsInput& in) {
  if (!in.bpf_enabled) return;
  w.gauge("vxfed_bpf_pods", "Endpoints whose eBPF programs' counters were read.", static_cast<double>(in.pods.size()));
  w.counter("vxfed_bpf_read_errors_total", "Pods whose pinned maps could not be read (cumulative over scrapes).",
            in.bpf_read_errors);
  w.family("vxfed_bpf_pod_packets_total", Type::counter,
           "Packets seen by the pod's eBPF programs, by outcome (egress_dropped_rate, ingress_dropped_rate: rate "
           "limit drops, the programs' or the pod's tbf shapers'; marked: DSCP/priority set).");
  for (const auto& p : in.pods)
    for (const auto& [outcome, n] : p.counters.stats) {
      auto labels = pod_labels(p);
      labels.push_back({"outcome", outcome});
      w.sample(n, labels);
    }
  w.family("vxfed_bpf_pod_class_packets_total", Type::counter, "Pod egress packets per marking rule (class).");
  for (const auto& p : in.pods)
    for (const auto& c : p.counters.classes) {
      auto labels = pod_labels(p);
      labels.push_back({"class", c.name});
      w.sample(c.packets, labels);
    }
  w.family("vxfed_bpf_pod_class_bytes_total", Type::counter, "Pod egress bytes per marking rule (class).");
  for (const auto& p : in.pods)
    for (const auto& c : p.counters.classes) {
      auto labels = pod_labels(p);
      labels.push_back({"class", c.name});
      w.sample(c.bytes, labels);
    }
}

}  // namespace vxfed::control
