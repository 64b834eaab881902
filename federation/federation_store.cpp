#include "federation/federation_store.hpp"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace vxfed::federation {

namespace {

// vni::Allocator's sentences say what went wrong; the code says what a caller can do.
Code code_of_allocation(const std::string& message) {
  if (message.find("exhausted") != std::string::npos) return Code::exhausted;
  if (message.find("already") != std::string::npos || message.find("held down") != std::string::npos)
    return Code::conflict;
  return Code::invalid;
}

const KeyValue* first(const RangeResult& r) { return r.kvs.empty() ? nullptr : &r.kvs.front(); }

std::string block_key(const std::string& network, const Block& block) {
  return keys::blocks(network) + block_key_text(block);
}

}  // namespace

FederationStore::FederationStore(Kv& kv, FederationOptions options) : kv_(kv), options_(std::move(options)) {}

StoreStatus FederationStore::validate_name(const std::string& what, const std::string& name) {
  if (name.empty() || name.size() > 253)
    return store_error(Code::invalid, what + " name '" + name + "' must be 1..253 characters");
  for (char c : name)
    if (c == '/' || c <= ' ' || c == 127)
      return store_error(Code::invalid, what + " name '" + name + "' must not contain '/', spaces or control characters");
  return Done{};
}

StoreResult<PoolsRecord> FederationStore::pools() {
  for (unsigned attempt = 0; attempt < options_.max_attempts; ++attempt) {
    auto got = kv_.get(keys::pools());
    if (!got) return got.store_error();
    if (const auto* kv = first(*got)) return decode_pools(*kv);
    if (auto ok = vni::validate_pools(options_.pools.pools); !ok)
      return store_error(Code::invalid, "the VNI pools to seed the federation store with are invalid: " + ok.error());
    auto seeded = kv_.txn({Compare::absent(keys::pools())}, {Op::put(keys::pools(), encode(options_.pools))}, {});
    if (!seeded) return seeded.store_error();
    if (seeded->succeeded) return options_.pools;
  }
  return store_error(Code::conflict, "the VNI pools in " + kv_.describe() + " keep changing; try again");
}

// ---------------------------------------------------------------- networks

StoreResult<Membership> FederationStore::join(const NetworkRequest& request, std::uint64_t now_ms) {
  if (auto ok = validate_name("node", options_.node); !ok) return ok.store_error();
  if (auto ok = validate_name("network", request.name); !ok) return ok.store_error();
  const auto subnet = Block::parse(request.subnet);
  if (!subnet)
    return store_error(Code::invalid, "network '" + request.name + "': subnet '" + request.subnet + "' is not an IPv4 CIDR");
  if (auto ok = check_block_length(request.name, *subnet, request.block_len); !ok) return ok.store_error();

  for (unsigned attempt = 0; attempt < options_.max_attempts; ++attempt) {
    auto net = kv_.get(keys::network(request.name));
    if (!net) return net.store_error();
    if (const auto* kv = first(*net)) {
      auto record = decode_network(*kv);
      if (!record) return record.store_error();
      if (request.pinned_vni != 0 && request.pinned_vni != record->vni)
        return store_error(Code::conflict, "network '" + request.name + "' has VNI " + std::to_string(record->vni) +
                                               " in the federation (created by " + record->created_by +
                                               "); this node pins it to " + std::to_string(request.pinned_vni) +
                                               ": make the configs agree");
      if (record->block_len != request.block_len)
        return store_error(Code::invalid, "network '" + request.name + "' uses /" + std::to_string(record->block_len) +
                                              " node blocks in the federation; this node asks for /" +
                                              std::to_string(request.block_len) + ": make the configs agree");
      Membership out{request.name, record->vni, record->pool, record->labels, record->block_len, ""};
      auto claimed = claim_block(request, *subnet, *kv, out);
      if (!claimed) return claimed.store_error();
      if (*claimed == Claim::done) return out;
      continue;  // the network changed under us: read it again
    }
    // No such network yet: allocate its VNI with the federation's pools and VNI records.
    auto pools_record = pools();
    if (!pools_record) return pools_record.store_error();
    auto allocator = vni::Allocator::create(pools_record->pools, pools_record->hold_down_ms);
    if (!allocator) return store_error(Code::internal, "the federation's VNI pools are invalid: " + allocator.error());
    auto vnis = kv_.get_prefix(keys::vnis());
    if (!vnis) return vnis.store_error();
    std::vector<vni::Allocation> records;
    std::map<std::uint32_t, std::int64_t> revision_of;
    for (const auto& kv : vnis->kvs) {
      auto record = decode_vni(kv);
      if (!record) return record.store_error();
      records.push_back(*record);
      revision_of[record->vni] = kv.mod_revision;
    }
    if (auto ok = allocator->restore(records); !ok)
      return store_error(Code::internal, "the VNI records in " + kv_.describe() + " are inconsistent: " + ok.error());
    auto candidate = allocator->allocate(request.name, request.labels, request.pinned_vni, now_ms);
    if (!candidate) return store_error(code_of_allocation(candidate.error()), candidate.error());
    NetworkRecord record{candidate->vni, candidate->pool, request.labels, request.block_len, options_.node, now_ms};
    const auto vni_key = keys::vni(candidate->vni);
    auto created = kv_.txn({Compare::absent(keys::network(request.name)),
                            Compare::unchanged(vni_key, revision_of.count(candidate->vni) ? revision_of[candidate->vni] : 0)},
                           {Op::put(keys::network(request.name), encode(record)), Op::put(vni_key, encode(*candidate))}, {});
    if (!created) return created.store_error();
    // Either way the next round reads the network: ours, or the one that won the race.
  }
  return store_error(Code::conflict, "network '" + request.name + "': gave up after " +
                                         std::to_string(options_.max_attempts) + " attempts under contention in " +
                                         kv_.describe() + "; try again");
}

