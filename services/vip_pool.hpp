// Service VIPs: one address of the federation's service range per namespace/name, shaped like
// the VNI allocator (vni/pool.hpp) so that the federation store can decide with it the same
// way (read the records, decide here, write guarded by what was read).
//
// VipPool is the pure bookkeeping: no I/O, no clock (callers pass now_ms). A service keeps its
// VIP for as long as it is allocated, asking again returns the same one, and a released VIP is
// held down before another service may get it (clients and DNS caches still hold it), then
// handed out only after every never-used address (next fit from a cursor that moves on).
// VipAllocator is the interface the service code calls: InMemoryVipAllocator wraps a VipPool;
// the etcd-backed one is a next step of issue 36 (docs/services.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "common/net/ipv4.hpp"
#include "common/result.hpp"
#include "services/model.hpp"

namespace vxfed::services {

inline constexpr std::uint64_t kDefaultVipHoldDownMs = 5 * 60 * 1000;  // as VNIs' (vni/pool.hpp)

enum class VipState { allocated, held };

struct VipRecord {
  net::Ipv4Addr vip;
  ServiceKey service;  // held records keep it, so the service gets its VIP back
  VipState state = VipState::allocated;
  std::uint64_t held_until_ms = 0;
  bool operator==(const VipRecord&) const = default;
};

// Whether `vip` may be handed out from `range`: inside it, and not its network or broadcast
// address when the range has them (length below 31).
bool vip_allocatable(const net::Ipv4Prefix& range, net::Ipv4Addr vip);

class VipPool {
 public:
  // A range of at least one allocatable address.
  static Result<VipPool> create(net::Ipv4Prefix range, std::uint64_t hold_down_ms = kDefaultVipHoldDownMs);

  // Loads records read back from a store. Refuses two records for one VIP, one service with
  // two live VIPs, and VIPs outside the range, rather than guessing which one is right.
  Status restore(const std::vector<VipRecord>& records);

  // The service's VIP. Idempotent: a service that has (or recently released) one gets it
  // back. `pinned` asks for that address and fails if another service has it or holds it
  // down, or when the service already has a different one.
  Result<VipRecord> allocate(const ServiceKey& service, std::optional<net::Ipv4Addr> pinned, std::uint64_t now_ms);

  // The service's VIP is held down until now + hold-down. Error when it has none.
  Result<VipRecord> release(const ServiceKey& service, std::uint64_t now_ms);

  // Forgets held records whose hold-down ended; returns their VIPs (to erase from a store).
  std::vector<net::Ipv4Addr> expire(std::uint64_t now_ms);

  const VipRecord* find(const ServiceKey& service) const;  // live (not held)
  const VipRecord* find(net::Ipv4Addr vip) const;
  std::vector<VipRecord> list() const;
  net::Ipv4Prefix range() const { return range_; }
  std::uint64_t capacity() const { return last_ - first_ + 1; }

 private:
  VipPool(net::Ipv4Prefix range, std::uint64_t hold_down_ms, std::uint32_t first, std::uint32_t last)
      : range_(range), hold_down_ms_(hold_down_ms), first_(first), last_(last), cursor_(first) {}
  const VipRecord* find_held(const ServiceKey& service) const;

  net::Ipv4Prefix range_;
  std::uint64_t hold_down_ms_;
  std::uint32_t first_, last_;  // allocatable addresses, host order
  std::uint32_t cursor_;        // where the next free address is looked for
  std::map<std::uint32_t, VipRecord> by_vip_;
  std::map<ServiceKey, std::uint32_t> live_by_service_;
};

// What the service code allocates through. An implementation keeps the promises of VipPool
// (stable, idempotent, held down after release) across every node of the federation.
class VipAllocator {
 public:
  virtual ~VipAllocator() = default;
  virtual Result<VipRecord> allocate(const ServiceKey& service, std::optional<net::Ipv4Addr> pinned,
                                     std::uint64_t now_ms) = 0;
  virtual Result<VipRecord> release(const ServiceKey& service, std::uint64_t now_ms) = 0;
  virtual std::optional<VipRecord> find(const ServiceKey& service) = 0;
};

// One process's allocator: a VipPool in memory (tests, a single-node setup).
class InMemoryVipAllocator final : public VipAllocator {
 public:
  explicit InMemoryVipAllocator(VipPool pool) : pool_(std::move(pool)) {}
  Result<VipRecord> allocate(const ServiceKey& service, std::optional<net::Ipv4Addr> pinned,
                             std::uint64_t now_ms) override {
    return pool_.allocate(service, pinned, now_ms);
  }
  Result<VipRecord> release(const ServiceKey& service, std::uint64_t now_ms) override {
    return pool_.release(service, now_ms);
  }
  std::optional<VipRecord> find(const ServiceKey& service) override {
    const VipRecord* r = pool_.find(service);
    return r ? std::optional<VipRecord>(*r) : std::nullopt;
  }
  VipPool& pool() { return pool_; }

 private:
  VipPool pool_;
};

}  // namespace vxfed::services
