// Per-node pod blocks: a network's subnet (one cluster's pod CIDR on it) cut into aligned
// blocks of one length, each owned by one node. Pure arithmetic on common/net's prefixes, no
// I/O: the store keeps who owns which block (federation_store.hpp).
#pragma once

#include <string>
#include <vector>

#include "common/net/ipv4.hpp"
#include "federation/kv.hpp"

namespace vxfed::federation {

inline constexpr unsigned kDefaultBlockLength = 24;

using Block = net::Ipv4Prefix;

// A block in a key, where '/' separates path elements: "10.244.3.0_24", and back.
std::string block_key_text(const Block& block);
StoreResult<Block> parse_block_key(const std::string& key_text);

// Checks that `block_len` blocks can be cut from `subnet` (block_len in subnet.len..30).
StoreStatus check_block_length(const std::string& network, const Block& subnet, unsigned block_len);

// The first block of `block_len` inside `subnet` that overlaps none of `taken` (the network's
// blocks everywhere; blocks outside the subnet are ignored). EXHAUSTED, naming the network and
// the subnet, when every block is taken. A node may own several blocks of a network (its first
// one, then one more each time its blocks are full), so the count is blocks, not nodes.
StoreResult<Block> pick_block(const std::string& network, const Block& subnet, unsigned block_len,
                              const std::vector<Block>& taken);

// The blocks a range of v1/blocks/<network>/ gives `node` (key: the block, value: its owner),
// lowest first; keys that are not blocks are skipped (reported where they are used).
std::vector<Block> blocks_owned_by(const std::vector<KeyValue>& blocks, const std::string& node);

}  // namespace vxfed::federation
