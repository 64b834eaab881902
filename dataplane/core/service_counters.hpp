// Global services' counters per service and backend (docs/services.md, "In the forwarder":
// "Counters per service and backend").
//
// New flows per backend: each (service id, backend address) gets a counter slot from the
// control thread (ServiceCounterSlots::slot_for, kept for the life of the process, like a VNI's
// counter slot: counters.hpp), which the ServiceEntry built for it carries per backend. A worker
// adds 1 to its own copy of the slot where it gives a new flow a backend (service_nat.cpp's
// to_backend, the cold path: never for a packet of a known flow); the control thread sums the
// workers' copies. One writer per counter, no lock prefix (docs/conventions.md: hot path).
//
// Live flows per backend: a census of a worker's connection table, done by that worker in its
// loop (never by another thread: docs/conntrack.md, a table has one reader and writer) a bounded
// number of entries per iteration (census_step), into a buffer the control thread gave it; the
// control thread groups the records by service and backend (Dataplane::service_counters).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/core/conntrack.hpp"
#include "dataplane/core/counters.hpp"

namespace vxfed::dataplane {

class ServiceCounterSlots {
 public:
  static constexpr std::uint32_t kChunkSlots = 4096;
  static constexpr std::uint32_t kMaxChunks = 256;  // 1,048,576 (service, backend) pairs over the process's life
  static constexpr std::uint32_t kUncounted = 0;     // slot 0: where pairs past the limit count (never reported)

  explicit ServiceCounterSlots(std::uint32_t workers);
  ~ServiceCounterSlots();
  ServiceCounterSlots(const ServiceCounterSlots&) = delete;
  ServiceCounterSlots& operator=(const ServiceCounterSlots&) = delete;

  // Control thread: the slot of (service id, backend), assigned on first use (its counters'
  // memory allocated before the slot is returned, so an entry that carries it is published
  // after). kUncounted once every slot is taken.
  std::uint32_t slot_for(const std::string& service, std::uint32_t ip_be);
  // The slot, or kUncounted when the pair never had one.
  std::uint32_t find(const std::string& service, std::uint32_t ip_be) const;
  // Every pair with a slot: (service id, backend ip_be) -> slot.
  const std::map<std::pair<std::string, std::uint32_t>, std::uint32_t>& all() const { return slots_; }

  // A worker, where it gives a new flow a backend: its own copy of the slot's counter.
  void add_new_flow(std::uint32_t worker, std::uint32_t slot) {
    Counter* chunk = chunks_[slot / kChunkSlots].load(std::memory_order_acquire);
    chunk[std::size_t{worker} * kChunkSlots + slot % kChunkSlots].add(1);
  }
  // Control thread: the workers' copies summed.
  std::uint64_t new_flows(std::uint32_t slot) const;

  std::uint32_t workers() const { return workers_; }
  std::uint32_t slots_used() const { return next_; }

 private:
  std::uint32_t workers_;
  std::uint32_t next_ = 1;  // slot 0 is kUncounted
  std::unique_ptr<std::atomic<Counter*>[]> chunks_;  // each: workers x kChunkSlots counters, worker-major
  std::map<std::pair<std::string, std::uint32_t>, std::uint32_t> slots_;
};

// One translated flow of a worker's table as the census found it: VIP:port and protocol (the
// original tuple's destination), the VNI, and its backend (the reply tuple's source).
struct ServiceFlowRecord {
  std::uint32_t vip_be = 0;
  std::uint32_t backend_be = 0;
  std::uint32_t vni = 0;
  std::uint16_t vip_port_be = 0;
  std::uint16_t backend_port_be = 0;
  std::uint8_t protocol = 0;
};

// A census request to one worker. The control thread fills `out` (capacity records), sets
// state to kRequested (release) and wakes the worker; the worker visits its table with
// census_step() a part per loop iteration and sets state to kDone (release) when it has been
// through every entry; the control thread reads `count` and the records after an acquire load
// of kDone, then sets kIdle. `truncated`: more translated flows than `out` holds.
struct FlowCensus {
  static constexpr std::uint32_t kIdle = 0, kRequested = 1, kDone = 2;
  std::atomic<std::uint32_t> state{kIdle};
  std::vector<ServiceFlowRecord> out;  // sized by the control thread before the request
  std::uint32_t count = 0;
  std::uint32_t cursor = 0;
  bool truncated = false;
};

// The worker's part: visits up to `max_entries` entries of `table` from census.cursor, writing
// a record for each live translated flow (in use, has_nat, not past its timeout at `now`).
// True when the census reached the table's end (then state is kDone and cursor 0).
bool census_step(FlowCensus& census, const ConntrackTable& table, std::uint64_t now, std::uint32_t max_entries);

}  // namespace vxfed::dataplane
