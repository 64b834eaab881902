#include "control/cli/policy_drops_text.hpp"

#include <map>
#include <sstream>

#include "control/cli/table_printer.hpp"

namespace vxfed::control {

namespace {

std::string joined(const google::protobuf::RepeatedPtrField<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "-" : out;
}

}  // namespace

std::string format_policy_drops(const v1::PolicyDropsReport& r) {
  std::ostringstream out;
  if (!r.have_counters()) {
    out << "no counters from the forwarder yet (not connected, or its first poll has not answered)\n";
  } else {
    out << "forwarder on this node: " << r.flows_decided() << " new flows decided, " << r.flows_allowed()
        << " allowed, " << r.flows_denied() << " denied";
    std::string reasons;
    for (const auto& [reason, n] : std::map<std::string, std::uint64_t>(r.reasons().begin(), r.reasons().end()))
      reasons += (reasons.empty() ? "" : ", ") + reason + " " + std::to_string(n);
    if (!reasons.empty()) out << " (" << reasons << ")";
    out << "\n";
  }
  out << "\n";
  TablePrinter policies({"POLICY", "DIRECTION", "REASON", "DROPS"});
  for (const auto& c : r.policies())
    policies.row({c.policy().empty() ? "(none)" : c.policy(), c.direction(), c.reason(), std::to_string(c.packets())});
  if (policies.size() == 0) out << "no refused flows counted since vxfedd started\n";
  else policies.print(out);
  out << "\n";
  TablePrinter pods({"NETWORK", "NAMESPACE", "POD", "ADDRESS", "IDENTITY", "EGRESS", "INGRESS", "REMOTE-EGRESS",
                     "FORGED", "INGRESS-POLICIES", "EGRESS-POLICIES"});
  for (const auto& p : r.pods())
    pods.row({p.network(), p.namespace_(), p.name(), p.ip(), std::to_string(p.identity()),
              std::to_string(p.denied_egress()), std::to_string(p.denied_ingress()),
              std::to_string(p.denied_remote_egress()), std::to_string(p.forged_identity()),
              joined(p.ingress_policies()), joined(p.egress_policies())});
  if (pods.size() == 0) out << "no pod of a network with policy on this node\n";
  else pods.print(out);
  return out.str();
}

}  // namespace vxfed::control
