// The forwarding tables: built from a Snapshot on the control thread, then changed in place by
// Deltas while the workers read them. Workers never lock and never see a half-written entry:
// every entry they read is one word written with one store, or an immutable object reached
// through one such word; what an entry stops referring to is freed only after an RCU grace
// period (Reclaimer). docs/dataplane-pipeline.md, "Tables that change in place", says which
// states of a Delta a packet can see and why none misdelivers or leaks across VNIs.
//
// Lookup structures:
//   networks     VNI -> network index -> {gateway ip/mac, MTU, VNI counter slot}
//   endpoints    (network, pod IPv4) -> {port, pod MAC}          local delivery / decap
//   pod ports    pod port -> {network, pod IPv4, pod MAC}         traffic from a pod
//   routes       one DIR-24-8 LPM (lpm_table.hpp) over the union of every VNI's prefixes and
//                every local endpoint's /32 (so 130k routes in any number of VNIs cost one
//                64 MiB first level, not one per VNI), then
//                prefix id -> PrefixInfo (dense): the answer when one network owns the
//                prefix (the common case: no hash lookup; folded into the LPM entry itself,
//                FoldedAnswer, so the encapsulation reads no second level), else
//                (prefix, network) -> next-hop group, walking to the next shorter prefix
//                of the union when this VNI has no route at that exact prefix
//   groups       next-hop group -> weighted slots of VTEP indexes (ECMP by flow hash)
//   vteps        VTEP IPv4 -> VTEP index -> {prebuilt outer headers, neighbour slot}
//   admission    (VTEP IPv4, VNI) -> network: the VTEPs allowed to send us a VNI (next hops
//                of a route in that VNI, plus explicit Vtep entries)
//   services     (network, VIP) -> immutable ServiceEntry (ports, backends, Maglev slots),
//                asked only for networks whose "has services" count is not 0
//   policies     network index -> immutable NetworkPolicyEntry (policy_entry.hpp), or null:
//                a network without policy pays one pointer load per burst
// A pod port is an opaque small index (< kMaxPorts) that the runtime maps to a device.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/result.hpp"
#include "dataplane/core/tables_text.hpp"
#include "dataplane/core/counters.hpp"
#include "dataplane/core/index_pool.hpp"
#include "dataplane/core/lpm_table.hpp"
#include "dataplane/core/mapped_memory.hpp"
#include "dataplane/core/neighbor_cache.hpp"
#include "dataplane/core/wire/vxlan.hpp"
#include "dataplane/core/path_mtu.hpp"
#include "dataplane/core/policy_entry.hpp"
#include "dataplane/core/rcu_map.hpp"
#include "dataplane/core/reclaimer.hpp"
#include "dataplane/core/service_counters.hpp"
#include "dataplane/core/service_entry.hpp"
#include "dataplane/core/underlay_tag.hpp"
#include "dataplane/core/wire/ethernet.hpp"
#include "dataplane/core/wire/vxlan.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::dataplane {

// What the tables need to know about this node, supplied by the runtime.
struct BuildContext {
  std::uint32_t local_vtep_ip_be = 0;     // our VTEP IPv4, network order
  wire::MacAddress uplink_mac{};          // source MAC of everything sent on the uplink
  std::uint32_t underlay_mtu = 9000;      // outer IPv4 MTU; network MTU defaults to this - 50
  std::uint16_t uplink_port = 0;          // port index of the uplink
  UnderlayTag underlay_tag;               // 802.1Q tag of encapsulated frames (default: none)
  // Port index of an endpoint's host-side interface (the runtime attaches it first);
  // nullopt: unknown interface (the endpoint is refused).
  std::function<std::optional<std::uint16_t>(const std::string& iface)> port_for_iface;
  NeighborCache* neighbors = nullptr;     // required: every VTEP gets a slot
  // Path MTUs toward VTEPs learned from the underlay's ICMP (path_mtu.hpp); null: none are
  // learned and the encapsulation checks the network MTU only.
  PathMtuCache* path_mtus = nullptr;
  VniCounterSlots* vni_slots = nullptr;   // required: every network gets a counter slot
  // Global services' per-backend counter slots (service_counters.hpp); null: not counted.
  ServiceCounterSlots* service_counters = nullptr;
  // Static underlay neighbours of the node (--static-neighbor), in force where the tables'
  // own `neighbors` do not name the address.
  std::vector<std::pair<std::uint32_t, wire::MacAddress>> default_neighbors;
};

// Capacities. Networks: one per VNI counter slot. VTEPs: one per neighbour cache slot.
constexpr std::uint32_t kMaxNetworks = kMaxVniSlots;
constexpr std::uint32_t kMaxVteps = NeighborCache::kDefaultCapacity;
constexpr std::uint32_t kMaxPrefixes = 1u << 24;
constexpr std::uint32_t kMaxGroups = 1u << 22;
constexpr std::uint32_t kMaxGroupSlots = 1u << 24;
constexpr std::uint32_t kMaxEndpoints = 1u << 16;
constexpr std::uint32_t kMaxServices = 1u << 16;

