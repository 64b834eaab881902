// Where a new network's VNI and this node's block of it come from when they are not the
// node's own decision: the federation store (control/federation/federation_link.hpp). Without one,
// NodeState allocates VNIs from its own pools and takes blocks from the config.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "control/daemon/daemon_config.hpp"
#include "proto/control.pb.h"

namespace vxfed::control {

struct NetworkGrant {
  std::uint32_t vni = 0;
  std::string pool;    // "" when pinned
  std::string block;   // this node's block of the network's subnet, "10.244.3.0/24"
};

// One network as this node holds it (its local copy, what it re-asserts to the store).
struct LocalNetwork {
  NetworkConfig config;
  std::uint32_t vni = 0;
  std::string pool;
  std::string block;
  std::vector<std::string> more_blocks;  // claimed when its blocks were full
};

class NetworkAllocator {
 public:
  virtual ~NetworkAllocator() = default;
  // The network's VNI and this node's block. On failure `code` says what kind: UNAVAILABLE
  // when the store cannot be reached (the message names it), EXHAUSTED, ALREADY_EXISTS, ...
  virtual Result<NetworkGrant> join(const NetworkConfig& network, v1::ErrorCode* code) = 0;
  // The node removed the network (it had no endpoints left). Best effort: what cannot be told
  // now is settled at the next reconcile.
  virtual void left(const std::string& network) = 0;

  // Before an API request that will call join(network): gets the grant without holding the
  // caller's thread, then calls `done` on that thread, either OK (join() with the same
  // network then answers from what was fetched, without a store call) or with the refusal
  // (code and message as join() would give). The default: nothing to fetch.
  using Prepared = std::function<void(v1::ErrorCode code, const std::string& error)>;
  virtual void prepare(const NetworkConfig& network, Prepared done) {
    (void)network;
    done(v1::OK, {});
  }

  // One more block of the network for this node (its blocks are full), without holding the
  // caller's thread: `done` on it with OK and the block, or the refusal and its reason
  // (EXHAUSTED naming the subnet, UNAVAILABLE naming the store). The default: no store, so
  // nothing to claim from.
  using MoreClaimed = std::function<void(v1::ErrorCode code, const std::string& block_or_error)>;
  virtual void claim_more(const NetworkConfig& network, MoreClaimed done) {
    done(v1::EXHAUSTED, "network '" + network.name + "' has no federation store to claim another block from");
  }
};

}  // namespace vxfed::control
