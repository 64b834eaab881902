#include "control/node/tables_delta.hpp"

namespace vxfed::control {

void to_wire(const RemoteRoute& route, dp::Route* out) {
  out->set_vni(route.vni);
  out->set_prefix(route.prefix.str());
  for (const auto& vtep : route.vteps) out->add_next_hops()->set_vtep(vtep.str());
}

void to_wire(const RouteKey& key, dp::RouteKey* out) {
  out->set_vni(key.vni);
  out->set_prefix(key.prefix.str());
}

dp::Delta to_wire(const TablesDelta& delta) {
  dp::Delta out;
  auto* upsert = out.mutable_upsert();
  for (const auto& n : delta.networks) *upsert->add_networks() = n;
  for (const auto& e : delta.endpoints) *upsert->add_endpoints() = e;
  for (const auto& r : delta.routes) to_wire(r, upsert->add_routes());
  for (const auto& sv : delta.services) *upsert->add_services() = sv;
  for (const auto& v : delta.vteps) *upsert->add_vteps() = v;
  for (const auto& p : delta.policies) *upsert->add_policies() = p;
  for (auto vni : delta.removed_networks) out.add_remove_networks(vni);
  for (const auto& id : delta.removed_endpoints) out.add_remove_endpoints(id);
  for (const auto& k : delta.removed_routes) to_wire(k, out.add_remove_routes());
  for (const auto& id : delta.removed_services) out.add_remove_services(id);
  for (const auto& ip : delta.removed_vteps) out.add_remove_vteps(ip);
  for (auto vni : delta.removed_policies) out.add_remove_policies(vni);
  return out;
}

}  // namespace vxfed::control
