#include "dataplane/core/service_counters.hpp"

#include <algorithm>

namespace vxfed::dataplane {

ServiceCounterSlots::ServiceCounterSlots(std::uint32_t workers)
    : workers_(std::max<std::uint32_t>(workers, 1)), chunks_(new std::atomic<Counter*>[kMaxChunks]) {
  for (std::uint32_t i = 0; i < kMaxChunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
  // Chunk 0 holds kUncounted: an entry built without slots (or past the limit) counts there.
  chunks_[0].store(new Counter[std::size_t{workers_} * kChunkSlots], std::memory_order_release);
}

ServiceCounterSlots::~ServiceCounterSlots() {
  for (std::uint32_t i = 0; i < kMaxChunks; ++i) delete[] chunks_[i].load(std::memory_order_relaxed);
}

std::uint32_t ServiceCounterSlots::slot_for(const std::string& service, std::uint32_t ip_be) {
  const auto key = std::make_pair(service, ip_be);
  if (auto it = slots_.find(key); it != slots_.end()) return it->second;
  if (next_ >= kMaxChunks * kChunkSlots) return kUncounted;
  const std::uint32_t slot = next_++;
  const std::uint32_t chunk = slot / kChunkSlots;
  if (chunks_[chunk].load(std::memory_order_relaxed) == nullptr)
    chunks_[chunk].store(new Counter[std::size_t{workers_} * kChunkSlots], std::memory_order_release);
  slots_.emplace(key, slot);
  return slot;
}

std::uint32_t ServiceCounterSlots::find(const std::string& service, std::uint32_t ip_be) const {
  const auto it = slots_.find(std::make_pair(service, ip_be));
  return it == slots_.end() ? kUncounted : it->second;
}

std::uint64_t ServiceCounterSlots::new_flows(std::uint32_t slot) const {
  const Counter* chunk = chunks_[slot / kChunkSlots].load(std::memory_order_acquire);
  if (chunk == nullptr) return 0;
  std::uint64_t sum = 0;
  for (std::uint32_t w = 0; w < workers_; ++w) sum += chunk[std::size_t{w} * kChunkSlots + slot % kChunkSlots].get();
  return sum;
}

bool census_step(FlowCensus& census, const ConntrackTable& table, std::uint64_t now, std::uint32_t max_entries) {
  const std::uint32_t end = std::min<std::uint64_t>(std::uint64_t{census.cursor} + max_entries, table.capacity());
  for (std::uint32_t i = census.cursor; i < end; ++i) {
    const ConntrackEntry& e = table.entry_at(i);
    if (!e.in_use || !e.has_nat || table.expired(e, now)) continue;
    if (census.count == census.out.size()) {
      census.truncated = true;
      continue;
    }
    ServiceFlowRecord& r = census.out[census.count++];
    r.vip_be = e.original.dst_ip_be;
    r.vip_port_be = e.original.dst_port_be;
    r.vni = e.original.vni;
    r.protocol = e.original.protocol;
    const NatTarget backend = e.nat();
    r.backend_be = backend.ip_be;
    r.backend_port_be = backend.port_be;
  }
  census.cursor = end;
  if (end < table.capacity()) return false;
  census.cursor = 0;
  census.state.store(FlowCensus::kDone, std::memory_order_release);
  return true;
}

}  // namespace vxfed::dataplane
