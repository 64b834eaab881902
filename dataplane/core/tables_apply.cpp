// TablesWriter: applies a validated TablesChange to ForwardingTables in place, while workers
// read them. It cannot fail (the planner checked every entry and every capacity).
//
// The order (docs/dataplane-pipeline.md, "Tables that change in place", says why it is safe):
//   0. what nothing refers to yet: new networks, static neighbours, VTEPs, next-hop groups,
//      and the admission of every (VTEP, VNI) pair the result allows;
//   A. removals: endpoints removed or moved (to another network, address or port), routes
//      removed; then, if a pod port or a (network, pod address) freed here is taken again
//      below, a grace period, so that no packet looked up under the old owner is still in a
//      worker when the new owner's entry appears;
//   B. additions and changes: network parameters, routes, endpoints;
//   C. what nothing refers to any more: admission of pairs no longer allowed, unused groups
//      and VTEPs, removed networks and static neighbours. Every slot, index or object a worker
//      may still hold is handed to the Reclaimer and reused or freed after a grace period.
#include <arpa/inet.h>

#include <algorithm>
#include <set>
#include <unordered_set>

#include "dataplane/core/tables_change.hpp"

namespace vxfed::dataplane {
namespace {

std::uint32_t sum_words(const void* data, std::size_t len) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < len; i += 2) sum += static_cast<std::uint32_t>(p[i] << 8 | p[i + 1]);
  return sum;
}

std::uint64_t prefix_key(std::uint32_t addr, std::uint32_t len) { return (static_cast<std::uint64_t>(addr) << 8) | len; }
std::uint32_t mask_of(std::uint32_t len) { return len == 0 ? 0 : ~0u << (32 - len); }
std::uint64_t addr_id(std::uint32_t vni, std::uint32_t ip_be) { return (static_cast<std::uint64_t>(vni) << 32) | ip_be; }

std::uint64_t hops_hash(const std::vector<HopSpec>& hops) {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  for (const auto& hop : hops) {
    h ^= (static_cast<std::uint64_t>(hop.ip_be) << 32) | hop.weight;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
  }
  return h & ((1ull << 62) - 1);  // a key of RcuMap64 (below 2^63)
}

}  // namespace

class TablesWriter {
 public:
  TablesWriter(ForwardingTables& t, const BuildContext& ctx, Reclaimer& reclaimer)
      : t_(t), ctx_(ctx), r_(reclaimer) {}

