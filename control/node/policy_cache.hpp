// The NetworkPolicy entries NodeState last published, kept in a file of its state directory
// (docs/policy.md, "Publishing to the forwarder"), so that a restarted vxfedd's first snapshot
// carries them while its policy follower has not listed the store yet: without them that
// snapshot would replace the forwarder's entries with none, and everything would pass (fail
// static, as the services' cache: control/services/service_cache.hpp). The follower's first
// publication replaces them whole.
//
// A cache: rewritten whole (temp file + rename) after every change, without fsync. Format: a
// dataplane.proto Tables message holding only `policies`, in protobuf's binary form.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::control {

Status save_policy_cache(const std::string& path, const std::map<std::uint32_t, ::vxfed::dataplane::v1::NetworkPolicy>& entries);
// An absent file is an empty cache; an unreadable or damaged one is an error naming the file.
Result<std::vector<::vxfed::dataplane::v1::NetworkPolicy>> load_policy_cache(const std::string& path);

}  // namespace vxfed::control
