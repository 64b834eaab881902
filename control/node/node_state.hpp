// The node's state and its rules, without sockets or timers: networks (with their VNIs),
// endpoints (pod attachments) and remote routes. Every change is persisted (state dir) before
// it is acknowledged, and turned into a dataplane Delta for the TablesSink; tables() renders
// the complete dataplane Snapshot at any moment. The API handler and the daemon wrap it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/metrics/histogram.hpp"
#include "common/result.hpp"
#include "bgp/gbp_vteps.hpp"
#include "common/routes.hpp"
#include "control/daemon/daemon_config.hpp"
#include "control/node/network_allocator.hpp"
#include "control/node/tables_delta.hpp"
#include "proto/control.pb.h"
#include "proto/dataplane.pb.h"
#include "vni/allocation_store.hpp"
#include "vni/durable_store.hpp"

namespace vxfed::control {

// Where changes go: the dataplane client, which queues each change as it is published (or
// drops it when no snapshot has been sent yet: the next snapshot carries it). What the dataplane carries
// is the sink's knowledge, from the dataplane's acknowledgements (never from what was sent).
class TablesSink {
 public:
  virtual ~TablesSink() = default;
  virtual void publish(const TablesDelta& delta) = 0;
  virtual bool ready() const = 0;
  // The dataplane acknowledged tables that hold this endpoint exactly as given.
  virtual bool carries(const dp::Endpoint& endpoint) const = 0;
  // The dataplane refused this endpoint: its reason (until it is attached anew or reconnects).
  virtual std::optional<std::string> refusal(const std::string& endpoint_id) const = 0;
};

using Clock = std::function<std::uint64_t()>;  // unix milliseconds
std::uint64_t system_unix_ms();

// Where a route came from. Per (VNI, prefix) the lowest origin wins: static routes are the
// operator's word and override learned ones.
enum class RouteOrigin : std::uint8_t { static_config, bgp };
const char* route_origin_name(RouteOrigin origin);  // "static", "bgp" (vxfedctl routes)

// The daemon's network config from its API form (AddNetwork, and the persisted store).
NetworkConfig network_config_from_spec(const v1::NetworkSpec& spec);

class NodeState {
 public:
  struct Options {
    std::string state_dir;
    Clock clock = system_unix_ms;
    vni::DurableStore::Options store;   // crash hooks and compaction (tests)
    // The federation store: new networks get their VNI and this node's block from it (known
    // ones are used from the local copy, so they work while it is away). nullptr: alone.
    NetworkAllocator* allocator = nullptr;
  };

  // Opens the stores, restores networks, VNIs and endpoints, and reconciles them with the
  // config: config networks get (or keep) their VNIs, networks gone from the config are
  // removed unless endpoints still use them. `notes` collects what recovery did, for logs.
  static Result<std::unique_ptr<NodeState>> open(const Config& config, Options options,
                                                 std::vector<std::string>* notes);

  void set_sink(TablesSink* sink) { sink_ = sink; }
  // Called once at the end of every operation that added or removed a network or changed a
  // network's VNI (API, config reload, the last endpoint of a network that left the config):
  // route sources resolve network names to VNIs and re-resolve on it. Not called by open().
  void set_networks_observer(std::function<void()> observer) { networks_observer_ = std::move(observer); }

  // ---- networks ----
  Result<v1::NetworkInfo> add_network(NetworkConfig network, bool from_config, v1::ErrorCode* code);
  // An API AddNetwork in two steps, so that a store call never holds this (the io) thread:
  // `ready` runs on it once add_network(network, false) can answer without waiting for the
  // federation store, or with the store's refusal. At once when nothing is to be asked.
  void prepare_network(NetworkConfig network, NetworkAllocator::Prepared ready);
  Status remove_network(const std::string& name, v1::ErrorCode* code);
  Result<v1::NetworkInfo> get_network(const std::string& name, v1::ErrorCode* code) const;
  std::vector<v1::NetworkInfo> list_networks() const;
  std::vector<v1::VniAllocation> list_vnis() const;
  // Applies a reloaded config: pools, hold-down, networks added/changed/removed.
  Status reconfigure(const Config& config, std::vector<std::string>* notes);
  Status expire_hold_downs();
  // Config networks waiting for the federation store (it was unreachable when they were
  // loaded): tries them again; returns what happened, for logs.
  std::vector<std::string> retry_pending();
  std::size_t pending_count() const { return pending_.size(); }
  // The networks as this node holds them: what it re-asserts to the federation store.
  std::vector<LocalNetwork> local_networks() const;