StoreResult<FederationStore::Claim> FederationStore::claim_block(const NetworkRequest& request, const Block& subnet,
                                                                 const KeyValue& network_kv, Membership& out) {
  const auto mine_key = keys::node_network(options_.node, request.name);
  auto mine = kv_.get(mine_key);
  if (!mine) return mine.store_error();
  std::int64_t mine_revision = 0;
  if (const auto* kv = first(*mine)) {
    mine_revision = kv->mod_revision;
    if (!kv->value.empty()) {
      auto block = Block::parse(kv->value);
      if (!block) return store_error(Code::internal, "federation store key " + kv->key + " is damaged (not a block)");
      if (!subnet.contains(*block))
        return store_error(Code::invalid, "node '" + options_.node + "' holds block " + block->str() + " of network '" +
                                              request.name + "', outside this node's subnet " + subnet.str() +
                                              "; remove the network from this node first");
      out.block = block->str();
      return Claim::done;
    }
  }
  auto blocks = kv_.get_prefix(keys::blocks(request.name));
  if (!blocks) return blocks.store_error();
  std::vector<Block> taken;
  for (const auto& kv : blocks->kvs)
    if (auto b = parse_block_key(keys::leaf(kv.key))) taken.push_back(*b);
  auto pick = pick_block(request.name, subnet, request.block_len, taken);
  if (!pick) return pick.store_error();
  const auto key = block_key(request.name, *pick);
  auto claimed = kv_.txn({Compare::unchanged(keys::network(request.name), network_kv.mod_revision), Compare::absent(key),
                          Compare::unchanged(mine_key, mine_revision)},
                         {Op::put(key, options_.node), Op::put(mine_key, pick->str()),
                          Op::put(keys::member(request.name, options_.node), options_.cluster)},
                         {});
  if (!claimed) return claimed.store_error();
  if (!claimed->succeeded) return Claim::retry;
  out.block = pick->str();
  return Claim::done;
}

// ---------------------------------------------------------------- more blocks