  TablesChangeReport apply(const TablesChange& c) {
    report_.entries = c.entries();
    // Networks whose endpoints change: their policy's port map is rebuilt (policy_entry.hpp).
    std::set<std::uint32_t> endpoint_vnis;
    for (const auto& id : c.removed_endpoints)
      if (auto it = t_.endpoint_state_.find(id); it != t_.endpoint_state_.end()) endpoint_vnis.insert(it->second.vni);
    for (const auto& e : c.endpoints) {
      endpoint_vnis.insert(e.vni);
      if (auto it = t_.endpoint_state_.find(e.id); it != t_.endpoint_state_.end()) endpoint_vnis.insert(it->second.vni);
    }
    if (c.needs_reclaim_first) reclaim_now();
    // 0. Things nothing refers to yet.
    for (const auto& n : c.networks)
      if (!t_.network_state_by_vni_.count(n.vni)) add_network(n);
    for (const auto& n : c.neighbors) set_static_neighbor(n.ip_be, n.mac);
    std::vector<std::uint32_t> new_groups;  // per c.routes entry
    new_groups.reserve(c.routes.size());
    for (const auto& r : c.routes) {
      const std::uint16_t net = network_of(r.vni);
      const std::uint32_t g = group_for(r.hops);
      new_groups.push_back(g);
      for (const auto& h : r.hops) admit(h.ip_be, r.vni, net);
    }
    std::vector<std::vector<std::uint32_t>> vtep_vnis_before;
    for (const auto& v : c.vteps) {
      auto it = t_.explicit_vteps_.find(v.ip_be);
      if (it == t_.explicit_vteps_.end()) {
        ++t_.vtep_state_[vtep_for(v.ip_be)].refs;
        vtep_vnis_before.emplace_back();
      } else {
        vtep_vnis_before.push_back(it->second);
      }
      for (std::uint32_t vni : v.vnis) admit(v.ip_be, vni, network_of(vni), kExplicitRef);
      // Whether the VTEP takes GBP: one store, which a packet sees before or after (either is
      // a well-formed header: the G bit and the group come from this one word).
      set_vtep_gbp(v.ip_be, v.gbp);
    }

    // A. Removals, and the old place of what moves.
    std::vector<std::pair<std::uint32_t, std::uint16_t>> old_groups;  // (group, network) no longer used by a route
    std::unordered_set<std::uint16_t> freed_ports;
    std::unordered_set<std::uint64_t> freed_addrs;
    for (const auto& id : c.removed_endpoints) remove_endpoint(id, freed_ports, freed_addrs);
    for (const auto& e : c.endpoints) {
      auto it = t_.endpoint_state_.find(e.id);
      if (it != t_.endpoint_state_.end() && !same_place(it->second, e)) remove_endpoint(e.id, freed_ports, freed_addrs);
    }
    for (const auto& [vni, prefix] : c.removed_routes) old_groups.emplace_back(remove_route(vni, prefix), network_of(vni));
    for (const auto& id : c.removed_services) remove_service(id);
    for (const auto& sv : c.services)
      if (auto it = t_.service_state_.find(sv.id); it != t_.service_state_.end() &&
                                                    (it->second.vni != sv.vni || it->second.vip_be != sv.vip_be))
        remove_service(sv.id);  // moves to another (network, VIP): the old key goes first
    bool handover = false;
    for (const auto& e : c.endpoints)
      if (!t_.endpoint_state_.count(e.id) && (freed_ports.count(e.port) || freed_addrs.count(addr_id(e.vni, e.ip_be))))
        handover = true;
    if (handover) {
      r_.synchronize();
      report_.waited_grace_period = true;
    }

    // B. Additions and changes.
    for (const auto& n : c.networks)
      if (auto it = t_.network_state_by_vni_.find(n.vni); it != t_.network_state_by_vni_.end() && it->second.index != added_index(n.vni))
        change_network(it->second, n);
    for (std::size_t i = 0; i < c.routes.size(); ++i)
      if (auto old = set_route(c.routes[i], new_groups[i])) old_groups.emplace_back(*old, network_of(c.routes[i].vni));
    for (const auto& e : c.endpoints) {
      auto it = t_.endpoint_state_.find(e.id);
      if (it == t_.endpoint_state_.end()) {
        add_endpoint(e);
      } else {
        change_endpoint_in_place(it->second, e);
      }
    }
    for (const auto& sv : c.services) set_service(sv);
    for (const auto& p : c.policies) set_policy(p);
    for (std::uint32_t vni : endpoint_vnis)
      if (t_.policy_state_.count(vni) && !std::any_of(c.policies.begin(), c.policies.end(),
                                                      [&](const PolicySpec& p) { return p.vni == vni; }))
        publish_policy(vni);

    // C. What nothing refers to any more.
    for (std::uint32_t vni : c.removed_policies) remove_policy(vni);
    for (const auto& [g, net] : old_groups) release_route_group(g, net);
    for (std::size_t i = 0; i < c.vteps.size(); ++i)
      for (std::uint32_t vni : vtep_vnis_before[i]) unadmit(c.vteps[i].ip_be, vni, kExplicitRef);
    for (std::size_t i = 0; i < c.vteps.size(); ++i) t_.explicit_vteps_[c.vteps[i].ip_be] = c.vteps[i].vnis;
    for (std::uint32_t ip : c.removed_vteps) {
      for (std::uint32_t vni : t_.explicit_vteps_[ip]) unadmit(ip, vni, kExplicitRef);
      t_.explicit_vteps_.erase(ip);
      set_vtep_gbp(ip, false);  // routes may still use it: plain VXLAN from now on
      unref_vtep(*t_.vtep_index_.get(ip));
    }
    for (std::uint32_t vni : c.removed_networks) remove_network(vni);
    for (std::uint32_t ip : c.removed_neighbors) clear_static_neighbor(ip);
    finish();
    return std::move(report_);
  }

  // A Snapshot's neighbour cache: the node's default static neighbours where the tables do not
  // name the address, and no static entry left from earlier tables.
  void commit_static_neighbors() {
    NeighborCache& cache = *ctx_.neighbors;
    std::unordered_set<std::uint32_t> now;
    for (const auto& [ip, mac] : t_.default_neighbors_) {
      if (t_.static_neighbors_.count(ip)) continue;
      const std::uint32_t slot = *cache.slot_for(ip);
      cache.set_static(slot, mac);
      now.insert(slot);
    }
    for (const auto& [ip, mac] : t_.static_neighbors_) now.insert(*cache.find_slot(ip));
    for (std::uint32_t slot = 0; slot < cache.size(); ++slot)
      if (!now.count(slot)) cache.clear_static(slot);
  }

 private:
  using NetworkState = ForwardingTables::NetworkState;
  using EndpointState = ForwardingTables::EndpointState;

  void reclaim_now() {
    retire_all();
    r_.synchronize();
  }

  std::uint16_t network_of(std::uint32_t vni) const { return t_.network_state_by_vni_.at(vni).index; }
  std::uint16_t added_index(std::uint32_t vni) const {
    auto it = added_networks_.find(vni);
    return it == added_networks_.end() ? 0xffff : it->second;
  }

  // ---- networks ----
  NetworkEntry* entry_for(const NetworkSpec& n, std::uint16_t index, std::uint16_t counter_slot) {
    auto* e = new NetworkEntry();
    e->vni = n.vni;
    e->vni_field_be = wire::vxlan_vni_field(n.vni);
    e->gateway_ip_be = n.gateway_ip_be;
    e->gateway_mac = n.gateway_mac;
    e->mtu = n.mtu;
    e->counter_slot = counter_slot;
    e->index = index;
    return e;
  }
  void add_network(const NetworkSpec& n) {
    const auto index = static_cast<std::uint16_t>(*t_.network_ids_.alloc());
    const std::uint16_t slot = *ctx_.vni_slots->slot_for(n.vni);
    t_.networks_[index].store(entry_for(n, index, slot), std::memory_order_release);
    t_.network_index_.assign(n.vni, index, r_);
    NetworkState& s = t_.network_state_by_vni_[n.vni];
    s.index = index;
    s.mac_given = n.mac_given;
    s.mtu_given = n.mtu_given;
    added_networks_[n.vni] = index;
  }
  void change_network(NetworkState& s, const NetworkSpec& n) {
    const NetworkEntry* old = t_.networks_[s.index].load(std::memory_order_relaxed);
    t_.networks_[s.index].store(entry_for(n, s.index, old->counter_slot), std::memory_order_release);
    later([old] { delete old; });
    s.mac_given = n.mac_given;
    s.mtu_given = n.mtu_given;
  }
  void remove_network(std::uint32_t vni) {
    auto it = t_.network_state_by_vni_.find(vni);
    const std::uint16_t index = it->second.index;
    t_.network_index_.erase(vni);
    t_.network_state_by_vni_.erase(it);
    later([tables = &t_, index] { delete tables->networks_[index].exchange(nullptr, std::memory_order_relaxed); });
    t_.network_ids_.release_later(index);
  }