// Immutable once published; a change publishes a new entry.
struct NetworkEntry {
  std::uint32_t vni = 0;
  std::uint32_t vni_field_be = 0;         // VXLAN word (VNI << 8), ready to store
  std::uint32_t gateway_ip_be = 0;
  wire::MacAddress gateway_mac{};
  std::uint16_t mtu = 0;                  // largest inner IPv4 packet (bytes)
  std::uint16_t counter_slot = 0;         // index into WorkerCounters::vnis
  std::uint16_t index = 0;                // this network's index
};

// One word: read whole (load_word) where it changes in place (the decap map), so a reader
// gets the port and MAC of one version; endpoint slots (PrefixInfo::kEndpoint) never change
// while referred to.
struct alignas(8) EndpointEntry {
  static constexpr std::uint16_t kNoPort = 0xffff;
  std::uint16_t port = kNoPort;
  wire::MacAddress mac{};
  bool valid() const { return port != kNoPort; }
};
static_assert(sizeof(EndpointEntry) == 8);

// Immutable once published.
struct PodPortEntry {
  std::uint16_t network = 0;              // index into networks
  std::uint32_t ip_be = 0;
  wire::MacAddress mac{};
  std::uint16_t identity_be = 0;          // the pod's policy identity (Endpoint.identity), network order; 0 unknown
};

// Outer headers toward one VTEP with everything constant filled in, in one cache line; per
// packet the pipeline patches TOS, lengths, checksum, UDP source port and VNI. Written when the
// VTEP is created, before anything refers to it, except `head`: the headers' first 8 bytes —
// the underlay neighbour's MAC, then the first two bytes of ours — kept as a word of their
// own, which the control thread rewrites whole when the neighbour cache changes
// (ForwardingTables::copy_neighbor_macs), so that the encapsulation learns the MAC from the
// line it reads anyway instead of a second, dependent read of the cache per packet. A zero MAC
// in `head` means "not copied yet": readers then ask the cache (neighbor_head() in the pipeline).
struct alignas(64) VtepEntry {
  static constexpr std::uint64_t kHeadMac = (1ull << 48) - 1;  // the MAC's bytes of `head`
  std::uint64_t head = 0;                                       // outer header bytes 0..7, as in memory
  std::array<std::uint8_t, sizeof(wire::VxlanOuterHeaders) - 8> tail{};  // bytes 8..49
  // 0xffff when the VTEP takes VXLAN-GBP (Vtep.gbp), else 0: the mask of the G bit and the
  // Group Policy ID in the first word of the VXLAN header (vxlan_first_word()). It changes in
  // place, one 2-byte store; a reader loads it once per header, so a packet's G bit and group
  // come from one version. The tail's VXLAN bytes stay plain (0x08, zeros): overwritten.
  std::uint16_t gbp = 0;                  // in the 2 bytes the alignment of ip_be leaves
  std::uint32_t ip_be = 0;
  std::uint32_t neighbor_slot = 0;
  std::uint32_t checksum_base = 0;        // one's-complement sum of the constant IPv4 words

  // `head` with the MAC of a NeighborCache word (bits 0..47, most significant byte first) in place.
  static std::uint64_t with_mac(std::uint64_t head, std::uint64_t cache_word) {
    static_assert(std::endian::native == std::endian::little, "head holds the header bytes in memory order");
    return (head & ~kHeadMac) | __builtin_bswap64(cache_word << 16);
  }
  // The VXLAN header's first four bytes as stored in memory (flags, D/A, Group Policy ID):
  // plain 0x08 with zeros, or, toward a GBP VTEP, G|I and `gbp_word`'s group. `gbp_word` is
  // gbp_word_of(identity): computed once per pod burst. The A bit stays clear (no egress
  // policy is applied yet). Branch-free: the mask selects.
  static std::uint32_t gbp_word_of(std::uint16_t identity_be) {
    std::uint32_t group_bytes = 0;  // bytes 2..3 of the word hold the identity as it is in memory
    std::memcpy(reinterpret_cast<std::uint8_t*>(&group_bytes) + 2, &identity_be, 2);
    return wire::kVxlanFlagGroupPolicy | group_bytes;
  }
  static std::uint32_t vxlan_first_word(std::uint16_t gbp_mask, std::uint32_t gbp_word) {
    const std::uint32_t mask = static_cast<std::uint32_t>(static_cast<std::int32_t>(static_cast<std::int16_t>(gbp_mask)));
    return wire::kVxlanFlagsVni | (gbp_word & mask);
  }
  // `head` as a NeighborCache word says it should be: its MAC when valid, else none (zero).
  static std::uint64_t following(std::uint64_t head, std::uint64_t cache_word) {
    return (cache_word & NeighborCache::kValid) ? with_mac(head, cache_word) : (head & ~kHeadMac);
  }
};
static_assert(sizeof(VtepEntry) == 64);