StoreResult<std::string> FederationStore::claim_more(const std::string& network, const std::string& subnet_text) {
  const auto subnet = Block::parse(subnet_text);
  if (!subnet)
    return store_error(Code::invalid, "network '" + network + "': subnet '" + subnet_text + "' is not an IPv4 CIDR");
  const auto mine_key = keys::node_network(options_.node, network);
  for (unsigned attempt = 0; attempt < options_.max_attempts; ++attempt) {
    auto net = kv_.get(keys::network(network));
    if (!net) return net.store_error();
    const auto* net_kv = first(*net);
    if (net_kv == nullptr)
      return store_error(Code::not_found, "network '" + network + "' is not in the federation store; the node "
                                              "joins it again at the next reconcile");
    auto record = decode_network(*net_kv);
    if (!record) return record.store_error();
    auto mine = kv_.get(mine_key);
    if (!mine) return mine.store_error();
    const auto* mine_kv = first(*mine);
    if (mine_kv == nullptr || mine_kv->value.empty())
      return store_error(Code::not_found, "node '" + options_.node + "' has no block of network '" + network +
                                              "' in the federation store; it claims its first one at the next reconcile");
    auto blocks = kv_.get_prefix(keys::blocks(network));
    if (!blocks) return blocks.store_error();
    std::vector<Block> taken;
    for (const auto& kv : blocks->kvs)
      if (auto b = parse_block_key(keys::leaf(kv.key))) taken.push_back(*b);
    auto pick = pick_block(network, *subnet, record->block_len, taken);
    if (!pick) return pick.store_error();
    const auto key = block_key(network, *pick);
    // The same guards as the first block's: nobody took it meanwhile, this node did not leave,
    // the network was not released and created again.
    auto claimed = kv_.txn({Compare::unchanged(net_kv->key, net_kv->mod_revision), Compare::absent(key),
                            Compare::unchanged(mine_key, mine_kv->mod_revision)},
                           {Op::put(key, options_.node)}, {});
    if (!claimed) return claimed.store_error();
    if (claimed->succeeded) return pick->str();
  }
  return store_error(Code::conflict, "network '" + network + "': no block could be claimed after " +
                                         std::to_string(options_.max_attempts) + " attempts under contention in " +
                                         kv_.describe() + "; try again");
}

// Every block of `network` the store gives `node` besides `first`, each in a transaction of
// its own (a node may hold more blocks than etcd allows operations in one), each only while
// `guard` holds and the block is unchanged.
StoreStatus FederationStore::erase_more_blocks(const std::string& node, const std::string& network,
                                               const std::string& first_block, const std::vector<Compare>& guard) {
  auto blocks = kv_.get_prefix(keys::blocks(network));
  if (!blocks) return blocks.store_error();
  for (const auto& kv : blocks->kvs) {
    if (kv.value != node) continue;
    auto b = parse_block_key(keys::leaf(kv.key));
    if (!b || b->str() == first_block) continue;
    std::vector<Compare> g = guard;
    g.push_back(Compare::unchanged(kv.key, kv.mod_revision));
    auto done = kv_.txn(std::move(g), {Op::erase(kv.key)}, {});
    if (!done) return done.store_error();
  }
  return Done{};
}

StoreStatus FederationStore::leave(const std::string& network, std::uint64_t now_ms) {
  const auto mine_key = keys::node_network(options_.node, network);
  auto mine = kv_.get(mine_key);
  if (!mine) return mine.store_error();
  if (auto ok = erase_more_blocks(options_.node, network, first(*mine) ? first(*mine)->value : std::string{}, {}); !ok)
    return ok;
  std::vector<Compare> guard;
  std::vector<Op> ops{Op::erase(mine_key), Op::erase(keys::member(network, options_.node))};
  if (const auto* kv = first(*mine); kv && !kv->value.empty()) {
    if (auto block = Block::parse(kv->value)) {
      const auto key = block_key(network, *block);
      guard.push_back(Compare::value_is(key, options_.node));  // only our own block
      ops.push_back(Op::erase(key));
    }
  }
  auto left = kv_.txn(guard, ops, {Op::erase(mine_key), Op::erase(keys::member(network, options_.node))});
  if (!left) return left.store_error();
  return release_if_unused(network, now_ms);
}

StoreStatus FederationStore::release_if_unused(const std::string& network, std::uint64_t now_ms) {
  auto net = kv_.get(keys::network(network));
  if (!net) return net.store_error();
  const auto* kv = first(*net);
  if (kv == nullptr) return Done{};
  auto record = decode_network(*kv);
  if (!record) return record.store_error();
  auto pools_record = pools();
  if (!pools_record) return pools_record.store_error();
  vni::Allocation held{record->vni, record->pool, network, vni::State::held, now_ms + pools_record->hold_down_ms};
  // Only if nobody uses it and nobody changed it meanwhile; otherwise it simply stays.
  auto released = kv_.txn({Compare::none_under(keys::members(network)), Compare::unchanged(kv->key, kv->mod_revision)},
                          {Op::erase(kv->key), Op::put(keys::vni(record->vni), encode(held)),
                           Op::erase_prefix(keys::blocks(network))},
                          {});
  if (!released) return released.store_error();
  return Done{};
}

StoreResult<bool> FederationStore::collector() {
  if (lease_ == 0) return false;  // not registered (yet): cannot hold a leased role
  auto r = kv_.txn({Compare::absent(keys::collector())}, {Op::put(keys::collector(), options_.node, lease_)},
                   {Op::get(keys::collector())});
  if (!r) return r.store_error();
  if (r->succeeded) return true;
  return !r->gets.empty() && !r->gets[0].empty() && r->gets[0][0].value == options_.node &&
         r->gets[0][0].lease == lease_;
}

