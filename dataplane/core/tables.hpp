// The forwarding tables: one immutable object, built and validated on the control thread
// from the protobuf vxfed::dataplane::v1::Tables, then published whole to the workers (the
// runtime swaps a pointer and frees the old object after an RCU grace period). Workers
// never lock and never see a half-built table.
//
// Lookup structures (all flat, built once):
//   networks     VNI -> network index -> {gateway ip/mac, MTU, VNI counter slot}
//   endpoints    (network, pod IPv4) -> {port, pod MAC}          local delivery / decap
//   pod ports    DPDK port id -> {network, pod IPv4, pod MAC}    traffic from a pod
//   routes       one DIR-24-8 LPM (lpm_table.hpp) over the union of every VNI's prefixes and
//                every local endpoint's /32 (so 130k routes in any number of VNIs cost one
//                64 MiB first level, not one per VNI), then
//                prefix id -> PrefixInfo (dense): the answer when one network owns the
//                prefix (the common case: no hash lookup), else
//                (prefix, network) -> next-hop group, walking to the next shorter prefix
//                of the union when this VNI has no route at that exact prefix
//   groups       next-hop group -> weighted slots of VTEP indexes (ECMP by flow hash)
//   vteps        VTEP IPv4 -> VTEP index -> {prebuilt outer headers, neighbour slot}
//   allow set    (VTEP, network) pairs allowed to send us VXLAN (next hops of a route in
//                that VNI, plus explicit Vtep entries)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/core/counters.hpp"
#include "dataplane/core/flat_map.hpp"
#include "dataplane/core/lpm_table.hpp"
#include "dataplane/core/neighbor_cache.hpp"
#include "dataplane/core/underlay_tag.hpp"
#include "dataplane/core/wire/ethernet.hpp"
#include "dataplane/core/wire/vxlan.hpp"
#include "proto/dataplane.pb.h"
#include "common/result.hpp"  // common/

namespace vxfed::dataplane {

// What the tables need to know about this node, supplied by the runtime.
struct BuildContext {
  std::uint32_t local_vtep_ip_be = 0;     // our VTEP IPv4, network order
  wire::MacAddress uplink_mac{};          // source MAC of everything sent on the uplink
  std::uint32_t underlay_mtu = 9000;      // outer IPv4 MTU; network MTU defaults to this - 50
  std::uint16_t uplink_port = 0;          // DPDK port id of the uplink
  UnderlayTag underlay_tag;               // 802.1Q tag of encapsulated frames (default: none)
  // DPDK port id of an endpoint's host-side interface (the runtime attaches it first);
  // nullopt: unknown interface (the endpoint is refused).
  std::function<std::optional<std::uint16_t>(const std::string& iface)> port_for_iface;
  NeighborCache* neighbors = nullptr;     // required: every VTEP gets a slot
  VniCounterSlots* vni_slots = nullptr;   // required: every network gets a counter slot
};

struct NetworkEntry {
  std::uint32_t vni = 0;
  std::uint32_t vni_field_be = 0;         // VXLAN word (VNI << 8), ready to store
  std::uint32_t gateway_ip_be = 0;
  wire::MacAddress gateway_mac{};
  std::uint16_t mtu = 0;                  // largest inner IPv4 packet (bytes)
  std::uint16_t counter_slot = 0;         // index into WorkerCounters::vnis
};

struct EndpointEntry {
  std::uint16_t port = 0;
  wire::MacAddress mac{};
};

struct PodPortEntry {
  bool valid = false;
  std::uint16_t network = 0;              // index into networks()
  std::uint32_t ip_be = 0;
  wire::MacAddress mac{};
};

// Outer headers toward one VTEP with everything constant filled in; per packet the pipeline
// patches the neighbour MAC, TOS, lengths, checksum, UDP source port and VNI.
struct VtepEntry {
  std::uint32_t ip_be = 0;
  std::uint32_t neighbor_slot = 0;
  std::uint32_t checksum_base = 0;        // one's-complement sum of the constant IPv4 words
  wire::VxlanOuterHeaders outer{};
};

struct NextHopGroup {
  std::uint32_t first = 0;                // into group_slots
  std::uint32_t count = 0;                // slots, proportional to weights
};

// What one prefix of the union LPM resolves to. Most prefixes belong to one network only
// (a route of one VNI, or a local endpoint's /32): then the answer is here, one dense read
// after the LPM, no hash lookup. Prefixes shared by several networks say kShared and are
// resolved through the (prefix, network) hash maps.
struct PrefixInfo {
  static constexpr std::uint16_t kShared = 0xffff;  // never a network index (< 0xffff)
  static constexpr std::uint8_t kRoute = 0, kEndpoint = 1;
  std::uint16_t network = kShared;  // the one network with a route or endpoint at this prefix
  std::uint8_t kind = kRoute;       // what `value` is for that network
  std::uint8_t has_endpoints = 0;   // kShared /32 where some network has a local endpoint
  std::uint32_t value = 0;          // group index (kRoute) or endpoint_list index (kEndpoint)
};
static_assert(sizeof(PrefixInfo) == 8);

// Where a pod's IPv4 packet goes: a local endpoint, a next-hop group, or nowhere (no route).
struct Destination {
  const EndpointEntry* endpoint = nullptr;
  const NextHopGroup* group = nullptr;
};

class ForwardingTables {
 public:
  // Validates every entry and builds the lookup structures. Errors name the entry and the
  // field ("routes[12] (vni 1001, prefix \"10.245.0.0/33\"): prefix: '10.245.0.0/33' has an invalid
  // prefix length (expected 0..32)").
  // On success, also makes the neighbour cache's static entries match tables.neighbors.
  static Result<std::unique_ptr<ForwardingTables>> create(const v1::Tables& tables,
                                                          const BuildContext& context);
  ~ForwardingTables() = default;
  ForwardingTables(const ForwardingTables&) = delete;
  ForwardingTables& operator=(const ForwardingTables&) = delete;

