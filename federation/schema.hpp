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
//   v1/policy/...                     network policy: identity numbers, policies, namespace and
//                                     pod labels (the keys below; docs/federation.md, "Policy")
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

// Network policy (policy_store.hpp). Everything lives under one prefix so that a snapshot of
// it is one range read at one revision. A node watches policies/ and identities/ (every policy
// and every identity's labels); pods/ it reads by key for its own pods only.
inline std::string policy_root() { return std::string(kSchema) + "policy/"; }
inline std::string identity_range() { return policy_root() + "identity-range"; }
inline std::string identities() { return policy_root() + "identities/"; }
inline std::string identity(std::uint32_t number) { return identities() + std::to_string(number); }
// canonical key (escaped: it holds '/' and newlines) -> number
inline std::string identity_keys() { return policy_root() + "identity-keys/"; }
// one key per pod holding the number: the reference count that etcd can guard ("none under")
inline std::string identity_users(std::uint32_t number) {
  return policy_root() + "identity-users/" + std::to_string(number) + "/";
}
inline std::string identity_users_all() { return policy_root() + "identity-users/"; }
inline std::string policies() { return policy_root() + "policies/"; }
inline std::string policies(const std::string& cluster) { return policies() + cluster + "/"; }
inline std::string policy(const std::string& cluster, const std::string& ns, const std::string& name) {
  return policies(cluster) + ns + "/" + name;
}
inline std::string namespaces() { return policy_root() + "namespaces/"; }
inline std::string namespace_key(const std::string& cluster, const std::string& ns) {
  return namespaces() + cluster + "/" + ns;
}
inline std::string pods() { return policy_root() + "pods/"; }
inline std::string pods(const std::string& cluster, const std::string& ns) { return pods() + cluster + "/" + ns + "/"; }
inline std::string pod(const std::string& cluster, const std::string& ns, const std::string& name) {
  return pods(cluster, ns) + name;
}

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
  // The node's forwarder takes VXLAN-GBP (its config's node.gbp). Absent in the previous
  // release's records: false. The decision's source; other nodes learn it from the GBP mark
  // on the node's routes, not by watching registrations (docs/federation.md, "Nodes").
  bool gbp = false;
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
