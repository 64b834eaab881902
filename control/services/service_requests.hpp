// The global-service operations of vxfedd's API (ServiceApply, ServiceDelete, ServiceGet in
// proto/control.proto) translated to and from the service store's terms
// (services/service_store.hpp), for the cluster the node belongs to. Pure: no store, no I/O;
// service_api.* runs the store calls.
#pragma once

#include <string>

#include "common/result.hpp"
#include "proto/control.pb.h"
#include "services/service_store.hpp"
#include "services/validate.hpp"

namespace vxfed::control {

// The objects of a ServiceApply, parsed and validated against `federation` as objects of
// `cluster`: every error of the input, one per line (each naming its field), or the apply.
Result<services::ServiceApply> service_apply_of(const v1::ServiceApply& request, const std::string& cluster,
                                                const services::FederationView& federation);

// The services a ServiceDelete names: those of its text (which must read as an apply would)
// and those listed by namespace/name (refused naming services[i] and the field when not a
// valid name).
Result<services::ServiceApply> service_delete_of(const v1::ServiceDelete& request, const std::string& cluster,
                                                 const services::FederationView& federation);

v1::ServiceApplied service_applied_message(const std::string& cluster, const services::ServiceApplyReport& report);

// The store's content as ServiceGet answers it: the federated services (sorted by
// namespace/name) with VIP, strategy, ports, backends and every export's condition.
Result<v1::ServiceListing> service_listing_message(const services::ServiceSnapshot& snapshot);

}  // namespace vxfed::control
