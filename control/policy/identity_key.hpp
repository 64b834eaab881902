// An identity read back from its canonical key (policy/identity.hpp, canonical_key()), the
// text the store keeps at v1/policy/identities/<number>. A node learns an identity's labels
// from this key, not from the pods holding the number: a held number has no pod any more, and
// a pod being renumbered after its namespace's relabelling still holds the number of its old
// labels (docs/policy.md, "The store"), which only the key tells.
#pragma once

#include <string>

#include "common/result.hpp"
#include "policy/identity.hpp"

namespace vxfed::control {

// The inverse of policy::canonical_key(): canonical_key(*identity_from_key(k)) == k for every
// key it accepts. Anything else (another version line, a fact out of order, a line without
// '=') is an error naming the line.
Result<policy::Identity> identity_from_key(const std::string& key);

}  // namespace vxfed::control
