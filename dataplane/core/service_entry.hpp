// A global service's VIP as the workers read it (docs/services.md, docs/conntrack.md): an
// immutable object reached through one word of ForwardingTables' (network, VIP) map, replaced
// whole by a Delta and freed after an RCU grace period (docs/conventions.md: table
// publication). Built on the control thread (tables_apply.cpp), never written after.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/core/maglev.hpp"

namespace vxfed::dataplane {

struct ServiceBackendWeight {
  std::uint32_t ip_be = 0;
  std::uint32_t weight = 0;
  bool operator==(const ServiceBackendWeight&) const = default;
};

struct ServicePortEntry {
  std::uint8_t protocol = 0;        // 6 or 17
  std::uint16_t port_be = 0;        // the VIP's port
  std::uint16_t target_port_be = 0; // the backends' port
  bool operator==(const ServicePortEntry&) const = default;
};

// Maglev table sizes a service gets when Service.table_size is 0, by its number of backends. A
// size that followed the backend count exactly would re-deal almost every new flow whenever a
// backend came or went; these tiers change only when the count crosses a boundary (crossing one
// re-deals new flows; established ones keep their backend through conntrack; vxfedd can pin a
// size with Service.table_size). About 200 slots per backend (Maglev's disruption stays within
// the 1/n + 2 % goal), except that 8,191 slots (16 KiB of 2-byte slots) serve up to 102
// backends, so that 10,000 services of 100 backends fit the 200 MB goal; docs/services.md
// ("Table size") has the disruption and memory measured for them.
struct ServiceTableTier {
  std::uint32_t max_backends;
  std::uint32_t size;  // a prime
};
inline constexpr ServiceTableTier kServiceTableTiers[] = {
    {1, 251}, {5, 1021}, {20, 4093}, {102, 8191}, {204, 16381}, {409, 32749}, {~0u, 65521}};
inline constexpr std::uint32_t kMaxServiceBackends = 4096;
inline std::uint32_t default_service_table_size(std::size_t backends) {
  for (const ServiceTableTier& t : kServiceTableTiers)
    if (backends <= t.max_backends) return t.size;
  return kServiceTableTiers[std::size(kServiceTableTiers) - 1].size;
}

struct ServiceEntry {
  static constexpr std::uint32_t kNoBackend = MaglevTable::kNoBackend;

  std::uint32_t vip_be = 0;
  std::uint16_t network = 0;
  // Unique per published entry of any service: a conntrack entry remembers the generation it
  // picked under, so that a changed service is noticed and the flow's backend checked again.
  std::uint32_t generation = 0;
  std::vector<ServicePortEntry> ports;       // a few; scanned
  std::vector<std::uint32_t> backend_ip_be;  // Maglev's order (its ids: the addresses, ascending)
  // Maglev's lookup table with 2-byte slots (a service has fewer than 65,536 backends): half
  // the memory of MaglevTable's own. Empty: no backend can be picked.
  std::vector<std::uint16_t> slots;
  // Per backend (backend_ip_be's order): its new-flow counter slot (service_counters.hpp);
  // empty when the tables were built without counters (then nothing is counted per backend).
  std::vector<std::uint32_t> backend_slot;

  const ServicePortEntry* port(std::uint8_t protocol, std::uint16_t port_be) const {
    for (const ServicePortEntry& p : ports)
      if (p.port_be == port_be && p.protocol == protocol) return &p;
    return nullptr;
  }
  // A new flow's backend (index into backend_ip_be), or kNoBackend.
  std::uint32_t pick(std::uint32_t flow_hash) const {
    if (slots.empty()) return kNoBackend;
    return slots[static_cast<std::uint32_t>((std::uint64_t{flow_hash} * slots.size()) >> 32)];
  }
  // The index of a backend address, or kNoBackend (ascending order: a binary search).
  std::uint32_t backend_index(std::uint32_t ip_be) const {
    auto it = std::lower_bound(backend_ip_be.begin(), backend_ip_be.end(), ip_be, [](std::uint32_t a, std::uint32_t b) {
      return __builtin_bswap32(a) < __builtin_bswap32(b);
    });
    if (it == backend_ip_be.end() || *it != ip_be) return kNoBackend;
    return static_cast<std::uint32_t>(it - backend_ip_be.begin());
  }
  std::size_t memory_bytes() const {
    return sizeof(*this) + ports.capacity() * sizeof(ServicePortEntry) +
           backend_ip_be.capacity() * 4 + slots.capacity() * 2 + backend_slot.capacity() * 4;
  }
};

}  // namespace vxfed::dataplane
