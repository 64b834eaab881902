// The policy operations of vxfedd's API (PolicyApply, PolicyDelete, PolicyGet in
// proto/control.proto) translated to and from the federation store's terms
// (federation/policy_store.hpp), for the cluster the node belongs to. Pure: no store, no I/O;
// policy_api.* runs the store calls, the unit test (tests/control/policy_requests_test.cpp)
// calls these directly.
#pragma once

#include <string>

#include "common/result.hpp"
#include "federation/policy_store.hpp"
#include "policy/model.hpp"
#include "proto/control.pb.h"

namespace vxfed::control {

// The objects of a PolicyApply, read with policy::read_objects as objects of `cluster`: every
// error of the input, one per line (each naming its field), or the batch.
Result<federation::PolicyBatch> batch_to_apply(const v1::PolicyApply& request, const std::string& cluster);

// The deletes a PolicyDelete asks for: the objects its text holds (the text must read as an
// apply would: a file that could not be applied is not guessed at) and the ones it names. An
// unknown kind, a Namespace given a namespace or a name that is not a valid Kubernetes name is
// refused naming objects[i] and the field.
Result<federation::PolicyBatch> batch_to_delete(const v1::PolicyDelete& request, const std::string& cluster);

// What an apply or delete did.
v1::PolicyApplied applied_message(const federation::PolicyBatch& batch, const federation::ApplyReport& report);

// The store's content as PolicyGet answers it: policies, namespaces and pods sorted by
// cluster, namespace, name.
v1::PolicyListing listing_message(const federation::PolicySnapshot& snapshot);

// A selector as kubectl prints one: "app=web,tier in (a,b),!legacy,debug"; "" for {} (which
// selects every pod of the namespace).
std::string selector_text(const policy::LabelSelector& selector);

}  // namespace vxfed::control