// Immutable while any route refers to it (a route whose next hops change moves to another group).
struct NextHopGroup {
  std::uint32_t first = 0;                // into group_slots
  std::uint32_t count = 0;                // slots, proportional to weights
};

// What one prefix of the union LPM resolves to. Most prefixes belong to one network only
// (a route of one VNI, or a local endpoint's /32): then the answer is here, one dense read
// after the LPM, no hash lookup. Prefixes shared by several networks say kShared and are
// resolved through the (prefix, network) hash maps. One word, read whole.
struct alignas(8) PrefixInfo {
  static constexpr std::uint16_t kShared = 0xffff;  // never a network index (< 0xffff)
  static constexpr std::uint8_t kRoute = 0, kEndpoint = 1;
  std::uint16_t network = kShared;  // the one network with a route or endpoint at this prefix
  std::uint8_t kind = kRoute;       // what `value` is for that network
  std::uint8_t has_endpoints = 0;   // kShared /32 where some network has a local endpoint
  std::uint32_t value = 0;          // group index (kRoute) or endpoint slot (kEndpoint)
};
static_assert(sizeof(PrefixInfo) == 8);

// A PrefixInfo folded into the 32-bit answer every LPM entry of its prefix carries
// (lpm_table.hpp), so that one read of the LPM gives the answer: bit 31 set when the prefix
// is one network's alone and its value fits, then that network (12 bits), the kind (2 bits)
// and the value (17 bits). The kinds: an endpoint slot; a next-hop group; or, for a route
// whose group has a single VTEP (a node block: the common route), that VTEP's index itself,
// so that the encapsulation reads neither the group nor its slots (two dependent reads that
// miss the cache once a federation's thousand VTEPs are in use). A group is immutable while a
// route uses it, so the VTEP folded in changes only when the route's group does, which
// rewrites the answer. Otherwise 0, and readers resolve through the prefix id as before
// (PrefixInfo, then the shared maps).
struct FoldedAnswer {
  static constexpr std::uint32_t kDirect = 1u << 31;
  static constexpr unsigned kNetworkShift = 19;
  static constexpr unsigned kKindShift = 17;
  static constexpr std::uint32_t kKindMask = 3u << kKindShift;
  static constexpr std::uint32_t kGroup = 0, kEndpoint = 1u << kKindShift, kVtep = 2u << kKindShift;
  static constexpr std::uint32_t kValueMask = (1u << kKindShift) - 1;
  static_assert(kMaxNetworks <= (1u << (31 - kNetworkShift)), "network indexes fit the answer");

  // groups / group_slots: the tables' arrays, for a route's group (read, not kept).
  static std::uint32_t of(const PrefixInfo& p, const NextHopGroup* groups, const std::uint32_t* group_slots) {
    if (p.network == PrefixInfo::kShared) return 0;
    std::uint32_t kind = kGroup, value = p.value;
    if (p.kind == PrefixInfo::kEndpoint) {
      kind = kEndpoint;
    } else if (const NextHopGroup& g = groups[p.value]; g.count == 1) {
      kind = kVtep;
      value = group_slots[g.first];
    }
    if (value > kValueMask) return 0;
    return kDirect | (std::uint32_t{p.network} << kNetworkShift) | kind | value;
  }
  // What answer >> kNetworkShift is when the answer is direct for `network`.
  static std::uint32_t direct_for(std::uint16_t network) { return (kDirect >> kNetworkShift) | network; }
};

// Where a pod's IPv4 packet goes: a local endpoint, a next-hop group, or nowhere (no route).
// Both point at entries that stay as they are until the reader's next quiescent point.
struct Destination {
  const EndpointEntry* endpoint = nullptr;
  const NextHopGroup* group = nullptr;
};

// What an accepted Snapshot or Delta changed, for the runtime.
struct TablesChangeReport {
  std::vector<std::uint32_t> new_vteps;   // VTEP addresses (network order) to resolve by ARP
  bool pod_ports_changed = false;         // the set of ports that carry endpoints changed
  bool waited_grace_period = false;       // a port or pod address changed hands (see apply)
  std::size_t entries = 0;                // entries added, changed or removed
};

