#include "dataplane/core/lpm_table.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <new>

namespace vxfed::dataplane {

namespace {

constexpr std::size_t kTbl24Bytes = (std::size_t{1} << 24) * sizeof(std::uint32_t);  // 64 MiB
constexpr std::size_t kHugePage = std::size_t{2} << 20;

// Zero-filled, lazily backed, 2 MiB aligned, MADV_HUGEPAGE (where THP is "madvise" or
// "always"; elsewhere the advice is refused and 4 KiB pages are used: still correct).
std::uint32_t* map_first_level() {
  void* raw = mmap(nullptr, kTbl24Bytes + kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > start) munmap(raw, aligned - start);
  const std::uintptr_t end = start + kTbl24Bytes + kHugePage;
  if (end > aligned + kTbl24Bytes) munmap(reinterpret_cast<void*>(aligned + kTbl24Bytes), end - aligned - kTbl24Bytes);
  madvise(reinterpret_cast<void*>(aligned), kTbl24Bytes, MADV_HUGEPAGE);
  return reinterpret_cast<std::uint32_t*>(aligned);
}

}  // namespace

void LpmTable::Unmap::operator()(std::uint32_t* p) const { munmap(p, kTbl24Bytes); }

void LpmTable::build(std::vector<Entry> entries) {
  tbl8_.clear();
  tbl24_.reset(map_first_level());
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
