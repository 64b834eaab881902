#include "federation/policy_records.hpp"

#include <nlohmann/json.hpp>

#include "policy/parse.hpp"

namespace vxfed::federation {

using nlohmann::json;

namespace {

StoreError damaged(const KeyValue& kv, const std::string& why) {
  return store_error(Code::internal, "federation store key " + kv.key + " is damaged (" + why +
                                         "); fix or delete it (docs/federation.md, \"Policy\")");
}

json labels_json(const policy::Labels& labels) {
  json j = json::object();
  for (const auto& [k, v] : labels) j[k] = v;
  return j;
}

StoreResult<policy::Labels> read_labels(const KeyValue& kv, const json& j) {
  policy::Labels out;
  if (!j.contains("labels")) return out;
  if (!j["labels"].is_object()) return damaged(kv, "labels is not a map");
  for (const auto& [k, v] : j["labels"].items()) {
    if (!v.is_string()) return damaged(kv, "label " + k + " is not a string");
    out[k] = v.get<std::string>();
  }
  return out;
}

const char* operator_name(policy::Operator op) {
  switch (op) {
    case policy::Operator::In: return "In";
    case policy::Operator::NotIn: return "NotIn";
    case policy::Operator::Exists: return "Exists";
    case policy::Operator::DoesNotExist: return "DoesNotExist";
  }
  return "In";
}

json selector_json(const policy::LabelSelector& s) {
  json j = json::object();
  if (!s.match_labels.empty()) j["matchLabels"] = labels_json(s.match_labels);
  if (!s.match_expressions.empty()) {
    json list = json::array();
    for (const auto& r : s.match_expressions) {
      json e{{"key", r.key}, {"operator", operator_name(r.op)}};
      if (!r.values.empty()) e["values"] = r.values;
      list.push_back(std::move(e));
    }
    j["matchExpressions"] = std::move(list);
  }
  return j;
}

json rule_json(const policy::Rule& rule, const char* peers_field) {
  json j = json::object();
  if (!rule.peers.empty()) {
    json peers = json::array();
    for (const auto& p : rule.peers) {
      json peer = json::object();
      if (p.pod_selector) peer["podSelector"] = selector_json(*p.pod_selector);
      if (p.namespace_selector) peer["namespaceSelector"] = selector_json(*p.namespace_selector);
      if (p.ip_block) {
        json block{{"cidr", p.ip_block->cidr.str()}};
        if (!p.ip_block->except.empty()) {
          json except = json::array();
          for (const auto& e : p.ip_block->except) except.push_back(e.str());
          block["except"] = std::move(except);
        }
        peer["ipBlock"] = std::move(block);
      }
      peers.push_back(std::move(peer));
    }
    j[peers_field] = std::move(peers);
  }
  if (!rule.ports.empty()) {
    json ports = json::array();
    for (const auto& p : rule.ports) {
      json port{{"protocol", p.protocol == policy::Protocol::Udp ? "UDP" : "TCP"}};
      if (p.port) port["port"] = *p.port;
      if (p.end_port) port["endPort"] = *p.end_port;
      ports.push_back(std::move(port));
    }
    j["ports"] = std::move(ports);
  }
  return j;
}

}  // namespace

std::string encode_policy(const policy::Policy& p) {
  std::string policy_for;
  for (const auto& nad : p.policy_for) {
    if (!policy_for.empty()) policy_for += ",";
    policy_for += nad.namespace_name + "/" + nad.name;
  }
  json types = json::array();
  if (p.ingress_type) types.push_back("Ingress");
  if (p.egress_type) types.push_back("Egress");
  json spec{{"podSelector", selector_json(p.pod_selector)}, {"policyTypes", types}};
  if (!p.ingress.empty()) {
    json rules = json::array();
    for (const auto& r : p.ingress) rules.push_back(rule_json(r, "from"));
    spec["ingress"] = std::move(rules);
  }
  if (!p.egress.empty()) {
    json rules = json::array();
    for (const auto& r : p.egress) rules.push_back(rule_json(r, "to"));
    spec["egress"] = std::move(rules);
  }
  return json{{"apiVersion", policy::kPolicyApiVersion},
              {"kind", "MultiNetworkPolicy"},
              {"metadata",
               {{"name", p.name},
                {"namespace", p.namespace_name},
                {"annotations", {{policy::kPolicyForAnnotation, policy_for}}}}},
              {"spec", std::move(spec)}}
      .dump();
}

StoreResult<policy::Policy> decode_policy(const KeyValue& kv, const std::string& cluster) {
  // JSON is YAML: the policy parser reads the record with every rule an apply is checked by.
  auto parsed = policy::read_objects(kv.value, cluster, "federation store key " + kv.key);
  if (!parsed.errors.empty()) {
    std::string all;
    for (const auto& e : parsed.errors) all += (all.empty() ? "" : "; ") + e;
    return store_error(Code::internal, all);
  }
  if (parsed.objects.policies.size() != 1 || !parsed.objects.namespaces.empty() || !parsed.objects.pods.empty())
    return damaged(kv, "not exactly one MultiNetworkPolicy");
  return std::move(parsed.objects.policies.front());
}

std::string encode_namespace_labels(const policy::Labels& labels) {
  return json{{"labels", labels_json(labels)}}.dump();
}

StoreResult<policy::Labels> decode_namespace_labels(const KeyValue& kv) {
  json j = json::parse(kv.value, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return damaged(kv, "not a JSON object");
  return read_labels(kv, j);
}

std::string encode(const PodRecord& r) { return json{{"labels", labels_json(r.labels)}, {"identity", r.identity}}.dump(); }

StoreResult<PodRecord> decode_pod(const KeyValue& kv) {
  json j = json::parse(kv.value, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return damaged(kv, "not a JSON object");
  auto labels = read_labels(kv, j);
  if (!labels) return labels.store_error();
  if (!j.contains("identity") || !j["identity"].is_number_unsigned() || j["identity"].get<std::uint64_t>() > 65535)
    return damaged(kv, "identity must be a number 0-65535");
  return PodRecord{std::move(*labels), j["identity"].get<std::uint32_t>()};
}

}  // namespace vxfed::federation