class ForwardingTables {
 public:
  // Validates every entry and builds the lookup structures. Errors name the entry and the
  // field ("routes[12] (vni 1001, prefix \"10.245.0.0/33\"): prefix: '10.245.0.0/33' has an invalid
  // prefix length (expected 0..32)").
  // On success, also makes the neighbour cache's static entries match tables.neighbors (and
  // context.default_neighbors).
  static Result<std::unique_ptr<ForwardingTables>> create(const v1::Tables& tables, const BuildContext& context,
                                                          TablesChangeReport* report = nullptr);
  // Applies a Delta in place, the Delta's meaning being that of apply_delta() below (upserts
  // by key, then removals). It is validated whole first: on error nothing changed, and the
  // error names the entry ("upsert.routes[3] (vni 7, prefix ...): ..."). Then the entries are
  // changed one by one in the order docs/dataplane-pipeline.md gives ("Tables that change in
  // place"); when a pod port or a (network, pod address) changes hands, the removals are
  // followed by reclaimer.synchronize() before the additions. Memory the old entries used is
  // handed to `reclaimer`. Costs time in proportion to the entries the Delta names (removing a
  // network also scans the routes). `context` must be the one the tables were created with,
  // port_for_iface updated for the Delta's new interfaces.
  Result<TablesChangeReport> apply(const v1::Delta& delta, const BuildContext& context, Reclaimer& reclaimer);
  // The tables as a protobuf message, entries sorted by key (what DumpTables returns).
  v1::Tables dump() const;
  ~ForwardingTables();
  ForwardingTables(const ForwardingTables&) = delete;
  ForwardingTables& operator=(const ForwardingTables&) = delete;

  // ---- node facts ----
  std::uint32_t local_vtep_ip_be() const { return local_vtep_ip_be_; }
  const wire::MacAddress& uplink_mac() const { return uplink_mac_; }
  std::uint16_t uplink_port() const { return uplink_port_; }
  std::uint32_t underlay_mtu() const { return underlay_mtu_; }
  NeighborCache& neighbors() const { return *neighbors_; }
  PathMtuCache* path_mtus() const { return path_mtus_; }
  const UnderlayTag& underlay_tag() const { return underlay_tag_; }

