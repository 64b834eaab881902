#include "control/services/service_requests.hpp"

#include <set>

#include "policy/names.hpp"
#include "services/parse.hpp"

namespace vxfed::control {

namespace svc = ::vxfed::services;

namespace {

const char* source_of(const std::string& source) { return source.empty() ? "request" : source.c_str(); }

std::set<svc::ServiceKey> services_of(const svc::Objects& o) {
  std::set<svc::ServiceKey> out;
  for (const auto& s : o.services) out.insert(s.key);
  for (const auto& s : o.slices) out.insert({s.namespace_name, s.service_name});
  for (const auto& e : o.exports) out.insert(e.key);
  return out;
}

}  // namespace

Result<svc::ServiceApply> service_apply_of(const v1::ServiceApply& request, const std::string& cluster,
                                           const svc::FederationView& federation) {
  if (request.text().empty()) return make_error(std::string(source_of(request.source())) + ": no objects (the input is empty)");
  auto objects = svc::parse_and_validate(request.text(), cluster, federation, request.source());
  if (!objects) return make_error(objects.error());
  return svc::ServiceApply{cluster, std::move(*objects), {}};
}

Result<svc::ServiceApply> service_delete_of(const v1::ServiceDelete& request, const std::string& cluster,
                                            const svc::FederationView& federation) {
  svc::ServiceApply out{cluster, {}, {}};
  std::set<svc::ServiceKey> keys;
  if (!request.text().empty()) {
    auto objects = svc::parse_and_validate(request.text(), cluster, federation, request.source());
    if (!objects) return make_error(objects.error());
    keys = services_of(*objects);
  }
  std::string errors;
  for (int i = 0; i < request.services_size(); ++i) {
    const auto& ref = request.services(i);
    const std::string at = "services[" + std::to_string(i) + "]";
    if (auto why = policy::check_dns_label(ref.namespace_()); !why.empty())
      errors += (errors.empty() ? "" : "\n") + at + ".namespace: '" + ref.namespace_() + "' " + why;
    else if (auto why2 = policy::check_dns_label(ref.name()); !why2.empty())
      errors += (errors.empty() ? "" : "\n") + at + ".name: '" + ref.name() + "' " + why2;
    else
      keys.insert({ref.namespace_(), ref.name()});
  }
  if (!errors.empty()) return make_error(errors);
  if (keys.empty()) return make_error(std::string(source_of(request.source())) + ": no services to delete (give a file or name them)");
  out.deletes.assign(keys.begin(), keys.end());
  return out;
}

v1::ServiceApplied service_applied_message(const std::string& cluster, const svc::ServiceApplyReport& report) {
  v1::ServiceApplied out;
  out.set_cluster(cluster);
  out.set_revision(report.revision);
  for (const auto& k : report.written) out.add_written(k.str());
  for (const auto& k : report.deleted) out.add_deleted(k.str());
  out.set_absent_deletes(static_cast<std::uint32_t>(report.absent_deletes));
  for (const auto& r : report.allocated) out.add_allocated(r.service.str() + " " + r.vip.str());
  for (const auto& r : report.released) out.add_released(r.service.str() + " " + r.vip.str());
  return out;
}

Result<v1::ServiceListing> service_listing_message(const svc::ServiceSnapshot& snapshot) {
  auto set = svc::federated(snapshot);
  if (!set) return make_error("the services in the store do not merge: " + set.error());
  v1::ServiceListing out;
  out.set_revision(snapshot.revision);
  if (snapshot.range) out.set_service_range(snapshot.range->str());
  for (const auto& [key, fs] : set->services) {
    auto* info = out.add_services();
    info->set_namespace_(key.namespace_name);
    info->set_name(key.name);
    if (fs.vip) info->set_vip(fs.vip->str());
    info->set_strategy(svc::strategy_name(fs.strategy.strategy));
    for (const auto& [cluster, w] : fs.strategy.weights) (*info->mutable_weights())[cluster] = w;
    for (const auto& c : fs.strategy.failover_order) info->add_failover_order(c);
    for (const auto& p : fs.ports) {
      auto* port = info->add_ports();
      port->set_name(p.name);
      port->set_protocol(svc::protocol_name(p.protocol));
      port->set_port(p.port);
      port->set_target_port(p.target_port);
    }
    for (const auto& c : fs.clusters) info->add_clusters(c);
    for (const auto& b : fs.backends) {
      auto* backend = info->add_backends();
      backend->set_cluster(b.cluster);
      backend->set_address(b.address.str());
      backend->set_ready(b.ready);
    }
  }
  for (const auto& c : set->conditions) {
    auto* cond = out.add_conditions();
    cond->set_cluster(c.cluster);
    cond->set_namespace_(c.service.namespace_name);
    cond->set_name(c.service.name);
    cond->set_conflict(c.conflict);
    cond->set_reason(c.reason);
    cond->set_message(c.message);
  }
  return out;
}

}  // namespace vxfed::control
