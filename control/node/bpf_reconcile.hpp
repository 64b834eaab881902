// Start-up reconciliation of the per-pod eBPF programs (bpf/) with vxfedd's endpoints.
//
// The CNI plugin attaches a pod's programs and pins them in bpffs, so they stay in force
// while vxfedd restarts. What a restart can leave behind are pins nobody owns any more: a
// pod deleted while vxfedd was down and whose DEL failed half-way, a namespace that is gone.
// At start-up vxfedd keeps the pins of the endpoints it knows (whose namespace is alive)
// and detaches + unpins the rest. Pins younger than `grace_ms` are kept too: they may belong
// to a CNI ADD that attached its programs and is now waiting for vxfedd to come up.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "proto/control.pb.h"
#include "common/result.hpp"

namespace vxfed::control {

struct BpfReconcileOptions {
  std::string pin_root;          // "" = the bpf library's default ($VXFED_BPF_PIN_ROOT, /sys/fs/bpf/vxfed)
  std::uint64_t grace_ms = 60000;
};

struct BpfReconcileSummary {
  std::vector<std::string> kept, removed, errors;
  std::size_t endpoints_without_pins = 0;   // no limits asked for, or pins lost
};

// The pod keys (bpf::pod_key_for) of the given endpoints.
std::set<std::string> pod_keys_of(const std::vector<v1::EndpointInfo>& endpoints);

// Runs the reconciliation and logs what it did. An error means nothing could be listed
// (e.g. bpffs missing); per-pod failures are in `errors` and the others still ran.
Result<BpfReconcileSummary> reconcile_pod_programs(const std::vector<v1::EndpointInfo>& endpoints,
                                                   const BpfReconcileOptions& options, spdlog::logger& log);

}  // namespace vxfed::control
