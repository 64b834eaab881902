// The VNI allocator bound to its durable store: every allocation and release is on disk
// (fdatasync'ed) before it is returned, and undone in memory if it could not be written.
// After any crash the same network name finds the same VNI, and no VNI is handed out twice.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vni/durable_store.hpp"
#include "vni/pool.hpp"
#include "common/result.hpp"

namespace vxfed::vni {

std::string encode_allocation(const Allocation& record);
Result<Allocation> decode_allocation(const std::string& key, const std::string& value);

class PersistentAllocator {
 public:
  // Opens `dir`/vnis.{snap,journal} and restores the allocator's records from it.
  static Result<std::unique_ptr<PersistentAllocator>> open(const std::string& dir, Allocator allocator,
                                                           DurableStore::Options options,
                                                           std::vector<std::string>* notes);

  Result<Allocation> allocate(const std::string& network, const Labels& labels, std::uint32_t pinned,
                              std::uint64_t now_ms);
  Result<Allocation> release(const std::string& network, std::uint64_t now_ms);
  // Records a VNI decided elsewhere (the federation store, federation/): `record.network` has
  // `record.vni`. Replaces a local record of that VNI that is held down (the federation's
  // hold-down is the one that counts) and the network's own previous record; refuses a VNI a
  // different live network has on this node.
  Result<Allocation> adopt(const Allocation& record);
  Status expire(std::uint64_t now_ms);   // forget held records whose hold-down ended

  const Allocator& allocator() const { return allocator_; }
  Allocator& allocator() { return allocator_; }
  DurableStore& store() { return *store_; }
  const DurableStore& store() const { return *store_; }

 private:
  PersistentAllocator(Allocator allocator, std::unique_ptr<DurableStore> store)
      : allocator_(std::move(allocator)), store_(std::move(store)) {}
  Status persist(const Allocation& record);
  void undo(std::uint32_t vni, const Allocation* before_vni, const Allocation* before_network);

  Allocator allocator_;
  std::unique_ptr<DurableStore> store_;
};

}  // namespace vxfed::vni