  // ---- neighbours ----
  void set_static_neighbor(std::uint32_t ip, const wire::MacAddress& mac) {
    t_.static_neighbors_[ip] = mac;
    ctx_.neighbors->set_static(*ctx_.neighbors->slot_for(ip), mac);
  }
  void clear_static_neighbor(std::uint32_t ip) {
    t_.static_neighbors_.erase(ip);
    const std::uint32_t slot = *ctx_.neighbors->find_slot(ip);
    if (auto d = t_.default_neighbors_.find(ip); d != t_.default_neighbors_.end()) {
      ctx_.neighbors->set_static(slot, d->second);
    } else {
      ctx_.neighbors->clear_static(slot);
    }
  }

  // ---- VTEPs ----
  VtepEntry make_vtep(std::uint32_t ip_be, std::uint32_t slot) const {
    VtepEntry v;
    v.ip_be = ip_be;
    v.neighbor_slot = slot;
    wire::VxlanOuterHeaders o{};
    o.eth.src = t_.uplink_mac_;
    o.eth.ether_type_be = wire::to_be16(wire::kEtherTypeIpv4);
    o.ip.version_ihl = 0x45;
    o.ip.fragment_be = wire::to_be16(wire::kIpv4FlagDf);
    o.ip.ttl = 64;
    o.ip.protocol = wire::kIpProtoUdp;
    o.ip.src_be = t_.local_vtep_ip_be_;
    o.ip.dst_be = ip_be;
    o.udp.dst_port_be = wire::to_be16(wire::kVxlanUdpPort);
    o.vxlan.flags = wire::kVxlanFlagsVni;
    // TOS, total length and checksum are 0 here: the pipeline adds the per-packet words.
    v.checksum_base = sum_words(&o.ip, sizeof(o.ip));
    std::memcpy(&v.head, &o, sizeof(v.head));
    std::memcpy(v.tail.data(), reinterpret_cast<const std::uint8_t*>(&o) + sizeof(v.head), v.tail.size());
    v.head = VtepEntry::following(v.head, ctx_.neighbors->read(slot));
    return v;
  }
  void set_vtep_gbp(std::uint32_t ip, bool gbp) {
    store_word(&t_.vteps_[*t_.vtep_index_.get(ip)].gbp, static_cast<std::uint16_t>(gbp ? 0xffff : 0));
    if (gbp) {
      t_.gbp_vteps_.insert(ip);
    } else {
      t_.gbp_vteps_.erase(ip);
    }
  }
  // The VTEP of an address, created (entry written before the index is published) if new.
  std::uint32_t vtep_for(std::uint32_t ip) {
    if (auto v = t_.vtep_index_.get(ip)) return *v;
    const std::uint32_t v = *t_.vtep_ids_.alloc();
    t_.vteps_[v] = make_vtep(ip, *ctx_.neighbors->slot_for(ip));
    if (t_.vtep_state_.size() <= v) t_.vtep_state_.resize(v + 1);
    t_.vtep_state_[v] = {};
    t_.vtep_index_.assign(ip, v, r_);
    report_.new_vteps.push_back(ip);
    return v;
  }
  void unref_vtep(std::uint32_t v) {
    if (--t_.vtep_state_[v].refs != 0) return;
    t_.vtep_index_.erase(t_.vteps_[v].ip_be);
    t_.vtep_ids_.release_later(v);
  }

  // ---- admission: (VTEP, VNI) -> network, counted by routes and explicit entries ----
  // (each its own count: the decap reverse-path check asks whether an explicit entry admits)
  static constexpr std::uint64_t kRouteRef = 1ull << 16;
  static constexpr std::uint64_t kExplicitRef = 1ull << ForwardingTables::kExplicitRefShift;
  void admit(std::uint32_t ip, std::uint32_t vni, std::uint16_t net, std::uint64_t ref = kRouteRef) {
    const std::uint64_t key = ForwardingTables::admission_key(ip, vni);
    const auto v = t_.admission_.get(key);
    t_.admission_.assign(key, v ? *v + ref : (std::uint64_t{net} | ref), r_);
  }
  void unadmit(std::uint32_t ip, std::uint32_t vni, std::uint64_t ref = kRouteRef) {
    const std::uint64_t key = ForwardingTables::admission_key(ip, vni);
    const std::uint64_t v = *t_.admission_.get(key) - ref;
    if ((v >> 16) == 0) {
      t_.admission_.erase(key);
    } else {
      t_.admission_.assign(key, v, r_);
    }
  }

