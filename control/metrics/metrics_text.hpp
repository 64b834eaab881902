// Renders one node's figures in the Prometheus text exposition format: vxfedd's own, and what
// it gathers from the parts that have no HTTP server of their own (the dataplane's counters
// over its API, the BGP adapter's figures and FRR's peer status, the per-pod eBPF maps), so
// that a node is one scrape target. Pure: the metrics server calls it per scrape with what
// the daemon collected (control/daemon/daemon.cpp).
//
// Label cardinality is bounded by the node's own configuration, never by what arrives from
// the network: per port and queue (uplink, pods, endpoint ports: at most 1,024 pods x
// workers), per VNI (only the networks this node has now), per drop reason (the fixed list),
// per API operation and code (control.proto's), per store (four), per pool and per BGP peer
// (the config's), per pod (the endpoints attached here), per global service (the federation's
// services, from the store). docs/metrics.md has the counts.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bgp/adapter.hpp"
#include "bpf/lib/vxfed_bpf.hpp"
#include "common/metrics/exposition.hpp"
#include "control/api/api_handler.hpp"
#include "control/node/node_state.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::control {

struct MetricsServerStats {
  std::uint64_t requests = 0;            // scrapes answered
  std::uint64_t rejected_method = 0;     // anything but GET/HEAD: the endpoint is read-only
  std::uint64_t rejected_not_found = 0;  // GET of another path
  std::uint64_t rejected_too_large = 0;  // request head over 8 KiB
  std::uint64_t rejected_timeout = 0;    // no complete request within 5 s
  std::uint64_t listen_failures = 0;     // attempts to bind the port that failed (another process held it)
};

struct BgpFigures {
  bgp::AdapterStats stats;
  std::vector<bgp::PeerStatus> peers;
  // The kernel's TCP MD5 rejections in vxfedd's namespace (control/metrics/tcp_counters.hpp): BGP
  // segments with a wrong or missing password. Absent when /proc/net/netstat has none.
  std::optional<std::uint64_t> md5_not_found, md5_unexpected, md5_failure;
};

struct PodBpfFigures {
  std::string network, pod_namespace, pod_name, ifname;
  bpf::PodCounters counters;
};

// Global services as this node serves them (control/services/: the follower and the compiler).
struct ServiceFigures {
  std::uint64_t listings = 0, list_failures = 0, watch_breaks = 0, compiles = 0;
  bool watching = false;
  struct PerService {
    std::string service;  // "namespace/name"
    bool programmed = false;
    std::uint64_t allowed = 0, ready = 0, not_ready = 0, node_down = 0;  // backends
  };
  std::vector<PerService> services;
  // The forwarder's figures per backend of the federated services as this node sees them
  // (GetServiceCounters, docs/services.md): flows live now and flows given since it started.
  // Present once the dataplane answered; only backends of the node's view (bounded by the
  // federation's backends, not by what the forwarder reports).
  struct BackendFlows {
    std::string service, cluster, backend;
    std::uint64_t flows = 0, new_flows = 0;
  };
  bool have_flows = false;
  std::vector<BackendFlows> backend_flows;
};

struct MetricsInput {
  std::string version;
  std::uint64_t uptime_s = 0;
  std::uint64_t networks = 0, endpoints = 0, endpoints_not_in_dataplane = 0, routes = 0;
  std::uint64_t vnis_allocated = 0, vnis_held = 0;
  std::vector<NodeState::PoolUsage> pools;
  std::vector<std::pair<std::string, const metrics::Histogram*>> stores;
  bool dataplane_connected = false, dataplane_ready = false;
  std::uint64_t dataplane_generation = 0, dataplane_acked_generation = 0;
  std::uint64_t dataplane_connects = 0, dataplane_snapshots = 0, dataplane_snapshots_refused = 0;
  std::uint64_t dataplane_deltas = 0, dataplane_deltas_refused = 0, dataplane_endpoints_refused = 0;
  double dataplane_last_sync_ms = 0;
  // Back-pressure toward the dataplane (control/node/dataplane_client.hpp).
  std::uint64_t dataplane_deltas_queued = 0, dataplane_deltas_in_flight = 0;
  double dataplane_oldest_unacked_age_s = 0;
  const metrics::Histogram* dataplane_delta_latency = nullptr;
  std::uint64_t api_connections = 0, api_denied = 0, api_bad_frames = 0, api_malformed = 0, api_unknown = 0;
  const ApiCounters* api = nullptr;
  MetricsServerStats metrics_server;
  std::uint64_t config_reloads = 0, config_reload_failures = 0;
  bool federation_enabled = false, federation_available = false;
  std::uint64_t federation_unavailable = 0, federation_reconciles = 0, federation_restored = 0, federation_conflicts = 0;
  std::uint64_t networks_pending = 0;
  // The dataplane's counters, as last polled (none before the first answer).
  bool have_counters = false;
  double counters_age_s = 0;
  ::vxfed::dataplane::v1::Counters counters;
  std::set<std::uint32_t> vnis_of_networks;   // per-VNI series only for these
  bool per_vni = true;                        // daemon.metrics_per_vni
  std::optional<BgpFigures> bgp;              // BGP enabled
  bool bpf_enabled = false;
  std::vector<PodBpfFigures> pods;            // endpoints with pinned programs
  std::uint64_t bpf_read_errors = 0;          // pods whose maps could not be read this scrape
  std::optional<ServiceFigures> services;     // the federation store and services.range configured
};

std::string render_metrics(const MetricsInput& in);

// The parts, for render_metrics and the unit tests.
void render_vxfedd_metrics(metrics::Exposition& out, const MetricsInput& in);
void render_dataplane_metrics(metrics::Exposition& out, const MetricsInput& in);
void render_bgp_metrics(metrics::Exposition& out, const BgpFigures& bgp);
void render_bpf_metrics(metrics::Exposition& out, const MetricsInput& in);
void render_service_metrics(metrics::Exposition& out, const ServiceFigures& services);

}  // namespace vxfed::control
