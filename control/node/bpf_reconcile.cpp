#include "control/node/bpf_reconcile.hpp"

#include <chrono>

#include "bpf/lib/vxfed_bpf.hpp"

namespace vxfed::control {

namespace {

std::uint64_t unix_ms_now() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

}  // namespace

std::set<std::string> pod_keys_of(const std::vector<v1::EndpointInfo>& endpoints) {
  std::set<std::string> keys;
  for (const auto& e : endpoints) keys.insert(bpf::pod_key_for(e.spec().container_id(), e.spec().ifname()));
  return keys;
}

Result<BpfReconcileSummary> reconcile_pod_programs(const std::vector<v1::EndpointInfo>& endpoints,
                                                   const BpfReconcileOptions& options, spdlog::logger& log) {
  bpf::Options bpf_options;
  if (!options.pin_root.empty()) bpf_options.pin_root = options.pin_root;

  const auto pinned = bpf::list_pinned(bpf_options);
  if (!pinned) return make_error("eBPF pins under " + bpf_options.pin_root + ": " + pinned.error());

  auto wanted = pod_keys_of(endpoints);
  const std::uint64_t now = unix_ms_now();
  for (const auto& pod : *pinned) {
    // A young pin of a live pod may be a CNI ADD in flight (programs attached, vxfedd's
    // Attach not yet done): leave it to that ADD, or to its rollback.
    const bool young = pod.attached_unix_ms + options.grace_ms > now;
    if (!wanted.count(pod.pod_key) && young && pod.netns_alive) {
      log.info("eBPF: keeping {} although no endpoint uses it: attached {} ms ago (grace {} ms)", pod.pod_key,
               now - pod.attached_unix_ms, options.grace_ms);
      wanted.insert(pod.pod_key);
    }
  }

  auto report = bpf::reconcile(wanted, bpf_options);
  if (!report) return make_error("eBPF reconcile under " + bpf_options.pin_root + ": " + report.error());

  BpfReconcileSummary summary;
  summary.kept = report->kept;
  summary.removed = report->removed;
  summary.errors = report->errors;
  summary.endpoints_without_pins = report->missing.size();
  const std::set<std::string> missing(report->missing.begin(), report->missing.end());
  for (const auto& key : summary.removed) {
    if (missing.count(key))
      log.warn("eBPF: {} belongs to a live endpoint but its filters were gone: pins removed, its limits are "
               "no longer enforced until the CNI plugin attaches them again (CNI CHECK reports it)", key);
    else
      log.info("eBPF: removed the programs of {} (no endpoint uses it, or its namespace is gone)", key);
  }
  for (const auto& e : summary.errors) log.error("eBPF: reconcile: {}", e);
  log.info("eBPF: reconciled pins under {}: {} kept, {} removed, {} errors; {} endpoints have no pins (no limits)",
           bpf_options.pin_root, summary.kept.size(), summary.removed.size(), summary.errors.size(),
           summary.endpoints_without_pins);
  return summary;
}

}  // namespace vxfed::control
