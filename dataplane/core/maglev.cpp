// Maglev lookup-table population (maglev.hpp): every backend walks its own permutation of the
// M slots (offset + j * skip mod M, M prime so any skip visits every slot) and takes the next
// slot no one holds yet; turns go round the backends in id order until the table is full.
// Weights: a backend earns `weight` credit per round and takes one turn per `max weight` of
// credit, so the backend with the largest weight takes a turn every round and one with half
// that weight every other round.
#include "dataplane/core/maglev.hpp"

#include <algorithm>
#include <string>

namespace vxfed::dataplane {

namespace {

bool is_prime(std::uint32_t n) {
  if (n < 2) return false;
  for (std::uint32_t d = 2; d * d <= n; ++d)
    if (n % d == 0) return false;
  return true;
}

// A 64-bit mix (the splitmix64 finaliser's shifts and multipliers) of the id and a seed: the
// two seeds give the two independent hashes the paper uses for offset and skip.
std::uint64_t mix(std::uint64_t id, std::uint64_t seed) {
  std::uint64_t z = id + seed;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr std::uint64_t kOffsetSeed = 0x6d61676c65766f66ull;  // any two different constants
constexpr std::uint64_t kSkipSeed = 0x736b69706d61676cull;

}  // namespace

Result<MaglevTable> MaglevTable::build(std::span<const MaglevBackend> backends, std::uint32_t table_size) {
  if (table_size < 3 || table_size > kMaxSize || !is_prime(table_size))
    return make_error("maglev table size: must be a prime in 3.." + std::to_string(kMaxSize) + " (got " +
                      std::to_string(table_size) + ")");
  MaglevTable table;
  table.backends_.assign(backends.begin(), backends.end());
  std::sort(table.backends_.begin(), table.backends_.end(),
            [](const MaglevBackend& a, const MaglevBackend& b) { return a.id < b.id; });
  for (std::size_t i = 1; i < table.backends_.size(); ++i)
    if (table.backends_[i].id == table.backends_[i - 1].id)
      return make_error("maglev backends: id " + std::to_string(table.backends_[i].id) +
                        " is given twice (ids must be unique)");

  struct Walker {
    std::uint32_t backend;  // index into backends_
    std::uint32_t weight;
    std::uint64_t position;  // the next slot of this backend's permutation to try
    std::uint64_t skip;
    std::uint64_t credit;
  };
  std::vector<Walker> walkers;
  std::uint32_t max_weight = 0;
  for (std::uint32_t i = 0; i < table.backends_.size(); ++i) {
    const MaglevBackend& b = table.backends_[i];
    if (b.weight == 0) continue;
    walkers.push_back({i, b.weight, mix(b.id, kOffsetSeed) % table_size, mix(b.id, kSkipSeed) % (table_size - 1) + 1, 0});
    max_weight = std::max(max_weight, b.weight);
  }
  if (walkers.empty()) return table;
  if (walkers.size() > table_size)
    return make_error("maglev table size: " + std::to_string(table_size) + " slots cannot hold " +
                      std::to_string(walkers.size()) + " backends with a weight (choose a larger prime)");

  table.slots_.assign(table_size, kNoBackend);
  std::uint32_t filled = 0;
  // Every round the heaviest backend takes a slot, so this ends after at most M rounds.
  while (filled < table_size) {
    for (Walker& w : walkers) {
      w.credit += w.weight;
      while (w.credit >= max_weight && filled < table_size) {
        w.credit -= max_weight;
        while (table.slots_[w.position] != kNoBackend) w.position = (w.position + w.skip) % table_size;
        table.slots_[w.position] = w.backend;
        ++filled;
      }
      if (filled == table_size) break;
    }
  }
  return table;
}

}  // namespace vxfed::dataplane
