#include "control/policy/policy_wire.hpp"

#include <algorithm>
#include <set>

namespace vxfed::control {

namespace pol = ::vxfed::policy;

namespace {

void direction_to_wire(const pol::DirectionTable& table, dp::PolicyDirection* out) {
  out->set_isolated(table.isolated);
  if (!table.isolated) return;
  out->set_any_peer(table.any_peer);
  out->mutable_peers()->Reserve(static_cast<int>(table.peers.size()));
  for (const auto& p : table.peers) {
    auto* peer = out->add_peers();
    peer->set_identity(p.identity);
    peer->set_ports(p.ports);
  }
  out->set_some_selector(table.some_selector);
  for (const auto& a : table.addresses) {
    auto* span = out->add_addresses();
    span->set_first(a.first);
    span->set_last(a.last);
    span->set_ports(a.ports);
  }
}

}  // namespace

dp::NetworkPolicy network_policy_to_wire(std::uint32_t vni, const pol::PolicyTables& tables,
                                         std::vector<EndpointLocal> endpoints) {
  dp::NetworkPolicy out;
  out.set_vni(vni);
  for (const auto& set : tables.port_sets) {
    auto* s = out.add_port_sets();
    s->set_every_protocol(set.every_protocol);
    for (const auto& span : set.spans) {
      auto* w = s->add_spans();
      w->set_protocol(span.protocol);
      w->set_first(span.first);
      w->set_last(span.last);
    }
  }
  for (const auto& t : tables.local_ingress) direction_to_wire(t, out.add_local_ingress());
  for (const auto& t : tables.local_egress) direction_to_wire(t, out.add_local_egress());

  // The sparse form of remote_egress_of: each used table once, with its identities in order.
  std::vector<std::vector<std::uint32_t>> users(tables.remote_egress_tables.size());
  for (std::size_t identity = 0; identity < tables.remote_egress_of.size(); ++identity) {
    const auto t = tables.remote_egress_of[identity];
    if (t != pol::PolicyTables::kNoTable) users.at(t).push_back(static_cast<std::uint32_t>(identity));
  }
  for (std::size_t t = 0; t < users.size(); ++t) {
    if (users[t].empty()) continue;
    auto* group = out.add_remote_egress();
    group->mutable_identities()->Add(users[t].begin(), users[t].end());
    direction_to_wire(tables.remote_egress_tables[t], group->mutable_table());
  }

  std::sort(endpoints.begin(), endpoints.end());
  endpoints.erase(std::unique(endpoints.begin(), endpoints.end(),
                              [](const EndpointLocal& a, const EndpointLocal& b) { return a.endpoint_id == b.endpoint_id; }),
                  endpoints.end());
  for (const auto& e : endpoints) {
    auto* w = out.add_endpoints();
    w->set_endpoint_id(e.endpoint_id);
    w->set_local(e.local);
  }
  return out;
}

void add_identity_clusters(dp::NetworkPolicy& entry, const ClusterCidrs& cidrs, const ClusterOf& cluster_of) {
  std::set<std::uint32_t> claimable;
  for (const auto& table : entry.local_ingress())
    for (const auto& peer : table.peers()) claimable.insert(peer.identity());
  for (const auto& group : entry.remote_egress())
    for (std::uint32_t id : group.identities()) claimable.insert(id);
  std::map<std::string, std::vector<std::uint32_t>> by_cluster;  // sorted by name
  for (std::uint32_t id : claimable) {
    if (id > 0xffff) continue;
    const std::string* cluster = cluster_of(static_cast<std::uint16_t>(id));
    if (!cluster || cluster->empty()) continue;
    const auto known = cidrs.find(*cluster);
    if (known == cidrs.end() || known->second.empty()) continue;
    by_cluster[*cluster].push_back(id);  // in order: claimable is sorted
  }
  for (const auto& [name, ids] : by_cluster) {
    auto* c = entry.add_clusters();
    c->set_name(name);
    for (const auto& cidr : cidrs.at(name)) c->add_cidrs(cidr);
    c->mutable_identities()->Add(ids.begin(), ids.end());
  }
}

}  // namespace vxfed::control
