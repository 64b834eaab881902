#include "control/cli/policy_command.hpp"

#include <cctype>
#include <iostream>
#include <map>
#include <memory>

#include "control/cli/input_file.hpp"
#include "control/cli/policy_drops_text.hpp"
#include "control/cli/table_printer.hpp"

namespace vxfed::control {

namespace {

using json = nlohmann::json;

// "1 policy", "2 policies".
std::string count(std::uint32_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

std::string labels_text(const google::protobuf::Map<std::string, std::string>& m) {
  std::map<std::string, std::string> sorted(m.begin(), m.end());
  std::string out;
  for (const auto& [k, v] : sorted) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out.empty() ? "-" : out;
}

std::string joined(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "-" : out;
}

// The kinds `policy delete KIND NAME...` takes, kubectl's short names included.
std::optional<std::string> kind_of(std::string word) {
  for (auto& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (word == "multinetworkpolicy" || word == "multinetworkpolicies" || word == "multi-networkpolicy" ||
      word == "multi-networkpolicies" || word == "policy" || word == "policies")
    return "MultiNetworkPolicy";
  if (word == "namespace" || word == "namespaces" || word == "ns") return "Namespace";
  if (word == "pod" || word == "pods" || word == "po") return "Pod";
  return std::nullopt;
}

void print_applied(const v1::PolicyApplied& a, bool deleted) {
  if (deleted) {
    std::cout << "deleted for cluster " << a.cluster() << " at revision " << a.revision() << ": " << count(a.deleted(), "object", "objects");
    if (a.absent_deletes() > 0) std::cout << " (" << a.absent_deletes() << " were not in the store)";
    std::cout << "\n";
  } else {
    std::cout << "applied for cluster " << a.cluster() << " at revision " << a.revision() << ": " << count(a.policies(), "policy", "policies")
              << ", " << count(a.namespaces(), "namespace", "namespaces") << ", " << count(a.pods(), "pod", "pods") << " ("
              << count(a.new_identities(), "new identity", "new identities");
    if (a.renumbered() > 0) std::cout << ", " << a.renumbered() << " other pods renumbered";
    std::cout << ")\n";
    if (a.pod_identities_size() > 0) {
      TablePrinter t({"NAMESPACE", "POD", "IDENTITY"});
      for (const auto& p : a.pod_identities()) t.row({p.namespace_(), p.name(), std::to_string(p.identity())});
      t.print(std::cout);
    }
  }
  for (const auto& w : a.warnings()) std::cerr << "vxfedctl: warning: " << w << "\n";
}

int run_apply(const PolicyCommandContext& c, const std::string& file) {
  auto text = read_input(file);
  if (!text || !fits_request(file, *text)) return c.usage_exit;
  v1::ControlRequest req;
  req.mutable_policy_apply()->set_text(*text);
  req.mutable_policy_apply()->set_source(source_name(file));
  v1::ControlResponse res;
  int exit = 0;
  if (!c.call(req, res, exit)) return exit;
  if (*c.json) std::cout << c.to_json(res.policy_applied()).dump(2) << "\n";
  else print_applied(res.policy_applied(), false);
  return 0;
}

int run_delete(const PolicyCommandContext& c, const std::string& file, const std::vector<std::string>& names) {
  v1::ControlRequest req;
  auto* del = req.mutable_policy_delete();
  if (!file.empty()) {
    auto text = read_input(file);
    if (!text || !fits_request(file, *text)) return c.usage_exit;
    del->set_text(*text);
    del->set_source(source_name(file));
  }
  if (!names.empty()) {
    auto kind = kind_of(names[0]);
    if (!kind) {
      std::cerr << "vxfedctl: policy delete: '" << names[0]
                << "' is not a kind vxfed stores (multinetworkpolicy|policy, namespace|ns, pod|po)\n";
      return c.usage_exit;
    }
    if (names.size() == 1) {
      std::cerr << "vxfedctl: policy delete " << names[0] << ": name the objects ("
                << (*kind == "Namespace" ? "NAME" : "NAMESPACE/NAME") << ", one or more)\n";
      return c.usage_exit;
    }
    for (std::size_t i = 1; i < names.size(); ++i) {
      auto* ref = del->add_objects();
      ref->set_kind(*kind);
      const auto slash = names[i].find('/');
      if (*kind != "Namespace" && slash == std::string::npos) {
        std::cerr << "vxfedctl: policy delete: '" << names[i] << "' must be NAMESPACE/NAME\n";
        return c.usage_exit;
      }
      if (slash == std::string::npos) {
        ref->set_name(names[i]);
      } else {
        ref->set_namespace_(names[i].substr(0, slash));
        ref->set_name(names[i].substr(slash + 1));
      }
    }
  }
  if (file.empty() && names.empty()) {
    std::cerr << "vxfedctl: policy delete: give -f FILE or KIND NAME...\n";
    return c.usage_exit;
  }
  v1::ControlResponse res;
  int exit = 0;
  if (!c.call(req, res, exit)) return exit;
  if (*c.json) std::cout << c.to_json(res.policy_applied()).dump(2) << "\n";
  else print_applied(res.policy_applied(), true);
  return 0;
}

int run_get(const PolicyCommandContext& c) {
  v1::ControlRequest req;
  req.mutable_policy_get();
  v1::ControlResponse res;
  int exit = 0;
  if (!c.call(req, res, exit)) return exit;
  const auto& l = res.policy_listing();
  if (*c.json) {
    std::cout << c.to_json(l).dump(2) << "\n";
    return 0;
  }
  std::cout << "federation store revision " << l.revision() << ": "
            << count(static_cast<std::uint32_t>(l.policies_size()), "policy", "policies") << ", "
            << count(static_cast<std::uint32_t>(l.namespaces_size()), "namespace", "namespaces") << ", "
            << count(static_cast<std::uint32_t>(l.pods_size()), "pod", "pods") << ", "
            << count(l.identities(), "identity", "identities") << " allocated\n\n";
  TablePrinter policies({"CLUSTER", "NAMESPACE", "POLICY", "POD-SELECTOR", "TYPES", "INGRESS", "EGRESS", "POLICY-FOR"});
  for (const auto& p : l.policies())
    policies.row({p.cluster(), p.namespace_(), p.name(), p.pod_selector().empty() ? "(all pods)" : p.pod_selector(),
                  joined(p.policy_types()), std::to_string(p.ingress_rules()), std::to_string(p.egress_rules()),
                  joined(p.policy_for())});
  policies.print(std::cout);
  std::cout << "\n";
  TablePrinter namespaces({"CLUSTER", "NAMESPACE", "LABELS"});
  for (const auto& n : l.namespaces()) namespaces.row({n.cluster(), n.name(), labels_text(n.labels())});
  namespaces.print(std::cout);
  std::cout << "\n";
  TablePrinter pods({"CLUSTER", "NAMESPACE", "POD", "IDENTITY", "LABELS"});
  for (const auto& p : l.pods())
    pods.row({p.cluster(), p.namespace_(), p.name(), std::to_string(p.identity()), labels_text(p.labels())});
  pods.print(std::cout);
  return 0;
}

int run_drops(const PolicyCommandContext& c) {
  v1::ControlRequest req;
  req.mutable_policy_drops();
  v1::ControlResponse res;
  int exit = 0;
  if (!c.call(req, res, exit)) return exit;
  if (*c.json) std::cout << c.to_json(res.policy_drops()).dump(2) << "\n";
  else std::cout << format_policy_drops(res.policy_drops());
  return 0;
}

}  // namespace

void add_policy_command(CLI::App& app, PolicyCommandContext context) {
  auto c = std::make_shared<PolicyCommandContext>(std::move(context));
  auto* policy = app.add_subcommand(
      "policy", "network policy in the federation store, for this node's cluster (needs vxfedd's federation section)");
  policy->require_subcommand(1);

  auto apply_file = std::make_shared<std::string>();
  auto* apply = policy->add_subcommand(
      "apply", "apply MultiNetworkPolicy, Namespace and Pod objects as `kubectl get -o yaml` prints them, all or nothing");
  apply->add_option("-f,--filename", *apply_file, "YAML file (one object, a --- stream or a List); - for stdin")->required();
  apply->callback([c, apply_file] {
    *c->result = *c->check ? c->check_only("policy apply") : run_apply(*c, *apply_file);
  });

  auto delete_file = std::make_shared<std::string>();
  auto delete_names = std::make_shared<std::vector<std::string>>();
  auto* del = policy->add_subcommand(
      "delete", "delete the objects a file holds (-f) or KIND NAME... (policy NS/NAME, ns NAME, pod NS/NAME), all or nothing");
  del->add_option("-f,--filename", *delete_file, "YAML file whose objects are deleted; - for stdin");
  del->add_option("objects", *delete_names, "KIND then the objects: NAMESPACE/NAME (a namespace: NAME)");
  del->callback([c, delete_file, delete_names] {
    *c->result = *c->check ? c->check_only("policy delete") : run_delete(*c, *delete_file, *delete_names);
  });

  policy->add_subcommand("get", "policies, namespaces and pods with labels and identity numbers, of every cluster")
      ->callback([c] { *c->result = *c->check ? c->check_only("policy get") : run_get(*c); });
  policy->add_subcommand("drops", "new flows the forwarder refused on this node, per policy and reason, per pod, and its "
                                  "policy totals (docs/policy.md, \"Drops per policy\")")
      ->callback([c] { *c->result = *c->check ? c->check_only("policy drops") : run_drops(*c); });
}

}  // namespace vxfed::control
