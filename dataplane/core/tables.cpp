// ForwardingTables: the out-of-line lookups, the dump, the memory figure. Creation and changes
// are in tables_plan.cpp (validation) and tables_apply.cpp (the writer).
#include "dataplane/core/tables.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <tuple>

namespace vxfed::dataplane {

using wire::MacAddress;

Destination ForwardingTables::resolve_shared(std::uint16_t network, std::uint32_t /*dst_ip_be*/, std::uint32_t id) const {
  std::uint32_t slot;
  if (load_word(&prefix_info_[id]).has_endpoints && route_group_.find(endpoint_at_key(id, network), &slot))
    return {&endpoint_slots_[slot], nullptr};
  while (id != LpmTable::kNone) {
    const PrefixInfo p = load_word(&prefix_info_[id]);
    if (p.network == network) {  // (an endpoint only where a Delta made the prefix this network's meanwhile)
      if (p.kind == PrefixInfo::kEndpoint) return {&endpoint_slots_[p.value], nullptr};
      return {nullptr, &groups_[p.value]};
    }
    if (p.network == PrefixInfo::kShared) {
      std::uint32_t g;
      if (route_group_.find(route_key(id, network), &g)) return {nullptr, &groups_[g]};
    }
    id = load_word(&prefix_parent_[id]);
  }
  return {};
}

std::size_t ForwardingTables::copy_neighbor_macs() {
  std::size_t changed = 0;
  for (std::uint32_t v = 0; v < vtep_state_.size(); ++v) {
    if (vtep_state_[v].refs == 0) continue;  // free (or waiting for a grace period): nobody reads it
    VtepEntry& e = vteps_[v];
    const std::uint64_t head = e.head;  // this thread is its only writer
    const std::uint64_t want = VtepEntry::following(head, neighbors_->read(e.neighbor_slot));
    if (want == head) continue;
    store_word(&e.head, want);
    ++changed;
  }
  return changed;
}

std::vector<std::uint16_t> ForwardingTables::pod_port_ids() const {
  std::vector<std::uint16_t> out;
  for (std::uint16_t p = 0; p < kMaxPorts; ++p)
    if (pod_ports_[p].load(std::memory_order_relaxed)) out.push_back(p);
  return out;
}

std::vector<std::pair<const char*, std::size_t>> ForwardingTables::memory_by_part() const {
  std::vector<std::pair<const char*, std::size_t>> out = {
      {"vteps", vteps_.resident_bytes()},
      {"lpm", lpm_.resident_bytes()},
      {"prefix_parent", prefix_parent_.resident_bytes()},
      {"prefix_info", prefix_info_.resident_bytes()},
      {"endpoint_slots", endpoint_slots_.resident_bytes()},
      {"groups", groups_.resident_bytes()},
      {"group_slots", group_slots_.resident_bytes()},
      {"prefix_addr", prefix_addr_.resident_bytes()},
      {"prefix_len", prefix_len_.resident_bytes()},
      {"prefix_network", prefix_network_.resident_bytes()},
      {"network_index", network_index_.resident_bytes()},
      {"endpoints", endpoints_.resident_bytes()},
      {"vtep_index", vtep_index_.resident_bytes()},
      {"admission", admission_.resident_bytes()},
      {"route_group", route_group_.resident_bytes()},
      {"prefix_ids", prefix_ids_.resident_bytes()},
      {"group_by_hash", group_by_hash_.resident_bytes()},
      {"services", services_.resident_bytes()},
      {"service_entries", service_entry_bytes()},
      {"policies", [this] {
         std::size_t b = 0;
         for (const auto& p : policy_summaries()) b += p.bytes;
         return b;
       }()},
  };
  // Control-side containers: their elements plus a rough allocator overhead per node.
  std::size_t control = group_state_.capacity() * sizeof(GroupState) + vtep_state_.capacity() * sizeof(VtepState);
  for (const auto& g : group_state_) control += g.hops.capacity() * sizeof(Hop);
  control += endpoint_state_.size() * (sizeof(EndpointState) + 96) + endpoint_by_addr_.size() * 96;
  control += shared_networks_.size() * 80 + explicit_vteps_.size() * 96 + network_state_by_vni_.size() * 64;
  for (const auto& [id, st] : service_state_)
    control += 96 + id.capacity() + st.ports.capacity() * sizeof(ServicePortEntry) +
               st.backends.capacity() * sizeof(ServiceBackendWeight);
  control += kMaxNetworks * (1 + sizeof(std::uint64_t) + sizeof(std::uint32_t));  // services_in_network_, service_vip_span_, services_generation_
  for (const auto& [vni, vips] : service_vips_per_vni_) control += 64 + vips.size() * 48;  // a set node each
  control += kMaxNetworks * sizeof(std::atomic<const NetworkEntry*>) + network_state_by_vni_.size() * sizeof(NetworkEntry);
  out.emplace_back("control", control);
  return out;
}

std::vector<PolicySummary> ForwardingTables::policy_summaries() const {
  std::vector<PolicySummary> out;
  for (const auto& [vni, st] : policy_state_) {
    PolicySummary s;
    s.vni = vni;
    s.local_tables = st.tables->local_ingress.size();
    s.remote_tables = st.tables->remote_egress_tables.size();
    for (std::uint32_t t : st.tables->remote_egress_of) s.remote_identities += t != policy::PolicyTables::kNoTable;
    s.endpoints_listed = st.local_of_endpoint.size();
    for (std::uint32_t local : st.entry->local_of_port) s.endpoints_mapped += local != NetworkPolicyEntry::kNotSelected;
    s.bytes = st.tables->bytes() + sizeof(NetworkPolicyEntry);
    s.generation = st.entry->generation;
    out.push_back(s);
  }
  return out;
}

std::vector<ForwardingTables::PortEndpoint> ForwardingTables::port_endpoints() const {
  std::vector<PortEndpoint> out;
  for (std::uint16_t p = 0; p < kMaxPorts; ++p) {
    if (port_owner_[p].empty()) continue;
    const auto it = endpoint_state_.find(port_owner_[p]);
    if (it == endpoint_state_.end()) continue;
    out.push_back({p, it->first, it->second.iface, it->second.vni, it->second.ip_be});
  }
  return out;
}

std::size_t ForwardingTables::service_entry_bytes() const {
  std::size_t b = 0;
  for (const auto& [id, st] : service_state_) b += st.entry->memory_bytes();
  return b;
}

std::size_t ForwardingTables::memory_bytes() const {
  std::size_t b = 0;
  for (const auto& [part, bytes] : memory_by_part()) b += bytes;
  return b;
}

v1::Tables ForwardingTables::dump() const {
  v1::Tables t;
  std::map<std::uint16_t, std::uint32_t> vni_of;
  for (const auto& [vni, s] : network_state_by_vni_) {
    vni_of[s.index] = vni;
    const NetworkEntry& e = network(s.index);
    auto* n = t.add_networks();
    n->set_vni(vni);
    n->set_gateway_ip(ipv4_text(e.gateway_ip_be));
    if (s.mac_given) n->set_gateway_mac(mac_text(e.gateway_mac));
    n->set_mtu(s.mtu_given);
  }
  std::vector<const std::pair<const std::string, EndpointState>*> eps;
  for (const auto& kv : endpoint_state_) eps.push_back(&kv);
  std::sort(eps.begin(), eps.end(), [](auto* a, auto* b) { return a->first < b->first; });
  for (const auto* kv : eps) {
    auto* e = t.add_endpoints();
    e->set_id(kv->first);
    e->set_vni(kv->second.vni);
    e->set_ip(ipv4_text(kv->second.ip_be));
    e->set_mac(mac_text(kv->second.mac));
    e->set_iface(kv->second.iface);
    e->set_identity(kv->second.identity);
  }
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint8_t, std::uint32_t>> routes;  // vni, addr, len, group
  routes.reserve(route_group_.size());
  route_group_.for_each([&](std::uint64_t key, std::uint32_t g) {
    if (key & kEndpointAtPrefix) return;
    const auto id = static_cast<std::uint32_t>(key >> 16);
    routes.emplace_back(vni_of[static_cast<std::uint16_t>(key & 0xffff)], prefix_addr_[id], prefix_len_[id], g);
  });
  std::sort(routes.begin(), routes.end());
  for (const auto& [vni, addr, len, g] : routes) {
    auto* r = t.add_routes();
    r->set_vni(vni);
    r->set_prefix(ipv4_text(htonl(addr)) + "/" + std::to_string(len));
    for (const Hop& h : group_state_[g].hops) {
      auto* nh = r->add_next_hops();
      nh->set_vtep(ipv4_text(vteps_[h.vtep].ip_be));
      nh->set_weight(h.weight);
    }
  }
  for (const auto& [ip, vnis] : explicit_vteps_) {
    auto* v = t.add_vteps();
    v->set_ip(ipv4_text(ip));
    for (std::uint32_t vni : vnis) v->add_vnis(vni);
    v->set_gbp(gbp_vteps_.count(ip) != 0);
  }
  for (const auto& [ip, mac] : static_neighbors_) {
    auto* n = t.add_neighbors();
    n->set_ip(ipv4_text(ip));
    n->set_mac(mac_text(mac));
  }
  for (const auto& [id, st] : service_state_) {
    auto* sv = t.add_services();
    sv->set_id(id);
    sv->set_vni(st.vni);
    sv->set_vip(ipv4_text(st.vip_be));
    for (std::size_t k = 0; k < st.ports.size(); ++k) {
      auto* port = sv->add_ports();
      port->set_protocol(st.ports[k].protocol);
      port->set_port(wire::from_be16(st.ports[k].port_be));
      port->set_target_port(st.target_ports_given[k]);
    }
    for (const ServiceBackendWeight& b : st.backends) {
      auto* backend = sv->add_backends();
      backend->set_ip(ipv4_text(b.ip_be));
      backend->set_weight(b.weight);
    }
    sv->set_table_size(st.table_size_given);
  }
  for (const auto& [vni, st] : policy_state_) *t.add_policies() = st.given;
  return t;
}

}  // namespace vxfed::dataplane