  // ---- more blocks (the federation store's block affinity, docs/federation.md) ----
  // The CNI plugin's IPAM found every block of the network it was given (`seen`) full: one
  // more block from the federation store, persisted, advertised (the networks observer) and
  // returned by GetNetwork from then on. `done` on this thread: OK also when the node already
  // has a block the plugin did not see (another ADD's claim: nothing claimed); EXHAUSTED
  // naming the limit when the subnet has no free block, or when the node has no store to ask
  // (its block, or the whole subnet, comes from its config). Claims of one network at once
  // share one store call.
  using BlockClaimed = std::function<void(v1::ErrorCode code, const std::string& error)>;
  void claim_block(const std::string& network, const std::vector<std::string>& seen, BlockClaimed done);
  // Further blocks without an endpoint since `grace_ms` are dropped from the node's copy (the
  // federation link's next reconcile gives them back to the store); returns them as
  // "network block", for logs. A block is empty from the first call that sees it empty.
  std::vector<std::string> drop_empty_blocks(std::uint64_t grace_ms);

  // ---- endpoints ----
  Result<v1::EndpointInfo> attach(const v1::EndpointSpec& spec, v1::ErrorCode* code);
  Status detach(const std::string& container_id, const std::string& ifname, v1::ErrorCode* code);
  Result<v1::EndpointInfo> check(const std::string& container_id, const std::string& ifname,
                                 v1::ErrorCode* code) const;
  std::vector<v1::EndpointInfo> list_endpoints() const;
  // Each endpoint's policy identity (docs/policy.md, "Identities on the wire"), as `identity_of`
  // answers for it (0: unknown). The endpoints whose identity changed go to the dataplane as
  // endpoint upserts in one delta; nothing is sent when none changed. Not persisted: the
  // caller (the policy follower) derives it again after a restart.
  void set_endpoint_identities(const std::function<std::uint32_t(const v1::EndpointInfo&)>& identity_of);
  Result<std::vector<v1::EndpointSpec>> garbage_collect(const v1::GarbageCollect& request,
                                                        v1::ErrorCode* code);

  // ---- routes ----
  // Every upsert carries its VNI (a source resolves it before; upserts with VNI 0 are ignored).
  // Routes of a VNI without a network are kept and reach the dataplane when the network exists.
  void apply_routes(RouteOrigin origin, const RouteUpdate& update);
  std::vector<v1::RouteInfo> list_routes() const;
  std::optional<std::uint32_t> vni_of(const std::string& network) const;

  // ---- reachability (global services' backends, control/services/service_programmer.hpp) ----
  // Whether this node can deliver to `address` in the network of `vni`: a local endpoint has
  // it, or a route in effect (static or learned) covers it. A backend for which this is false
  // has lost its node (its block withdrawn) or its pod.
  bool reaches(std::uint32_t vni, net::Ipv4Addr address) const;
  // Told after every change that may change reaches() for addresses in `prefix` of `vni`: a
  // route appeared, changed or went (its prefix), an endpoint was attached or detached (its
  // address, /32). Network changes go to the networks observer instead.
  using ReachObserver = std::function<void(std::uint32_t vni, const net::Ipv4Prefix& prefix)>;
  void set_reach_observer(ReachObserver observer) { reach_observer_ = std::move(observer); }
  // The global services' VIP range and the network it is served on: GetNetwork of that network
  // hands it over (NetworkInfo.service_cidrs) for the CNI plugin to route. Empty network or no
  // range: none is handed over.
  void set_service_range(std::string network, std::optional<net::Ipv4Prefix> range) {
    service_network_ = std::move(network);
    service_range_ = range;
  }

