// `vxfedctl policy drops`' text (docs/policy.md, "Drops per policy"): the forwarder's totals,
// the refusals per policy, direction and reason, and per local pod with its isolating policies.
#pragma once

#include <string>

#include "proto/control.pb.h"

namespace vxfed::control {

std::string format_policy_drops(const v1::PolicyDropsReport& report);

}  // namespace vxfed::control
