// Maglev consistent hashing (Eisenbud et al., "Maglev: A Fast and Reliable Software Network
// Load Balancer", NSDI 2016, section 3.4): a service's flows spread over its backends by a
// lookup table of prime size M that every backend fills from its own permutation of the
// slots, so removing one backend of N moves little more than the 1/N of flows it had.
//
// Built on the control side (allocation allowed) into an immutable table; a worker picks a
// backend for a new flow with one multiply and one load (docs/conventions.md: hot path). Which
// backend a flow got is remembered by connection tracking (conntrack.hpp), so a flow keeps it
// when the table is rebuilt; Maglev only decides for new flows. docs/conntrack.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/result.hpp"

namespace vxfed::dataplane {

struct MaglevBackend {
  // Stable across rebuilds and nodes (e.g. the backend's address and port packed, or an id
  // the control plane assigns): the permutation is derived from it, and the table is built
  // in id order, so the same set gives the same table in any input order on every node.
  std::uint64_t id = 0;
  // Share of the table: about weight / (sum of weights). 0: kept in the set, never picked
  // (a draining backend).
  std::uint32_t weight = 1;
};

class MaglevTable {
 public:
  static constexpr std::uint32_t kDefaultSize = 65537;  // prime; the paper's small table
  static constexpr std::uint32_t kMaxSize = 1u << 24;
  static constexpr std::uint32_t kNoBackend = 0xffffffffu;

  // Fails when `table_size` is not a prime in 3..kMaxSize, when two backends share an id, or
  // when more backends have a weight than the table has slots (M should be well above 100
  // times the number of backends for the shares to come out close to the weights).
  // No backend (or all of weight 0) is not an error: the table picks nothing.
  static Result<MaglevTable> build(std::span<const MaglevBackend> backends,
                                   std::uint32_t table_size = kDefaultSize);

  // The backend for a flow hash (any well-mixed 32-bit hash of the flow, e.g. flow_hash()),
  // as an index into backends(), or kNoBackend when none can be picked. The hash is mapped
  // onto 0..M-1 by multiply-shift (no division).
  std::uint32_t lookup(std::uint32_t flow_hash) const {
    if (slots_.empty()) return kNoBackend;
    return slots_[static_cast<std::uint32_t>((std::uint64_t{flow_hash} * slots_.size()) >> 32)];
  }

  // The backends in id order (the indices lookup() returns).
  const std::vector<MaglevBackend>& backends() const { return backends_; }
  // The whole table (empty when nothing can be picked): for tests and dumps.
  const std::vector<std::uint32_t>& slots() const { return slots_; }
  std::uint32_t size() const { return static_cast<std::uint32_t>(slots_.size()); }

 private:
  std::vector<MaglevBackend> backends_;
  std::vector<std::uint32_t> slots_;
};

}  // namespace vxfed::dataplane
