#include "control/policy/identity_key.hpp"

#include <string_view>

namespace vxfed::control {

namespace {

constexpr std::string_view kVersionLine = "vxfed-identity/1";

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

}  // namespace

Result<policy::Identity> identity_from_key(const std::string& key) {
  std::vector<std::string_view> lines;
  std::string_view rest = key;
  while (!rest.empty()) {
    const auto end = rest.find('\n');
    if (end == std::string_view::npos) return make_error("identity key: the last line has no newline");
    lines.push_back(rest.substr(0, end));
    rest.remove_prefix(end + 1);
  }
  if (lines.empty() || lines[0] != kVersionLine)
    return make_error("identity key: line 1: expected '" + std::string(kVersionLine) + "'");
  if (lines.size() == 2 && lines[1] == "reserved=unlabelled") return policy::Identity::make_unlabelled();
  if (lines.size() < 3 || !starts_with(lines[1], "cluster=") || !starts_with(lines[2], "namespace="))
    return make_error("identity key: lines 2-3: expected 'cluster=' and 'namespace='");
  policy::Identity identity;
  identity.cluster = std::string(lines[1].substr(8));
  identity.namespace_name = std::string(lines[2].substr(10));
  bool pod_section = false;
  for (std::size_t i = 3; i < lines.size(); ++i) {
    const auto line = lines[i];
    policy::Labels* labels = nullptr;
    std::string_view fact;
    if (!pod_section && starts_with(line, "namespace-label:")) {
      labels = &identity.namespace_labels;
      fact = line.substr(16);
    } else if (starts_with(line, "pod-label:")) {
      pod_section = true;
      labels = &identity.pod_labels;
      fact = line.substr(10);
    } else {
      return make_error("identity key: line " + std::to_string(i + 1) + ": expected 'namespace-label:' or 'pod-label:'");
    }
    const auto eq = fact.find('=');
    if (eq == std::string_view::npos) return make_error("identity key: line " + std::to_string(i + 1) + ": no '='");
    if (!labels->emplace(std::string(fact.substr(0, eq)), std::string(fact.substr(eq + 1))).second)
      return make_error("identity key: line " + std::to_string(i + 1) + ": label repeated");
  }
  // Sorted keys and the section order are part of the canonical form: anything else is not a
  // key canonical_key() wrote, and two nodes could read it differently.
  if (policy::canonical_key(identity) != key) return make_error("identity key: not in canonical form");
  return identity;
}

}  // namespace vxfed::control
