// apply_delta: a Delta merged into a Tables message (upserts by key, then removals).
// Pure protobuf work; validation of the result is ForwardingTables::create's job.
// Keyed with ordered maps so a delta of 130k routes costs O(n log n), not O(n^2).
#include <map>
#include <set>
#include <string>
#include <utility>

#include "dataplane/core/tables.hpp"

namespace vxfed::dataplane {
namespace {

template <typename List, typename Items, typename Key>
void upsert_all(List* list, const Items& items, Key key) {
  std::map<decltype(key(items[0])), int> index;
  for (int i = 0; i < list->size(); ++i) index[key(list->Get(i))] = i;
  for (const auto& item : items) {
    auto [it, fresh] = index.emplace(key(item), list->size());
    if (fresh) *list->Add() = item;
    else *list->Mutable(it->second) = item;
  }
}

// Keeps the elements for which keep(x) is true, in order.
template <typename List, typename Keep>
void filter(List* list, Keep keep) {
  int out = 0;
  for (int i = 0; i < list->size(); ++i) {
    if (!keep(list->Get(i))) continue;
    if (out != i) list->SwapElements(out, i);
    ++out;
  }
  while (list->size() > out) list->RemoveLast();
}

// Removes every listed key; the first key that is not present is an error.
template <typename List, typename Removals, typename Key, typename Describe>
Status remove_all(List* list, const Removals& removals, Key key, Describe describe) {
  std::set<decltype(key(list->Get(0)))> present, doomed;
  for (const auto& x : *list) present.insert(key(x));
  for (int i = 0; i < removals.size(); ++i) {
    auto k = describe.key(removals.Get(i));
    if (!present.count(k)) return make_error(describe.where(i, removals.Get(i)) + ": not present");
    doomed.insert(k);
  }
  filter(list, [&](const auto& x) { return !doomed.count(key(x)); });
  return {};
}

template <typename KeyOf, typename WhereOf>
struct Describe {
  KeyOf key;
  WhereOf where;
};
template <typename K, typename W>
Describe<K, W> describe(K k, W w) { return Describe<K, W>{k, w}; }

}  // namespace

Result<v1::Tables> apply_delta(const v1::Tables& current, const v1::Delta& delta) {
  v1::Tables t = current;
  const v1::Tables& up = delta.upsert();
  auto network_key = [](const v1::Network& x) { return x.vni(); };
  auto endpoint_key = [](const v1::Endpoint& x) { return x.id(); };
  auto route_key = [](const v1::Route& x) { return std::make_pair(x.vni(), x.prefix()); };
  auto vtep_key = [](const v1::Vtep& x) { return x.ip(); };
  auto neighbor_key = [](const v1::Neighbor& x) { return x.ip(); };
  if (up.networks_size()) upsert_all(t.mutable_networks(), up.networks(), network_key);
  if (up.endpoints_size()) upsert_all(t.mutable_endpoints(), up.endpoints(), endpoint_key);
  if (up.routes_size()) upsert_all(t.mutable_routes(), up.routes(), route_key);
  if (up.vteps_size()) upsert_all(t.mutable_vteps(), up.vteps(), vtep_key);
  if (up.neighbors_size()) upsert_all(t.mutable_neighbors(), up.neighbors(), neighbor_key);
  auto service_key = [](const v1::Service& x) { return x.id(); };
  if (up.services_size()) upsert_all(t.mutable_services(), up.services(), service_key);
  auto policy_key = [](const v1::NetworkPolicy& x) { return x.vni(); };
  if (up.policies_size()) upsert_all(t.mutable_policies(), up.policies(), policy_key);

  auto index_text = [](const char* list, int i) { return std::string(list) + "[" + std::to_string(i) + "]"; };
  if (delta.remove_networks_size()) {
    auto st = remove_all(t.mutable_networks(), delta.remove_networks(), network_key,
        describe([](std::uint32_t vni) { return vni; },
                 [&](int i, std::uint32_t vni) { return index_text("remove_networks", i) + " (vni " + std::to_string(vni) + ")"; }));
    if (!st) return make_error(st.error());
    // A network takes its endpoints, routes and explicit VTEP permissions with it.
    std::set<std::uint32_t> gone(delta.remove_networks().begin(), delta.remove_networks().end());
    filter(t.mutable_endpoints(), [&](const v1::Endpoint& x) { return !gone.count(x.vni()); });
    filter(t.mutable_routes(), [&](const v1::Route& x) { return !gone.count(x.vni()); });
    filter(t.mutable_services(), [&](const v1::Service& x) { return !gone.count(x.vni()); });
    filter(t.mutable_policies(), [&](const v1::NetworkPolicy& x) { return !gone.count(x.vni()); });
    for (auto& v : *t.mutable_vteps()) filter(v.mutable_vnis(), [&](std::uint32_t x) { return !gone.count(x); });
  }
  if (delta.remove_endpoints_size()) {
    auto st = remove_all(t.mutable_endpoints(), delta.remove_endpoints(), endpoint_key,
        describe([](const std::string& id) { return id; },
                 [&](int i, const std::string& id) { return index_text("remove_endpoints", i) + " (id \"" + id + "\")"; }));
    if (!st) return make_error(st.error());
  }
  if (delta.remove_routes_size()) {
    auto st = remove_all(t.mutable_routes(), delta.remove_routes(), route_key,
        describe([](const v1::RouteKey& k) { return std::make_pair(k.vni(), k.prefix()); },
                 [&](int i, const v1::RouteKey& k) {
                   return index_text("remove_routes", i) + " (vni " + std::to_string(k.vni()) + ", prefix \"" + k.prefix() + "\")";
                 }));
    if (!st) return make_error(st.error());
  }
  if (delta.remove_vteps_size()) {
    auto st = remove_all(t.mutable_vteps(), delta.remove_vteps(), vtep_key,
        describe([](const std::string& ip) { return ip; },
                 [&](int i, const std::string& ip) { return index_text("remove_vteps", i) + " (ip \"" + ip + "\")"; }));
    if (!st) return make_error(st.error());
  }
  if (delta.remove_neighbors_size()) {
    auto st = remove_all(t.mutable_neighbors(), delta.remove_neighbors(), neighbor_key,
        describe([](const std::string& ip) { return ip; },
                 [&](int i, const std::string& ip) { return index_text("remove_neighbors", i) + " (ip \"" + ip + "\")"; }));
    if (!st) return make_error(st.error());
  }
  if (delta.remove_services_size()) {
    auto st = remove_all(t.mutable_services(), delta.remove_services(), service_key,
        describe([](const std::string& id) { return id; },
                 [&](int i, const std::string& id) { return index_text("remove_services", i) + " (id \"" + id + "\")"; }));
    if (!st) return make_error(st.error());
  }
  if (delta.remove_policies_size()) {
    auto st = remove_all(t.mutable_policies(), delta.remove_policies(), policy_key,
        describe([](std::uint32_t vni) { return vni; },
                 [&](int i, std::uint32_t vni) { return index_text("remove_policies", i) + " (vni " + std::to_string(vni) + ")"; }));
    if (!st) return make_error(st.error());
  }
  return t;
}

}  // namespace vxfed::dataplane
