#include "vni/allocation_store.hpp"

#include <charconv>
#include <optional>

namespace vxfed::vni {

namespace {

std::string key_of(std::uint32_t vni) { return "vni/" + std::to_string(vni); }

template <typename T>
std::optional<T> to_int(std::string_view text) {
  T value{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

// "state\npool\nnetwork\nheld_until_ms": names are DNS labels, so never contain a newline.
std::string encode_allocation(const Allocation& record) {
  return std::string(state_name(record.state)) + "\n" + record.pool + "\n" + record.network + "\n" +
         std::to_string(record.held_until_ms);
}

Result<Allocation> decode_allocation(const std::string& key, const std::string& value) {
  auto fail = [&](const std::string& why) { return make_error("stored entry '" + key + "': " + why); };
  if (key.rfind("vni/", 0) != 0) return fail("unknown key");
  auto vni = to_int<std::uint32_t>(std::string_view(key).substr(4));
  if (!vni) return fail("bad VNI in key");
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const auto nl = value.find('\n', start);
    parts.push_back(value.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  if (parts.size() != 4) return fail("expected 4 fields, found " + std::to_string(parts.size()));
  auto state = parse_state(parts[0]);
  if (!state) return fail("unknown state '" + parts[0] + "'");
  auto held = to_int<std::uint64_t>(parts[3]);
  if (!held) return fail("bad hold-down time '" + parts[3] + "'");
  return Allocation{*vni, parts[1], parts[2], *state, *held};
}

Result<std::unique_ptr<PersistentAllocator>> PersistentAllocator::open(
    const std::string& dir, Allocator allocator, DurableStore::Options options,
    std::vector<std::string>* notes) {
  auto store = DurableStore::open(dir, "vnis", std::move(options), notes);
  if (!store) return make_error(store.error());
  std::vector<Allocation> records;
  for (const auto& [key, value] : (*store)->entries()) {
    auto record = decode_allocation(key, value);
    if (!record) return make_error((*store)->snapshot_path() + ": " + record.error());
    records.push_back(*record);
  }
  if (auto ok = allocator.restore(records); !ok)
    return make_error("VNI store in " + dir + " is inconsistent: " + ok.error());
  return std::unique_ptr<PersistentAllocator>(
      new PersistentAllocator(std::move(allocator), std::move(*store)));
}

Status PersistentAllocator::persist(const Allocation& record) {
  if (record.network.find('\n') != std::string::npos || record.pool.find('\n') != std::string::npos)
    return make_error("network and pool names must not contain newlines");
  return store_->put(key_of(record.vni), encode_allocation(record));
}

void PersistentAllocator::undo(std::uint32_t vni, const Allocation* before_vni,
                               const Allocation* before_network) {
  allocator_.erase_record(vni);
  if (before_network) allocator_.put_record(*before_network);
  if (before_vni) allocator_.put_record(*before_vni);
}

Result<Allocation> PersistentAllocator::allocate(const std::string& network, const Labels& labels,
                                                 std::uint32_t pinned, std::uint64_t now_ms) {
  // Snapshot what the allocation may overwrite so a failed write can be undone exactly.
  std::optional<Allocation> live;
  if (const auto* r = allocator_.find_network(network)) live = *r;
  if (live && (pinned == 0 || pinned == live->vni)) return *live;  // nothing changes
  auto record = allocator_.allocate(network, labels, pinned, now_ms);
  if (!record) return record;
  std::optional<Allocation> previous;
  if (auto it = store_->entries().find(key_of(record->vni)); it != store_->entries().end()) {
    auto decoded = decode_allocation(it->first, it->second);
    if (decoded) previous = *decoded;
  }
  if (auto ok = persist(*record); !ok) {
    undo(record->vni, previous ? &*previous : nullptr, nullptr);
    return make_error("VNI " + std::to_string(record->vni) + " for network '" + network +
                      "' could not be saved: " + ok.error());
  }
  return record;
}

Result<Allocation> PersistentAllocator::release(const std::string& network, std::uint64_t now_ms) {
  const auto* live = allocator_.find_network(network);
  if (live == nullptr) return make_error("network '" + network + "' has no VNI");
  const Allocation before = *live;
  auto record = allocator_.release(network, now_ms);
  if (!record) return record;
  if (auto ok = persist(*record); !ok) {
    undo(record->vni, nullptr, &before);
    return make_error("release of VNI " + std::to_string(record->vni) + " could not be saved: " +
                      ok.error());
  }
  return record;
}

Result<Allocation> PersistentAllocator::adopt(const Allocation& record) {
  if (record.state == State::held) return make_error("a held VNI cannot be adopted");
  const Allocation* live = allocator_.find_network(record.network);
  if (live && *live == record) return *live;
  if (const Allocation* other = allocator_.find_vni(record.vni);
      other && other->state != State::held && other->network != record.network)
    return make_error("VNI " + std::to_string(record.vni) + " is used by network '" + other->network +
                      "' on this node; network '" + record.network + "' cannot take it");
  if (live && live->vni != record.vni) {
    if (auto ok = store_->erase(key_of(live->vni)); !ok)
      return make_error("VNI " + std::to_string(live->vni) + " of network '" + record.network +
                        "' could not be replaced: " + ok.error());
    allocator_.erase_record(live->vni);
  }
  if (auto ok = persist(record); !ok)
    return make_error("VNI " + std::to_string(record.vni) + " for network '" + record.network +
                      "' could not be saved: " + ok.error());
  allocator_.put_record(record);
  return record;
}

Status PersistentAllocator::expire(std::uint64_t now_ms) {
  std::vector<Allocation> expired;
  for (const auto& r : allocator_.list())
    if (r.state == State::held && r.held_until_ms <= now_ms) expired.push_back(r);
  for (const auto& r : expired) {
    if (auto ok = store_->erase(key_of(r.vni)); !ok) return ok;
    allocator_.erase_record(r.vni);
  }
  return {};
}

}  // namespace vxfed::vni
