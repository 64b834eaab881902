// vxfedd's configuration: one YAML file (docs/vxfedd.example.yaml documents every key).
// Loading validates everything and fails with "FILE: field: reason"; nothing starts
// half-configured. The `bgp:` section belongs to the BGP adapter (bgp/config.hpp): its parser reads
// it and the parsed BgpConfig is handed over as is.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "bgp/config.hpp"
#include "common/net/ipv4.hpp"
#include "vni/pool.hpp"
#include "common/result.hpp"

namespace vxfed::control {

struct StaticRoute {
  std::string prefix;              // remote CIDR, "10.245.0.0/16"
  std::vector<std::string> vteps;  // remote VTEPs (ECMP)
  bool operator==(const StaticRoute&) const = default;
};

struct NetworkConfig {
  std::string name;
  vni::Labels labels;
  std::uint32_t pinned_vni = 0;    // 0: from the pool the labels select
  std::string subnet;              // this cluster's pod CIDR on the network
  std::string gateway;             // defaulted to the subnet's first address
  std::uint32_t mtu = 0;           // defaulted to underlay MTU - 50
  std::vector<StaticRoute> static_routes;
  std::uint32_t block_prefix_len = 0;  // federation: each node's block length (0: /24)
  std::string block;                   // without federation: this node's block ("" : whole subnet)
  bool operator==(const NetworkConfig&) const = default;
};

// Validates one network and fills its defaults. Errors read "field: reason" (field relative to
// the network), so the config loader and the AddNetwork API can both prefix them.
Status normalize_network(NetworkConfig& network, std::uint32_t underlay_mtu);

struct Config {
  std::string source;              // file the config came from (for messages)

  struct Node {
    std::string name;
    std::string vtep_ip;
    std::string uplink;            // informational: the dataplane owns the port
    std::uint32_t underlay_mtu = 9000;
    // The node's forwarder takes VXLAN-GBP (node.gbp, default true): its registration in the
    // federation store says so (NodeRecord.gbp) and its blocks carry the GBP mark, so the other
    // nodes send it GBP (docs/policy.md, "VXLAN-GBP on the wire"). false in a mixed fleet whose
    // receivers of this node's VTEP cannot take GBP (e.g. a kernel vxlan device without gbp).
    bool gbp = true;
  } node;

  struct Cluster {
    std::string name;
    std::vector<std::string> pod_cidrs;
    std::uint32_t asn = 0;
  } cluster;

  struct Daemon {
    std::string socket = "/run/vxfed/vxfedd.sock";
    std::string socket_group;      // members may call the API besides root; "" = root only
    std::string state_dir = "/var/lib/vxfed";
    std::string log_level = "info";
    std::string metrics_listen = "127.0.0.1:9472";   // "" disables the metrics endpoint
    bool metrics_per_vni = true;                     // per-VNI dataplane series (6 per network)
    std::uint32_t max_connections = 256;
    std::uint32_t idle_timeout_ms = 30000;           // a half-sent request is dropped after this
  } daemon;

  struct Dataplane {
    std::string socket = "/run/vxfed/dataplane.sock";
    std::uint32_t reconnect_min_ms = 100;
    std::uint32_t reconnect_max_ms = 5000;
    std::uint32_t counters_interval_ms = 2000;
    std::uint32_t request_timeout_ms = 10000;
  } dataplane;

  // The per-pod eBPF programs (bpf/): the CNI plugin attaches them; at start-up vxfedd
  // removes pins whose endpoint it no longer knows or whose pod namespace is gone.
  struct Bpf {
    bool reconcile = true;
    std::string pin_root;          // "" = $VXFED_BPF_PIN_ROOT, else /sys/fs/bpf/vxfed
    std::uint64_t grace_ms = 60000;  // pins younger than this are kept (a CNI ADD in flight)
  } bpf;

  // The federation store (docs/federation.md): VNIs, pools and node blocks from etcd. Without
  // this section vxfedd runs alone: VNIs from its own pools, blocks from the config.
  struct Federation {
    bool enabled = false;                      // the section is present
    std::vector<std::string> endpoints;        // etcd members, "host:port" or http(s)://host:port
    std::string ca_file, cert_file, key_file;  // TLS (client certificate optional)
    std::string key_prefix = "/vxfed";
    std::uint32_t request_timeout_ms = 2000;   // per member tried
    std::uint32_t node_ttl_seconds = 15;       // registration lease
    std::uint64_t block_release_after_seconds = 86400;  // a gone node keeps its blocks this long
    std::uint32_t reconcile_interval_seconds = 30;      // re-assert the local copy, collect gone nodes
    // A block claimed when the node's blocks were full goes back to the store once it has had
    // no endpoint for this long (checked at every reconcile).
    std::uint64_t empty_block_release_seconds = 600;
  } federation;

  // Global services (docs/services.md): where VIPs come from; absent until configured.
  struct Services {
    std::optional<net::Ipv4Prefix> range;
    // The vxfed network the VIPs are served on (its VNI goes into every Service entry); empty:
    // the node's only network, when it has exactly one (docs/services.md, "Serving a VIP").
    std::string network;
  } services;

  std::vector<vni::PoolSpec> pools;            // default: federation 1000-2000
  std::uint64_t hold_down_ms = vni::kDefaultHoldDownMs;
  std::vector<NetworkConfig> networks;
  // The bgp section, parsed (enabled false when absent). Parsed, not kept as a YAML::Node: a
  // yaml-cpp Node assigned over another merges the two documents' memory for as long as either
  // lives, so a Config copied or moved at every SIGHUP kept every config ever loaded (~65 KiB a
  // reload in the soak).
  bgp::BgpConfig bgp;
};

Result<Config> load_config(const std::string& path);
Result<Config> parse_config(const std::string& yaml_text, const std::string& source);

}  // namespace vxfed::control
