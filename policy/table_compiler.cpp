#include "policy/table_compiler.hpp"

#include <algorithm>
#include <tuple>

namespace vxfed::policy {

namespace {

constexpr std::size_t kIdentityNumbers = 65536;

bool is_reserved(std::uint16_t number) { return number < 256; }

NumberedIdentity unlabelled_peer() { return {kPeerUnlabelled, Identity::make_unlabelled()}; }

// Sorts and merges a set's spans so that equal sets have one spelling.
PortSet normalized(PortSet set) {
  if (set.every_protocol) return PortSet{true, {}};
  std::sort(set.spans.begin(), set.spans.end());
  std::vector<PortSpan> merged;
  for (const PortSpan& s : set.spans) {
    if (!merged.empty() && merged.back().protocol == s.protocol &&
        static_cast<std::uint32_t>(merged.back().last) + 1 >= s.first) {
      merged.back().last = std::max(merged.back().last, s.last);
    } else {
      merged.push_back(s);
    }
  }
  return PortSet{false, std::move(merged)};
}

std::string key_of(const PortSet& set) {
  std::string key(1, set.every_protocol ? 'E' : 'S');
  for (const PortSpan& s : set.spans) {
    key.push_back(static_cast<char>(s.protocol));
    key.append(reinterpret_cast<const char*>(&s.first), sizeof s.first);
    key.append(reinterpret_cast<const char*>(&s.last), sizeof s.last);
  }
  return key;
}

std::string policy_key(const std::string& cluster, const std::string& ns, const std::string& name) {
  return cluster + '\n' + ns + '\n' + name;
}

struct Block {
  const IpBlock* block;
  PortSetId ports;
};

bool block_holds(const IpBlock& b, std::uint32_t address) {
  const net::Ipv4Addr a{address};
  if (!b.cidr.contains(a)) return false;
  return std::none_of(b.except.begin(), b.except.end(), [&](const net::Ipv4Prefix& e) { return e.contains(a); });
}

}  // namespace

PolicyCompiler::PolicyCompiler(std::string network, NadResolver resolve)
    : network_(std::move(network)), resolve_(std::move(resolve)), scratch_(kIdentityNumbers, kNothing) {
  tables_.remote_egress_of.assign(kIdentityNumbers, PolicyTables::kNoTable);
  intern(PortSet{false, {}});  // kNothing
  intern(PortSet{true, {}});   // kEverything
}

PortSetId PolicyCompiler::intern(PortSet set) {
  set = normalized(std::move(set));
  auto [it, fresh] = port_set_ids_.try_emplace(key_of(set), static_cast<PortSetId>(tables_.port_sets.size()));
  if (fresh) tables_.port_sets.push_back(std::move(set));
  return it->second;
}

PortSetId PolicyCompiler::unite(PortSetId a, PortSetId b) {
  if (a == b || b == kNothing || a == kEverything) return a;
  if (a == kNothing || b == kEverything) return b;
  const std::uint64_t memo = (std::uint64_t{std::min(a, b)} << 32) | std::max(a, b);
  if (const auto it = unions_.find(memo); it != unions_.end()) return it->second;
  PortSet both = tables_.port_sets[a];
  const auto& more = tables_.port_sets[b].spans;
  both.spans.insert(both.spans.end(), more.begin(), more.end());
  const PortSetId id = intern(std::move(both));
  unions_.emplace(memo, id);
  return id;
}

PortSetId PolicyCompiler::ports_of(const PortRange& range) {
  if (!range.protocol) return kEverything;
  return intern(PortSet{false, {PortSpan{static_cast<std::uint8_t>(*range.protocol), range.first, range.last}}});
}

std::vector<const Policy*> PolicyCompiler::policies_of(const NamespaceKey& ns) const {
  std::vector<const Policy*> out;
  const auto it = policies_by_namespace_.find(ns);
  if (it == policies_by_namespace_.end()) return out;
  for (const PolicyKey& key : it->second) out.push_back(&policies_.at(key));
  return out;
}

std::vector<std::string> PolicyCompiler::isolating(std::size_t local, Direction direction) const {
  std::vector<std::string> out;
  if (local >= locals_.size()) return out;
  const Identity& id = locals_[local].identity;
  for (const Policy* p : policies_of({id.cluster, id.namespace_name})) {
    if (!(direction == Direction::Ingress ? p->ingress_type : p->egress_type)) continue;
    if (selects(*p, id, network_, resolve_) == Selection::No) continue;
    out.push_back(p->namespace_name + "/" + p->name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

const Identity* PolicyCompiler::peer_identity(std::uint16_t number) const {
  static const NumberedIdentity unlabelled = unlabelled_peer();
  if (number == kPeerUnlabelled) return &unlabelled.identity;
  const auto it = identities_.find(number);
  return it == identities_.end() ? nullptr : &it->second;
}

PortSetId PolicyCompiler::selector_ports_for(const DirectionRules& rules, const Identity& peer) {
  PortSetId ports = kNothing;
  for (const AllowRule& r : rules.allow)
    if (r.peer.kind == PeerPredicate::Kind::Pods && namespace_part_matches(r.peer, peer) &&
        pod_part_matches(r.peer, peer))
      ports = unite(ports, ports_of(r.ports));
  return ports;
}

DirectionTable PolicyCompiler::build_table(const DirectionRules& rules, bool peers_are_locals) {
  DirectionTable table;
  table.isolated = rules.isolated;
  if (!rules.isolated) return table;  // nothing to look up: everything passes

  std::vector<Block> blocks;
  std::vector<std::uint16_t> touched;
  auto credit = [&](std::uint16_t number, PortSetId ports) {
    if (scratch_[number] == kNothing) touched.push_back(number);
    scratch_[number] = unite(scratch_[number], ports);
  };

  for (const AllowRule& r : rules.allow) {
    const PortSetId ports = ports_of(r.ports);
    switch (r.peer.kind) {
      case PeerPredicate::Kind::Any:
        table.any_peer = unite(table.any_peer, ports);
        break;
      case PeerPredicate::Kind::Cidr:
        blocks.push_back(Block{&r.peer.block, ports});
        break;
      case PeerPredicate::Kind::Pods:
        if (peers_are_locals) {
          for (const LocalIdentity& local : locals_) {
            const Identity* id = peer_identity(local.number);
            if (!id) id = &local.identity;
            if (namespace_part_matches(r.peer, *id) && pod_part_matches(r.peer, *id)) credit(local.number, ports);
          }
          break;
        }
        // Every identity of the federation, through the indexes: by namespace name, or one
        // namespace-selector check per namespace group.
        if (r.peer.namespace_name) {
          const auto it = identities_by_namespace_name_.find(*r.peer.namespace_name);
          if (it != identities_by_namespace_name_.end())
            for (std::uint16_t n : it->second)
              if (pod_part_matches(r.peer, identities_.at(n))) credit(n, ports);
        } else {
          for (const auto& [key, group] : groups_) {
            if (!namespace_part_matches(r.peer, identities_.at(group.numbers.front()))) continue;
            for (std::uint16_t n : group.numbers)
              if (pod_part_matches(r.peer, identities_.at(n))) credit(n, ports);
          }
        }
        if (const Identity* u = peer_identity(kPeerUnlabelled);
            namespace_part_matches(r.peer, *u) && pod_part_matches(r.peer, *u))
          credit(kPeerUnlabelled, ports);
        break;
    }
  }

  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  table.peers.reserve(touched.size());
  for (std::uint16_t n : touched) {
    const PortSetId ports = unite(table.any_peer, scratch_[n]);
    table.peers.push_back(PeerEntry{n, ports});
    table.some_selector = unite(table.some_selector, ports);
    scratch_[n] = kNothing;
  }
  index_peers(table);

  // Addresses: cut the space at every block's and every except's edges; within one piece
  // every block either holds all of it or none.
  std::vector<std::uint64_t> edges;
  for (const Block& b : blocks) {
    edges.push_back(b.block->cidr.addr);
    edges.push_back(std::uint64_t{b.block->cidr.last().value} + 1);
    for (const auto& e : b.block->except) {
      edges.push_back(e.addr);
      edges.push_back(std::uint64_t{e.last().value} + 1);
    }
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  for (std::size_t i = 0; i + 1 < edges.size(); ++i) {
    const auto first = static_cast<std::uint32_t>(edges[i]);
    const auto last = static_cast<std::uint32_t>(edges[i + 1] - 1);
    PortSetId ports = kNothing;
    for (const Block& b : blocks)
      if (block_holds(*b.block, first)) ports = unite(ports, b.ports);
    if (ports == kNothing) continue;
    if (!table.addresses.empty() && table.addresses.back().ports == ports &&
        std::uint64_t{table.addresses.back().last} + 1 == first) {
      table.addresses.back().last = last;
    } else {
      table.addresses.push_back(AddressSpan{first, last, ports});
    }
  }
  return table;
}

void PolicyCompiler::rebuild_local(std::size_t index) {
  const Identity& id = locals_[index].identity;
  local_rules_[index] = compile(id, network_, policies_of({id.cluster, id.namespace_name}), resolve_);
  tables_.local_ingress[index] = build_table(local_rules_[index].ingress, false);
  tables_.local_egress[index] = build_table(local_rules_[index].egress, false);
}

void PolicyCompiler::release_remote_egress(std::uint16_t number) {
  std::uint32_t& slot = tables_.remote_egress_of[number];
  if (slot == PolicyTables::kNoTable) return;
  if (--remote_users_[slot] == 0) {
    remote_by_selection_.erase(remote_selection_[slot]);
    remote_selection_[slot].clear();
    remote_rules_[slot] = DirectionRules{};
    tables_.remote_egress_tables[slot] = DirectionTable{};
    free_remote_tables_.push_back(slot);
  }
  slot = PolicyTables::kNoTable;
}

bool PolicyCompiler::rebuild_remote_egress(std::uint16_t number) {
  release_remote_egress(number);
  // The table depends only on the policies with Egress that select the identity (and how: Yes
  // or Maybe), so identities with the same selection share one table. A selection names each
  // policy with its generation, so a changed policy never finds the table of its old version.
  std::string selection;
  std::vector<const Policy*> selecting;
  const Identity* id = nullptr;
  if (number == kPeerUnlabelled) {
    // An unlabelled source's namespace is known only on its own node, which decides all it can
    // (rules without peers, ipBlocks). What it leaves to the destination (a selector rule of a
    // policy it is surely selected by) cannot be told apart here from the other namespaces'
    // unlabelled pods, so it is denied: the pod fails closed until its labels arrive.
    selection = "unlabelled";
  } else {
    const auto it = identities_.find(number);
    if (it == identities_.end()) return false;
    id = &it->second;
    for (const Policy* p : policies_of({id->cluster, id->namespace_name})) {
      if (!p->egress_type) continue;
      const Selection s = selects(*p, *id, network_, resolve_);
      if (s == Selection::No) continue;
      selecting.push_back(p);
      const std::string key = policy_key(p->cluster, p->namespace_name, p->name);
      selection += key + '\n' + std::to_string(policy_generation_.at(key)) + (s == Selection::Yes ? "\nY\n" : "\nM\n");
    }
    if (selecting.empty()) return false;  // not egress-isolated: nothing to check
  }
  std::uint32_t& slot = tables_.remote_egress_of[number];
  if (const auto shared = remote_by_selection_.find(selection); shared != remote_by_selection_.end()) {
    slot = shared->second;
    ++remote_users_[slot];
    return true;
  }
  DirectionTable table;
  DirectionRules rules;
  if (id) {
    rules = std::move(compile(*id, network_, selecting, resolve_).egress);
    table = build_table(rules, true);
  } else {
    table.isolated = true;
  }
  if (!free_remote_tables_.empty()) {
    slot = free_remote_tables_.back();
    free_remote_tables_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(tables_.remote_egress_tables.size());
    tables_.remote_egress_tables.emplace_back();
    remote_users_.push_back(0);
    remote_selection_.emplace_back();
    remote_rules_.emplace_back();
  }
  tables_.remote_egress_tables[slot] = std::move(table);
  remote_rules_[slot] = std::move(rules);
  remote_users_[slot] = 1;
  remote_selection_[slot] = selection;
  remote_by_selection_.emplace(std::move(selection), slot);
  return true;
}

void PolicyCompiler::index_identity(NumberedIdentity n) {
  const std::uint16_t number = n.number;
  const Identity& id = identities_.insert_or_assign(number, std::move(n.identity)).first->second;
  identities_by_namespace_[{id.cluster, id.namespace_name}].insert(number);
  identities_by_namespace_name_[id.namespace_name].insert(number);
  auto& group = groups_[GroupKey{id.cluster, id.namespace_name, id.namespace_labels, id.unlabelled}];
  group.numbers.insert(std::upper_bound(group.numbers.begin(), group.numbers.end(), number), number);
}

void PolicyCompiler::unindex_identity(std::uint16_t number) {
  const auto it = identities_.find(number);
  if (it == identities_.end()) return;
  const Identity& id = it->second;
  const auto erase_from = [&](auto& index, const auto& key) {
    const auto at = index.find(key);
    if (at == index.end()) return;
    at->second.erase(number);
    if (at->second.empty()) index.erase(at);
  };
  erase_from(identities_by_namespace_, NamespaceKey{id.cluster, id.namespace_name});
  erase_from(identities_by_namespace_name_, id.namespace_name);
  const auto g = groups_.find(GroupKey{id.cluster, id.namespace_name, id.namespace_labels, id.unlabelled});
  if (g != groups_.end()) {
    auto& v = g->second.numbers;
    v.erase(std::remove(v.begin(), v.end(), number), v.end());
    if (v.empty()) groups_.erase(g);
  }
  identities_.erase(it);
}

void PolicyCompiler::build(std::vector<Policy> policies, std::vector<NumberedIdentity> identities,
                           std::vector<LocalIdentity> locals) {
  policies_.clear();
  policies_by_namespace_.clear();
  identities_.clear();
  identities_by_namespace_.clear();
  identities_by_namespace_name_.clear();
  groups_.clear();
  policy_generation_.clear();
  for (Policy& p : policies) {
    PolicyKey key = policy_key(p.cluster, p.namespace_name, p.name);
    policy_generation_[key] = ++generation_;
    policies_by_namespace_[{p.cluster, p.namespace_name}].insert(key);
    policies_.insert_or_assign(std::move(key), std::move(p));
  }
  for (NumberedIdentity& n : identities)
    if (!is_reserved(n.number)) index_identity(std::move(n));
  identities = {};  // moved from: give its memory back before the tables are built
  // A full build starts the port sets afresh too, so that sets no table uses any more go.
  tables_ = PolicyTables{};
  tables_.remote_egress_of.assign(kIdentityNumbers, PolicyTables::kNoTable);
  free_remote_tables_.clear();
  remote_users_.clear();
  remote_selection_.clear();
  remote_rules_.clear();
  remote_by_selection_.clear();
  port_set_ids_.clear();
  unions_.clear();
  intern(PortSet{false, {}});
  intern(PortSet{true, {}});
  set_locals(std::move(locals));
}

ChangeCost PolicyCompiler::set_locals(std::vector<LocalIdentity> locals) {
  ChangeCost cost;
  locals_ = std::move(locals);
  local_rules_.assign(locals_.size(), CompiledRules{});
  tables_.local_ingress.assign(locals_.size(), DirectionTable{});
  tables_.local_egress.assign(locals_.size(), DirectionTable{});
  for (std::size_t i = 0; i < locals_.size(); ++i) rebuild_local(i);
  cost.tables_rebuilt += 2 * locals_.size();
  // The remote-egress tables' peers are the local identities: all of them change.
  tables_.remote_egress_of.assign(kIdentityNumbers, PolicyTables::kNoTable);
  tables_.remote_egress_tables.clear();
  free_remote_tables_.clear();
  remote_users_.clear();
  remote_selection_.clear();
  remote_rules_.clear();
  remote_by_selection_.clear();
  rebuild_remote_egress(kPeerUnlabelled);
  for (const auto& [number, id] : identities_) rebuild_remote_egress(number);
  cost.tables_rebuilt += tables_.remote_egress_tables.size();
  return cost;
}

ChangeCost PolicyCompiler::add_local(LocalIdentity local) {
  ChangeCost cost;
  const bool new_number = std::none_of(locals_.begin(), locals_.end(),
                                       [&](const LocalIdentity& l) { return l.number == local.number; });
  locals_.push_back(std::move(local));
  local_rules_.emplace_back();
  tables_.local_ingress.emplace_back();
  tables_.local_egress.emplace_back();
  rebuild_local(locals_.size() - 1);
  cost.tables_rebuilt += 2;
  if (!new_number) return cost;  // already a peer of every remote-egress table
  // One more peer for each remote-egress table, from the rules it was built from.
  const LocalIdentity& added = locals_.back();
  const Identity* peer = peer_identity(added.number);
  if (!peer) peer = &added.identity;
  for (std::size_t slot = 0; slot < remote_rules_.size(); ++slot) {
    DirectionTable& table = tables_.remote_egress_tables[slot];
    if (remote_users_[slot] == 0 || !table.isolated) continue;
    const PortSetId selected = selector_ports_for(remote_rules_[slot], *peer);
    if (selected == kNothing) continue;
    const PortSetId ports = unite(table.any_peer, selected);
    const auto at = std::lower_bound(table.peers.begin(), table.peers.end(), added.number,
                                     [](const PeerEntry& e, std::uint16_t n) { return e.identity < n; });
    table.peers.insert(at, PeerEntry{added.number, ports});
    peer_inserted(table, added.number);
    table.some_selector = unite(table.some_selector, ports);
    ++cost.peer_entries_set;
  }
  return cost;
}

ChangeCost PolicyCompiler::policy_changed(const std::optional<Policy>& before, const std::optional<Policy>& after) {
  ChangeCost cost;
  const Policy& any = before ? *before : *after;
  const NamespaceKey ns{any.cluster, any.namespace_name};
  const auto touches = [&](const Identity& id) {
    return (before && selects(*before, id, network_, resolve_) != Selection::No) ||
           (after && selects(*after, id, network_, resolve_) != Selection::No);
  };
  for (std::size_t i = 0; i < locals_.size(); ++i) {
    const Identity& id = locals_[i].identity;
    if (NamespaceKey{id.cluster, id.namespace_name} != ns || !touches(id)) continue;
    rebuild_local(i);
    cost.tables_rebuilt += 2;
  }
  if (!(before && before->egress_type) && !(after && after->egress_type)) return cost;
  const auto it = identities_by_namespace_.find(ns);
  if (it == identities_by_namespace_.end()) return cost;
  for (std::uint16_t n : it->second) {
    if (!touches(identities_.at(n))) continue;
    rebuild_remote_egress(n);
    ++cost.tables_rebuilt;
  }
  return cost;
}

ChangeCost PolicyCompiler::apply_policy(Policy policy) {
  PolicyKey key = policy_key(policy.cluster, policy.namespace_name, policy.name);
  std::optional<Policy> before;
  if (const auto it = policies_.find(key); it != policies_.end()) before = it->second;
  policies_by_namespace_[{policy.cluster, policy.namespace_name}].insert(key);
  policy_generation_[key] = ++generation_;
  const Policy& after = policies_.insert_or_assign(std::move(key), std::move(policy)).first->second;
  return policy_changed(before, after);
}

ChangeCost PolicyCompiler::delete_policy(const std::string& cluster, const std::string& namespace_name,
                                         const std::string& name) {
  const PolicyKey key = policy_key(cluster, namespace_name, name);
  const auto it = policies_.find(key);
  if (it == policies_.end()) return {};
  std::optional<Policy> before = std::move(it->second);
  policies_.erase(it);
  policy_generation_.erase(key);
  auto& keys = policies_by_namespace_[{cluster, namespace_name}];
  keys.erase(key);
  if (keys.empty()) policies_by_namespace_.erase({cluster, namespace_name});
  return policy_changed(before, std::nullopt);
}

ChangeCost PolicyCompiler::add_identity(NumberedIdentity identity) {
  ChangeCost cost;
  if (is_reserved(identity.number)) return cost;
  const std::uint16_t number = identity.number;
  if (identities_.count(number)) cost = remove_identity(number);
  index_identity(std::move(identity));
  const Identity& id = identities_.at(number);
  for (std::size_t i = 0; i < locals_.size(); ++i) {
    for (auto [rules, table] : {std::pair{&local_rules_[i].ingress, &tables_.local_ingress[i]},
                                std::pair{&local_rules_[i].egress, &tables_.local_egress[i]}}) {
      if (!table->isolated) continue;
      const PortSetId selected = selector_ports_for(*rules, id);
      if (selected == kNothing) continue;
      const PortSetId ports = unite(table->any_peer, selected);
      auto& peers = table->peers;
      const auto at = std::lower_bound(peers.begin(), peers.end(), number,
                                       [](const PeerEntry& e, std::uint16_t n) { return e.identity < n; });
      peers.insert(at, PeerEntry{number, ports});
      peer_inserted(*table, number);
      table->some_selector = unite(table->some_selector, ports);
      ++cost.peer_entries_set;
    }
  }
  if (rebuild_remote_egress(number)) ++cost.tables_rebuilt;
  return cost;
}

ChangeCost PolicyCompiler::remove_identity(std::uint16_t number) {
  ChangeCost cost;
  if (is_reserved(number) || !identities_.count(number)) return cost;
  unindex_identity(number);
  for (auto* tables : {&tables_.local_ingress, &tables_.local_egress}) {
    for (DirectionTable& table : *tables) {
      auto& peers = table.peers;
      const auto at = std::lower_bound(peers.begin(), peers.end(), number,
                                       [](const PeerEntry& e, std::uint16_t n) { return e.identity < n; });
      if (at == peers.end() || at->identity != number) continue;
      peers.erase(at);
      peer_erased(table, number);
      ++cost.peer_entries_set;
      table.some_selector = kNothing;  // the union of what is left
      for (const PeerEntry& e : peers) table.some_selector = unite(table.some_selector, e.ports);
    }
  }
  release_remote_egress(number);
  ++cost.tables_rebuilt;
  return cost;
}

}  // namespace vxfed::policy