  // ---- node facts ----
  std::uint32_t local_vtep_ip_be() const { return local_vtep_ip_be_; }
  const wire::MacAddress& uplink_mac() const { return uplink_mac_; }
  std::uint16_t uplink_port() const { return uplink_port_; }
  std::uint32_t underlay_mtu() const { return underlay_mtu_; }
  NeighborCache& neighbors() const { return *neighbors_; }
  const UnderlayTag& underlay_tag() const { return underlay_tag_; }

  // ---- hot-path lookups (inline, no allocation) ----
  const NetworkEntry* network_by_vni(std::uint32_t vni) const {
    const std::uint16_t* i = network_index_.find(vni);
    return i ? &networks_[*i] : nullptr;
  }
  const NetworkEntry& network(std::uint16_t index) const { return networks_[index]; }
  std::uint16_t network_index(const NetworkEntry& n) const {
    return static_cast<std::uint16_t>(&n - networks_.data());
  }
  const EndpointEntry* endpoint(std::uint16_t network, std::uint32_t ip_be) const {
    return endpoints_.find(endpoint_key(network, ip_be));
  }
  const PodPortEntry* pod_port(std::uint16_t port) const {
    return port < pod_ports_.size() && pod_ports_[port].valid ? &pod_ports_[port] : nullptr;
  }
  // Index of a known VTEP, or nullptr.
  const std::uint32_t* vtep_index(std::uint32_t ip_be) const { return vtep_index_.find(ip_be); }
  const VtepEntry& vtep(std::uint32_t index) const { return vteps_[index]; }
  bool vtep_allowed(std::uint32_t vtep, std::uint16_t network) const {
    return allowed_.find(allow_key(vtep, network)) != nullptr;
  }
  // Decap fast check, one lookup: the network of `vni` if the VTEP at src_ip_be may send it
  // (known VTEP, configured VNI, allowed pair); null otherwise (then ask the three questions
  // above to find out which one failed).
  const std::uint16_t* allowed_network(std::uint32_t src_ip_be, std::uint32_t vni) const {
    return admitted_network(admission_key(src_ip_be, vni));
  }
  // The same in two steps, for burst loops: the key (which they remember), the lookup.
  static std::uint64_t admission_key(std::uint32_t src_ip_be, std::uint32_t vni) {
    return (static_cast<std::uint64_t>(src_ip_be) << 24) | vni;
  }
  const std::uint16_t* admitted_network(std::uint64_t key) const { return allowed_by_ip_.find(key); }
  // Longest-prefix match of dst (network order) in a network: the next-hop group, or null.
  // Why it is right: the longest union prefix P containing dst contains every route of any
  // VNI that contains dst, so this VNI's best route is its longest route containing P:
  // the route at P, else at P's parent (next shorter union prefix), and so on.
  const NextHopGroup* route(std::uint16_t network, std::uint32_t dst_ip_be) const {
    std::uint32_t id = lpm_.lookup(wire::from_be32(dst_ip_be));
    while (id != LpmTable::kNone) {
      if (const std::uint32_t* g = route_group_.find(route_key(id, network))) return &groups_[*g];
      id = prefix_parent_[id];
    }
    return nullptr;
  }
  // Local endpoint or route for dst in a network: one LPM lookup over routes and endpoints
  // together (what the encap path uses; same answer as endpoint() then route()).
  Destination resolve(std::uint16_t network, std::uint32_t dst_ip_be) const {
    return resolve_prefix(network, dst_ip_be, lpm_.lookup(wire::from_be32(dst_ip_be)));
  }
  // The same, given the LPM's answer for dst (prefix id, from lpm().lookup, e.g. batched).
  Destination resolve_prefix(std::uint16_t network, std::uint32_t dst_ip_be, std::uint32_t prefix_id) const {
    if (prefix_id == LpmTable::kNone) return {};
    const PrefixInfo& p = prefix_info_[prefix_id];
    if (p.network == network) [[likely]] {
      if (p.kind == PrefixInfo::kEndpoint) return {&endpoint_list_[p.value], nullptr};
      return {nullptr, &groups_[p.value]};
    }
    return resolve_shared(network, dst_ip_be, prefix_id);
  }
  const LpmTable& lpm() const { return lpm_; }
  const PrefixInfo* prefix_info() const { return prefix_info_.data(); }