  // ---- hot-path lookups (inline, no allocation; valid until the reader's next quiescent point) ----
  static constexpr std::uint32_t kNoNetwork = ~0u;
  const NetworkEntry* network_by_vni(std::uint32_t vni) const {
    std::uint16_t i;
    return network_index_.find(vni, &i) ? &network(i) : nullptr;
  }
  [[gnu::always_inline]] const NetworkEntry& network(std::uint16_t index) const { return *networks_[index].load(std::memory_order_acquire); }
  std::uint16_t network_index(const NetworkEntry& n) const { return n.index; }
  [[gnu::always_inline]] std::optional<EndpointEntry> endpoint(std::uint16_t network, std::uint32_t ip_be) const {
    return endpoints_.get(endpoint_key(network, ip_be));
  }
  [[gnu::always_inline]] const PodPortEntry* pod_port(std::uint16_t port) const {
    return port < kMaxPorts ? pod_ports_[port].load(std::memory_order_acquire) : nullptr;
  }
  // Whether a network has any service: the pre-check that keeps packets of networks without
  // services from paying a hash probe (one byte per network, written with one store).
  [[gnu::always_inline]] bool network_has_services(std::uint16_t network) const {
    return __atomic_load_n(&services_in_network_[network], __ATOMIC_RELAXED) != 0;
  }
  // The span of a network's VIPs, for a test before the map's probe: a destination d (host
  // order) can be a VIP only if d - low <= span (unsigned), where the word is low << 32 | span,
  // the lowest VIP and the highest's distance from it (0 without services: only 0.0.0.0 passes,
  // and the probe says no). One word, one store: never torn. Widened before a service's entry
  // is published, narrowed after one is taken out.
  [[gnu::always_inline]] std::uint64_t service_vip_span(std::uint16_t network) const {
    return __atomic_load_n(&service_vip_span_[network], __ATOMIC_RELAXED);
  }
  [[gnu::always_inline]] static bool within_vip_span(std::uint64_t span, std::uint32_t dst_be) {
    return wire::from_be32(dst_be) - static_cast<std::uint32_t>(span >> 32) <= static_cast<std::uint32_t>(span);
  }
  // A number that changes whenever a service of the network is set or removed (after the map
  // holds the change; unique over all networks, 0 only before the network's first service): a
  // service flow's conntrack entry keeps the number its backend was last checked under, so that
  // a hit under the same number needs neither the services map nor the entry (service_nat.cpp).
  // Read before the map's probes.
  [[gnu::always_inline]] std::uint32_t services_generation(std::uint16_t network) const {
    return __atomic_load_n(&services_generation_[network], __ATOMIC_ACQUIRE);
  }
  // The service at (network, VIP), or null.
  [[gnu::always_inline]] const ServiceEntry* service(std::uint16_t network, std::uint32_t vip_be) const {
    const ServiceEntry* s = nullptr;
    services_.find(endpoint_key(network, vip_be), &s);
    return s;
  }
  // The network's policy (policy_entry.hpp), null when it has none (everything passes).
  [[gnu::always_inline]] const NetworkPolicyEntry* network_policy(std::uint16_t network) const {
    return policies_[network].load(std::memory_order_acquire);
  }
  // Index of a known VTEP.
  std::optional<std::uint32_t> vtep_index(std::uint32_t ip_be) const { return vtep_index_.get(ip_be); }
  const VtepEntry& vtep(std::uint32_t index) const { return vteps_[index]; }
  bool vtep_allowed(std::uint32_t vtep, std::uint16_t network) const {
    return admitted_network(admission_key(vteps_[vtep].ip_be, this->network(network).vni)) == network;
  }
  // Decap fast check, one lookup: the network of `vni` if the VTEP at src_ip_be may send it
  // (known VTEP, configured VNI, allowed pair); nullopt otherwise (then ask the questions
  // above to find out which one failed).
  std::optional<std::uint16_t> allowed_network(std::uint32_t src_ip_be, std::uint32_t vni) const {
    const std::uint32_t n = admitted_network(admission_key(src_ip_be, vni));
    if (n == kNoNetwork) return std::nullopt;
    return static_cast<std::uint16_t>(n);
  }
  // The same in two steps, for burst loops: the key (which they remember), the lookup.
  static std::uint64_t admission_key(std::uint32_t src_ip_be, std::uint32_t vni) {
    return (static_cast<std::uint64_t>(src_ip_be) << 24) | vni;
  }
  // Network index, or kNoNetwork.
  [[gnu::always_inline]] std::uint32_t admitted_network(std::uint64_t key) const {
    std::uint64_t v;
    return admission_.find(key, &v) ? static_cast<std::uint32_t>(v & 0xffff) : kNoNetwork;
  }
  // Reverse-path check of decapsulation (docs/security.md): whether `src_ip_be`, the inner
  // source of a packet on `network` from the VTEP at `vtep_ip_be`, lies in a prefix that
  // network routes to that VTEP (its block, its cluster's CIDR). One LPM lookup, then the
  // route's next-hop slots (a few) compared; a local endpoint's address is never routed away.
  // Inline, on locals: in the decap loop an outlined resolve() and the group's fields reloaded
  // around each compare cost ~70 instructions per packet whose source the memo had not seen.
  [[gnu::always_inline]] bool source_routed_to(std::uint16_t network, std::uint32_t src_ip_be,
                                               std::uint32_t vtep_ip_be) const {
    std::uint64_t entry = 0;
    if (std::uint32_t v; lookup_direct_vtep(lpm_.answers24(), lpm_.tbl24(), lpm_.tbl8(), network,
                                            wire::from_be32(src_ip_be), &v, &entry))
      return vteps_[v].ip_be == vtep_ip_be;
    const Destination d = resolve_entry(network, src_ip_be, entry);
    if (!d.group) return false;
    const NextHopGroup g = *d.group;
    const std::uint32_t* slots = group_slots_.data() + g.first;
    const VtepEntry* vteps = vteps_.data();
    for (std::uint32_t i = 0; i < g.count; ++i)
      if (vteps[slots[i]].ip_be == vtep_ip_be) return true;
    return false;
  }
  // Whether (VTEP, VNI) is admitted by an explicit Vtep entry (which names no prefixes: such a
  // VTEP may send any source its route check does not refuse). Asked only when that check failed.
  bool explicitly_admitted(std::uint64_t admission_key) const {
    std::uint64_t v;
    return admission_.find(admission_key, &v) && (v >> kExplicitRefShift) != 0;
  }
  // Longest-prefix match of dst (network order) in a network: the next-hop group, or null.
  // Why it is right: the longest union prefix P containing dst contains every route of any
  // VNI that contains dst, so this VNI's best route is its longest route containing P:
  // the route at P, else at P's parent (next shorter union prefix), and so on.
  const NextHopGroup* route(std::uint16_t network, std::uint32_t dst_ip_be) const {
    std::uint32_t id = lpm_.lookup(wire::from_be32(dst_ip_be));
    while (id != LpmTable::kNone) {
      std::uint32_t g;
      if (route_group_.find(route_key(id, network), &g)) return &groups_[g];
      id = load_word(&prefix_parent_[id]);
    }
    return nullptr;
  }
  // Local endpoint or route for dst in a network: one LPM lookup over routes and endpoints
  // together (what the encap path uses; same answer as endpoint() then route()).
  Destination resolve(std::uint16_t network, std::uint32_t dst_ip_be) const {
    const std::uint32_t dst = wire::from_be32(dst_ip_be);
    return resolve_entry(network, dst_ip_be, LpmTable::lookup_in(lpm_.tbl24(), lpm_.tbl8(), dst));
  }
  // The same, given the LPM's entry for dst (LpmTable::lookup_in, e.g. batched): the answer
  // folded into it when the prefix is this network's alone (no further table read), else
  // through the prefix id.
  [[gnu::always_inline]] Destination resolve_entry(std::uint16_t network, std::uint32_t dst_ip_be,
                                                   std::uint64_t lpm_entry) const {
    const std::uint32_t answer = LpmTable::answer_of(lpm_entry);
    if ((answer >> FoldedAnswer::kNetworkShift) == FoldedAnswer::direct_for(network)) [[likely]] {
      const std::uint32_t value = answer & FoldedAnswer::kValueMask;
      const std::uint32_t kind = answer & FoldedAnswer::kKindMask;
      if (kind == FoldedAnswer::kEndpoint) return {&endpoint_slots_[value], nullptr};
      if (kind == FoldedAnswer::kGroup) return {nullptr, &groups_[value]};
      // kVtep: the answer names the route's VTEP, not its group: the group through the prefix id
      // (callers that want the VTEP itself ask direct_vtep() first).
    }
    const std::uint32_t prefix_id = LpmTable::value_of(lpm_entry);
    if (prefix_id == LpmTable::kNone) return {};
    return resolve_shared(network, dst_ip_be, prefix_id);
  }
  // Whether the LPM's entry for a destination answers, for `network`, with a route to one
  // VTEP (FoldedAnswer::kVtep); then *vtep is its index. The encapsulation's burst loop and the
  // decap reverse-path check ask this first, and resolve_entry() otherwise.
  [[gnu::always_inline]] static bool direct_vtep(std::uint16_t network, std::uint64_t lpm_entry, std::uint32_t* vtep) {
    return direct_vtep_answer(network, LpmTable::answer_of(lpm_entry), vtep);
  }
  // The route to one VTEP for ip (host order) in `network`, on the LPM's raw levels: from the
  // first level's mirror (LpmTable::answers24) when it holds that answer, else from the LPM
  // entry, which *entry then holds for resolve_entry(). False: not a route to one VTEP (*entry
  // is the entry whenever the mirror did not answer).
  [[gnu::always_inline]] static bool lookup_direct_vtep(const std::uint32_t* a24, const std::uint64_t* t24,
                                                        const std::uint64_t* t8, std::uint16_t network,
                                                        std::uint32_t ip, std::uint32_t* vtep, std::uint64_t* entry) {
    if (direct_vtep_answer(network, LpmTable::answer_in(a24, ip), vtep)) return true;
    *entry = LpmTable::lookup_in(t24, t8, ip);
    return direct_vtep(network, *entry, vtep);
  }
  // The same for an answer alone (LpmTable::answer_in: the first level's mirror).
  [[gnu::always_inline]] static bool direct_vtep_answer(std::uint16_t network, std::uint32_t answer,
                                                        std::uint32_t* vtep) {
    constexpr std::uint32_t kHigh = ~((1u << FoldedAnswer::kNetworkShift) - 1) | FoldedAnswer::kKindMask;
    *vtep = answer & FoldedAnswer::kValueMask;
    return (answer & kHigh) == ((FoldedAnswer::direct_for(network) << FoldedAnswer::kNetworkShift) | FoldedAnswer::kVtep);
  }
  const LpmTable& lpm() const { return lpm_; }

