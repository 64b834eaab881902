#include "federation/blocks.hpp"

#include <algorithm>
#include <set>

namespace vxfed::federation {

std::string block_key_text(const Block& block) {
  std::string text = block.str();
  text[text.find('/')] = '_';
  return text;
}

StoreResult<Block> parse_block_key(const std::string& key_text) {
  std::string text = key_text;
  const auto sep = text.rfind('_');
  if (sep == std::string::npos) return store_error(Code::internal, "'" + key_text + "' is not a block (A.B.C.D_LEN)");
  text[sep] = '/';
  auto block = Block::parse(text);
  if (!block) return store_error(Code::internal, "'" + key_text + "' is not a block: " + block.error());
  return *block;
}

StoreStatus check_block_length(const std::string& network, const Block& subnet, unsigned block_len) {
  if (block_len < subnet.len || block_len > 30)
    return store_error(Code::invalid, "network '" + network + "': blocks of /" + std::to_string(block_len) +
                                          " cannot be cut from subnet " + subnet.str() + " (block length must be " +
                                          std::to_string(subnet.len) + "..30)");
  return Done{};
}

StoreResult<Block> pick_block(const std::string& network, const Block& subnet, unsigned block_len,
                              const std::vector<Block>& taken) {
  if (auto ok = check_block_length(network, subnet, block_len); !ok) return ok.store_error();
  const unsigned shift = 32 - block_len;
  const std::uint64_t count = std::uint64_t{1} << (block_len - subnet.len);
  std::set<std::uint64_t> used;       // indices of same-length blocks inside the subnet
  std::vector<Block> odd;             // other lengths that overlap the subnet (not expected)
  for (const auto& b : taken) {
    if (!b.overlaps(subnet)) continue;
    if (b.len == block_len) used.insert((b.addr - subnet.addr) >> shift);
    else odd.push_back(b);
  }
  for (std::uint64_t i = 0; i < count; ++i) {
    if (used.count(i)) continue;
    const Block candidate = Block::make(static_cast<std::uint32_t>(subnet.addr + (i << shift)), block_len);
    bool clash = false;
    for (const auto& b : odd) clash = clash || b.overlaps(candidate);
    if (!clash) return candidate;
  }
  return store_error(Code::exhausted, "network '" + network + "': every /" + std::to_string(block_len) +
                                          " block of subnet " + subnet.str() + " is taken (" + std::to_string(count) +
                                          " blocks); widen the subnet, use smaller blocks, or let gone nodes' "
                                          "blocks be released");
}

std::vector<Block> blocks_owned_by(const std::vector<KeyValue>& blocks, const std::string& node) {
  std::vector<Block> out;
  for (const auto& kv : blocks) {
    if (kv.value != node) continue;
    const auto slash = kv.key.rfind('/');
    if (auto b = parse_block_key(slash == std::string::npos ? kv.key : kv.key.substr(slash + 1))) out.push_back(*b);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace vxfed::federation