  // ---- next-hop groups, shared by routes with the same next hops ----
  bool same_hops(std::uint32_t g, const std::vector<HopSpec>& hops) const {
    const auto& have = t_.group_state_[g].hops;
    if (have.size() != hops.size()) return false;
    for (std::size_t i = 0; i < hops.size(); ++i)
      if (t_.vteps_[have[i].vtep].ip_be != hops[i].ip_be || have[i].weight != hops[i].weight) return false;
    return true;
  }
  // A group with these hops, with one more reference (created, and its slots written, if new).
  std::uint32_t group_for(const std::vector<HopSpec>& hops) {
    const std::uint64_t hash = hops_hash(hops);
    if (auto g = t_.group_by_hash_.get(hash); g && same_hops(*g, hops)) {
      ++t_.group_state_[*g].refs;
      return *g;
    }
    const std::uint32_t g = *t_.group_ids_.alloc();
    const std::vector<std::uint32_t> shares = ecmp_slots(hops);
    std::uint32_t count = 0;
    for (std::uint32_t k : shares) count += k;
    const std::uint32_t first = *t_.slot_blocks_.alloc(count);
    if (t_.group_state_.size() <= g) t_.group_state_.resize(g + 1);
    auto& s = t_.group_state_[g];
    s.refs = 1;
    s.hash = hash;
    s.hops.clear();
    std::uint32_t at = first;
    for (std::size_t i = 0; i < hops.size(); ++i) {
      const std::uint32_t v = vtep_for(hops[i].ip_be);
      ++t_.vtep_state_[v].refs;
      s.hops.push_back(ForwardingTables::Hop{v, hops[i].weight});
      for (std::uint32_t k = 0; k < shares[i]; ++k) t_.group_slots_[at++] = v;
    }
    t_.groups_[g] = NextHopGroup{first, count};
    if (!t_.group_by_hash_.contains(hash)) t_.group_by_hash_.assign(hash, g, r_);
    ++t_.live_groups_;
    return g;
  }
  void unref_group(std::uint32_t g) {
    auto& s = t_.group_state_[g];
    if (--s.refs != 0) return;
    if (auto h = t_.group_by_hash_.get(s.hash); h && *h == g) t_.group_by_hash_.erase(s.hash);
    for (const auto& hop : s.hops) unref_vtep(hop.vtep);
    s.hops.clear();
    s.hops.shrink_to_fit();
    t_.slot_blocks_.release_later(t_.groups_[g].first, t_.groups_[g].count);
    t_.group_ids_.release_later(g);
    --t_.live_groups_;
  }
  // A route of `net` no longer uses group g: its VTEPs' admission for the VNI, the group.
  void release_route_group(std::uint32_t g, std::uint16_t net) {
    const std::uint32_t vni = t_.network(net).vni;
    for (const auto& hop : t_.group_state_[g].hops) unadmit(t_.vteps_[hop.vtep].ip_be, vni);
    unref_group(g);
  }

