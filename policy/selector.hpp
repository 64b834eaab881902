// Label selector semantics, exactly as Kubernetes defines them: every matchLabels pair must be
// present with its value; In needs the key with one of the values, NotIn holds when the key is
// absent or has none of them, Exists and DoesNotExist test the key alone. {} matches all.
#pragma once

#include "policy/model.hpp"

namespace vxfed::policy {

bool matches(const LabelSelector& selector, const Labels& labels);

// The same for labels not known yet (a pod whose labels have not arrived): only the empty
// selector is sure to match, so only it does. A DoesNotExist could hold on the empty set, but
// the real labels might have the key; not matching is the side that never allows too much
// once the labels are known (docs/policy.md, "Before a pod's labels arrive").
inline bool matches_unknown(const LabelSelector& selector) { return selector.empty(); }

}  // namespace vxfed::policy