  // VTEP index chosen by flow hash among a group's weighted slots.
  std::uint32_t pick(const NextHopGroup& g, std::uint32_t hash) const {
    return pick_slot(group_slots_.data(), g, hash);
  }
  static std::uint32_t pick_slot(const std::uint32_t* slots, const NextHopGroup& g, std::uint32_t hash) {
    return slots[g.first + static_cast<std::uint32_t>((static_cast<std::uint64_t>(hash) * g.count) >> 32)];
  }
  const std::uint32_t* group_slots() const { return group_slots_.data(); }
  const VtepEntry* vtep_entries() const { return vteps_.data(); }
  // Control thread: copies the neighbour cache's MACs into the VTEP entries that use them
  // (VtepEntry::head; a slot no longer resolved clears the copy). The runtime calls it when the
  // cache's change count moved; until then the entries keep the MAC they had. Returns how many
  // entries changed.
  std::size_t copy_neighbor_macs();

  // ---- introspection (control thread, tests) ----
  std::size_t network_count() const { return network_state_by_vni_.size(); }
  // The VNIs of every network (the uplink's tc drop keeps its own copy: uplink_kernel_drop.hpp).
  std::set<std::uint32_t> vnis() const {
    std::set<std::uint32_t> out;
    for (const auto& entry : network_state_by_vni_) out.insert(entry.first);
    return out;
  }
  std::size_t route_count() const { return route_group_.size() - endpoint_state_.size(); }
  std::size_t endpoint_count() const { return endpoint_state_.size(); }
  std::size_t vtep_count() const { return vtep_index_.size(); }
  std::size_t group_count() const { return live_groups_; }
  std::size_t service_count() const { return service_state_.size(); }
  // Every service as it is in force, by id: f(id, vni, vip_be, ports, backends) (control
  // thread; GetServiceCounters).
  template <class F>
  void for_each_service(F&& f) const {
    for (const auto& [id, st] : service_state_) f(id, st.vni, st.vip_be, st.ports, st.backends);
  }
  std::size_t policy_count() const { return policy_state_.size(); }
  // Per network with policy, by VNI: its tables in numbers (vxfed-dpctl dump).
  std::vector<PolicySummary> policy_summaries() const;
  // Every endpoint on a pod port, in port order (the per-pod policy drops' report).
  struct PortEndpoint {
    std::uint16_t port = 0;
    std::string id, iface;
    std::uint32_t vni = 0, ip_be = 0;
  };
  std::vector<PortEndpoint> port_endpoints() const;
  // Bytes held by the service entries the workers read (ports, backends, slots).
  std::size_t service_entry_bytes() const;
  // Ports that carry endpoints (what the runtime must poll besides the uplink).
  std::vector<std::uint16_t> pod_port_ids() const;
  // Bytes of RAM the tables use now (mapped arrays as resident, control maps estimated).
  std::size_t memory_bytes() const;
  // The same by part (each mapped array's resident bytes; "control": the writer's own
  // containers, estimated), for the status.
  std::vector<std::pair<const char*, std::size_t>> memory_by_part() const;

