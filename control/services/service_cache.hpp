// The Service entries vxfedd last programmed, kept in a file in its state directory, so that a
// restarted vxfedd's first snapshot carries them while the federation store is slow or away
// (fail static, as networks and the BGP route cache: bgp/route_cache.hpp). The store's first
// listing after the start replaces them: entries it does not produce are removed then.
//
// A cache, not a store: rewritten whole (temp file + rename) at most once per
// kServiceCacheIntervalMs after a change, without fsync, so the last changes before a crash may
// be missing; the first listing corrects them. Format: a dataplane.proto Tables message holding
// only `services`, in protobuf's binary form.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::control {

inline constexpr unsigned kServiceCacheIntervalMs = 1000;

// Writes `path` (path.tmp, then rename).
Status save_service_cache(const std::string& path, const std::map<std::string, ::vxfed::dataplane::v1::Service>& entries);
// An absent file is an empty cache; an unreadable or damaged one is an error naming the file.
Result<std::vector<::vxfed::dataplane::v1::Service>> load_service_cache(const std::string& path);

}  // namespace vxfed::control
