#include "control/cli/service_command.hpp"

#include <iostream>
#include <map>
#include <memory>

#include "control/cli/input_file.hpp"
#include "control/cli/table_printer.hpp"

namespace vxfed::control {

namespace {

std::string joined(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "-" : out;
}

void print_applied(const v1::ServiceApplied& a, bool deleted) {
  std::cout << (deleted ? "deleted" : "applied") << " for cluster " << a.cluster() << " at revision " << a.revision()
            << ": " << (deleted ? a.deleted_size() : a.written_size()) << " service(s)";
  if (a.absent_deletes() > 0) std::cout << " (" << a.absent_deletes() << " were not in the store)";
  std::cout << "\n";
  for (const auto& v : a.allocated()) std::cout << "VIP allocated: " << v << "\n";
  for (const auto& v : a.released()) std::cout << "VIP released (held down): " << v << "\n";
}

int run_apply(const ServiceCommandContext& c, const std::string& file) {
  auto text = read_input(file);
  if (!text || !fits_request(file, *text)) return c.usage_exit;
  v1::ControlRequest req;
  req.mutable_service_apply()->set_text(*text);
  req.mutable_service_apply()->set_source(source_name(file));
  v1::ControlResponse res;
  int exit = 0;
  if (!c.call(req, res, exit)) return exit;
  if (*c.json) std::cout << c.to_json(res.service_applied()).dump(2) << "\n";
  else print_applied(res.service_applied(), false);
  return 0;
}

int run_delete(const ServiceCommandContext& c, const std::string& file, const std::vector<std::string>& names) {
  v1::ControlRequest req;
  auto* del = req.mutable_service_delete();
  if (!file.empty()) {
    auto text = read_input(file);
    if (!text || !fits_request(file, *text)) return c.usage_exit;
    del->set_text(*text);
    del->set_source(source_name(file));
  }
  for (const auto& n : names) {
    const auto slash = n.find('/');
    if (slash == std::string::npos) {
      std::cerr << "vxfedctl: service delete: '" << n << "' must be NAMESPACE/NAME\n";
      return c.usage_exit;
    }
    auto* ref = del->add_services();
    ref->set_namespace_(n.substr(0, slash));
    ref->set_name(n.substr(slash + 1));
  }
  if (file.empty() && names.empty()) {
    std::cerr << "vxfedctl: service delete: give -f FILE or NAMESPACE/NAME...\n";
    return c.usage_exit;
  }
  v1::ControlResponse res;
  int exit = 0;
  if (!c.call(req, res, exit)) return exit;
  if (*c.json) std::cout << c.to_json(res.service_applied()).dump(2) << "\n";
  else print_applied(res.service_applied(), true);
  return 0;
}

std::string strategy_text(const v1::ServiceInfo& s) {
  std::string out = s.strategy();
  if (!s.weights().empty()) {
    std::map<std::string, std::uint32_t> sorted(s.weights().begin(), s.weights().end());
    std::string w;
    for (const auto& [cluster, weight] : sorted) w += (w.empty() ? "" : ",") + cluster + "=" + std::to_string(weight);
    out += " (" + w + ")";
  }
  if (s.failover_order_size() > 0) out += " (" + joined(s.failover_order()) + ")";
  return out;
}

// Whether this node holds an entry for the service, and why not.
std::string programmed_text(const v1::ServiceInfo& s) {
  if (!s.in_node_view()) return "- (not in this node's listing yet)";
  if (s.programmed()) return "yes";
  return "no" + (s.not_programmed().empty() ? std::string() : " (" + s.not_programmed() + ")");
}

int run_get(const ServiceCommandContext& c) {
  v1::ControlRequest req;
  req.mutable_service_get();
  v1::ControlResponse res;
  int exit = 0;
  if (!c.call(req, res, exit)) return exit;
  const auto& l = res.service_listing();
  if (*c.json) {
    std::cout << c.to_json(l).dump(2) << "\n";
    return 0;
  }
  std::cout << "federation store revision " << l.revision() << ": " << l.services_size() << " service(s), range "
            << (l.service_range().empty() ? "-" : l.service_range()) << "\n\n";
  std::cout << "this node: " << (l.node_revision() > 0 ? "listing at revision " + std::to_string(l.node_revision())
                                                      : std::string("no listing of the store yet"))
            << "\n\n";
  TablePrinter services({"SERVICE", "VIP", "STRATEGY", "PORTS", "CLUSTERS", "PROGRAMMED"});
  for (const auto& s : l.services()) {
    std::string ports;
    for (const auto& p : s.ports())
      ports += (ports.empty() ? "" : ",") + (p.name().empty() ? "" : p.name() + ":") + std::to_string(p.port()) + "/" +
               p.protocol() + "->" + std::to_string(p.target_port());
    services.row({s.namespace_() + "/" + s.name(), s.vip().empty() ? "-" : s.vip(), strategy_text(s), ports,
                  joined(s.clusters()), programmed_text(s)});
  }
  services.print(std::cout);
  std::cout << "\n";
  // READY is the store's flag; STATE, ALLOWED and WEIGHT are this node's view ("-": its
  // listing does not have the backend yet). ALLOWED "kept": no new flows, but in the entry at
  // weight 0 for the flows it has open (docs/services.md, "Flows stay").
  // FLOWS and NEW-FLOWS: this node's forwarder's, live now and given since it started ("-":
  // no figures from the dataplane yet).
  TablePrinter backends(
      {"SERVICE", "CLUSTER", "BACKEND", "READY", "STATE", "ALLOWED", "WEIGHT", "FLOWS", "NEW-FLOWS"});
  for (const auto& s : l.services())
    for (const auto& b : s.backends()) {
      const bool known = !b.state().empty();
      backends.row({s.namespace_() + "/" + s.name(), b.cluster(), b.address(), b.ready() ? "true" : "false",
                    known ? b.state() : "-", known ? (b.allowed() ? "yes" : b.kept() ? "kept" : "no") : "-",
                    known && (b.allowed() || b.kept()) ? std::to_string(b.weight()) : "-",
                    b.flows_known() ? std::to_string(b.flows()) : "-",
                    b.flows_known() ? std::to_string(b.new_flows()) : "-"});
    }
  backends.print(std::cout);
  bool any_kept = false;
  for (const auto& s : l.services())
    for (const auto& b : s.backends()) any_kept = any_kept || b.kept();
  if (any_kept) std::cout << "kept: given no new flow, kept for open flows (in the entry at weight 0)\n";
  std::cout << "\n";
  TablePrinter exports({"SERVICE", "EXPORTED-BY", "CONFLICT", "REASON", "MESSAGE"});
  for (const auto& e : l.conditions())
    exports.row({e.namespace_() + "/" + e.name(), e.cluster(), e.conflict() ? "True" : "False", e.reason(),
                 e.message().empty() ? "-" : e.message()});
  exports.print(std::cout);
  return 0;
}

}  // namespace

void add_service_command(CLI::App& app, ServiceCommandContext context) {
  auto c = std::make_shared<ServiceCommandContext>(std::move(context));
  auto* service = app.add_subcommand(
      "service", "global services in the federation store, for this node's cluster (needs vxfedd's federation and services sections)");
  service->require_subcommand(1);

  auto apply_file = std::make_shared<std::string>();
  auto* apply = service->add_subcommand(
      "apply", "apply Service, EndpointSlice and ServiceExport objects as `kubectl get -o yaml` prints them, all or nothing");
  apply->add_option("-f,--filename", *apply_file, "YAML file (one object, a --- stream or a List); - for stdin")->required();
  apply->callback([c, apply_file] {
    *c->result = *c->check ? c->check_only("service apply") : run_apply(*c, *apply_file);
  });

  auto delete_file = std::make_shared<std::string>();
  auto delete_names = std::make_shared<std::vector<std::string>>();
  auto* del = service->add_subcommand("delete", "delete this cluster's services a file holds (-f) or NAMESPACE/NAME...");
  del->add_option("-f,--filename", *delete_file, "YAML file whose services are deleted; - for stdin");
  del->add_option("services", *delete_names, "NAMESPACE/NAME of each service");
  del->callback([c, delete_file, delete_names] {
    *c->result = *c->check ? c->check_only("service delete") : run_delete(*c, *delete_file, *delete_names);
  });

  service->add_subcommand("get", "every federated service: VIP, strategy, ports, backends per cluster, export conditions")
      ->callback([c] { *c->result = *c->check ? c->check_only("service get") : run_get(*c); });
}

}  // namespace vxfed::control
