#include "federation/blocks.hpp"

#include <charconv>
#include <set>

namespace vxfed::federation {

namespace {

std::uint32_t mask_of(unsigned len) { return len == 0 ? 0 : ~std::uint32_t{0} << (32 - len); }

std::optional<unsigned> parse_number(const std::string& text, unsigned max) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || value > max ||
      (text.size() > 1 && text[0] == '0'))
    return std::nullopt;
  return value;
}

std::optional<Block> parse_with(const std::string& text, char separator) {
  const auto sep = text.find(separator);
  if (sep == std::string::npos) return std::nullopt;
  std::uint32_t addr = 0;
  std::size_t start = 0;
  const std::string address = text.substr(0, sep);
  for (int i = 0; i < 4; ++i) {
    const auto dot = address.find('.', start);
    if ((i < 3) == (dot == std::string::npos)) return std::nullopt;
    auto octet = parse_number(address.substr(start, i < 3 ? dot - start : std::string::npos), 255);
    if (!octet) return std::nullopt;
    addr = addr << 8 | *octet;
    start = dot + 1;
  }
  auto len = parse_number(text.substr(sep + 1), 32);
  if (!len || (addr & mask_of(*len)) != addr) return std::nullopt;
  return Block{addr, static_cast<std::uint8_t>(*len)};
}

std::string format_addr(std::uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 0xff) + "." + std::to_string((a >> 8) & 0xff) +
         "." + std::to_string(a & 0xff);
}

}  // namespace

std::string Block::str() const { return format_addr(addr) + "/" + std::to_string(len); }
std::string Block::key_text() const { return format_addr(addr) + "_" + std::to_string(len); }

bool Block::contains(const Block& other) const { return other.len >= len && (other.addr & mask_of(len)) == addr; }
bool Block::overlaps(const Block& other) const { return contains(other) || other.contains(*this); }

std::optional<Block> parse_block(const std::string& text) { return parse_with(text, '/'); }
std::optional<Block> parse_block_key(const std::string& key_text) { return parse_with(key_text, '_'); }

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
    Block candidate{static_cast<std::uint32_t>(subnet.addr + (i << shift)), static_cast<std::uint8_t>(block_len)};
    bool clash = false;
    for (const auto& b : odd) clash = clash || b.overlaps(candidate);
    if (!clash) return candidate;
  }
  return store_error(Code::exhausted, "network '" + network + "': every /" + std::to_string(block_len) +
                                          " block of subnet " + subnet.str() + " is taken (" + std::to_string(count) +
                                          " blocks, one per node); widen the subnet, use smaller blocks, or let "
                                          "gone nodes' blocks be released");
}

}  // namespace vxfed::federation
