// Reading what `vxfedctl policy apply -f FILE` is given: MultiNetworkPolicy, Namespace and Pod
// objects exactly as `kubectl get -o yaml` prints them, as one object, a multi-document
// stream or a `kind: List` with `items:` (docs/policy.md, "Input").
//
// Nothing is lost quietly: every error of every object is reported (not only the first), and
// any error refuses the whole input, so an apply is all or nothing. Each error is one line
// "SOURCE: PATH: REASON", PATH being the field's place in the input:
//   spec.ingress[0].ports[1].endPort            a single object
//   items[2].spec.podSelector.matchLabels["app.kubernetes.io/name"]   an item of a List
//   documents[1].metadata.name                  the second non-empty document of a stream
// Kubernetes' own metadata and status (uid, managedFields, a Pod's spec and status...) are
// skipped; inside a policy's spec every key must be one vxfed knows, because a field it does
// not understand could change what the policy allows.
#pragma once

#include <string>
#include <vector>

#include "common/result.hpp"
#include "policy/model.hpp"

namespace vxfed::policy {

struct Parsed {
  Objects objects;                  // complete only when errors is empty
  std::vector<std::string> errors;  // every problem found, in input order
};

// Reads `text` as the objects of cluster `cluster` (a DNS label: the cluster the apply is
// for, stamped on every object). `source` names the input in errors ("" leaves it out).
Parsed read_objects(const std::string& text, const std::string& cluster, const std::string& source);

// The same as a Result: the objects, or every error joined by '\n'.
Result<Objects> parse_objects(const std::string& text, const std::string& cluster, const std::string& source);

// The annotation of a MultiNetworkPolicy that names its networks.
inline constexpr const char* kPolicyForAnnotation = "k8s.v1.cni.cncf.io/policy-for";
inline constexpr const char* kPolicyApiVersion = "k8s.cni.cncf.io/v1beta1";

}  // namespace vxfed::policy
