// The network-policy families of vxfedd's metrics (docs/policy.md, "Metrics"), rendered from
// the PolicyFollower's state (control/metrics/metrics_policy.cpp). Per-local-identity series
// are bounded by the pods attached here; nothing is labelled by what the store holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "control/policy/policy_follower.hpp"

namespace vxfed::control {

// `exhausted_refusals`: this vxfedd's applies refused because the identity numbers ran out
// (PolicyApi's store), absent when it has none.
std::string render_policy_metrics(const PolicyFollower& follower, std::optional<std::uint64_t> exhausted_refusals);

}  // namespace vxfed::control
