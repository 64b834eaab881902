#include "dataplane/core/mapped_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <new>
#include <vector>

namespace vxfed::dataplane {

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace

MappedRegion::MappedRegion(std::size_t bytes, bool huge_pages) {
  if (bytes == 0) return;
  const std::size_t page = page_size();
  bytes = (bytes + page - 1) / page * page;
  const std::size_t extra = huge_pages ? kHugePage : 0;
  void* raw = ::mmap(nullptr, bytes + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  auto start = reinterpret_cast<std::uintptr_t>(raw);
  std::uintptr_t aligned = start;
  if (huge_pages) {
    // Trim to a 2 MiB aligned range so that the whole region can be huge pages.
    aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
    if (aligned > start) ::munmap(raw, aligned - start);
    const std::uintptr_t end = start + bytes + extra;
    if (end > aligned + bytes) ::munmap(reinterpret_cast<void*>(aligned + bytes), end - aligned - bytes);
    // Where THP is "madvise" or "always" (Debian: madvise); elsewhere the advice is refused and
    // 4 KiB pages are used, still correct.
    ::madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);
  }
  base_ = reinterpret_cast<void*>(aligned);
  bytes_ = bytes;
}

MappedRegion::~MappedRegion() {
  if (base_) ::munmap(base_, bytes_);
}

MappedRegion& MappedRegion::operator=(MappedRegion&& o) noexcept {
  if (this != &o) {
    if (base_) ::munmap(base_, bytes_);
    base_ = std::exchange(o.base_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

std::size_t MappedRegion::resident_bytes() const {
  if (!base_) return 0;
  const std::size_t page = page_size();
  // In chunks, so that a 1 GiB reservation does not need a 256 KiB vector at once.
  constexpr std::size_t kChunkPages = 1u << 16;
  std::vector<unsigned char> vec(kChunkPages);
  std::size_t resident = 0;
  auto* p = static_cast<unsigned char*>(base_);
  for (std::size_t off = 0; off < bytes_; off += kChunkPages * page) {
    const std::size_t len = std::min(bytes_ - off, kChunkPages * page);
    if (::mincore(p + off, len, vec.data()) != 0) continue;
    const std::size_t pages = (len + page - 1) / page;
    for (std::size_t i = 0; i < pages; ++i) resident += (vec[i] & 1) * page;
  }
  return resident;
}

}  // namespace vxfed::dataplane