  // ---- prefixes of the union LPM ----
  std::uint32_t parent_of(std::uint32_t addr, std::uint32_t len) const {
    for (int l = static_cast<int>(len) - 1; l >= 0; --l)
      if (auto id = t_.prefix_ids_.get(prefix_key(addr & mask_of(static_cast<std::uint32_t>(l)), static_cast<std::uint32_t>(l))))
        return *id;
    return LpmTable::kNone;
  }
  // The prefix id of (addr, len); a new one is created unlinked (not in the LPM yet).
  std::uint32_t prefix_for(const Prefix& p, bool* fresh) {
    if (auto id = t_.prefix_ids_.get(prefix_key(p.addr, p.len))) {
      *fresh = false;
      return *id;
    }
    *fresh = true;
    const std::uint32_t id = *t_.prefix_id_pool_.alloc();
    t_.prefix_addr_[id] = p.addr;
    t_.prefix_len_[id] = p.len;
    t_.prefix_network_[id] = ForwardingTables::kNoOwner;
    store_word(&t_.prefix_parent_[id], parent_of(p.addr, p.len));
    t_.prefix_ids_.assign(prefix_key(p.addr, p.len), id, r_);
    return id;
  }
  // The answer a prefix's LPM entries carry for its PrefixInfo (read before any group it names
  // is released: unused groups go in step C, after every prefix is refreshed).
  std::uint32_t folded(const PrefixInfo& p) const {
    return FoldedAnswer::of(p, t_.groups_.data(), t_.group_slots_.data());
  }
  // Publishes a new prefix whose PrefixInfo is written: the LPM, then the parent of every
  // union prefix directly inside it (found through the LPM entries it covers).
  void link_prefix(std::uint32_t id) {
    const std::uint32_t addr = t_.prefix_addr_[id];
    const std::uint8_t len = t_.prefix_len_[id];
    t_.lpm_.insert(addr, len, id, folded(t_.prefix_info_[id]), t_.prefix_len_.data());
    t_.lpm_.for_each_value(addr, len, [&](std::uint32_t x) {
      while (x != id && t_.prefix_len_[x] > len) {
        const std::uint32_t p = t_.prefix_parent_[x];
        if (p == id) return;
        if (p == LpmTable::kNone || t_.prefix_len_[p] < len) {  // p is our parent: x is our child
          store_word(&t_.prefix_parent_[x], id);
          return;
        }
        x = p;
      }
    });
  }
  // The last route or endpoint at the prefix went: the LPM entries fall back to the parent,
  // children get the parent as theirs, the id is reused after a grace period.
  void unlink_prefix(std::uint32_t id) {
    const std::uint32_t addr = t_.prefix_addr_[id];
    const std::uint8_t len = t_.prefix_len_[id];
    const std::uint32_t parent = t_.prefix_parent_[id];
    t_.lpm_.erase(addr, len, id, parent, parent == LpmTable::kNone ? 0 : folded(t_.prefix_info_[parent]), r_);
    t_.prefix_ids_.erase(prefix_key(addr, len));
    t_.lpm_.for_each_value(addr, len, [&](std::uint32_t x) {
      while (x != LpmTable::kNone && t_.prefix_len_[x] > len) {
        const std::uint32_t p = t_.prefix_parent_[x];
        if (p == id) {
          store_word(&t_.prefix_parent_[x], parent);
          return;
        }
        x = p;
      }
    });
    t_.prefix_id_pool_.release_later(id);
  }
  void add_network_at(std::uint32_t id, std::uint16_t net) {
    std::uint16_t& owner = t_.prefix_network_[id];
    if (owner == ForwardingTables::kNoOwner) {
      owner = net;
    } else if (owner == PrefixInfo::kShared) {
      auto& list = t_.shared_networks_[id];
      if (std::find(list.begin(), list.end(), net) == list.end()) list.push_back(net);
    } else if (owner != net) {
      t_.shared_networks_[id] = {owner, net};
      owner = PrefixInfo::kShared;
    }
  }
  // Networks left at the prefix.
  std::size_t remove_network_at(std::uint32_t id, std::uint16_t net) {
    std::uint16_t& owner = t_.prefix_network_[id];
    if (owner == net) {
      owner = ForwardingTables::kNoOwner;
      return 0;
    }
    auto it = t_.shared_networks_.find(id);
    std::erase(it->second, net);
    if (it->second.size() > 1) return it->second.size();
    owner = it->second.front();
    t_.shared_networks_.erase(it);
    return 1;
  }
  // The endpoint slot of network net's endpoint at a /32 prefix, if any.
  std::optional<std::uint32_t> endpoint_slot_at(std::uint32_t id, std::uint16_t net) const {
    if (t_.prefix_len_[id] != 32) return std::nullopt;
    const std::uint32_t vni = t_.network(net).vni;
    auto it = t_.endpoint_by_addr_.find(addr_id(vni, htonl(t_.prefix_addr_[id])));
    if (it == t_.endpoint_by_addr_.end()) return std::nullopt;
    return t_.endpoint_state_.at(it->second).slot;
  }
  // Writes the prefix's PrefixInfo from its networks' routes and endpoints (one store), then,
  // for a prefix already in the LPM (`linked`), the answer folded into its entries where that
  // changed (one store per entry: a /24 has one; while a wider prefix's entries are
  // rewritten, each destination resolves to the old answer or the new one).
  void refresh_prefix(std::uint32_t id, bool linked = true) {
    const std::uint32_t folded_before = folded(t_.prefix_info_[id]);
    PrefixInfo info;
    const std::uint16_t owner = t_.prefix_network_[id];
    if (owner == PrefixInfo::kShared) {
      info.network = PrefixInfo::kShared;
      for (std::uint16_t net : t_.shared_networks_.at(id))
        if (endpoint_slot_at(id, net)) info.has_endpoints = 1;
    } else if (owner != ForwardingTables::kNoOwner) {
      info.network = owner;
      if (auto slot = endpoint_slot_at(id, owner)) {  // a local endpoint wins over its network's route
        info.kind = PrefixInfo::kEndpoint;
        info.value = *slot;
      } else {
        info.value = *t_.route_group_.get(ForwardingTables::route_key(id, owner));
      }
    }
    store_word(&t_.prefix_info_[id], info);
    const std::uint32_t folded_now = folded(info);
    if (linked && folded_now != folded_before)
      t_.lpm_.set_answer(t_.prefix_addr_[id], t_.prefix_len_[id], id, folded_now);
  }
  // An endpoint of `net` (in endpoint slot `slot`) appeared at the /32 prefix p.
  std::uint32_t prefix_user_added(const Prefix& p, std::uint16_t net, std::uint32_t slot) {
    bool fresh = false;
    const std::uint32_t id = prefix_for(p, &fresh);
    t_.route_group_.assign(ForwardingTables::endpoint_at_key(id, net), slot, r_);
    add_network_at(id, net);
    refresh_prefix(id, /*linked=*/!fresh);
    if (fresh) link_prefix(id);
    return id;
  }
  // A route or endpoint of `net` went from prefix id (already removed from its table).
  void prefix_user_removed(std::uint32_t id, std::uint16_t net) {
    const bool still = t_.route_group_.contains(ForwardingTables::route_key(id, net)) || endpoint_slot_at(id, net);
    if (!still && remove_network_at(id, net) == 0) return unlink_prefix(id);
    refresh_prefix(id);
  }

