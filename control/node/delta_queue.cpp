#include "control/node/delta_queue.hpp"

#include <algorithm>

namespace vxfed::control {

namespace {

// Appends entries to the last item pushed by this call, opening a new one when it is full.
class Pieces {
 public:
  Pieces(std::deque<DeltaQueue::Item>& items, std::size_t max_entries, DeltaQueue::TimePoint now)
      : items_(items), max_entries_(max_entries), now_(now) {}

  dp::Delta& next() {
    if (!current_ || current_->entries == max_entries_) {
      items_.emplace_back();
      current_ = &items_.back();
      current_->queued = now_;
    }
    ++current_->entries;
    return current_->delta;
  }
  void mark_endpoint_upsert() { current_->upserts_endpoints = true; }

 private:
  std::deque<DeltaQueue::Item>& items_;
  std::size_t max_entries_;
  DeltaQueue::TimePoint now_;
  DeltaQueue::Item* current_ = nullptr;   // deque::emplace_back keeps references valid
};

bool upserts(const dp::Delta& d, const std::string& id) {
  return std::any_of(d.upsert().endpoints().begin(), d.upsert().endpoints().end(),
                     [&id](const dp::Endpoint& e) { return e.id() == id; });
}

}  // namespace

void DeltaQueue::push(const TablesDelta& d, TimePoint now) {
  Pieces pieces(items_, max_entries_, now);
  for (const auto& n : d.networks) *pieces.next().mutable_upsert()->add_networks() = n;
  for (const auto& e : d.endpoints) {
    *pieces.next().mutable_upsert()->add_endpoints() = e;
    pieces.mark_endpoint_upsert();
  }
  for (const auto& r : d.routes) to_wire(r, pieces.next().mutable_upsert()->add_routes());
  for (const auto& sv : d.services) *pieces.next().mutable_upsert()->add_services() = sv;
  for (const auto& v : d.vteps) *pieces.next().mutable_upsert()->add_vteps() = v;
  // A network's policy entry after the endpoints it names (the forwarder maps them by id).
  for (const auto& p : d.policies) *pieces.next().mutable_upsert()->add_policies() = p;
  for (auto vni : d.removed_networks) pieces.next().add_remove_networks(vni);
  for (const auto& id : d.removed_endpoints) pieces.next().add_remove_endpoints(id);
  for (const auto& k : d.removed_routes) to_wire(k, pieces.next().add_remove_routes());
  for (const auto& id : d.removed_services) pieces.next().add_remove_services(id);
  for (const auto& ip : d.removed_vteps) pieces.next().add_remove_vteps(ip);
  for (auto vni : d.removed_policies) pieces.next().add_remove_policies(vni);
}

DeltaQueue::Item DeltaQueue::pop_front() {
  Item item = std::move(items_.front());
  items_.pop_front();
  return item;
}

bool DeltaQueue::upserts_endpoint(const std::string& id) const {
  return std::any_of(items_.begin(), items_.end(), [&id](const Item& item) { return upserts(item.delta, id); });
}

void DeltaQueue::drop_endpoint_removals(const std::string& id) {
  for (auto& item : items_) {
    if (upserts(item.delta, id)) return;
    auto* removals = item.delta.mutable_remove_endpoints();
    for (int i = removals->size() - 1; i >= 0; --i) {
      if (removals->Get(i) != id) continue;
      removals->DeleteSubrange(i, 1);
      --item.entries;
    }
  }
  // An item left empty is harmless: the dataplane applies an empty Delta as a no-op.
}

}  // namespace vxfed::control