StoreStatus FederationStore::expire_hold_downs(std::uint64_t now_ms) {
  auto vnis = kv_.get_prefix(keys::vnis());
  if (!vnis) return vnis.store_error();
  for (const auto& kv : vnis->kvs) {
    auto record = decode_vni(kv);
    if (!record || record->state != vni::State::held || record->held_until_ms > now_ms) continue;
    auto gone = kv_.txn({Compare::unchanged(kv.key, kv.mod_revision)}, {Op::erase(kv.key)}, {});
    if (!gone) return gone.store_error();
  }
  return Done{};
}

// ---------------------------------------------------------------- nodes

StoreStatus FederationStore::register_node(std::uint64_t now_ms) {
  if (auto ok = validate_name("node", options_.node); !ok) return ok;
  if (auto p = pools(); !p) return p.store_error();
  auto lease = kv_.lease_grant(options_.node_ttl_s);
  if (!lease) return lease.store_error();
  NodeRecord record{options_.vtep, options_.cluster, now_ms, 0, options_.gbp};
  const std::string alive = nlohmann::json{{"vtep", options_.vtep}, {"cluster", options_.cluster}}.dump();
  auto put = kv_.txn({}, {Op::put(keys::alive(options_.node), alive, *lease), Op::put(keys::node(options_.node), encode(record))}, {});
  if (!put) return put.store_error();
  lease_ = *lease;
  return Done{};
}

StoreStatus FederationStore::keep_alive(std::uint64_t now_ms) {
  if (lease_ == 0) return register_node(now_ms);
  auto ttl = kv_.lease_keep_alive(lease_);
  if (ttl) return Done{};
  if (ttl.code() == Code::not_found) {
    lease_ = 0;
    return register_node(now_ms);
  }
  return ttl.store_error();
}

StoreResult<std::size_t> FederationStore::collect_gone_nodes(std::uint64_t now_ms) {
  auto nodes = kv_.get_prefix(keys::nodes());
  if (!nodes) return nodes.store_error();
  auto alive = kv_.get_prefix(keys::alives());
  if (!alive) return alive.store_error();
  std::set<std::string> live;
  for (const auto& kv : alive->kvs) live.insert(keys::leaf(kv.key));
  std::size_t released = 0;
  for (const auto& kv : nodes->kvs) {
    const std::string name = keys::leaf(kv.key);
    if (name == options_.node || live.count(name)) continue;
    auto record = decode_node(kv);
    if (!record) continue;  // damaged: reported by whoever reads it for use; never released blindly
    if (record->gone_since_unix_ms == 0) {
      record->gone_since_unix_ms = now_ms;
      auto marked = kv_.txn({Compare::absent(keys::alive(name)), Compare::unchanged(kv.key, kv.mod_revision)},
                            {Op::put(kv.key, encode(*record))}, {});
      if (!marked) return marked.store_error();
      continue;
    }
    if (now_ms < record->gone_since_unix_ms + options_.block_release_after_ms) continue;
    if (auto ok = release_node(name, now_ms); !ok) return ok.store_error();
    auto erased = kv_.txn({Compare::absent(keys::alive(name)), Compare::unchanged(kv.key, kv.mod_revision)},
                          {Op::erase(kv.key)}, {});
    if (!erased) return erased.store_error();
    if (erased->succeeded) ++released;
  }
  return released;
}

// One guarded transaction per network (etcd caps the operations of one transaction), each
// only while the node is still not alive; rerunning after a crash continues where it stopped.
StoreStatus FederationStore::release_node(const std::string& node, std::uint64_t now_ms) {
  auto held = kv_.get_prefix(keys::node_networks(node));
  if (!held) return held.store_error();
  for (const auto& kv : held->kvs) {
    const std::string network = keys::leaf(kv.key);
    if (auto ok = erase_more_blocks(node, network, kv.value, {Compare::absent(keys::alive(node))}); !ok) return ok;
    std::vector<Compare> guard{Compare::absent(keys::alive(node))};
    std::vector<Op> ops{Op::erase(kv.key), Op::erase(keys::member(network, node))};
    if (auto block = Block::parse(kv.value)) {
      const auto key = block_key(network, *block);
      auto owner = kv_.get(key);
      if (!owner) return owner.store_error();
      if (const auto* b = first(*owner); b && b->value == node) {
        guard.push_back(Compare::unchanged(key, b->mod_revision));
        ops.push_back(Op::erase(key));
      }
    }
    auto done = kv_.txn(guard, ops, {});
    if (!done) return done.store_error();
    if (!done->succeeded) return Done{};  // it came back: leave it alone
    if (auto ok = release_if_unused(network, now_ms); !ok) return ok;
  }
  return Done{};
}

