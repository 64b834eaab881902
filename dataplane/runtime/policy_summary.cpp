#include "dataplane/runtime/policy_summary.hpp"

#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "dataplane/core/policy_entry.hpp"

namespace vxfed::dataplane {

std::string with_policy_summary(const std::string& response_json, const v1::Tables& tables) {
  if (tables.policies_size() == 0) return response_json;
  std::set<std::pair<std::uint32_t, std::string>> endpoints;  // (vni, id)
  for (const auto& e : tables.endpoints()) endpoints.emplace(e.vni(), e.id());
  nlohmann::json out = nlohmann::json::parse(response_json);
  nlohmann::json list = nlohmann::json::array();
  for (int i = 0; i < tables.policies_size(); ++i) {
    const auto& p = tables.policies(i);
    nlohmann::json s = {{"vni", p.vni()},
                        {"localTables", p.local_ingress_size()},
                        {"remoteTables", p.remote_egress_size()},
                        {"endpointsListed", p.endpoints_size()}};
    std::size_t identities = 0, mapped = 0;
    for (const auto& r : p.remote_egress()) identities += static_cast<std::size_t>(r.identities_size());
    for (const auto& e : p.endpoints()) mapped += endpoints.count({p.vni(), e.endpoint_id()});
    s["remoteIdentities"] = identities;
    s["endpointsMapped"] = mapped;
    if (auto spec = convert_network_policy(p, "policies[" + std::to_string(i) + "]"))
      s["bytes"] = spec->tables->bytes() + sizeof(NetworkPolicyEntry);
    else
      s["error"] = spec.error();
    list.push_back(std::move(s));
  }
  out["policySummary"] = std::move(list);
  return out.dump(2) + "\n";
}

}  // namespace vxfed::dataplane
