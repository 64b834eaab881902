#include "core/lpm_table.hpp"

#include <algorithm>
#include <new>

namespace vxfed::dataplane {

void LpmTable::build(std::vector<Entry> entries) {
  tbl8_.clear();
  // calloc: the kernel hands out zero pages lazily, so only painted parts cost memory.
  tbl24_.reset(static_cast<std::uint32_t*>(std::calloc(1u << 24, sizeof(std::uint32_t))));
  if (!tbl24_) throw std::bad_alloc();
  // Shorter prefixes first: a longer prefix painted later overrides them where it applies,
  // which is exactly longest-prefix match. Every /25../32 goes after all /0../24, so a
  // second-level group starts as a copy of its (final) first-level entry.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.len != b.len ? a.len < b.len : a.addr < b.addr;
  });
  std::uint32_t* t24 = tbl24_.get();
  for (const Entry& e : entries) {
    const std::uint32_t v = e.value + 1;
    if (e.len <= 24) {
      const std::uint32_t first = e.addr >> 8;
      const std::uint32_t count = 1u << (24 - e.len);
      std::fill(t24 + first, t24 + first + count, v);
      continue;
    }
    std::uint32_t& slot = t24[e.addr >> 8];
    if (!(slot & kGroup)) {
      const std::uint32_t group = static_cast<std::uint32_t>(tbl8_.size() / 256);
      tbl8_.insert(tbl8_.end(), 256, slot);
      slot = group | kGroup;
    }
    std::uint32_t* g = tbl8_.data() + ((slot & ~kGroup) << 8);
    const std::uint32_t first = e.addr & 0xff;
    const std::uint32_t count = 1u << (32 - e.len);
    std::fill(g + first, g + first + count, v);
  }
}

}  // namespace vxfed::dataplane
