// A pod's identity: what network policy may tell pods apart by, the same on every node of
// every cluster (docs/policy.md, "Identities"). It is the pod's labels less the ones that
// change per pod or per rollout, its namespace's labels, the namespace's name and the
// cluster's. The federation store will number each distinct identity (16 bits, for the
// VXLAN-GBP group on the wire); canonical_key() is the text both sides agree on.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "policy/model.hpp"

namespace vxfed::policy {

// Labels left out of identities. Each changes with every rollout or every run of the same
// workload and is a hash or a UID nobody writes in a policy; kept, it would mint a new
// identity (and spend one of 65,536 numbers) per ReplicaSet, revision or Job run, and every
// node would have to learn the new one before the pods could talk. A pod selector naming one
// of these keys is refused by the parser, since it could never match.
// Kept on purpose: statefulset.kubernetes.io/pod-name, apps.kubernetes.io/pod-index,
// job-name, batch.kubernetes.io/job-name: per pod or per job, but policies do select a
// single StatefulSet member or a Job by them (docs/policy.md).
inline constexpr std::array<std::string_view, 5> kVolatileLabelKeys = {
    "pod-template-hash",                 // Deployment: one value per ReplicaSet (rollout)
    "controller-revision-hash",          // StatefulSet, DaemonSet: one value per revision
    "pod-template-generation",           // DaemonSet: one value per template generation
    "controller-uid",                    // Job (before 1.27): the Job's UID, per run
    "batch.kubernetes.io/controller-uid",  // Job: the Job's UID, per run
};
bool is_volatile_label(std::string_view key);

// The label every namespace carries (the API server sets it); added when a Namespace object
// lacks it, so that selectors on it work whatever printed the object.
inline constexpr const char* kNamespaceNameLabel = "kubernetes.io/metadata.name";

struct Identity {
  std::string cluster;
  std::string namespace_name;
  Labels namespace_labels;  // with kNamespaceNameLabel
  Labels pod_labels;        // without kVolatileLabelKeys
  // A pod whose labels have not arrived yet: its labels (and its namespace's) are unknown, so
  // only selectors that match every label set ({}) match it. cluster and namespace_name may
  // still be known (a local pod's namespace comes with its CNI ADD) or empty (a remote peer
  // seen with the one reserved "unlabelled" number).
  bool unlabelled = false;

  static Identity make_unlabelled(std::string cluster = "", std::string namespace_name = "");
  bool operator==(const Identity&) const = default;
};

// The identity of `pod`, whose namespace is `ns` (nullptr when the Namespace object is not
// known: its labels are then only kNamespaceNameLabel).
Identity identity_of(const Pod& pod, const Namespace* ns);

// The canonical text of an identity: a version line, then one line per fact, sections in a
// fixed order and labels sorted by key (bytewise), so two nodes that see the same labels
// produce the same bytes:
//   vxfed-identity/1
//   cluster=a
//   namespace=prod
//   namespace-label:kubernetes.io/metadata.name=prod
//   pod-label:app=web
// Label keys and values cannot hold ':', '=' or a newline (policy/names.hpp), so the text
// is unambiguous. Every unlabelled identity has the one key "vxfed-identity/1\nreserved=unlabelled\n".
std::string canonical_key(const Identity& identity);

}  // namespace vxfed::policy
