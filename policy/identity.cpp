#include "policy/identity.hpp"

#include <algorithm>

namespace vxfed::policy {

bool is_volatile_label(std::string_view key) {
  return std::find(kVolatileLabelKeys.begin(), kVolatileLabelKeys.end(), key) != kVolatileLabelKeys.end();
}

Identity Identity::make_unlabelled(std::string cluster, std::string namespace_name) {
  Identity id;
  id.cluster = std::move(cluster);
  id.namespace_name = std::move(namespace_name);
  id.unlabelled = true;
  return id;
}

Identity identity_of(const Pod& pod, const Namespace* ns) {
  Identity id;
  id.cluster = pod.cluster;
  id.namespace_name = pod.namespace_name;
  if (ns != nullptr) id.namespace_labels = ns->labels;
  id.namespace_labels[kNamespaceNameLabel] = pod.namespace_name;
  for (const auto& [key, value] : pod.labels)
    if (!is_volatile_label(key)) id.pod_labels.emplace(key, value);
  return id;
}

std::string canonical_key(const Identity& identity) {
  std::string out = "vxfed-identity/1\n";
  if (identity.unlabelled) return out + "reserved=unlabelled\n";
  out += "cluster=" + identity.cluster + "\n";
  out += "namespace=" + identity.namespace_name + "\n";
  for (const auto& [key, value] : identity.namespace_labels) out += "namespace-label:" + key + "=" + value + "\n";
  for (const auto& [key, value] : identity.pod_labels) out += "pod-label:" + key + "=" + value + "\n";
  return out;
}

}  // namespace vxfed::policy
