// Coalesces table changes into one Delta while the previous one is with the dataplane
// (a Delta costs the dataplane a table rebuild, ~0.1 s; a burst of pod attachments must not
// queue one rebuild each). Merging keeps the meaning of applying the deltas in order; the
// one case a single Delta cannot express (a network removed and then re-created within the
// batch: Delta applies upserts before removals) is reported so the caller resyncs instead.
// Routes are held as RemoteRoutes and become protobuf only in build().
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "control/tables_delta.hpp"

namespace vxfed::control {

class DeltaMerger {
 public:
  // Adds `delta` after what is pending. False when the result cannot be one Delta: the caller
  // must send a full snapshot instead (and clear()).
  bool add(const TablesDelta& delta);
  bool empty() const;
  // Drops any pending upsert and removal of this endpoint (the dataplane never had it).
  void forget_endpoint(const std::string& id);
  // Drops a pending removal of this endpoint (its upsert was refused).
  void drop_endpoint_removal(const std::string& id) { remove_endpoints_.erase(id); }
  void clear();
  dp::Delta build() const;
  std::size_t changes() const { return changes_; }

 private:
  std::map<std::uint32_t, dp::Network> networks_;
  std::map<std::string, dp::Endpoint> endpoints_;
  std::map<RouteKey, RemoteRoute> routes_;
  std::set<std::uint32_t> remove_networks_;
  std::set<std::string> remove_endpoints_;
  std::set<RouteKey> remove_routes_;
  std::size_t changes_ = 0;
};

}  // namespace vxfed::control
