#include "control/policy/policy_requests.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include "policy/names.hpp"
#include "policy/parse.hpp"

namespace vxfed::control {

namespace fed = ::vxfed::federation;

namespace {

const char* source_of(const std::string& source) { return source.empty() ? "request" : source.c_str(); }

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += (out.empty() ? "" : "\n") + line;
  return out;
}

const char* operator_text(policy::Operator op) {
  switch (op) {
    case policy::Operator::In: return " in ";
    case policy::Operator::NotIn: return " notin ";
    default: return "";
  }
}

}  // namespace

std::string selector_text(const policy::LabelSelector& selector) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : selector.match_labels) parts.push_back(key + "=" + value);
  for (const auto& r : selector.match_expressions) {
    switch (r.op) {
      case policy::Operator::Exists: parts.push_back(r.key); break;
      case policy::Operator::DoesNotExist: parts.push_back("!" + r.key); break;
      case policy::Operator::In:
      case policy::Operator::NotIn: {
        std::string values;
        for (const auto& v : r.values) values += (values.empty() ? "" : ",") + v;
        parts.push_back(r.key + operator_text(r.op) + "(" + values + ")");
        break;
      }
    }
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

Result<fed::PolicyBatch> batch_to_apply(const v1::PolicyApply& request, const std::string& cluster) {
  if (request.text().empty()) return make_error(std::string(source_of(request.source())) + ": no objects (the input is empty)");
  auto parsed = policy::read_objects(request.text(), cluster, request.source());
  if (!parsed.errors.empty()) return make_error(join(parsed.errors));
  fed::PolicyBatch batch;
  batch.cluster = cluster;
  batch.policies = std::move(parsed.objects.policies);
  batch.namespaces = std::move(parsed.objects.namespaces);
  batch.pods = std::move(parsed.objects.pods);
  return batch;
}

Result<fed::PolicyBatch> batch_to_delete(const v1::PolicyDelete& request, const std::string& cluster) {
  fed::PolicyBatch batch;
  batch.cluster = cluster;
  std::vector<std::string> errors;
  if (!request.text().empty()) {
    auto parsed = policy::read_objects(request.text(), cluster, request.source());
    if (!parsed.errors.empty()) return make_error(join(parsed.errors));
    for (const auto& p : parsed.objects.policies) batch.delete_policies.push_back({p.namespace_name, p.name});
    for (const auto& n : parsed.objects.namespaces) batch.delete_namespaces.push_back(n.name);
    for (const auto& p : parsed.objects.pods) batch.delete_pods.push_back({p.namespace_name, p.name});
  }
  // The same object twice (in the file and named, or named twice) is one delete: the store
  // refuses a batch naming an object twice, and deleting twice means nothing more.
  std::set<std::tuple<std::string, std::string, std::string>> seen;
  for (const auto& p : batch.delete_policies) seen.insert({"MultiNetworkPolicy", p.namespace_name, p.name});
  for (const auto& n : batch.delete_namespaces) seen.insert({"Namespace", "", n});
  for (const auto& p : batch.delete_pods) seen.insert({"Pod", p.namespace_name, p.name});
  for (int i = 0; i < request.objects_size(); ++i) {
    const auto& ref = request.objects(i);
    const std::string at = "objects[" + std::to_string(i) + "]";
    const bool is_ns = ref.kind() == "Namespace";
    if (ref.kind() != "MultiNetworkPolicy" && ref.kind() != "Pod" && !is_ns) {
      errors.push_back(at + ".kind: '" + ref.kind() + "' is not one vxfed stores (expected MultiNetworkPolicy, Namespace or Pod)");
      continue;
    }
    std::vector<std::string> bad;
    if (is_ns) {
      if (!ref.namespace_().empty()) bad.push_back(at + ".namespace: a Namespace has none (got '" + ref.namespace_() + "')");
      if (auto why = policy::check_dns_label(ref.name()); !why.empty()) bad.push_back(at + ".name: '" + ref.name() + "' " + why);
    } else {
      if (auto why = policy::check_dns_label(ref.namespace_()); !why.empty())
        bad.push_back(at + ".namespace: '" + ref.namespace_() + "' " + why);
      if (auto why = policy::check_dns_subdomain(ref.name()); !why.empty()) bad.push_back(at + ".name: '" + ref.name() + "' " + why);
    }
    if (!bad.empty()) {
      errors.insert(errors.end(), bad.begin(), bad.end());
      continue;
    }
    if (!seen.insert({ref.kind(), ref.namespace_(), ref.name()}).second) continue;
    if (is_ns) batch.delete_namespaces.push_back(ref.name());
    else if (ref.kind() == "Pod") batch.delete_pods.push_back({ref.namespace_(), ref.name()});
    else batch.delete_policies.push_back({ref.namespace_(), ref.name()});
  }
  if (!errors.empty()) return make_error(join(errors));
  if (batch.delete_policies.empty() && batch.delete_namespaces.empty() && batch.delete_pods.empty())
    return make_error(std::string(source_of(request.source())) + ": no objects to delete (give a file or name objects)");
  return batch;
}

v1::PolicyApplied applied_message(const fed::PolicyBatch& batch, const fed::ApplyReport& report) {
  v1::PolicyApplied out;
  out.set_cluster(batch.cluster);
  out.set_revision(report.revision);
  out.set_policies(static_cast<std::uint32_t>(batch.policies.size()));
  out.set_namespaces(static_cast<std::uint32_t>(batch.namespaces.size()));
  out.set_pods(static_cast<std::uint32_t>(batch.pods.size()));
  out.set_deleted(static_cast<std::uint32_t>(batch.delete_policies.size() + batch.delete_namespaces.size() +
                                             batch.delete_pods.size()));
  out.set_absent_deletes(static_cast<std::uint32_t>(report.absent_deletes));
  out.set_new_identities(static_cast<std::uint32_t>(report.new_identities));
  out.set_renumbered(static_cast<std::uint32_t>(report.renumbered));
  for (const auto& p : report.pods) {
    auto* pod = out.add_pod_identities();
    pod->set_namespace_(p.namespace_name);
    pod->set_name(p.name);
    pod->set_identity(p.identity);
  }
  for (const auto& w : report.warnings) out.add_warnings(w);
  return out;
}

v1::PolicyListing listing_message(const fed::PolicySnapshot& snapshot) {
  v1::PolicyListing out;
  out.set_revision(snapshot.revision);
  auto policies = snapshot.policies;
  std::sort(policies.begin(), policies.end(), [](const auto& a, const auto& b) {
    return std::tie(a.cluster, a.namespace_name, a.name) < std::tie(b.cluster, b.namespace_name, b.name);
  });
  for (const auto& p : policies) {
    auto* info = out.add_policies();
    info->set_cluster(p.cluster);
    info->set_namespace_(p.namespace_name);
    info->set_name(p.name);
    info->set_pod_selector(selector_text(p.pod_selector));
    if (p.ingress_type) info->add_policy_types("Ingress");
    if (p.egress_type) info->add_policy_types("Egress");
    info->set_ingress_rules(static_cast<std::uint32_t>(p.ingress.size()));
    info->set_egress_rules(static_cast<std::uint32_t>(p.egress.size()));
    for (const auto& nad : p.policy_for) info->add_policy_for(nad.namespace_name + "/" + nad.name);
  }
  auto namespaces = snapshot.namespaces;
  std::sort(namespaces.begin(), namespaces.end(),
            [](const auto& a, const auto& b) { return std::tie(a.cluster, a.name) < std::tie(b.cluster, b.name); });
  for (const auto& n : namespaces) {
    auto* info = out.add_namespaces();
    info->set_cluster(n.cluster);
    info->set_name(n.name);
    for (const auto& [k, v] : n.labels) (*info->mutable_labels())[k] = v;
  }
  auto pods = snapshot.pods;
  std::sort(pods.begin(), pods.end(), [](const auto& a, const auto& b) {
    return std::tie(a.cluster, a.namespace_name, a.name) < std::tie(b.cluster, b.namespace_name, b.name);
  });
  for (const auto& p : pods) {
    auto* info = out.add_pods();
    info->set_cluster(p.cluster);
    info->set_namespace_(p.namespace_name);
    info->set_name(p.name);
    for (const auto& [k, v] : p.record.labels) (*info->mutable_labels())[k] = v;
    info->set_identity(p.record.identity);
  }
  std::uint32_t allocated = 0;
  for (const auto& [number, record] : snapshot.identities)
    if (record.state == fed::IdentityState::allocated) ++allocated;
  out.set_identities(allocated);
  return out;
}

}  // namespace vxfed::control
