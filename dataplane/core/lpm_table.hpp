// An immutable DIR-24-8 longest-prefix-match table (the layout of DPDK's rte_lpm: a 2^24
// entry first level indexed by the top 24 bits, 256-entry second-level groups for prefixes
// longer than /24), built in one pass from the whole prefix list instead of rule by rule.
// Why not rte_lpm itself: rte_lpm_add scans every rule of the same depth, so 130,000 routes
// took 13 s to load (measured, perf: 83% in rte_lpm_add); this builds them in well under a
// second and looks up the same way (one or two memory reads). It also handles /0 and needs
// no EAL memory.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace vxfed::dataplane {

class LpmTable {
 public:
  static constexpr std::uint32_t kNone = ~0u;
  struct Entry {
    std::uint32_t addr;  // host order, host bits zero
    std::uint8_t len;    // 0..32
    std::uint32_t value; // < 2^31 - 1
  };

  // Entries must be unique by (addr, len).
  void build(std::vector<Entry> entries);

  // Value of the longest prefix containing ip (host order), or kNone.
  std::uint32_t lookup(std::uint32_t ip) const {
    if (!tbl24_) return kNone;
    std::uint32_t e = tbl24_.get()[ip >> 8];
    if (e & kGroup) e = tbl8_[((e & ~kGroup) << 8) | (ip & 0xff)];
    return e - 1;  // 0 (empty) becomes kNone
  }
  // The same on the raw levels (for burst loops that keep them in registers; t24 non-null).
  static std::uint32_t lookup_in(const std::uint32_t* t24, const std::uint32_t* t8, std::uint32_t ip) {
    std::uint32_t e = t24[ip >> 8];
    if (e & kGroup) [[unlikely]] e = t8[((e & ~kGroup) << 8) | (ip & 0xff)];
    return e - 1;
  }
  const std::uint32_t* tbl24() const { return tbl24_.get(); }  // null while empty
  const std::uint32_t* tbl8() const { return tbl8_.data(); }
  // First-level address for ip: prefetch it ahead of lookup.
  const void* first_level(std::uint32_t ip) const { return tbl24_ ? tbl24_.get() + (ip >> 8) : nullptr; }

  std::size_t groups() const { return tbl8_.size() / 256; }

 private:
  static constexpr std::uint32_t kGroup = 1u << 31;
  // The first level is an anonymous mapping (zero pages handed out lazily: only painted
  // parts cost memory) aligned to 2 MiB and advised for transparent huge pages: lookups of
  // 130k spread-out routes then miss the TLB on a few 2 MiB pages instead of hundreds of
  // 4 KiB ones.
  struct Unmap {
    void operator()(std::uint32_t* p) const;
  };
  std::unique_ptr<std::uint32_t, Unmap> tbl24_;  // value + 1, or group | kGroup; 0 = empty
  std::vector<std::uint32_t> tbl8_;
};

}  // namespace vxfed::dataplane