  // VTEP index chosen by flow hash among a group's weighted slots.
  std::uint32_t pick(const NextHopGroup& g, std::uint32_t hash) const {
    return pick_slot(group_slots_.data(), g, hash);
  }
  static std::uint32_t pick_slot(const std::uint32_t* slots, const NextHopGroup& g, std::uint32_t hash) {
    return slots[g.first + static_cast<std::uint32_t>((static_cast<std::uint64_t>(hash) * g.count) >> 32)];
  }
  const std::uint32_t* group_slots() const { return group_slots_.data(); }
  const VtepEntry* vtep_entries() const { return vteps_.data(); }

  // ---- introspection (control thread, tests) ----
  const std::vector<NetworkEntry>& networks() const { return networks_; }
  std::size_t route_count() const { return route_count_; }
  std::size_t endpoint_count() const { return endpoints_.size(); }
  std::size_t vtep_count() const { return vteps_.size(); }
  // Ports that carry endpoints (what the runtime must poll besides the uplink).
  std::vector<std::uint16_t> pod_port_ids() const;

 private:
  ForwardingTables() = default;
  friend class TablesBuilder;
  // resolve_prefix when the prefix is not one network's alone: walk the shorter prefixes.
  Destination resolve_shared(std::uint16_t network, std::uint32_t dst_ip_be, std::uint32_t prefix_id) const;
  static std::uint64_t endpoint_key(std::uint16_t network, std::uint32_t ip_be) {
    return (static_cast<std::uint64_t>(network) << 32) | ip_be;
  }
  static std::uint64_t allow_key(std::uint32_t vtep, std::uint16_t network) {
    return (static_cast<std::uint64_t>(vtep) << 16) | network;
  }
  static std::uint64_t route_key(std::uint32_t prefix_id, std::uint16_t network) {
    return (static_cast<std::uint64_t>(prefix_id) << 16) | network;
  }

  std::uint32_t local_vtep_ip_be_ = 0;
  wire::MacAddress uplink_mac_{};
  std::uint16_t uplink_port_ = 0;
  std::uint32_t underlay_mtu_ = 0;
  NeighborCache* neighbors_ = nullptr;
  UnderlayTag underlay_tag_;

  std::vector<NetworkEntry> networks_;
  FlatMap64<std::uint16_t> network_index_;
  FlatMap64<EndpointEntry> endpoints_;
  std::vector<PodPortEntry> pod_ports_;
  std::vector<VtepEntry> vteps_;
  FlatMap64<std::uint32_t> vtep_index_;
  FlatMap64<std::uint8_t> allowed_;
  FlatMap64<std::uint16_t> allowed_by_ip_;  // (VTEP ip << 24 | vni) -> network index
  LpmTable lpm_;                            // union of all prefixes -> prefix id
  std::vector<std::uint32_t> prefix_parent_;  // prefix id -> next shorter union prefix id
  std::vector<PrefixInfo> prefix_info_;     // prefix id -> its one network's answer
  std::vector<EndpointEntry> endpoint_list_;  // PrefixInfo::kEndpoint values
  FlatMap64<std::uint32_t> route_group_;    // (prefix id, network) -> group index
  std::vector<NextHopGroup> groups_;
  std::vector<std::uint32_t> group_slots_;
  std::size_t route_count_ = 0;
};

// Applies a Delta to a Tables message (upserts by key, then removals), for the runtime's
// Delta requests: the result is then built whole with ForwardingTables::create.
// Fails (naming the entry) when a removal names something that does not exist.
Result<v1::Tables> apply_delta(const v1::Tables& current, const v1::Delta& delta);

}  // namespace vxfed::dataplane
