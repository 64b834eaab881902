// Drops per policy (docs/policy.md, "Drops per policy"). The forwarder counts each refused new
// flow for the local pod it was decided for (dp::Counters.policy_drops, per endpoint: its own
// egress at the source; its ingress, a remote source's egress and a forged identity at the
// destination). A refusal is the absence of an allowing rule, so "per policy" means: per
// isolating policy of that pod in that direction (the policies that select it for it); a drop
// at a pod two policies isolate counts for each. The ledger turns the per-pod counts into
// per-policy ones with the compile's view of which policies isolate each local pod.
//
// What it cannot attribute is counted apart (policy ""): a remote source's egress refusal (its
// policies are the source's, which the destination does not count per identity), a forged
// identity or a refusal at a pod no policy isolates in that direction (as the view has it when
// the drop is seen), and drops of an endpoint the view has no pod for.
//
// Pure: no I/O, no clock. vxfedd calls update() with each counters answer of the forwarder
// (the periodic polls, and one asked for before each new set of entries goes to it, with the
// view before the change).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "control/policy/policy_compile_worker.hpp"
#include "proto/control.pb.h"
#include "proto/dataplane.pb.h"

namespace vxfed::control {

class PolicyDropLedger {
 public:
  // Adds what each endpoint's counts moved since the last update, attributed to the policies
  // `view` says isolate its pod now. A count lower than before (the forwarder restarted, or the
  // endpoint was attached again) counts from 0. The first update after vxfedd's start takes
  // the forwarder's counts whole.
  void update(const PolicyView& view, const dp::Counters& counters);

  // Per policy, the pods of networks with a published entry (counts as the forwarder has
  // them), the forwarder's totals. `counters`: the latest, or nullptr when there are none.
  v1::PolicyDropsReport report(const PolicyView& view, const dp::Counters* counters) const;

  using Key = std::tuple<std::string, std::string, std::string>;  // policy ("" none), direction, reason
  const std::map<Key, std::uint64_t>& by_policy() const { return by_policy_; }

 private:
  std::map<std::string, std::array<std::uint64_t, 4>> last_;  // by endpoint id
  std::map<Key, std::uint64_t> by_policy_;
};

// The drop reasons of the four per-pod counts, in PolicyEndpointDrops' order, and the
// direction each is counted in.
inline constexpr std::array<const char*, 4> kPodDropReasons = {"policy_denied_egress", "policy_denied_ingress",
                                                               "policy_denied_remote_egress", "policy_forged_identity"};
inline constexpr std::array<const char*, 4> kPodDropDirections = {"egress", "ingress", "egress", "ingress"};

// The metrics families of the report (docs/policy.md, "Drops per policy"; docs/metrics.md):
// vxfedd_policy_drops_total{policy,direction,reason} (policy "" left out: those are
// vxfedd_policy_drops_unattributed_total{direction,reason}), and
// vxfedd_policy_pod_drops_total{network,namespace,pod,reason}.
std::string render_policy_drop_metrics(const v1::PolicyDropsReport& report);

}  // namespace vxfed::control