// ---------------------------------------------------------------- reconcile

StoreResult<ReconcileReport> FederationStore::reconcile(const std::vector<Membership>& local, std::uint64_t now_ms) {
  ReconcileReport report;
  if (auto p = pools(); !p) return p.store_error();
  std::set<std::string> mine;
  for (const auto& m : local) {
    mine.insert(m.network);
    auto net = kv_.get(keys::network(m.network));
    if (!net) return net.store_error();
    if (const auto* kv = first(*net)) {
      auto record = decode_network(*kv);
      if (!record) return record.store_error();
      if (record->vni != m.vni) {
        report.conflicts.push_back("network '" + m.network + "' has VNI " + std::to_string(record->vni) +
                                   " in the federation store but VNI " + std::to_string(m.vni) +
                                   " on node '" + options_.node + "' (its local copy); the node keeps " +
                                   std::to_string(m.vni) + " until an operator resolves it (docs/federation.md)");
        continue;
      }
    } else {
      auto restored = restore_network(m, now_ms, report);
      if (!restored) return restored.store_error();
      if (*restored == 0) continue;  // a conflict, reported
    }
    if (auto ok = claim_exact_block(m, report); !ok) return ok.store_error();
    if (auto ok = reassert_more_blocks(m, report); !ok) return ok.store_error();
  }
  // Memberships the store remembers and the node no longer has (it left while the store was
  // unreachable): leave them now.
  auto held = kv_.get_prefix(keys::node_networks(options_.node));
  if (!held) return held.store_error();
  for (const auto& kv : held->kvs) {
    const std::string network = keys::leaf(kv.key);
    if (mine.count(network)) continue;
    if (auto ok = leave(network, now_ms); !ok) return ok.store_error();
    ++report.left;
  }
  return report;
}

// The store has no record of a network the node uses: put it back with the node's VNI, unless
// another network has that VNI (a conflict to report). Returns the record's revision (0: not
// restored).
StoreResult<std::int64_t> FederationStore::restore_network(const Membership& m, std::uint64_t now_ms,
                                                          ReconcileReport& report) {
  for (unsigned attempt = 0; attempt < options_.max_attempts; ++attempt) {
    auto v = kv_.get(keys::vni(m.vni));
    if (!v) return v.store_error();
    std::int64_t v_revision = 0;
    if (const auto* kv = first(*v)) {
      auto record = decode_vni(*kv);
      if (!record) return record.store_error();
      if (record->network != m.network) {
        report.conflicts.push_back("network '" + m.network + "' is missing from the federation store and its VNI " +
                                   std::to_string(m.vni) + " is " + vni::state_name(record->state) + " for network '" +
                                   record->network + "'; node '" + options_.node + "' keeps using it locally");
        return std::int64_t{0};
      }
      v_revision = kv->mod_revision;
    }
    NetworkRecord record{m.vni, m.pool, m.labels, m.block_len, options_.node, now_ms};
    vni::Allocation allocation{m.vni, m.pool, m.network, m.pool.empty() ? vni::State::pinned : vni::State::allocated, 0};
    auto put = kv_.txn({Compare::absent(keys::network(m.network)), Compare::unchanged(keys::vni(m.vni), v_revision)},
                       {Op::put(keys::network(m.network), encode(record)), Op::put(keys::vni(m.vni), encode(allocation))},
                       {Op::get(keys::network(m.network))});
    if (!put) return put.store_error();
    if (put->succeeded) {
      ++report.restored;
      return put->revision;
    }
    // Somebody else restored (or created) it meanwhile: same VNI is fine, another is a conflict.
    if (!put->gets.empty() && !put->gets[0].empty()) {
      auto other = decode_network(put->gets[0][0]);
      if (!other) return other.store_error();
      if (other->vni == m.vni) return put->gets[0][0].mod_revision;
      report.conflicts.push_back("network '" + m.network + "' was just created in the federation store with VNI " +
                                 std::to_string(other->vni) + " while node '" + options_.node + "' uses VNI " +
                                 std::to_string(m.vni));
      return std::int64_t{0};
    }
  }
  return store_error(Code::conflict, "network '" + m.network + "': could not be restored under contention; try again");
}

