// Per-node pod blocks: a network's subnet (one cluster's pod CIDR on it) cut into aligned
// blocks of one length, each owned by one node. Pure arithmetic, no I/O: the store keeps who
// owns which block (federation_store.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "federation/kv.hpp"

namespace vxfed::federation {

inline constexpr unsigned kDefaultBlockLength = 24;

struct Block {
  std::uint32_t addr = 0;  // host order, host bits zero
  std::uint8_t len = 0;
  std::string str() const;         // "10.244.3.0/24"
  std::string key_text() const;    // "10.244.3.0_24": a block in a key, where '/' separates
  bool contains(const Block& other) const;
  bool overlaps(const Block& other) const;
  bool operator==(const Block&) const = default;
};

// "10.244.3.0/24" (host bits must be zero); nullopt otherwise.
std::optional<Block> parse_block(const std::string& text);
std::optional<Block> parse_block_key(const std::string& key_text);

// Checks that `block_len` blocks can be cut from `subnet` (block_len in subnet.len..32).
StoreStatus check_block_length(const std::string& network, const Block& subnet, unsigned block_len);

// The first block of `block_len` inside `subnet` that overlaps none of `taken` (the network's
// blocks everywhere; blocks outside the subnet are ignored). EXHAUSTED, naming the network,
// when every block is taken.
StoreResult<Block> pick_block(const std::string& network, const Block& subnet, unsigned block_len,
                              const std::vector<Block>& taken);

}  // namespace vxfed::federation
