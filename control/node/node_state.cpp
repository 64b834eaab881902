#include "control/node/node_state.hpp"

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>

#include "common/net/ipv4.hpp"
#include "common/net/mac.hpp"
#include "common/net/vxlan.hpp"
#include "control/node/policy_cache.hpp"

namespace vxfed::control {

const char* route_origin_name(RouteOrigin origin) {
  switch (origin) {
    case RouteOrigin::static_config: return "static";
    case RouteOrigin::bgp: return "bgp";
  }
  return "unknown";
}

NodeState::NetworkChangeScope::~NetworkChangeScope() {
  if (--state_.operation_depth_ > 0 || !state_.networks_changed_) return;
  state_.networks_changed_ = false;
  if (state_.networks_observer_) state_.networks_observer_();
}

NetworkConfig network_config_from_spec(const v1::NetworkSpec& spec) {
  NetworkConfig n;
  n.name = spec.name();
  for (const auto& [k, v] : spec.labels()) n.labels[k] = v;
  n.pinned_vni = spec.pinned_vni();
  n.subnet = spec.subnet();
  n.gateway = spec.gateway();
  n.mtu = spec.mtu();
  n.block_prefix_len = spec.block_prefix_len();
  n.block = spec.block();
  return n;
}

namespace {

constexpr char kFromConfig = 'c';
constexpr char kFromApi = 'r';

v1::NetworkSpec to_spec(const NetworkConfig& n) {
  v1::NetworkSpec spec;
  spec.set_name(n.name);
  for (const auto& [k, v] : n.labels) (*spec.mutable_labels())[k] = v;
  spec.set_pinned_vni(n.pinned_vni);
  spec.set_subnet(n.subnet);
  spec.set_gateway(n.gateway);
  spec.set_mtu(n.mtu);
  spec.set_block_prefix_len(n.block_prefix_len);
  spec.set_block(n.block);
  return spec;
}

v1::ErrorCode code_of_allocation_error(const std::string& message) {
  if (message.find("exhausted") != std::string::npos) return v1::EXHAUSTED;
  if (message.find("already") != std::string::npos || message.find("held down") != std::string::npos)
    return v1::ALREADY_EXISTS;
  if (message.find("could not be saved") != std::string::npos) return v1::INTERNAL;
  return v1::INVALID_ARGUMENT;
}

void set_code(v1::ErrorCode* code, v1::ErrorCode value) {
  if (code) *code = value;
}

bool valid_iface_name(const std::string& name) {
  if (name.empty() || name.size() > 15) return false;
  for (char c : name)
    if (c == '/' || c == ':' || c <= ' ' || c == 127) return false;
  return true;
}

}  // namespace

std::uint64_t system_unix_ms() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

Result<std::unique_ptr<NodeState>> NodeState::open(const Config& config, Options options,
                                                   std::vector<std::string>* notes) {
  std::unique_ptr<NodeState> state(new NodeState(std::move(options)));
  state->config_ = config;
  auto allocator = vni::Allocator::create(config.pools, config.hold_down_ms);
  if (!allocator) return make_error(allocator.error());
  const auto& dir = state->options_.state_dir;
  auto vnis = vni::PersistentAllocator::open(dir, std::move(*allocator), state->options_.store, notes);
  if (!vnis) return make_error(vnis.error());
  state->vnis_ = std::move(*vnis);
  auto networks = vni::DurableStore::open(dir, "networks", state->options_.store, notes);
  if (!networks) return make_error(networks.error());
  state->network_store_ = std::move(*networks);
  auto endpoints = vni::DurableStore::open(dir, "endpoints", state->options_.store, notes);
  if (!endpoints) return make_error(endpoints.error());
  state->endpoint_store_ = std::move(*endpoints);
  auto blocks = vni::DurableStore::open(dir, "blocks", state->options_.store, notes);
  if (!blocks) return make_error(blocks.error());
  state->block_store_ = std::move(*blocks);
  auto more_blocks = vni::DurableStore::open(dir, "more-blocks", state->options_.store, notes);
  if (!more_blocks) return make_error(more_blocks.error());
  state->more_block_store_ = std::move(*more_blocks);
  if (auto ok = state->restore(config, notes); !ok) return make_error(ok.error());
  if (auto cached = load_policy_cache(dir + "/policies.cache"); !cached) {
    if (notes) notes->push_back(cached.error() + " (left out: the policy follower's first listing replaces it)");
  } else {
    for (auto& entry : *cached) state->policies_[entry.vni()] = std::move(entry);
  }
  state->networks_changed_ = false;  // the observer learns the restored networks at its start
  return state;
}

Status NodeState::restore(const Config& config, std::vector<std::string>* notes) {
  auto note = [&](std::string text) {
    if (notes) notes->push_back(std::move(text));
  };
  // 1. What was stored: networks with their origin.
  std::map<std::string, std::pair<char, NetworkConfig>> stored;
  for (const auto& [name, value] : network_store_->entries()) {
    v1::NetworkSpec spec;
    if (value.empty() || !spec.ParseFromString(value.substr(1)) || spec.name() != name)
      return make_error(network_store_->snapshot_path() + ": stored network '" + name +
                        "' cannot be decoded; refusing to start with a damaged store");
    stored[name] = {value[0], network_config_from_spec(spec)};
  }
  // A network is stored only after its VNI, and a removed network's VNI is held down before
  // its record goes, so no crash leaves a stored network without any VNI record: that means
  // the VNI store lost records (a truncated, garbled-then-cut or replaced vnis file). Giving
  // the network a VNI afresh would renumber it silently. (With the federation store the VNI
  // comes from there.)
  if (options_.allocator == nullptr) {
    std::set<std::string> with_vni;
    for (const auto& record : vnis_->allocator().list()) with_vni.insert(record.network);
    for (const auto& [name, entry] : stored) {
      if (with_vni.count(name)) continue;
      return make_error(vnis_->store().journal_path() + " has no VNI for network '" + name + "' stored in " +
                        network_store_->journal_path() + ": the VNI store lost records (truncated or " +
                        "replaced?); refusing to start rather than give the network a new VNI (restore " +
                        "the vnis files from a backup)");
    }
  }
  std::map<std::string, std::size_t> endpoint_users;
  std::vector<v1::EndpointInfo> endpoints;
  for (const auto& [id, value] : endpoint_store_->entries()) {
    v1::EndpointInfo info;
    if (!info.ParseFromString(value) || endpoint_id(info.spec().container_id(), info.spec().ifname()) != id)
      return make_error(endpoint_store_->snapshot_path() + ": stored endpoint '" + id +
                        "' cannot be decoded; refusing to start with a damaged store");
    ++endpoint_users[info.spec().network()];
    endpoints.push_back(std::move(info));
  }
  // 2. The config's networks get (or keep) their VNIs.
  for (const auto& n : config.networks) {
    v1::ErrorCode code = v1::OK;
    auto added = add_network(n, /*from_config=*/true, &code);
    if (!added && code == v1::UNAVAILABLE && options_.allocator) {
      pending_[n.name] = n;  // fail static: the others start; this one once the store answers
      note("network '" + n.name + "' waits for the federation store: " + added.error());
      continue;
    }
    if (!added) return make_error("network '" + n.name + "': " + added.error());
  }
  // 3. Networks added over the API come back; config networks that left the config while we
  //    were down go away, unless endpoints still use them.
  for (auto& [name, entry] : stored) {
    if (networks_.count(name)) continue;
    auto& [origin, network] = entry;
    if (origin == kFromConfig && endpoint_users[name] == 0) {
      if (vnis_->allocator().find_network(name)) (void)vnis_->release(name, options_.clock());
      if (auto ok = network_store_->erase(name); !ok) return ok;
      network_left(name);
      note("network '" + name + "' is no longer in the config: removed, its VNI is held down");
      continue;
    }
    if (auto ok = normalize_network(network, config.node.underlay_mtu); !ok)
      return make_error("stored network '" + name + "': " + ok.error());
    v1::ErrorCode code = v1::OK;
    auto added = add_network(network, origin == kFromConfig, &code);
    if (!added) return make_error("stored network '" + name + "': " + added.error());
    if (origin == kFromConfig) {
      networks_[name].orphaned = true;
      note("network '" + name + "' is no longer in the config but " + std::to_string(endpoint_users[name]) +
           " endpoints use it: kept until they detach");
    }
  }
  // 4. A VNI allocated without its network record (a crash between the two writes).
  for (const auto& record : vnis_->allocator().list()) {
    if (record.state == vni::State::held || networks_.count(record.network)) continue;
    if (auto released = vnis_->release(record.network, options_.clock()); !released) return make_error(released.error());
    note("VNI " + std::to_string(record.vni) + " had no network ('" + record.network + "'): released");
  }
  // 5. Endpoints.
  for (auto& info : endpoints) {
    const auto it = networks_.find(info.spec().network());
    const std::string id = endpoint_id(info.spec().container_id(), info.spec().ifname());
    if (it == networks_.end()) {
      return make_error("stored endpoint '" + id + "' belongs to unknown network '" + info.spec().network() + "'");
    }
    // An endpoint is stored with its network's VNI, which cannot change while it is attached
    // (a network with endpoints is neither removed nor re-pinned): another VNI now means a
    // store lost records.
    if (options_.allocator == nullptr && info.vni() != 0 && info.vni() != it->second.vni)
      return make_error(endpoint_store_->journal_path() + ": endpoint '" + id + "' was attached with VNI " +
                        std::to_string(info.vni()) + " but network '" + info.spec().network() + "' now has VNI " +
                        std::to_string(it->second.vni) + " (from " + vnis_->store().journal_path() +
                        "); refusing to start with stores that disagree");
    info.set_vni(it->second.vni);
    info.set_in_dataplane(false);
    ip_owner_[{info.spec().network(), info.spec().ip()}] = id;
    ++endpoints_per_network_[info.spec().network()];
    endpoints_[id] = Endpoint{std::move(info)};
  }
  return {};
}

// ---------------------------------------------------------------- networks

Status NodeState::persist_network(const Network& network) {
  std::string value(1, network.from_config ? kFromConfig : kFromApi);
  value += to_spec(network.config).SerializeAsString();
  return network_store_->put(network.config.name, value);
}

dp::Network NodeState::dp_network(const Network& n) const {
  dp::Network out;
  out.set_vni(n.vni);
  out.set_gateway_ip(n.config.gateway);
  out.set_gateway_mac(net::format_mac(net::gateway_mac(n.vni)));
  out.set_mtu(n.config.mtu);
  return out;
}

v1::NetworkInfo NodeState::info_of(const Network& n) const {
  v1::NetworkInfo info;
  *info.mutable_spec() = to_spec(n.config);
  info.set_vni(n.vni);
  info.set_pool(n.pool);
  info.set_gateway_mac(net::format_mac(net::gateway_mac(n.vni)));
  info.set_mtu(n.config.mtu);
  info.set_node_block(n.block);
  if (!n.block.empty()) info.add_node_blocks(n.block);
  for (const auto& b : n.more_blocks) info.add_node_blocks(b);
  for (auto it = routes_.lower_bound(RouteKey{n.vni, {}}); it != routes_.end() && it->first.vni == n.vni; ++it)
    if (effective_route(it->first)) info.add_remote_cidrs(it->first.prefix.str());
  if (service_range_ && !service_network_.empty() && n.config.name == service_network_)
    info.add_service_cidrs(service_range_->str());
  auto count = endpoints_per_network_.find(n.config.name);
  info.set_endpoints(count == endpoints_per_network_.end() ? 0 : static_cast<std::uint32_t>(count->second));
  return info;
}

Result<v1::NetworkInfo> NodeState::add_network(NetworkConfig network, bool from_config, v1::ErrorCode* code) {
  NetworkChangeScope scope(*this);
  set_code(code, v1::OK);
  if (auto ok = normalize_network(network, config_.node.underlay_mtu); !ok) {
    set_code(code, v1::INVALID_ARGUMENT);
    return make_error("network '" + network.name + "': " + ok.error());
  }
  if (!from_config && !network.static_routes.empty()) {
    set_code(code, v1::INVALID_ARGUMENT);
    return make_error("static routes can only be configured in the config file");
  }
  auto existing = networks_.find(network.name);
  if (existing != networks_.end()) {
    Network& have = existing->second;
    if (!from_config) {
      if (have.config == network) return info_of(have);  // idempotent
      set_code(code, v1::ALREADY_EXISTS);
      return make_error("network '" + network.name + "' already exists with a different spec (VNI " +
                        std::to_string(have.vni) + ", subnet " + have.config.subnet + ")");
    }
    // Config (re)load: update in place, never changing the VNI.
    if (network.pinned_vni != 0 && network.pinned_vni != have.vni) {
      set_code(code, v1::INVALID_ARGUMENT);
      return make_error("network '" + network.name + "' has VNI " + std::to_string(have.vni) +
                        "; pinning it to " + std::to_string(network.pinned_vni) + " needs removing the network first");
    }
    if (network.subnet != have.config.subnet && endpoints_per_network_[network.name] > 0) {
      set_code(code, v1::INVALID_ARGUMENT);
      return make_error("network '" + network.name + "' has endpoints; its subnet cannot change from " +
                        have.config.subnet + " to " + network.subnet);
    }
    const bool changed = !(have.config == network) || !have.from_config || have.orphaned;
    if (options_.allocator == nullptr) have.block = network.block;
    have.config = network;
    have.from_config = true;
    have.orphaned = false;
    if (changed) {
      if (auto ok = persist_network(have); !ok) {
        set_code(code, v1::INTERNAL);
        return make_error(ok.error());
      }
      TablesDelta delta;
      delta.networks.push_back(dp_network(have));
      set_static_routes(have, &delta);
      publish(delta);
    }
    return info_of(have);
  }
  auto allocation = allocate_network(network, code);
  if (!allocation) return make_error(allocation.error());
  Network n{network, allocation->vni, allocation->pool, from_config, false, allocation->block, {}};
  if (options_.allocator != nullptr)
    if (auto more = more_block_store_->entries().find(network.name); more != more_block_store_->entries().end()) {
      std::istringstream words(more->second);
      for (std::string b; words >> b;) n.more_blocks.push_back(b);
    }
  if (auto ok = persist_network(n); !ok) {
    // Alone, the VNI goes back to the pool; with the federation it stays this node's (the
    // next attempt gets the same one).
    if (options_.allocator == nullptr) (void)vnis_->release(network.name, options_.clock());
    set_code(code, v1::INTERNAL);
    return make_error(ok.error());
  }
  pending_.erase(network.name);
  auto [it, inserted] = networks_.emplace(network.name, std::move(n));
  network_of_vni_[it->second.vni] = network.name;
  networks_changed_ = true;
  TablesDelta delta;
  delta.networks.push_back(dp_network(it->second));
  set_static_routes(it->second, &delta);
  // Routes other sources learned for this VNI before the network existed.
  const std::uint32_t vni = it->second.vni;
  for (auto r = routes_.lower_bound(RouteKey{vni, {}}); r != routes_.end() && r->first.vni == vni; ++r) {
    if (r->second.has(RouteOrigin::static_config)) continue;  // set_static_routes sent it
    if (const auto* e = effective_route(r->first)) delta.routes.push_back(*e);
  }
  publish(delta);
  return info_of(it->second);
}

Result<NetworkGrant> NodeState::allocate_network(const NetworkConfig& network, v1::ErrorCode* code) {
  if (options_.allocator == nullptr) {
    auto allocation = vnis_->allocate(network.name, network.labels, network.pinned_vni, options_.clock());
    if (!allocation) {
      set_code(code, code_of_allocation_error(allocation.error()));
      return make_error(allocation.error());
    }
    return NetworkGrant{allocation->vni, allocation->pool, network.block};
  }
  // The federation: what this node already holds (its local copy) is used as it is, so known
  // networks come back without the store. Anything else is the store's decision.
  const auto ask = store_request(network);
  if (!ask) {
    const vni::Allocation* known = vnis_->allocator().find_network(network.name);
    return NetworkGrant{known->vni, known->pool, block_store_->entries().at(network.name)};
  }
  v1::ErrorCode failed = v1::OK;
  auto grant = options_.allocator->join(*ask, &failed);
  if (!grant) {
    set_code(code, failed);
    return make_error(grant.error());
  }
  // The block first: a crash before the VNI is recorded asks the store again (same answer).
  if (auto ok = block_store_->put(network.name, grant->block); !ok) {
    set_code(code, v1::INTERNAL);
    return make_error("block " + grant->block + " of network '" + network.name + "' could not be saved: " + ok.error());
  }
  const vni::Allocation record{grant->vni, grant->pool, network.name,
                               grant->pool.empty() ? vni::State::pinned : vni::State::allocated, 0};
  if (auto ok = vnis_->adopt(record); !ok) {
    set_code(code, v1::INTERNAL);
    return make_error(ok.error());
  }
  return *grant;
}

std::optional<NetworkConfig> NodeState::store_request(const NetworkConfig& network) const {
  if (options_.allocator == nullptr) return std::nullopt;
  const vni::Allocation* known = vnis_->allocator().find_network(network.name);
  if (known != nullptr && block_store_->entries().count(network.name)) return std::nullopt;
  NetworkConfig ask = network;
  if (known != nullptr && ask.pinned_vni == 0) ask.pinned_vni = known->vni;  // keep the VNI it has
  return ask;
}

void NodeState::prepare_network(NetworkConfig network, NetworkAllocator::Prepared ready) {
  // What add_network would refuse or answer from what the node has needs nothing fetched.
  const bool valid = normalize_network(network, config_.node.underlay_mtu).ok() && network.static_routes.empty();
  const auto ask = valid && !networks_.count(network.name) ? store_request(network) : std::nullopt;
  if (!ask) {
    ready(v1::OK, {});
    return;
  }
  options_.allocator->prepare(*ask, std::move(ready));
}

void NodeState::network_left(const std::string& name) {
  if (options_.allocator == nullptr) return;
  (void)block_store_->erase(name);  // a failed erase is harmless: the store decides next time
  (void)more_block_store_->erase(name);
  options_.allocator->left(name);
}

std::vector<std::string> NodeState::retry_pending() {
  NetworkChangeScope scope(*this);  // route sources hear of the networks created once
  std::vector<std::string> notes;
  const auto waiting = pending_;
  for (const auto& [name, network] : waiting) {
    v1::ErrorCode code = v1::OK;
    auto added = add_network(network, /*from_config=*/true, &code);
    if (added) notes.push_back("network '" + name + "' created: VNI " + std::to_string(added->vni()) + ", block " +
                               added->node_block());
    else notes.push_back("network '" + name + "' still waits: " + added.error());
  }
  return notes;
}

std::vector<LocalNetwork> NodeState::local_networks() const {
  std::vector<LocalNetwork> out;
  for (const auto& [name, n] : networks_) out.push_back(LocalNetwork{n.config, n.vni, n.pool, n.block, n.more_blocks});
  return out;
}

// ---------------------------------------------------------------- more blocks

Status NodeState::save_more_blocks(const Network& network) {
  if (network.more_blocks.empty()) return more_block_store_->erase(network.config.name);
  std::string value;
  for (const auto& b : network.more_blocks) value += (value.empty() ? "" : " ") + b;
  return more_block_store_->put(network.config.name, value);
}

bool NodeState::in_node_blocks(const Network& network, net::Ipv4Addr ip) const {
  const auto block = net::Ipv4Prefix::parse(network.block);  // "" (the whole subnet) does not parse
  if (!block || block->contains(ip)) return true;
  for (const auto& b : network.more_blocks)
    if (auto p = net::Ipv4Prefix::parse(b); p && p->contains(ip)) return true;
  return false;
}

void NodeState::claim_block(const std::string& name, const std::vector<std::string>& seen, BlockClaimed done) {
  auto it = networks_.find(name);
  if (it == networks_.end()) {
    done(v1::NOT_FOUND, "network '" + name + "' does not exist on this node");
    return;
  }
  const Network& n = it->second;
  if (options_.allocator == nullptr || n.block.empty()) {
    // Alone, the node's addresses are its config's: nothing to claim more from.
    done(v1::EXHAUSTED,
         n.block.empty()
             ? "network '" + name + "': this node has all of subnet " + n.config.subnet +
                   " and its IPAM found no free address in it; the network's subnet is the limit (widen it)"
             : "network '" + name + "': this node's block " + n.block + " (the network's `block` in vxfedd's config) "
                   "is full and without a federation store vxfedd has no other block to claim; the block is the "
                   "limit (give the network a larger block, or a federation store: docs/federation.md)");
    return;
  }
  // Another ADD's claim already gave the node a block this plugin did not see: try that one.
  std::vector<std::string> mine = n.more_blocks;
  mine.push_back(n.block);
  for (const auto& b : mine)
    if (std::find(seen.begin(), seen.end(), b) == seen.end()) {
      done(v1::OK, {});
      return;
    }
  auto& waiting = claims_[name];
  waiting.push_back(std::move(done));
  if (waiting.size() > 1) return;  // the first one's store call answers it too
  options_.allocator->claim_more(n.config, [this, name](v1::ErrorCode code, const std::string& result) {
    NetworkChangeScope scope(*this);
    std::string error = code == v1::OK ? std::string{} : result;
    auto net = networks_.find(name);
    if (code == v1::OK && net == networks_.end()) {
      code = v1::NOT_FOUND;  // removed meanwhile: the next reconcile gives the block back
      error = "network '" + name + "' was removed while a block was claimed for it";
    }
    if (code == v1::OK) {
      net->second.more_blocks.push_back(result);
      std::sort(net->second.more_blocks.begin(), net->second.more_blocks.end(),
                [](const std::string& a, const std::string& b) { return *net::Ipv4Prefix::parse(a) < *net::Ipv4Prefix::parse(b); });
      if (auto ok = save_more_blocks(net->second); !ok) {
        // Not kept: the next reconcile gives it back to the store.
        std::erase(net->second.more_blocks, result);
        code = v1::INTERNAL;
        error = "block " + result + " of network '" + name + "' could not be saved: " + ok.error();
      } else {
        networks_changed_ = true;  // advertised from now on
      }
    }
    auto waiting = std::move(claims_[name]);
    claims_.erase(name);
    for (auto& d : waiting) d(code, error);
  });
}

std::vector<std::string> NodeState::drop_empty_blocks(std::uint64_t grace_ms) {
  NetworkChangeScope scope(*this);
  std::vector<std::string> dropped;
  const std::uint64_t now = options_.clock();
  std::map<std::pair<std::string, std::string>, std::uint64_t> still_empty;
  for (auto& [name, n] : networks_) {
    if (n.more_blocks.empty()) continue;
    std::map<std::string, std::size_t> used;
    for (const auto& [id, e] : endpoints_) {
      if (e.info.spec().network() != name) continue;
      const auto ip = net::Ipv4Addr::parse(e.info.spec().ip());
      for (const auto& b : n.more_blocks)
        if (auto p = net::Ipv4Prefix::parse(b); ip && p && p->contains(*ip)) ++used[b];
    }
    std::vector<std::string> keep;
    for (const auto& b : n.more_blocks) {
      if (used[b] > 0) {
        keep.push_back(b);
        continue;
      }
      auto since = empty_since_.find({name, b});
      const std::uint64_t from = since == empty_since_.end() ? now : since->second;
      if (now - from < grace_ms || claims_.count(name)) {
        keep.push_back(b);
        still_empty[{name, b}] = from;
        continue;
      }
      dropped.push_back(name + " " + b);
    }
    if (keep.size() == n.more_blocks.size()) continue;
    const auto before = n.more_blocks;
    n.more_blocks = keep;
    if (auto ok = save_more_blocks(n); !ok) {
      n.more_blocks = before;  // tried again at the next call
      continue;
    }
    networks_changed_ = true;  // withdrawn
  }
  empty_since_ = std::move(still_empty);
  return dropped;
}

void NodeState::remove_network_now(const std::string& name) {
  auto it = networks_.find(name);
  if (it == networks_.end()) return;
  const std::uint32_t vni = it->second.vni;
  // Static routes of this network go; learned routes stay until their source withdraws them
  // (it re-resolves when the observer tells it) and are out of the dataplane meanwhile.
  for (auto r = routes_.lower_bound(RouteKey{vni, {}}); r != routes_.end() && r->first.vni == vni;) {
    r->second.erase(RouteOrigin::static_config);
    r = r->second.empty() ? routes_.erase(r) : std::next(r);
  }
  network_of_vni_.erase(vni);
  networks_changed_ = true;
  endpoints_per_network_.erase(name);
  networks_.erase(it);
  TablesDelta delta;
  delta.removed_networks.push_back(vni);
  publish(delta);
}

Status NodeState::remove_network(const std::string& name, v1::ErrorCode* code) {
  NetworkChangeScope scope(*this);
  set_code(code, v1::OK);
  auto it = networks_.find(name);
  if (it == networks_.end()) {
    set_code(code, v1::NOT_FOUND);
    return make_error("network '" + name + "' does not exist");
  }
  if (it->second.from_config && !it->second.orphaned) {
    set_code(code, v1::INVALID_ARGUMENT);
    return make_error("network '" + name + "' is defined in the config file " + config_.source +
                      "; remove it there and reload (SIGHUP)");
  }
  if (const auto users = endpoints_per_network_[name]; users > 0) {
    set_code(code, v1::INVALID_ARGUMENT);
    return make_error("network '" + name + "' still has " + std::to_string(users) + " endpoints; detach them first");
  }
  if (auto released = vnis_->release(name, options_.clock()); !released) {
    set_code(code, v1::INTERNAL);
    return make_error(released.error());
  }
  if (auto ok = network_store_->erase(name); !ok) {
    set_code(code, v1::INTERNAL);
    return ok;
  }
  remove_network_now(name);
  network_left(name);
  return {};
}

Result<v1::NetworkInfo> NodeState::get_network(const std::string& name, v1::ErrorCode* code) const {
  set_code(code, v1::OK);
  auto it = networks_.find(name);
  if (it == networks_.end()) {
    set_code(code, v1::NOT_FOUND);
    return make_error("network '" + name + "' does not exist on this node");
  }
  return info_of(it->second);
}

std::vector<v1::NetworkInfo> NodeState::list_networks() const {
  std::vector<v1::NetworkInfo> out;
  out.reserve(networks_.size());
  for (const auto& [name, n] : networks_) out.push_back(info_of(n));
  return out;
}

std::vector<v1::VniAllocation> NodeState::list_vnis() const {
  std::vector<v1::VniAllocation> out;
  for (const auto& r : vnis_->allocator().list()) {
    v1::VniAllocation a;
    a.set_vni(r.vni);
    a.set_pool(r.pool);
    a.set_network(r.state == vni::State::held ? "" : r.network);
    a.set_state(vni::state_name(r.state));
    a.set_held_until_unix_ms(r.held_until_ms);
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<NodeState::PoolUsage> NodeState::pool_usage() const {
  const auto& allocator = vnis_->allocator();
  std::vector<PoolUsage> out;
  std::map<std::string, std::size_t> index;
  for (const auto& pool : allocator.pools()) {
    PoolUsage u;
    u.name = pool.name;
    for (const auto& r : pool.ranges) u.size += r.size();
    u.exhausted = allocator.exhausted_count(pool.name);
    index[pool.name] = out.size();
    out.push_back(std::move(u));
  }
  for (const auto& r : allocator.list()) {
    auto it = index.find(r.pool);
    if (it == index.end()) continue;  // pinned, or a pool removed by a reload
    (r.state == vni::State::held ? out[it->second].held : out[it->second].allocated)++;
  }
  return out;
}

std::vector<std::pair<std::string, const metrics::Histogram*>> NodeState::store_write_latency() const {
  std::vector<std::pair<std::string, const metrics::Histogram*>> out;
  out.emplace_back("vnis", &vnis_->store().write_latency());
  if (network_store_) out.emplace_back("networks", &network_store_->write_latency());
  if (endpoint_store_) out.emplace_back("endpoints", &endpoint_store_->write_latency());
  if (block_store_) out.emplace_back("blocks", &block_store_->write_latency());
  return out;
}

std::optional<std::uint32_t> NodeState::vni_of(const std::string& network) const {
  auto it = networks_.find(network);
  if (it == networks_.end()) return std::nullopt;
  return it->second.vni;
}

Status NodeState::reconfigure(const Config& config, std::vector<std::string>* notes) {
  NetworkChangeScope scope(*this);
  auto note = [&](std::string text) {
    if (notes) notes->push_back(std::move(text));
  };
  // Refuse the whole reload before changing anything if a network cannot be applied.
  for (const auto& n : config.networks) {
    auto it = networks_.find(n.name);
    if (it == networks_.end()) continue;
    if (n.pinned_vni != 0 && n.pinned_vni != it->second.vni)
      return make_error("network '" + n.name + "' has VNI " + std::to_string(it->second.vni) +
                        "; it cannot be re-pinned to " + std::to_string(n.pinned_vni) + " by a reload");
    if (n.subnet != it->second.config.subnet && endpoints_per_network_[n.name] > 0)
      return make_error("network '" + n.name + "' has endpoints; its subnet cannot change by a reload");
  }
  if (config.node.vtep_ip != config_.node.vtep_ip || config.node.underlay_mtu != config_.node.underlay_mtu)
    note("node.vtep_ip/underlay_mtu changes take effect at restart (the dataplane owns them)");
  if (auto ok = vnis_->allocator().reconfigure(config.pools, config.hold_down_ms); !ok) return ok;
  const Config old = config_;
  config_ = config;
  config_.node = old.node;
  std::set<std::string> wanted;
  pending_.clear();  // the new config says which networks are wanted
  for (const auto& n : config.networks) {
    wanted.insert(n.name);
    v1::ErrorCode code = v1::OK;
    auto added = add_network(n, true, &code);
    if (!added && code == v1::UNAVAILABLE && options_.allocator) {
      pending_[n.name] = n;
      note("network '" + n.name + "' waits for the federation store: " + added.error());
      continue;
    }
    if (!added) return make_error("network '" + n.name + "': " + added.error());
  }
  std::vector<std::string> gone;
  for (auto& [name, n] : networks_)
    if (n.from_config && !wanted.count(name)) gone.push_back(name);
  for (const auto& name : gone) {
    auto& n = networks_[name];
    if (endpoints_per_network_[name] > 0) {
      n.orphaned = true;
      note("network '" + name + "' left the config but has endpoints: kept until they detach");
      continue;
    }
    n.orphaned = true;
    if (auto ok = remove_network(name, nullptr); !ok) return ok;
    note("network '" + name + "' removed (left the config)");
  }
  return {};
}

Status NodeState::expire_hold_downs() { return vnis_->expire(options_.clock()); }

// ---------------------------------------------------------------- endpoints

dp::Endpoint NodeState::dp_endpoint(const Endpoint& endpoint) {
  const v1::EndpointInfo& info = endpoint.info;
  dp::Endpoint e;
  e.set_id(endpoint_id(info.spec().container_id(), info.spec().ifname()));
  e.set_vni(info.vni());
  e.set_ip(info.spec().ip());
  e.set_mac(info.spec().mac());
  e.set_iface(info.spec().host_iface());
  e.set_identity(endpoint.identity);
  return e;
}

void NodeState::set_endpoint_identities(const std::function<std::uint32_t(const v1::EndpointInfo&)>& identity_of) {
  TablesDelta delta;
  for (auto& [id, e] : endpoints_) {
    const std::uint32_t identity = identity_of(e.info);
    if (identity == e.identity) continue;
    e.identity = identity;
    delta.endpoints.push_back(dp_endpoint(e));
  }
  if (!delta.empty()) publish(delta);
}

v1::EndpointInfo NodeState::with_status(const Endpoint& e) const {
  v1::EndpointInfo info = e.info;
  info.set_in_dataplane(false);
  info.clear_dataplane_error();
  if (sink_ == nullptr || !sink_->ready()) {
    info.set_dataplane(v1::DP_NOT_CONNECTED);
    info.set_dataplane_error(sink_ == nullptr ? "vxfedd has no dataplane connection"
                                              : "the dataplane is not connected to vxfedd, or has not applied its tables yet");
  } else if (sink_->carries(dp_endpoint(e))) {
    info.set_dataplane(v1::DP_CARRIED);
    info.set_in_dataplane(true);
  } else if (auto reason = sink_->refusal(endpoint_id(e.info.spec().container_id(), e.info.spec().ifname()))) {
    info.set_dataplane(v1::DP_REFUSED);
    info.set_dataplane_error(*reason);
  } else {
    info.set_dataplane(v1::DP_PENDING);
  }
  return info;
}

Result<v1::EndpointInfo> NodeState::attach(const v1::EndpointSpec& requested, v1::ErrorCode* code) {
  set_code(code, v1::INVALID_ARGUMENT);
  v1::EndpointSpec spec = requested;
  if (spec.container_id().empty() || spec.container_id().size() > 256 || spec.container_id().find('/') != std::string::npos)
    return make_error("container_id must be 1..256 characters without '/'");
  if (!valid_iface_name(spec.ifname())) return make_error("ifname '" + spec.ifname() + "' is not an interface name (1..15 characters)");
  if (!valid_iface_name(spec.host_iface()))
    return make_error("host_iface '" + spec.host_iface() + "' is not an interface name (1..15 characters)");
  auto network = networks_.find(spec.network());
  if (network == networks_.end()) {
    set_code(code, v1::NOT_FOUND);
    return make_error("network '" + spec.network() + "' does not exist on this node");
  }
  const auto ip = net::Ipv4Addr::parse(spec.ip());
  if (!ip) return make_error("ip: " + ip.error() + "; give the address alone, without a prefix length");
  const auto subnet = *net::Ipv4Prefix::parse(network->second.config.subnet);  // validated when the network was added
  if (!subnet.contains(*ip) || *ip == subnet.network() || *ip == subnet.last())
    return make_error("ip " + spec.ip() + " is not a host address of network '" + spec.network() + "' (" + subnet.str() + ")");
  if (spec.ip() == network->second.config.gateway) return make_error("ip " + spec.ip() + " is the network's gateway");
  // Other nodes route this node's block to it and nothing else: an address outside it would
  // be unreachable from them (and may be another node's pod's).
  if (!in_node_blocks(network->second, *ip)) {
    std::string blocks = network->second.block;
    for (const auto& b : network->second.more_blocks) blocks += ", " + b;
    const char* noun = network->second.more_blocks.empty() ? "block " : "blocks ";
    return make_error("ip " + spec.ip() + " is outside this node's " + noun + blocks + " of network '" +
                      spec.network() + "'; its IPAM must hand out addresses of the " + noun +
                      "(GetNetwork node_blocks)");
  }
  const auto mac = net::parse_mac(spec.mac());
  if (!mac) return make_error("mac: " + mac.error());
  if (net::is_multicast(*mac)) return make_error("mac " + spec.mac() + " is multicast");
  spec.set_mac(net::format_mac(*mac));  // one spelling (lower case), so a repeated attach compares equal
  const std::string id = endpoint_id(spec.container_id(), spec.ifname());
  if (auto have = endpoints_.find(id); have != endpoints_.end()) {
    const auto& s = have->second.info.spec();
    std::string diff;
    if (s.network() != spec.network()) diff = "network " + s.network();
    else if (s.ip() != spec.ip()) diff = "ip " + s.ip();
    else if (s.mac() != spec.mac()) diff = "mac " + s.mac();
    else if (s.host_iface() != spec.host_iface()) diff = "host_iface " + s.host_iface();
    if (diff.empty()) {
      set_code(code, v1::OK);
      return with_status(have->second);  // a retried ADD: same answer
    }
    set_code(code, v1::ALREADY_EXISTS);
    return make_error("endpoint " + id + " is already attached with " + diff + "; detach it first");
  }
  if (network->second.orphaned) {
    set_code(code, v1::NOT_FOUND);
    return make_error("network '" + spec.network() + "' was removed from the config; no new endpoints");
  }
  if (auto owner = ip_owner_.find({spec.network(), spec.ip()}); owner != ip_owner_.end()) {
    set_code(code, v1::ALREADY_EXISTS);
    return make_error("ip " + spec.ip() + " in network '" + spec.network() + "' is already used by endpoint " + owner->second);
  }
  Endpoint e;
  *e.info.mutable_spec() = spec;
  e.info.set_vni(network->second.vni);
  e.info.set_created_unix_ms(options_.clock());
  if (auto ok = endpoint_store_->put(id, e.info.SerializeAsString()); !ok) {
    set_code(code, v1::INTERNAL);
    return make_error("endpoint " + id + " could not be saved: " + ok.error());
  }
  TablesDelta delta;
  delta.endpoints.push_back(dp_endpoint(e));
  ip_owner_[{spec.network(), spec.ip()}] = id;
  ++endpoints_per_network_[spec.network()];
  auto& stored = endpoints_[id] = std::move(e);
  publish(delta);
  if (auto ip = net::Ipv4Addr::parse(spec.ip())) reach_changed(stored.info.vni(), net::Ipv4Prefix::make(*ip, 32));
  set_code(code, v1::OK);
  return with_status(stored);
}

Status NodeState::remove_endpoint(const std::string& id) {
  auto it = endpoints_.find(id);
  if (it == endpoints_.end()) return {};
  if (auto ok = endpoint_store_->erase(id); !ok) return make_error("endpoint " + id + " could not be removed: " + ok.error());
  const std::string network = it->second.info.spec().network();
  const std::uint32_t vni = it->second.info.vni();
  const auto ip = net::Ipv4Addr::parse(it->second.info.spec().ip());
  ip_owner_.erase({network, it->second.info.spec().ip()});
  endpoints_.erase(it);
  TablesDelta delta;
  delta.removed_endpoints.push_back(id);
  publish(delta);
  if (ip) reach_changed(vni, net::Ipv4Prefix::make(*ip, 32));
  auto count = endpoints_per_network_.find(network);
  if (count != endpoints_per_network_.end() && count->second > 0) --count->second;
  // The last endpoint of a network that left the config takes the network with it.
  auto net = networks_.find(network);
  if (net != networks_.end() && net->second.orphaned && endpoints_per_network_[network] == 0)
    (void)remove_network(network, nullptr);
  return {};
}

Status NodeState::detach(const std::string& container_id, const std::string& ifname, v1::ErrorCode* code) {
  NetworkChangeScope scope(*this);  // the last endpoint of an orphaned network removes it
  set_code(code, v1::OK);
  if (container_id.empty() || ifname.empty()) {
    set_code(code, v1::INVALID_ARGUMENT);
    return make_error("detach needs container_id and ifname");
  }
  if (auto ok = remove_endpoint(endpoint_id(container_id, ifname)); !ok) {
    set_code(code, v1::INTERNAL);
    return ok;
  }
  return {};
}

Result<v1::EndpointInfo> NodeState::check(const std::string& container_id, const std::string& ifname,
                                          v1::ErrorCode* code) const {
  set_code(code, v1::OK);
  auto it = endpoints_.find(endpoint_id(container_id, ifname));
  if (it == endpoints_.end()) {
    set_code(code, v1::NOT_FOUND);
    return make_error("endpoint " + endpoint_id(container_id, ifname) + " is not attached");
  }
  return with_status(it->second);
}

std::vector<v1::EndpointInfo> NodeState::list_endpoints() const {
  std::vector<v1::EndpointInfo> out;
  out.reserve(endpoints_.size());
  for (const auto& [id, e] : endpoints_) out.push_back(with_status(e));
  return out;
}

Result<std::vector<v1::EndpointSpec>> NodeState::garbage_collect(const v1::GarbageCollect& request, v1::ErrorCode* code) {
  NetworkChangeScope scope(*this);
  set_code(code, v1::OK);
  std::set<std::string> valid;
  for (const auto& a : request.valid()) valid.insert(endpoint_id(a.container_id(), a.ifname()));
  std::set<std::string> networks(request.networks().begin(), request.networks().end());
  std::vector<std::string> doomed;
  std::vector<v1::EndpointSpec> removed;
  for (const auto& [id, e] : endpoints_) {
    if (valid.count(id)) continue;
    if (!networks.empty() && !networks.count(e.info.spec().network())) continue;
    doomed.push_back(id);
    removed.push_back(e.info.spec());
  }
  for (const auto& id : doomed) {
    if (auto ok = remove_endpoint(id); !ok) {
      set_code(code, v1::INTERNAL);
      return make_error(ok.error());
    }
  }
  return removed;
}

// ---------------------------------------------------------------- routes

namespace {

// A network's static routes as RemoteRoutes. The config was validated when it was loaded
// (daemon_config.cpp), so nothing here fails; VTEPs are sorted like every source's.
std::vector<RemoteRoute> static_routes_of(const NetworkConfig& config, std::uint32_t vni) {
  std::vector<RemoteRoute> out;
  for (const auto& s : config.static_routes) {
    auto prefix = net::Ipv4Prefix::parse(s.prefix);
    if (!prefix) continue;
    RemoteRoute r{*prefix, vni, {}, {}};
    for (const auto& v : s.vteps)
      if (auto a = net::Ipv4Addr::parse(v)) r.vteps.push_back(*a);
    std::sort(r.vteps.begin(), r.vteps.end());
    r.vteps.erase(std::unique(r.vteps.begin(), r.vteps.end()), r.vteps.end());
    if (!r.vteps.empty()) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

void NodeState::RouteVersions::erase(RouteOrigin origin) {
  if (origin == RouteOrigin::static_config) static_.reset();
  else learned_.reset();
}

void NodeState::RouteVersions::set(RouteOrigin origin, const RemoteRoute& route) {
  if (origin == RouteOrigin::static_config) static_ = std::make_unique<RemoteRoute>(route);
  else learned_ = route;
}

const RemoteRoute* NodeState::effective_route(const RouteKey& key) const {
  auto it = routes_.find(key);
  if (it == routes_.end() || it->second.empty()) return nullptr;
  return &it->second.best();
}

void NodeState::collect_route_change(const RouteKey& key, const RemoteRoute* before, TablesDelta& delta) const {
  if (!network_of_vni_.count(key.vni)) return;  // no network: not in the dataplane
  const RemoteRoute* after = effective_route(key);
  if (after == nullptr) {
    if (before != nullptr) delta.removed_routes.push_back(key);
    return;
  }
  if (before != nullptr && before->vteps == after->vteps) return;
  delta.routes.push_back(*after);
}

void NodeState::set_static_routes(const Network& network, TablesDelta* delta) {
  std::map<RouteKey, RemoteRoute> wanted;
  for (auto& r : static_routes_of(network.config, network.vni)) wanted[r.key()] = std::move(r);
  std::vector<RouteKey> keys;
  for (auto it = routes_.lower_bound(RouteKey{network.vni, {}}); it != routes_.end() && it->first.vni == network.vni; ++it)
    if (it->second.has(RouteOrigin::static_config)) keys.push_back(it->first);
  for (const auto& [key, route] : wanted) keys.push_back(key);
  for (const auto& key : keys) {
    std::optional<RemoteRoute> before;
    if (const auto* e = effective_route(key)) before = *e;
    auto w = wanted.find(key);
    if (w == wanted.end()) {
      auto& versions = routes_[key];
      versions.erase(RouteOrigin::static_config);
      if (versions.empty()) routes_.erase(key);
    } else {
      routes_[key].set(RouteOrigin::static_config, w->second);
    }
    gbp_vteps_.route_changed(before ? &*before : nullptr, effective_route(key));
    if (delta) collect_route_change(key, before ? &*before : nullptr, *delta);
  }
  if (delta) take_gbp_vteps(*delta);
}

void NodeState::apply_routes(RouteOrigin origin, const RouteUpdate& update) {
  TablesDelta delta;
  std::map<RouteKey, std::optional<RemoteRoute>> before;  // effective route before the update
  auto remember = [&](const RouteKey& key) {
    if (before.count(key)) return;
    const auto* e = effective_route(key);
    before[key] = e ? std::optional<RemoteRoute>(*e) : std::nullopt;
  };
  auto erase = [&](const RouteKey& key) {
    auto it = routes_.find(key);
    if (it == routes_.end()) return;
    remember(key);
    it->second.erase(origin);
    if (it->second.empty()) routes_.erase(it);
  };
  if (update.full) {
    std::vector<RouteKey> mine;
    for (const auto& [key, versions] : routes_)
      if (versions.has(origin)) mine.push_back(key);
    for (const auto& key : mine) erase(key);
  }
  for (const auto& k : update.removals) erase(k);
  for (const auto& r : update.upserts) {
    if (r.vni == 0 || r.vteps.empty()) continue;  // a source's bug: never a route without VNI or VTEP
    remember(r.key());
    routes_[r.key()].set(origin, r);
  }
  for (const auto& [key, was] : before) {
    gbp_vteps_.route_changed(was ? &*was : nullptr, effective_route(key));
    collect_route_change(key, was ? &*was : nullptr, delta);
  }
  take_gbp_vteps(delta);
  if (!delta.empty()) publish(delta);
}

void NodeState::take_gbp_vteps(TablesDelta& delta) {
  const auto changes = gbp_vteps_.take_changes();
  for (const auto& ip : changes.now_gbp) {
    dp::Vtep v;
    v.set_ip(ip.str());
    v.set_gbp(true);
    delta.vteps.push_back(std::move(v));
  }
  for (const auto& ip : changes.no_longer) delta.removed_vteps.push_back(ip.str());
}

std::vector<v1::RouteInfo> NodeState::list_routes() const {
  std::vector<v1::RouteInfo> out;
  for (const auto& [key, versions] : routes_) {
    if (versions.empty()) continue;
    const RouteOrigin origin = versions.best_origin();
    const RemoteRoute& route = versions.best();
    v1::RouteInfo info;
    auto n = network_of_vni_.find(key.vni);
    info.set_network(n != network_of_vni_.end() ? n->second : "");
    info.set_vni(key.vni);
    info.set_prefix(key.prefix.str());
    for (const auto& v : route.vteps) info.add_vteps(v.str());
    info.set_source(route_origin_name(origin));
    info.set_peer(route.peer.value != 0 ? route.peer.str() : "");
    out.push_back(std::move(info));
  }
  return out;
}

std::size_t NodeState::route_count() const {
  std::size_t n = 0;
  for (const auto& [key, versions] : routes_)
    if (network_of_vni_.count(key.vni) && !versions.empty()) ++n;
  return n;
}

// ---------------------------------------------------------------- dataplane

void NodeState::publish(const TablesDelta& delta) {
  // A network that (re)appears brings the Service entries held for its VNI: they stayed out of
  // the dataplane while it had no such network (set_services, tables()), and an entry the
  // compiler gives again unchanged is not published again.
  // Network policy entries likewise.
  if (sink_ && !delta.networks.empty() && (!services_.empty() || !policies_.empty())) {
    TablesDelta with = delta;
    std::set<std::uint32_t> vnis;
    for (const auto& n : delta.networks) vnis.insert(n.vni());
    for (const auto& [id, entry] : services_)
      if (vnis.count(entry.vni())) with.services.push_back(entry);
    for (const auto& [vni, entry] : policies_)
      if (vnis.count(vni)) with.policies.push_back(entry);
    sink_->publish(with);
  } else if (sink_) {
    sink_->publish(delta);
  }
  // After the sink: the observer's own changes (service entries) then follow the routes they
  // rest on. Routes are the only part of a delta reach_changed() is told from here.
  if (!reach_observer_) return;
  for (const auto& r : delta.routes) reach_changed(r.vni, r.prefix);
  for (const auto& k : delta.removed_routes) reach_changed(k.vni, k.prefix);
}

bool NodeState::reaches(std::uint32_t vni, net::Ipv4Addr address) const {
  auto network = network_of_vni_.find(vni);
  if (network == network_of_vni_.end()) return false;
  if (ip_owner_.count({network->second, address.str()})) return true;
  for (int len = 32; len >= 0; --len) {
    auto it = routes_.find(RouteKey{vni, net::Ipv4Prefix::make(address, static_cast<unsigned>(len))});
    if (it != routes_.end() && !it->second.empty()) return true;
  }
  return false;
}

void NodeState::set_services(const std::vector<dp::Service>& upserts, const std::vector<std::string>& removals) {
  TablesDelta delta;
  for (const auto& entry : upserts) {
    auto it = services_.find(entry.id());
    if (it != services_.end() && it->second.SerializeAsString() == entry.SerializeAsString()) continue;
    services_[entry.id()] = entry;
    if (network_of_vni_.count(entry.vni())) delta.services.push_back(entry);
  }
  for (const auto& id : removals) {
    auto it = services_.find(id);
    if (it == services_.end()) continue;
    const bool sent = network_of_vni_.count(it->second.vni()) > 0;
    services_.erase(it);
    if (sent) delta.removed_services.push_back(id);
  }
  if (!delta.empty()) publish(delta);
}

void NodeState::set_policies(const std::vector<dp::NetworkPolicy>& upserts, const std::vector<std::uint32_t>& given,
                             bool complete) {
  TablesDelta delta;
  std::vector<std::uint32_t> removals = given;
  if (complete)
    for (const auto& [vni, entry] : policies_)
      if (std::none_of(upserts.begin(), upserts.end(), [vni](const auto& u) { return u.vni() == vni; }))
        removals.push_back(vni);
  for (const auto& entry : upserts) {
    policies_[entry.vni()] = entry;
    if (network_of_vni_.count(entry.vni())) delta.policies.push_back(entry);
  }
  for (auto vni : removals) {
    if (!policies_.erase(vni)) continue;
    if (network_of_vni_.count(vni)) delta.removed_policies.push_back(vni);
  }
  if (!options_.state_dir.empty() && (!upserts.empty() || !removals.empty()))
    (void)save_policy_cache(options_.state_dir + "/policies.cache", policies_);  // a cache: the next listing corrects it
  if (!delta.empty()) publish(delta);
}

dp::Tables NodeState::tables() const {
  dp::Tables t;
  for (const auto& [name, n] : networks_) *t.add_networks() = dp_network(n);
  for (const auto& [id, e] : endpoints_) *t.add_endpoints() = dp_endpoint(e);
  for (const auto& [key, versions] : routes_) {
    if (!network_of_vni_.count(key.vni) || versions.empty()) continue;
    to_wire(versions.best(), t.add_routes());
  }
  for (const auto& [id, entry] : services_)
    if (network_of_vni_.count(entry.vni())) *t.add_services() = entry;
  for (const auto& [vni, entry] : policies_)
    if (network_of_vni_.count(vni)) *t.add_policies() = entry;
  for (const auto& ip : gbp_vteps_.gbp_vteps()) {
    auto* v = t.add_vteps();
    v->set_ip(ip.str());
    v->set_gbp(true);
  }
  return t;
}

}  // namespace vxfed::control