  // ---- global services (dataplane Service entries, computed by the service programmer) ----
  // Upserts and removes entries by id; only those that differ from what the node holds are
  // published, as one Delta. Entries of a VNI without a network stay out of tables().
  void set_services(const std::vector<dp::Service>& upserts, const std::vector<std::string>& removals);
  const std::map<std::string, dp::Service>& services() const { return services_; }

  // ---- network policy (dataplane NetworkPolicy entries, control/policy/policy_publisher.hpp) ----
  // Upserts and removes entries by VNI, as one Delta; the caller gives only changed entries.
  // Held for tables(); entries of a VNI without a network are held but not sent (the
  // dataplane removed them with their network) until the network comes back. `complete`: the
  // upserts are every entry (the follower's first publication): any other held is removed.
  // Kept in the state dir's policies.cache (control/node/policy_cache.hpp), loaded by open().
  void set_policies(const std::vector<dp::NetworkPolicy>& upserts, const std::vector<std::uint32_t>& removals,
                    bool complete = false);

  // ---- dataplane ----
  dp::Tables tables() const;                       // complete snapshot contents

  std::size_t network_count() const { return networks_.size(); }
  std::size_t endpoint_count() const { return endpoints_.size(); }
  std::size_t route_count() const;

  // ---- metrics ----
  struct PoolUsage {
    std::string name;
    std::uint64_t size = 0, allocated = 0, held = 0, exhausted = 0;
  };
  // Every configured pool, how full it is and how often it refused (pinned VNIs are in none).
  std::vector<PoolUsage> pool_usage() const;
  // The durable stores by name (vnis, networks, endpoints, blocks) and their write latency.
  std::vector<std::pair<std::string, const metrics::Histogram*>> store_write_latency() const;

  static std::string endpoint_id(const std::string& container_id, const std::string& ifname) {
    return container_id + "/" + ifname;
  }

 private:
  struct Network {
    NetworkConfig config;
    std::uint32_t vni = 0;
    std::string pool;
    bool from_config = false;
    bool orphaned = false;     // gone from the config but endpoints still use it
    std::string block;         // this node's block of the subnet ("" : the whole subnet)
    std::vector<std::string> more_blocks;  // claimed when its blocks were full (federation)
  };
  struct Endpoint {
    v1::EndpointInfo info;
    // The pod's policy identity (dp::Endpoint.identity): derived from the store by the policy
    // follower, so held in memory only, 0 (unknown) until set_endpoint_identities() says.
    std::uint32_t identity = 0;
  };
  // What each origin says about one (VNI, prefix). A federation hands a node ~130,000 routes,
  // nearly all of them learned only: the learned version is held inline and the operator's
  // static one, rare, behind a pointer (a std::map per route cost two more allocations).
  class RouteVersions {
   public:
    bool empty() const { return !learned_ && !static_; }
    bool has(RouteOrigin origin) const { return origin == RouteOrigin::static_config ? static_ != nullptr : learned_.has_value(); }
    void erase(RouteOrigin origin);
    void set(RouteOrigin origin, const RemoteRoute& route);
    // The effective version: the lowest origin's (static overrides learned). Not for empty().
    RouteOrigin best_origin() const { return static_ ? RouteOrigin::static_config : RouteOrigin::bgp; }
    const RemoteRoute& best() const { return static_ ? *static_ : *learned_; }

   private:
    std::optional<RemoteRoute> learned_;
    std::unique_ptr<RemoteRoute> static_;
  };
  // Marks an operation that may change networks; the outermost one tells the observer.
  class NetworkChangeScope {
   public:
    explicit NetworkChangeScope(NodeState& state) : state_(state) { ++state_.operation_depth_; }
    ~NetworkChangeScope();
    NetworkChangeScope(const NetworkChangeScope&) = delete;
    NetworkChangeScope& operator=(const NetworkChangeScope&) = delete;

