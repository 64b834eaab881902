// Renders vxfedd's figures and the dataplane's counters in the Prometheus text exposition
// format (version 0.0.4). Pure: the metrics server calls it per scrape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/dataplane.pb.h"

namespace vxfed::control {

struct MetricsInput {
  std::uint64_t uptime_s = 0;
  std::uint64_t networks = 0, endpoints = 0, routes = 0, vnis_allocated = 0, vnis_held = 0;
  bool dataplane_connected = false, dataplane_ready = false;
  std::uint64_t dataplane_generation = 0, dataplane_acked_generation = 0;
  std::uint64_t dataplane_connects = 0, dataplane_snapshots = 0, dataplane_snapshots_refused = 0;
  std::uint64_t dataplane_deltas = 0, dataplane_deltas_refused = 0, dataplane_endpoints_refused = 0;
  double dataplane_last_sync_ms = 0;
  std::uint64_t api_connections = 0, api_denied = 0, api_bad_frames = 0, api_malformed = 0, api_unknown = 0;
  std::uint64_t api_requests = 0;
  std::vector<std::pair<std::string, std::uint64_t>> api_errors_by_code;
  std::uint64_t config_reloads = 0, config_reload_failures = 0;
  bool federation_enabled = false, federation_available = false;
  std::uint64_t federation_unavailable = 0, federation_reconciles = 0, federation_restored = 0, federation_conflicts = 0;
  std::uint64_t networks_pending = 0;
  bool have_counters = false;
  double counters_age_s = 0;
  ::vxfed::dataplane::v1::Counters counters;
};

std::string render_metrics(const MetricsInput& in);

}  // namespace vxfed::control
