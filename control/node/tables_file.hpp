// A dataplane.proto Tables message kept in a file of vxfedd's state directory: the caches that
// let a restarted vxfedd's first snapshot carry what it last programmed while the federation
// store is slow or away (services.cache: control/services/service_cache.hpp; policies.cache:
// control/node/policy_cache.hpp). Written whole (temp file + rename, no fsync: a cache, which
// the store's first listing corrects), read back in protobuf's binary form.
#pragma once

#include <string>

#include "common/result.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::control {

Status write_tables_file(const std::string& path, const ::vxfed::dataplane::v1::Tables& tables);

// An absent file reads as empty Tables. An unreadable file, one that does not parse, or one
// holding more than `keep` (a Tables with only the cache's own field; `what` names the cache in
// errors, e.g. "policy cache") is an error naming the file.
Result<::vxfed::dataplane::v1::Tables> read_tables_file(const std::string& path, const std::string& what,
                                                       void (*clear_own_field)(::vxfed::dataplane::v1::Tables&));

}  // namespace vxfed::control