  // ---- routes ----
  // Sets a route to group g (whose reference the caller holds); the group it had, if any.
  std::optional<std::uint32_t> set_route(const RouteSpec& r, std::uint32_t g) {
    const std::uint16_t net = network_of(r.vni);
    if (auto id = t_.prefix_ids_.get(prefix_key(r.prefix.addr, r.prefix.len))) {
      const std::uint64_t key = ForwardingTables::route_key(*id, net);
      if (auto old = t_.route_group_.get(key)) {
        t_.route_group_.assign(key, g, r_);
        refresh_prefix(*id);
        return old;
      }
    }
    bool fresh = false;
    const std::uint32_t id = prefix_for(r.prefix, &fresh);
    t_.route_group_.assign(ForwardingTables::route_key(id, net), g, r_);
    add_network_at(id, net);
    refresh_prefix(id, /*linked=*/!fresh);
    if (fresh) link_prefix(id);
    ++t_.network_state_by_vni_[r.vni].routes;
    return std::nullopt;
  }
  // Removes a route; returns its group (released in step C).
  std::uint32_t remove_route(std::uint32_t vni, const Prefix& p) {
    const std::uint16_t net = network_of(vni);
    const std::uint32_t id = *t_.prefix_ids_.get(prefix_key(p.addr, p.len));
    const std::uint64_t key = ForwardingTables::route_key(id, net);
    const std::uint32_t g = *t_.route_group_.get(key);
    t_.route_group_.erase(key);
    prefix_user_removed(id, net);
    --t_.network_state_by_vni_[vni].routes;
    return g;
  }

  // ---- endpoints ----
  static bool same_place(const EndpointState& s, const EndpointSpec& e) {
    return s.vni == e.vni && s.ip_be == e.ip_be && s.port == e.port;
  }
  void set_pod_port(std::uint16_t port, const PodPortEntry* entry) {
    const PodPortEntry* old = t_.pod_ports_[port].exchange(entry, std::memory_order_acq_rel);
    if (old) later([old] { delete old; });
  }
  void add_endpoint(const EndpointSpec& e) {
    const std::uint16_t net = network_of(e.vni);
    const std::uint32_t slot = *t_.endpoint_slot_ids_.alloc();
    const EndpointEntry entry{e.port, e.mac};
    store_word(&t_.endpoint_slots_[slot], entry);
    t_.endpoints_.assign(ForwardingTables::endpoint_key(net, e.ip_be), entry, r_);
    t_.endpoint_state_[e.id] = EndpointState{e.vni, e.ip_be, e.mac, e.iface, e.port, slot, e.identity};
    t_.endpoint_by_addr_[addr_id(e.vni, e.ip_be)] = e.id;
    t_.port_owner_[e.port] = e.id;
    prefix_user_added(Prefix{ntohl(e.ip_be), 32}, net, slot);
    set_pod_port(e.port, new PodPortEntry{net, e.ip_be, e.mac, wire::to_be16(e.identity)});
    ++t_.network_state_by_vni_[e.vni].endpoints;
    report_.pod_ports_changed = true;
  }
  void remove_endpoint(const std::string& id, std::unordered_set<std::uint16_t>& freed_ports,
                       std::unordered_set<std::uint64_t>& freed_addrs) {
    auto it = t_.endpoint_state_.find(id);
    const EndpointState s = it->second;
    const std::uint16_t net = network_of(s.vni);
    set_pod_port(s.port, nullptr);  // the pod sends nothing more
    t_.port_owner_[s.port].clear();
    t_.endpoints_.erase(ForwardingTables::endpoint_key(net, s.ip_be));
    t_.endpoint_by_addr_.erase(addr_id(s.vni, s.ip_be));
    t_.endpoint_state_.erase(it);
    const std::uint32_t prefix = *t_.prefix_ids_.get(prefix_key(ntohl(s.ip_be), 32));
    t_.route_group_.erase(ForwardingTables::endpoint_at_key(prefix, net));
    prefix_user_removed(prefix, net);
    t_.endpoint_slot_ids_.release_later(s.slot);
    --t_.network_state_by_vni_[s.vni].endpoints;
    freed_ports.insert(s.port);
    freed_addrs.insert(addr_id(s.vni, s.ip_be));
    report_.pod_ports_changed = true;
  }
  // Same network, address and port: a new MAC, identity (or interface name), each entry one store.
  void change_endpoint_in_place(EndpointState& s, const EndpointSpec& e) {
    const std::uint16_t net = network_of(e.vni);
    const std::uint32_t slot = *t_.endpoint_slot_ids_.alloc();
    const EndpointEntry entry{e.port, e.mac};
    store_word(&t_.endpoint_slots_[slot], entry);
    t_.endpoints_.assign(ForwardingTables::endpoint_key(net, e.ip_be), entry, r_);
    t_.endpoint_slot_ids_.release_later(s.slot);
    s.slot = slot;
    s.mac = e.mac;
    s.iface = e.iface;
    s.identity = e.identity;
    const std::uint32_t id = *t_.prefix_ids_.get(prefix_key(ntohl(e.ip_be), 32));
    t_.route_group_.assign(ForwardingTables::endpoint_at_key(id, net), slot, r_);
    refresh_prefix(id);
    set_pod_port(e.port, new PodPortEntry{net, e.ip_be, e.mac, wire::to_be16(e.identity)});
  }

