// The values of the policy keys (schema.hpp, v1/policy/): a MultiNetworkPolicy as the
// Kubernetes object it came from (JSON, the API server's field names), a namespace's labels,
// a pod's labels and identity number. A later Kubernetes-API source writes the same values
// from what the API server hands it; policy/parse.hpp reads a policy back, so a record is
// checked by the same rules as `vxfedctl policy apply` input.
#pragma once

#include <cstdint>
#include <string>

#include "federation/kv.hpp"
#include "policy/model.hpp"

namespace vxfed::federation {

// {"apiVersion":"k8s.cni.cncf.io/v1beta1","kind":"MultiNetworkPolicy","metadata":{"name",
// "namespace","annotations":{"k8s.v1.cni.cncf.io/policy-for":...}},"spec":{...}}, with
// policyTypes always written out (so reading it back never re-applies a default).
std::string encode_policy(const policy::Policy& policy);
// The policy of `cluster` stored at kv (every parse error names the key).
StoreResult<policy::Policy> decode_policy(const KeyValue& kv, const std::string& cluster);

// v1/policy/namespaces/<cluster>/<namespace>: {"labels":{...}}
std::string encode_namespace_labels(const policy::Labels& labels);
StoreResult<policy::Labels> decode_namespace_labels(const KeyValue& kv);

// v1/policy/pods/<cluster>/<namespace>/<pod>: {"labels":{...},"identity":N}. The labels are
// the pod's own, volatile ones included (policy/identity.hpp leaves those out of the identity).
struct PodRecord {
  policy::Labels labels;
  std::uint32_t identity = 0;
  bool operator==(const PodRecord&) const = default;
};
std::string encode(const PodRecord& record);
StoreResult<PodRecord> decode_pod(const KeyValue& kv);

}  // namespace vxfed::federation
