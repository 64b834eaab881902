#include "control/delta_merger.hpp"

namespace vxfed::control {

bool DeltaMerger::add(const TablesDelta& d) {
  ++changes_;
  // Within one Delta, upserts apply first, then removals: an upsert may cancel an earlier
  // removal of the same key only where removing and re-adding is the same as replacing.
  for (const auto& n : d.networks) {
    if (remove_networks_.count(n.vni())) return false;  // removal would wipe the new network's entries
    networks_[n.vni()] = n;
  }
  for (const auto& e : d.endpoints) {
    remove_endpoints_.erase(e.id());
    endpoints_[e.id()] = e;
  }
  for (const auto& r : d.routes) {
    remove_routes_.erase(r.key());
    routes_[r.key()] = r;
  }
  for (auto vni : d.removed_networks) {
    networks_.erase(vni);
    std::erase_if(endpoints_, [vni](const auto& kv) { return kv.second.vni() == vni; });
    std::erase_if(routes_, [vni](const auto& kv) { return kv.first.vni == vni; });
    remove_networks_.insert(vni);
  }
  for (const auto& id : d.removed_endpoints) {
    endpoints_.erase(id);
    remove_endpoints_.insert(id);
  }
  for (const auto& k : d.removed_routes) {
    routes_.erase(k);
    remove_routes_.insert(k);
  }
  return true;
}

bool DeltaMerger::empty() const {
  return networks_.empty() && endpoints_.empty() && routes_.empty() && remove_networks_.empty() &&
         remove_endpoints_.empty() && remove_routes_.empty();
}

void DeltaMerger::forget_endpoint(const std::string& id) {
  endpoints_.erase(id);
  remove_endpoints_.erase(id);
}

void DeltaMerger::clear() {
  networks_.clear();
  endpoints_.clear();
  routes_.clear();
  remove_networks_.clear();
  remove_endpoints_.clear();
  remove_routes_.clear();
  changes_ = 0;
}

dp::Delta DeltaMerger::build() const {
  dp::Delta d;
  for (const auto& [k, n] : networks_) *d.mutable_upsert()->add_networks() = n;
  for (const auto& [k, e] : endpoints_) *d.mutable_upsert()->add_endpoints() = e;
  for (const auto& [k, r] : routes_) to_wire(r, d.mutable_upsert()->add_routes());
  for (auto v : remove_networks_) d.add_remove_networks(v);
  for (const auto& id : remove_endpoints_) d.add_remove_endpoints(id);
  for (const auto& k : remove_routes_) to_wire(k, d.add_remove_routes());
  return d;
}

}  // namespace vxfed::control