  // ---- services: (network, VIP) -> an immutable entry, replaced whole ----
  const ServiceEntry* build_service(const ServiceSpec& sv, std::uint16_t net) {
    auto* e = new ServiceEntry();
    e->vip_be = sv.vip_be;
    e->network = net;
    e->generation = ++t_.service_generation_;
    e->ports = sv.ports;
    std::vector<MaglevBackend> maglev;
    maglev.reserve(sv.backends.size());
    e->backend_ip_be.reserve(sv.backends.size());
    for (const auto& b : sv.backends) {
      e->backend_ip_be.push_back(b.ip_be);
      // The id is the address (host order), as vxfedd's selection library has it
      // (services/select.hpp), so both build the same table; ascending = backend_ip_be's order.
      maglev.push_back(MaglevBackend{ntohl(b.ip_be), b.weight});
    }
    // Cannot fail: the planner checked the size and the backends (unique, fewer than the slots).
    const auto table = MaglevTable::build(maglev, sv.table_size);
    e->slots.assign(table->slots().begin(), table->slots().end());
    if (ctx_.service_counters) {
      e->backend_slot.reserve(sv.backends.size());
      for (const auto& b : sv.backends) e->backend_slot.push_back(ctx_.service_counters->slot_for(sv.id, b.ip_be));
    }
    return e;
  }
  void set_service(const ServiceSpec& sv) {
    const std::uint16_t net = network_of(sv.vni);
    const ServiceEntry* entry = build_service(sv, net);
    const std::uint64_t key = ForwardingTables::endpoint_key(net, sv.vip_be);
    auto it = t_.service_state_.find(sv.id);
    const bool fresh = it == t_.service_state_.end();
    if (fresh) {
      it = t_.service_state_.emplace(sv.id, ForwardingTables::ServiceState{}).first;
      add_vip(sv.vni, net, sv.vip_be);  // the span and the flag cover the VIP before its entry is seen
    } else if (const ServiceEntry* old = it->second.entry) {
      later([old] { delete old; });
    }
    t_.services_.assign(key, entry, r_);
    bump_services_generation(net);  // after the map holds the new entry
    auto& st = it->second;
    st.vni = sv.vni;
    st.vip_be = sv.vip_be;
    st.ports = sv.ports;
    st.target_ports_given = sv.target_ports_given;
    st.backends = sv.backends;
    st.table_size_given = sv.table_size_given;
    st.entry = entry;
  }
  void remove_service(const std::string& id) {
    auto it = t_.service_state_.find(id);
    const auto& st = it->second;
    const std::uint16_t net = network_of(st.vni);
    t_.services_.erase(ForwardingTables::endpoint_key(net, st.vip_be));
    remove_vip(st.vni, net, st.vip_be);  // after the entry left the map
    bump_services_generation(net);
    if (const ServiceEntry* old = st.entry) later([old] { delete old; });
    t_.service_state_.erase(it);
  }

  // ForwardingTables::services_generation: a new number, stored after the map's change (a worker
  // that reads it sees the change in its probes that follow).
  void bump_services_generation(std::uint16_t net) {
    __atomic_store_n(&t_.services_generation_[net], ++t_.service_generation_, __ATOMIC_RELEASE);
  }

  // ForwardingTables::service_vip_span and network_has_services: kept by the VIPs of each
  // network's services (one per service: a multiset, as two services may share a VIP).
  void add_vip(std::uint32_t vni, std::uint16_t net, std::uint32_t vip_be) {
    auto& vips = t_.service_vips_per_vni_[vni];
    if (vips.empty()) __atomic_store_n(&t_.services_in_network_[net], 1, __ATOMIC_RELEASE);
    vips.insert(ntohl(vip_be));
    publish_vip_span(net, vips);
  }
  void remove_vip(std::uint32_t vni, std::uint16_t net, std::uint32_t vip_be) {
    auto it = t_.service_vips_per_vni_.find(vni);
    it->second.erase(it->second.find(ntohl(vip_be)));
    publish_vip_span(net, it->second);
    if (it->second.empty()) {
      t_.service_vips_per_vni_.erase(it);
      __atomic_store_n(&t_.services_in_network_[net], 0, __ATOMIC_RELEASE);
    }
  }
  void publish_vip_span(std::uint16_t net, const std::multiset<std::uint32_t>& vips) {
    const std::uint64_t span =
        vips.empty() ? 0 : std::uint64_t{*vips.begin()} << 32 | (*vips.rbegin() - *vips.begin());
    __atomic_store_n(&t_.service_vip_span_[net], span, __ATOMIC_RELEASE);
  }

  // ---- network policies: network index -> an immutable entry, replaced whole ----
  void set_policy(const PolicySpec& p) {
    auto& st = t_.policy_state_[p.vni];
    st.tables = p.tables;
    st.local_of_endpoint = p.local_of_endpoint;
    st.trust = p.trust;
    st.given = p.given;
    publish_policy(p.vni);
  }
  // A new entry from the state: the tables shared, the port map from the endpoints in force, a
  // new generation (flows admitted under the old entry are decided again).
  void publish_policy(std::uint32_t vni) {
    auto& st = t_.policy_state_.at(vni);
    auto* e = new NetworkPolicyEntry();
    e->shared = st.tables;
    e->tables = st.tables.get();
    e->trust_shared = st.trust;
    e->trust = st.trust.get();
    if (++t_.policy_generation_ == 0) ++t_.policy_generation_;
    e->generation = t_.policy_generation_;
    for (const auto& [id, local] : st.local_of_endpoint)
      if (auto it = t_.endpoint_state_.find(id); it != t_.endpoint_state_.end() && it->second.vni == vni)
        e->local_of_port[it->second.port] = local;
    const std::uint16_t net = network_of(vni);
    t_.policies_[net].store(e, std::memory_order_release);
    if (const NetworkPolicyEntry* old = st.entry) later([old] { delete old; });
    st.entry = e;
  }
  void remove_policy(std::uint32_t vni) {
    auto it = t_.policy_state_.find(vni);
    t_.policies_[network_of(vni)].store(nullptr, std::memory_order_release);
    if (const NetworkPolicyEntry* old = it->second.entry) later([old] { delete old; });
    t_.policy_state_.erase(it);
  }

