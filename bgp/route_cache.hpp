// The routes vxfedd last learned over BGP, kept in a file in its state directory. A restarted
// vxfedd hands them to the dataplane at once, before its first snapshot, so that the
// dataplane keeps forwarding on them while zebra re-sends its table over FPM (the daemon's
// side of graceful restart). The adapter's first full table after the resync replaces them.
//
// A cache, not a store: it is rewritten whole (temp file + rename, mode 0640) at most once
// per interval, so the last changes before a crash may be missing from it; the resync after
// the restart corrects them. Text format (JSON, one route per line, written and read without
// holding a document of all routes): {"version":1,"routes":[{prefix,vteps,vni,peer}]}
// (files written before routes lost their network name also carry "network": ignored, the
// route source re-resolves every replayed route's peer and VNI from the current config).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "common/routes.hpp"

namespace vxfed::bgp {

std::string encode_route_cache(const std::vector<RemoteRoute>& routes);
// Errors name the entry and field ("routes[3].prefix: ..."); nothing partial is returned.
Result<std::vector<RemoteRoute>> decode_route_cache(std::string_view text);

// Writes `path` atomically (path.tmp, then rename).
Status save_route_cache(const std::string& path, const std::vector<RemoteRoute>& routes);
// An absent file is an empty cache; an unreadable or damaged one is an error.
Result<std::vector<RemoteRoute>> load_route_cache(const std::string& path);

}  // namespace vxfed::bgp
