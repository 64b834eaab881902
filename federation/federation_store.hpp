// The federation model on top of a Kv (etcd): one VNI per network across every cluster, VNI
// pools and hold-down federation-wide, node registrations, and per-node pod blocks of each
// network's subnet. Key schema: schema.hpp; the rules for operators: docs/federation.md.
//
// Every decision is a guarded transaction: a node reads, decides with the same pure logic a
// single node uses (vni::Allocator for VNIs, pick_block for blocks), and writes only if
// nothing it read has changed since; otherwise it reads again. So the same network gets the
// same VNI whoever creates it first and however many create it at once, two networks never
// share a VNI, and two nodes never own one block. No I/O besides the Kv, no clock: callers
// pass now_ms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "federation/blocks.hpp"
#include "federation/kv.hpp"
#include "federation/schema.hpp"
#include "vni/pool.hpp"

namespace vxfed::federation {

struct FederationOptions {
  std::string node;               // this node's name (a key element: no '/')
  std::string vtep;
  std::string cluster;
  bool gbp = false;               // the node's forwarder takes VXLAN-GBP (NodeRecord.gbp)
  PoolsRecord pools;              // seeds the store when it has none; the store's are used after
  std::int64_t node_ttl_s = 15;   // the node's registration lives this long without keep-alive
  std::uint64_t block_release_after_ms = 24ull * 3600 * 1000;  // a gone node keeps its blocks this long
  unsigned max_attempts = 64;     // transaction retries under contention before giving up
};

struct NetworkRequest {
  std::string name;
  vni::Labels labels;             // select the pool (the first creator's labels are kept)
  std::uint32_t pinned_vni = 0;
  std::string subnet;             // this node's cluster's pod CIDR on the network
  unsigned block_len = kDefaultBlockLength;
};

// One network as a node holds it: the store's answer, and the node's local copy of it.
struct Membership {
  std::string network;
  std::uint32_t vni = 0;
  std::string pool;
  vni::Labels labels;
  unsigned block_len = kDefaultBlockLength;
  std::string block;              // this node's block, "10.244.3.0/24"
  // The blocks it claimed after that one when its blocks were full (v1/blocks/ names this
  // node as their owner; node-networks holds the first only), lowest first.
  std::vector<std::string> more_blocks;
  bool operator==(const Membership&) const = default;
};

struct ReconcileReport {
  std::size_t restored = 0;             // records the store had lost, put back from the local copy
  std::size_t left = 0;                 // memberships in the store the node no longer has: dropped
  std::size_t released = 0;             // further blocks the store gave the node and its copy lacks: released
  std::vector<std::string> conflicts;   // store and local copy disagree; the node keeps its own
};

class FederationStore {
 public:
  FederationStore(Kv& kv, FederationOptions options);

  // Refuses names that cannot be key elements.
  static StoreStatus validate_name(const std::string& what, const std::string& name);

  // The federation's pools; seeds them from the options when the store has none.
  StoreResult<PoolsRecord> pools();

  // The network's VNI (created if the federation has no such network) and this node's block
  // of `request.subnet` (allocated on first use; the same node name gets the same block).
  StoreResult<Membership> join(const NetworkRequest& request, std::uint64_t now_ms);

  // One more block of the network for this node, because every block it has is full
  // (Calico's block affinity): the lowest free block of the network's block length inside
  // `subnet` (this node's cluster's pod CIDR on it), claimed in one transaction guarded by
  // "that block is free, this node is still a member, the network is unchanged". The node
  // must have joined. EXHAUSTED naming the network and the subnet when no block is free.
  // Such a block goes back through reconcile(): the node drops it from its copy (vxfedd, once
  // it has stayed empty for a grace period) and the next reconcile releases it.
  StoreResult<std::string> claim_more(const std::string& network, const std::string& subnet);

  // This node stops using the network: its blocks are freed at once (its pods are gone); the
  // last node out releases the VNI, held down for the pools' hold-down.
  StoreStatus leave(const std::string& network, std::uint64_t now_ms);

  // Registration: a lease, v1/alive/<node> on it, and v1/nodes/<node>.
  StoreStatus register_node(std::uint64_t now_ms);
  // Renews the lease; registers again when it is gone (expired, or the store was replaced).
  StoreStatus keep_alive(std::uint64_t now_ms);
  std::int64_t lease() const { return lease_; }

  // Nodes without a live registration are marked gone; once gone for block_release_after_ms
  // their blocks and memberships are released (and networks nobody uses any more). Returns
  // how many nodes were released. Any node may run it: every step is guarded.
  StoreResult<std::size_t> collect_gone_nodes(std::uint64_t now_ms);

  // Whether this node is the federation's collector: the one node (holder of v1/collector, on
  // its registration lease) that runs collect_gone_nodes and expire_hold_downs, so that their
  // scans of every node are done once per interval, not once per node. Takes the role when
  // nobody holds it; a collector that stops loses it with its lease.
  StoreResult<bool> collector();

  // Forgets held VNI records whose hold-down ended.
  StoreStatus expire_hold_downs(std::uint64_t now_ms);

  // At (re)connection: asserts the node's local copy. What the store lost (a wiped or new
  // cluster, a restored old backup) is put back exactly as the node has it; memberships the
  // store has and the node does not are left; disagreements are reported, never overwritten.
  StoreResult<ReconcileReport> reconcile(const std::vector<Membership>& local, std::uint64_t now_ms);

  const FederationOptions& options() const { return options_; }

 private:
  enum class Claim { done, retry };
  StoreResult<Claim> claim_block(const NetworkRequest& request, const Block& subnet, const KeyValue& network_kv,
                                 Membership& out);
  StoreStatus claim_exact_block(const Membership& local, ReconcileReport& report);
  StoreStatus reassert_more_blocks(const Membership& local, ReconcileReport& report);
  StoreStatus erase_more_blocks(const std::string& node, const std::string& network, const std::string& first,
                                const std::vector<Compare>& guard);
  StoreStatus release_if_unused(const std::string& network, std::uint64_t now_ms);
  StoreResult<std::int64_t> restore_network(const Membership& local, std::uint64_t now_ms, ReconcileReport& report);
  StoreStatus release_node(const std::string& node, std::uint64_t now_ms);

  Kv& kv_;
  FederationOptions options_;
  std::int64_t lease_ = 0;
};

}  // namespace vxfed::federation