  // ---- after a grace period ----
  void later(std::function<void()> f) { after_grace_.push_back(std::move(f)); }
  void retire_all() {
    t_.network_index_.retire(r_);
    t_.endpoints_.retire(r_);
    t_.vtep_index_.retire(r_);
    t_.admission_.retire(r_);
    t_.route_group_.retire(r_);
    t_.prefix_ids_.retire(r_);
    t_.group_by_hash_.retire(r_);
    t_.services_.retire(r_);
    t_.network_ids_.retire(r_);
    t_.endpoint_slot_ids_.retire(r_);
    t_.prefix_id_pool_.retire(r_);
    t_.group_ids_.retire(r_);
    t_.slot_blocks_.retire(r_);
    t_.vtep_ids_.retire(r_);
  }
  void finish() {
    if (!after_grace_.empty())
      r_.defer([fns = std::move(after_grace_)] {
        for (const auto& f : fns) f();
      });
    after_grace_.clear();
    retire_all();
  }

  ForwardingTables& t_;
  const BuildContext& ctx_;
  Reclaimer& r_;
  TablesChangeReport report_;
  std::unordered_map<std::uint32_t, std::uint16_t> added_networks_;
  std::vector<std::function<void()>> after_grace_;
};

// ---- ForwardingTables: life cycle ----

ForwardingTables::ForwardingTables()
    : networks_(new std::atomic<const NetworkEntry*>[kMaxNetworks]),
      // Huge pages: with a federation's thousand VTEPs each packet's entry is a TLB miss on 4 KiB
      // pages. Workers read only entries that were written (unlike the LPM's first level, whose
      // unpainted ranges must stay on the shared zero page), so this costs 2 MiB, not more.
      vteps_(kMaxVteps, /*huge_pages=*/true),
      prefix_parent_(kMaxPrefixes),
      prefix_info_(kMaxPrefixes),
      endpoint_slots_(kMaxEndpoints),
      groups_(kMaxGroups),
      group_slots_(kMaxGroupSlots),
      services_in_network_(new std::uint8_t[kMaxNetworks]()),
      service_vip_span_(new std::uint64_t[kMaxNetworks]()),
      services_generation_(new std::uint32_t[kMaxNetworks]()),
      policies_(new std::atomic<const NetworkPolicyEntry*>[kMaxNetworks]),
      prefix_addr_(kMaxPrefixes),
      prefix_len_(kMaxPrefixes),
      prefix_network_(kMaxPrefixes) {
  for (std::uint32_t i = 0; i < kMaxNetworks; ++i) {
    networks_[i].store(nullptr, std::memory_order_relaxed);
    policies_[i].store(nullptr, std::memory_order_relaxed);
  }
}

ForwardingTables::~ForwardingTables() {
  for (std::uint32_t i = 0; i < kMaxNetworks; ++i) delete networks_[i].load(std::memory_order_relaxed);
  for (auto& p : pod_ports_) delete p.load(std::memory_order_relaxed);
  for (auto& [id, st] : service_state_) delete st.entry;
  for (auto& [vni, st] : policy_state_) delete st.entry;
}

Result<std::unique_ptr<ForwardingTables>> ForwardingTables::create(const v1::Tables& tables, const BuildContext& context,
                                                                   TablesChangeReport* report) {
  std::unique_ptr<ForwardingTables> t(new ForwardingTables());
  t->local_vtep_ip_be_ = context.local_vtep_ip_be;
  t->uplink_mac_ = context.uplink_mac;
  t->uplink_port_ = context.uplink_port;
  t->underlay_mtu_ = context.underlay_mtu;
  t->neighbors_ = context.neighbors;
  t->path_mtus_ = context.path_mtus;
  t->underlay_tag_ = context.underlay_tag;
  for (const auto& [ip, mac] : context.default_neighbors) t->default_neighbors_.emplace(ip, mac);
  auto change = plan_snapshot(*t, tables, context);
  if (!change) return make_error(change.error());
  ImmediateReclaimer nobody_reads_yet;
  TablesWriter writer(*t, context, nobody_reads_yet);
  TablesChangeReport r = writer.apply(*change);
  writer.commit_static_neighbors();
  if (report) *report = std::move(r);
  return t;
}

Result<TablesChangeReport> ForwardingTables::apply(const v1::Delta& delta, const BuildContext& context,
                                                   Reclaimer& reclaimer) {
  auto change = plan_delta(*this, delta, context);
  if (!change) return make_error(change.error());
  return TablesWriter(*this, context, reclaimer).apply(*change);
}

}  // namespace vxfed::dataplane