StoreStatus FederationStore::claim_exact_block(const Membership& m, ReconcileReport& report) {
  const auto mine_key = keys::node_network(options_.node, m.network);
  auto mine = kv_.get(mine_key);
  if (!mine) return mine.store_error();
  const auto* mine_kv = first(*mine);
  if (mine_kv && mine_kv->value == m.block) return Done{};  // written with its block and member keys
  if (m.block.empty()) {
    if (mine_kv == nullptr) {
      auto put = kv_.txn({Compare::absent(mine_key)},
                         {Op::put(mine_key, ""), Op::put(keys::member(m.network, options_.node), options_.cluster)}, {});
      if (!put) return put.store_error();
    }
    return Done{};
  }
  const auto block = Block::parse(m.block);
  if (!block) return store_error(Code::internal, "the local copy's block '" + m.block + "' of network '" + m.network + "' is not a CIDR");
  const auto key = block_key(m.network, *block);
  auto owner = kv_.get(key);
  if (!owner) return owner.store_error();
  const auto* owner_kv = first(*owner);
  if (owner_kv && owner_kv->value != options_.node) {
    report.conflicts.push_back("block " + m.block + " of network '" + m.network + "' belongs to node '" + owner_kv->value +
                               "' in the federation store; node '" + options_.node + "' (its local copy) keeps using it");
    return Done{};
  }
  if (mine_kv && !mine_kv->value.empty()) {
    report.conflicts.push_back("node '" + options_.node + "' has block " + mine_kv->value + " of network '" + m.network +
                               "' in the federation store but " + m.block + " in its local copy; it keeps " + m.block);
    return Done{};
  }
  std::vector<Op> ops{Op::put(key, options_.node), Op::put(mine_key, m.block),
                      Op::put(keys::member(m.network, options_.node), options_.cluster)};
  auto put = kv_.txn({Compare::unchanged(mine_key, mine_kv ? mine_kv->mod_revision : 0),
                      Compare::unchanged(key, owner_kv ? owner_kv->mod_revision : 0)},
                     ops, {});
  if (!put) return put.store_error();
  if (put->succeeded) ++report.restored;
  else report.conflicts.push_back("block " + m.block + " of network '" + m.network + "' changed while node '" + options_.node +
                                  "' restored it; the next reconcile looks again");
  return Done{};
}

// The node's further blocks as its local copy has them: put back what the store lost (a
// block another node owns meanwhile is a conflict, reported); a further block the store gives
// this node and its copy does not have (it crashed between the claim and saving it, or gave
// the block back while the store was away) is released.
StoreStatus FederationStore::reassert_more_blocks(const Membership& m, ReconcileReport& report) {
  auto blocks = kv_.get_prefix(keys::blocks(m.network));
  if (!blocks) return blocks.store_error();
  std::map<std::string, const KeyValue*> by_block;
  for (const auto& kv : blocks->kvs)
    if (auto b = parse_block_key(keys::leaf(kv.key))) by_block[b->str()] = &kv;
  std::set<std::string> local(m.more_blocks.begin(), m.more_blocks.end());
  for (const auto& text : m.more_blocks) {
    const auto block = Block::parse(text);
    if (!block) return store_error(Code::internal, "the local copy's block '" + text + "' of network '" + m.network + "' is not a CIDR");
    auto it = by_block.find(block->str());
    if (it != by_block.end()) {
      if (it->second->value != options_.node)
        report.conflicts.push_back("block " + text + " of network '" + m.network + "' belongs to node '" +
                                   it->second->value + "' in the federation store; node '" + options_.node +
                                   "' (its local copy) keeps using it");
      continue;
    }
    const auto key = block_key(m.network, *block);
    auto put = kv_.txn({Compare::absent(key)}, {Op::put(key, options_.node)}, {});
    if (!put) return put.store_error();
    if (put->succeeded) ++report.restored;
    else report.conflicts.push_back("block " + text + " of network '" + m.network + "' was taken while node '" +
                                    options_.node + "' restored it; the next reconcile looks again");
  }
  for (const auto& [text, kv] : by_block) {
    if (kv->value != options_.node || text == m.block || local.count(text)) continue;
    auto gone = kv_.txn({Compare::unchanged(kv->key, kv->mod_revision)}, {Op::erase(kv->key)}, {});
    if (!gone) return gone.store_error();
    if (gone->succeeded) ++report.released;
  }
  return Done{};
}

}  // namespace vxfed::federation
