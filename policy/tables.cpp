#include "policy/tables.hpp"

#include <algorithm>

namespace vxfed::policy {

bool port_set_allows(const PortSet& set, std::uint8_t ip_protocol, std::uint16_t port) {
  if (set.every_protocol) return true;
  // Spans are sorted by (protocol, first) and disjoint: the candidate is the last span that
  // starts at or before (protocol, port).
  const PortSpan key{ip_protocol, port, 0xffff};
  auto it = std::upper_bound(set.spans.begin(), set.spans.end(), key,
                             [](const PortSpan& k, const PortSpan& s) {
                               return k.protocol != s.protocol ? k.protocol < s.protocol : k.first < s.first;
                             });
  if (it == set.spans.begin()) return false;
  --it;
  return it->protocol == ip_protocol && port >= it->first && port <= it->last;
}

namespace {

PortSetId identity_ports(const DirectionTable& table, std::uint16_t peer) {
  auto first = table.peers.begin();
  auto last = table.peers.end();
  if (!table.peer_starts.empty()) {
    const unsigned high = peer >> 8;
    last = first + table.peer_starts[high + 1];
    first += table.peer_starts[high];
  }
  const auto it = std::lower_bound(first, last, peer, [](const PeerEntry& e, std::uint16_t id) { return e.identity < id; });
  return it != last && it->identity == peer ? it->ports : table.any_peer;
}

PortSetId address_ports(const DirectionTable& table, net::Ipv4Addr address) {
  auto it = std::upper_bound(table.addresses.begin(), table.addresses.end(), address.value,
                             [](std::uint32_t a, const AddressSpan& s) { return a < s.first; });
  if (it == table.addresses.begin()) return kNothing;
  --it;
  return address.value <= it->last ? it->ports : kNothing;
}

bool allows(const PolicyTables& tables, PortSetId id, std::uint8_t ip_protocol, std::uint16_t port) {
  return id != kNothing && port_set_allows(tables.port_sets[id], ip_protocol, port);
}

}  // namespace

void index_peers(DirectionTable& table) {
  table.peer_starts.clear();
  if (table.peers.size() <= kIndexedPeers) return;
  table.peer_starts.resize(257);
  std::size_t i = 0;
  for (unsigned high = 0; high <= 256; ++high) {
    while (i < table.peers.size() && (table.peers[i].identity >> 8) < high) ++i;
    table.peer_starts[high] = static_cast<std::uint32_t>(i);
  }
}

void peer_inserted(DirectionTable& table, std::uint16_t identity) {
  if (table.peer_starts.empty()) return index_peers(table);  // it may just have passed the threshold
  for (unsigned high = (identity >> 8) + 1u; high <= 256; ++high) ++table.peer_starts[high];
}

void peer_erased(DirectionTable& table, std::uint16_t identity) {
  if (table.peer_starts.empty() || table.peers.size() <= kIndexedPeers) return index_peers(table);
  for (unsigned high = (identity >> 8) + 1u; high <= 256; ++high) --table.peer_starts[high];
}

bool decide(const PolicyTables& tables, const DirectionTable& table, std::uint16_t peer_identity,
            std::optional<net::Ipv4Addr> peer_address, std::uint8_t ip_protocol, std::uint16_t port) {
  if (!table.isolated) return true;
  if (allows(tables, identity_ports(table, peer_identity), ip_protocol, port)) return true;
  return peer_address && allows(tables, address_ports(table, *peer_address), ip_protocol, port);
}

bool decide_ingress(const PolicyTables& tables, std::uint32_t local, std::uint16_t source_identity,
                    net::Ipv4Addr source_address, std::uint8_t ip_protocol, std::uint16_t port) {
  return decide(tables, tables.local_ingress[local], source_identity, source_address, ip_protocol, port);
}

bool decide_local_egress(const PolicyTables& tables, std::uint32_t local, std::uint16_t destination_identity,
                         net::Ipv4Addr destination_address, std::uint8_t ip_protocol, std::uint16_t port) {
  return decide(tables, tables.local_egress[local], destination_identity, destination_address, ip_protocol, port);
}

EgressAtSource decide_egress_at_source(const PolicyTables& tables, std::uint32_t local,
                                       net::Ipv4Addr destination_address, std::uint8_t ip_protocol,
                                       std::uint16_t port) {
  const DirectionTable& table = tables.local_egress[local];
  // The unknown identity matches exactly the rules that need no identity.
  if (decide(tables, table, kPeerUnknown, destination_address, ip_protocol, port)) return EgressAtSource::Allow;
  return allows(tables, table.some_selector, ip_protocol, port) ? EgressAtSource::AskDestination
                                                                : EgressAtSource::Deny;
}

bool decide_remote_egress(const PolicyTables& tables, std::uint16_t source_identity, std::uint16_t destination_identity,
                          net::Ipv4Addr destination_address, std::uint8_t ip_protocol, std::uint16_t port) {
  const std::uint32_t index = tables.remote_egress_of.empty() ? PolicyTables::kNoTable
                                                              : tables.remote_egress_of[source_identity];
  if (index == PolicyTables::kNoTable) return true;  // the source identity is not egress-isolated
  return decide(tables, tables.remote_egress_tables[index], destination_identity, destination_address, ip_protocol,
                port);
}

std::size_t PolicyTables::bytes() const {
  auto table_bytes = [](const DirectionTable& t) {
    return sizeof t + t.peers.capacity() * sizeof(PeerEntry) + t.addresses.capacity() * sizeof(AddressSpan) +
           t.peer_starts.capacity() * sizeof(std::uint32_t);
  };
  std::size_t n = sizeof *this + remote_egress_of.capacity() * sizeof(std::uint32_t);
  for (const auto& s : port_sets) n += sizeof s + s.spans.capacity() * sizeof(PortSpan);
  for (const auto* v : {&local_ingress, &local_egress, &remote_egress_tables})
    for (const auto& t : *v) n += table_bytes(t);
  return n;
}

}  // namespace vxfed::policy