 private:
  ForwardingTables();
  friend class TablesPlanner;
  friend class TablesWriter;
  // resolve_entry when the answer is not folded for this network (the prefix is another
  // network's, or several networks', or its value does not fit): walk the shorter prefixes.
  Destination resolve_shared(std::uint16_t network, std::uint32_t dst_ip_be, std::uint32_t prefix_id) const;
  static std::uint64_t endpoint_key(std::uint16_t network, std::uint32_t ip_be) {
    return (static_cast<std::uint64_t>(network) << 32) | ip_be;
  }
  static std::uint64_t route_key(std::uint32_t prefix_id, std::uint16_t network) {
    return (static_cast<std::uint64_t>(prefix_id) << 16) | network;
  }
  // In route_group_ beside the routes: (prefix id, network) -> endpoint slot, for endpoints at
  // /32s shared by several networks (resolve_shared).
  static constexpr std::uint64_t kEndpointAtPrefix = 1ull << 62;
  static std::uint64_t endpoint_at_key(std::uint32_t prefix_id, std::uint16_t network) {
    return route_key(prefix_id, network) | kEndpointAtPrefix;
  }

  std::uint32_t local_vtep_ip_be_ = 0;
  wire::MacAddress uplink_mac_{};
  std::uint16_t uplink_port_ = 0;
  std::uint32_t underlay_mtu_ = 0;
  NeighborCache* neighbors_ = nullptr;
  PathMtuCache* path_mtus_ = nullptr;
  UnderlayTag underlay_tag_;

  // ---- read by workers ----
  std::unique_ptr<std::atomic<const NetworkEntry*>[]> networks_;   // by network index
  RcuMap64<std::uint16_t> network_index_;                         // vni -> network index
  RcuMap64<EndpointEntry> endpoints_{50};                         // (network, ip) -> endpoint
  std::array<std::atomic<const PodPortEntry*>, kMaxPorts> pod_ports_{};
  StableArray<VtepEntry> vteps_;
  RcuMap64<std::uint32_t> vtep_index_;                            // ip -> VTEP index
  // admission_key -> network | route refs << 16 | explicit entry refs << kExplicitRefShift
  RcuMap64<std::uint64_t> admission_;
  static constexpr unsigned kExplicitRefShift = 48;
  LpmTable lpm_;                                                  // union of all prefixes -> prefix id
  StableArray<std::uint32_t> prefix_parent_;                      // prefix id -> next shorter union prefix id
  StableArray<PrefixInfo> prefix_info_;                           // prefix id -> its one network's answer
  StableArray<EndpointEntry> endpoint_slots_;                     // PrefixInfo::kEndpoint values
  RcuMap64<std::uint32_t> route_group_{75};                       // (prefix id, network) -> group; endpoint_at_key -> slot
  StableArray<NextHopGroup> groups_;
  StableArray<std::uint32_t> group_slots_;
  RcuMap64<const ServiceEntry*> services_;                        // (network, vip) -> service
  std::unique_ptr<std::uint8_t[]> services_in_network_;          // by network index: 1 if any
  std::unique_ptr<std::uint64_t[]> service_vip_span_;            // by network index: service_vip_span()
  std::unique_ptr<std::uint32_t[]> services_generation_;         // by network index: services_generation()
  std::unique_ptr<std::atomic<const NetworkPolicyEntry*>[]> policies_;  // by network index, null: none

