// The federation store's key schema, version 1 (docs/federation.md describes it for
// operators). Every key lives under the client's prefix (default /vxfed) and this version:
//
//   v1/pools                          the VNI pools and hold-down, for the whole federation
//   v1/networks/<network>             network -> VNI, pool, block length
//   v1/vnis/<vni>                     VNI -> allocated/pinned/held, network (hold-down kept here)
//   v1/nodes/<node>                   node registration: VTEP, cluster, gone since
//   v1/alive/<node>                   present while the node's lease lives
//   v1/members/<network>/<node>       the node uses the network (the last one out releases it)
//   v1/node-networks/<node>/<network> the node's block of the network ("" until it has one)
//   v1/blocks/<network>/<a.b.c.d_len> block -> the node that owns it
//   v1/collector                      the node that releases gone nodes (on its lease)
//
// Values are JSON objects (plain text for members, node-networks and blocks), readable with
// `etcdctl get --prefix /vxfed/v1/`. A change of layout gets a new version prefix (v2/...),
// never an in-place reinterpretation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "federation/kv.hpp"
#include "vni/pool.hpp"

namespace vxfed::federation::keys {

inline constexpr const char* kSchema = "v1/";

inline std::string pools() { return std::string(kSchema) + "pools"; }
inline std::string networks() { return std::string(kSchema) + "networks/"; }
inline std::string network(const std::string& name) { return networks() + name; }
inline std::string vnis() { return std::string(kSchema) + "vnis/"; }
inline std::string vni(std::uint32_t v) { return vnis() + std::to_string(v); }
inline std::string nodes() { return std::string(kSchema) + "nodes/"; }
inline std::string node(const std::string& name) { return nodes() + name; }
inline std::string alives() { return std::string(kSchema) + "alive/"; }
inline std::string alive(const std::string& name) { return alives() + name; }
inline std::string members(const std::string& network) { return std::string(kSchema) + "members/" + network + "/"; }
inline std::string member(const std::string& network, const std::string& node) { return members(network) + node; }
inline std::string node_networks(const std::string& node) { return std::string(kSchema) + "node-networks/" + node + "/"; }
inline std::string node_network(const std::string& node, const std::string& network) {
  return node_networks(node) + network;
}
inline std::string blocks(const std::string& network) { return std::string(kSchema) + "blocks/" + network + "/"; }
inline std::string collector() { return std::string(kSchema) + "collector"; }

// The last path element of a key ("v1/networks/red" -> "red").
std::string leaf(const std::string& key);

}  // namespace vxfed::federation::keys

namespace vxfed::federation {

struct PoolsRecord {
  std::vector<vni::PoolSpec> pools;
  std::uint64_t hold_down_ms = vni::kDefaultHoldDownMs;
  bool operator==(const PoolsRecord& other) const;
};

struct NetworkRecord {
  std::uint32_t vni = 0;
  std::string pool;               // "" when pinned
  vni::Labels labels;
  unsigned block_len = 24;
  std::string created_by;         // node name
  std::uint64_t created_unix_ms = 0;
};

struct NodeRecord {
  std::string vtep;
  std::string cluster;
  std::uint64_t registered_unix_ms = 0;
  std::uint64_t gone_since_unix_ms = 0;  // 0: alive (or not yet noticed gone)
};

std::string encode(const PoolsRecord& record);
std::string encode(const NetworkRecord& record);
std::string encode(const NodeRecord& record);
std::string encode(const vni::Allocation& record);   // vni is the key's, not in the value

// Decoders name the key in their errors: a damaged record is reported, never guessed at.
StoreResult<PoolsRecord> decode_pools(const KeyValue& kv);
StoreResult<NetworkRecord> decode_network(const KeyValue& kv);
StoreResult<NodeRecord> decode_node(const KeyValue& kv);
StoreResult<vni::Allocation> decode_vni(const KeyValue& kv);

}  // namespace vxfed::federation
