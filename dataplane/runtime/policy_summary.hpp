// `vxfed-dpctl dump`'s policy summary: per network with a NetworkPolicy, its tables in numbers
// (local tables, remote-egress tables and the identities that have one, endpoints listed and
// mapped onto the dumped endpoints, the bytes the forwarder's converted tables take), computed
// from the dumped tables with the forwarder's own conversion (dataplane/core/policy_convert.cpp).
#pragma once

#include <string>

#include "proto/dataplane.pb.h"

namespace vxfed::dataplane {

// The dump's JSON (to_json of the response) with "policySummary" added next to "tables" when
// the tables hold policies; unchanged otherwise.
std::string with_policy_summary(const std::string& response_json, const v1::Tables& tables);

}  // namespace vxfed::dataplane