  // ---- control thread only ----
  struct NetworkState {
    std::uint16_t index = 0;
    bool mac_given = false;        // gateway_mac was given (else derived from the VNI)
    std::uint32_t mtu_given = 0;   // as given (0: the maximum)
    std::uint32_t routes = 0;
    std::uint32_t endpoints = 0;
  };
  std::map<std::uint32_t, NetworkState> network_state_by_vni_;
  IndexPool network_ids_{kMaxNetworks};

  struct EndpointState {
    std::uint32_t vni = 0;
    std::uint32_t ip_be = 0;
    wire::MacAddress mac{};
    std::string iface;
    std::uint16_t port = 0;
    std::uint32_t slot = 0;        // in endpoint_slots_
    std::uint16_t identity = 0;    // as given (host order)
  };
  std::unordered_map<std::string, EndpointState> endpoint_state_;  // by endpoint id
  std::unordered_map<std::uint64_t, std::string> endpoint_by_addr_;  // (vni << 32 | ip) -> id
  std::array<std::string, kMaxPorts> port_owner_;                  // endpoint id per port, "" free
  IndexPool endpoint_slot_ids_{kMaxEndpoints};

  RcuMap64<std::uint32_t> prefix_ids_{75};     // (addr << 8 | len) -> prefix id (control only)
  StableArray<std::uint32_t> prefix_addr_;
  StableArray<std::uint8_t> prefix_len_;
  // The one network with a route or endpoint at a prefix, kShared when several (listed in
  // shared_networks_), kNoOwner when none (a prefix being created).
  static constexpr std::uint16_t kNoOwner = 0xfffe;
  StableArray<std::uint16_t> prefix_network_;
  IndexPool prefix_id_pool_{kMaxPrefixes};
  // Networks with a route or endpoint at a prefix, for prefixes shared by several networks
  // (single-network prefixes name theirs in PrefixInfo).
  std::unordered_map<std::uint32_t, std::vector<std::uint16_t>> shared_networks_;

  struct Hop {
    std::uint32_t vtep;            // VTEP index
    std::uint32_t weight;          // as given (0 counts as 1)
  };
  struct GroupState {
    std::uint32_t refs = 0;        // routes using the group
    std::uint64_t hash = 0;        // of its hops (dedup key)
    std::vector<Hop> hops;         // sorted by VTEP address
  };
  std::vector<GroupState> group_state_;        // by group index
  RcuMap64<std::uint32_t> group_by_hash_{75};  // hops hash -> group (control only)
  IndexPool group_ids_{kMaxGroups};
  BlockPool slot_blocks_{kMaxGroupSlots};
  std::size_t live_groups_ = 0;

  struct VtepState {
    std::uint32_t refs = 0;        // groups using it + 1 for an explicit Vtep entry
  };
  std::vector<VtepState> vtep_state_;          // by VTEP index
  IndexPool vtep_ids_{kMaxVteps};
  std::map<std::uint32_t, std::vector<std::uint32_t>> explicit_vteps_;  // ip -> vnis, as given
  std::set<std::uint32_t> gbp_vteps_;          // explicit entries with gbp (their VtepEntry::gbp is 0xffff)

  struct ServiceState {
    std::uint32_t vni = 0;
    std::uint32_t vip_be = 0;
    std::vector<ServicePortEntry> ports;           // in force, in the order given
    std::vector<std::uint16_t> target_ports_given; // 0: the port
    std::vector<ServiceBackendWeight> backends;     // ascending address
    std::uint32_t table_size_given = 0;            // 0: the default for the backend count
    const ServiceEntry* entry = nullptr;           // what the workers read
  };
  std::map<std::string, ServiceState> service_state_;              // by service id
  std::unordered_map<std::uint32_t, std::multiset<std::uint32_t>> service_vips_per_vni_;  // vni -> its services' VIPs, host order
  std::uint32_t service_generation_ = 0;

  struct PolicyState {
    std::shared_ptr<const policy::PolicyTables> tables;
    std::map<std::string, std::uint32_t> local_of_endpoint;  // Endpoint.id -> LocalIndex
    std::shared_ptr<const IdentityTrust> trust;               // the GBP trust check; nullptr: off
    v1::NetworkPolicy given;
    const NetworkPolicyEntry* entry = nullptr;  // what the workers read
  };
  std::map<std::uint32_t, PolicyState> policy_state_;  // by VNI
  std::uint32_t policy_generation_ = 0;

  std::map<std::uint32_t, wire::MacAddress> static_neighbors_;  // the tables' own, by ip
  std::map<std::uint32_t, wire::MacAddress> default_neighbors_;  // the node's (context)
};

// Applies a Delta to a Tables message (upserts by key, then removals): the meaning of a
// Delta, which ForwardingTables::apply implements in place (tests compare the two).
// Fails (naming the entry) when a removal names something that does not exist.
Result<v1::Tables> apply_delta(const v1::Tables& current, const v1::Delta& delta);

}  // namespace vxfed::dataplane
