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
// blocks everywhere; blocks outside the subnet are ignored). EXHAUSTED, naming the network,
// when every block is taken.
StoreResult<Block> pick_block(const std::string& network, const Block& subnet, unsigned block_len,
                              const std::vector<Block>& taken);

}  // namespace vxfed::federation