   private:
    NodeState& state_;
  };

  NodeState(Options options) : options_(std::move(options)) {}
  Status restore(const Config& config, std::vector<std::string>* notes);
  Status persist_network(const Network& network);
  v1::NetworkInfo info_of(const Network& network) const;
  dp::Network dp_network(const Network& network) const;
  static dp::Endpoint dp_endpoint(const Endpoint& endpoint);
  const RemoteRoute* effective_route(const RouteKey& key) const;
  void collect_route_change(const RouteKey& key, const RemoteRoute* before, TablesDelta& delta) const;
  void set_static_routes(const Network& network, TablesDelta* delta);
  void publish(const TablesDelta& delta);
  v1::EndpointInfo with_status(const Endpoint& endpoint) const;
  Status remove_endpoint(const std::string& id);
  void remove_network_now(const std::string& name);
  Result<NetworkGrant> allocate_network(const NetworkConfig& network, v1::ErrorCode* code);
  // What allocate_network asks the federation store for a new network, or nullopt when it
  // asks nothing (no store, or this node's copy has the network's VNI and block).
  std::optional<NetworkConfig> store_request(const NetworkConfig& network) const;
  void network_left(const std::string& name);

  Options options_;
  Config config_;
  TablesSink* sink_ = nullptr;
  std::unique_ptr<vni::PersistentAllocator> vnis_;
  std::unique_ptr<vni::DurableStore> network_store_;
  std::unique_ptr<vni::DurableStore> endpoint_store_;
  std::unique_ptr<vni::DurableStore> block_store_;          // network -> this node's block (federation)
  std::unique_ptr<vni::DurableStore> more_block_store_;     // network -> its further blocks, space-separated
  std::map<std::string, std::vector<BlockClaimed>> claims_;  // a claim on its way to the store, by network
  std::map<std::pair<std::string, std::string>, std::uint64_t> empty_since_;  // (network, further block)
  Status save_more_blocks(const Network& network);
  bool in_node_blocks(const Network& network, net::Ipv4Addr ip) const;
  std::map<std::string, NetworkConfig> pending_;            // config networks waiting for the store
  std::map<std::string, Network> networks_;
  std::map<std::string, Endpoint> endpoints_;               // by endpoint id
  std::map<std::pair<std::string, std::string>, std::string> ip_owner_;  // (network, ip) -> id
  // In a pool of their own, away from the short-lived buffers of a route burst (see
  // bgp/route_table.hpp: in the general heap they pin the pages those buffers free).
  std::pmr::unsynchronized_pool_resource routes_pool_;
  std::pmr::map<RouteKey, RouteVersions> routes_{&routes_pool_};
  // Which VTEPs take VXLAN-GBP, from the GBP mark of the effective routes naming them (static
  // routes carry none). Taken into each delta that changes routes; tables() lists them.
  bgp::GbpVteps gbp_vteps_;
  void take_gbp_vteps(TablesDelta& delta);
  std::map<std::uint32_t, std::string> network_of_vni_;   // changes set networks_changed_
  std::map<std::string, std::size_t> endpoints_per_network_;
  std::function<void()> networks_observer_;
  std::string service_network_;
  std::optional<net::Ipv4Prefix> service_range_;
  ReachObserver reach_observer_;
  std::map<std::string, dp::Service> services_;            // by id
  std::map<std::uint32_t, dp::NetworkPolicy> policies_;    // by VNI
  void reach_changed(std::uint32_t vni, const net::Ipv4Prefix& prefix) const {
    if (reach_observer_) reach_observer_(vni, prefix);
  }
  int operation_depth_ = 0;
  bool networks_changed_ = false;
};

}  // namespace vxfed::control
