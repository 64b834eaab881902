// Reading what `vxfedctl service apply -f FILE` will be given: Service, EndpointSlice and
// ServiceExport objects exactly as `kubectl get -o yaml` prints them, as one object, a `---`
// stream or a `kind: List` with `items:` (docs/services.md, "Input"). The same rules as
// policy/parse.hpp: every error of every object is reported, and any error refuses the whole
// input, so an apply is all or nothing. Each error is one line
//   SOURCE: KIND NAMESPACE/NAME: PATH: REASON
//   web.yaml: Service default/web: documents[0].spec.ports[1].protocol: 'SCTP' is not supported ...
// (errors in metadata itself name only the kind: "Service: documents[0].metadata.name: ...").
// Kubernetes' own metadata and status are skipped; inside a spec every key must be one vxfed
// knows or knows to ignore.
//
// This checks each object alone; services/validate.hpp checks them against each other and
// against the federation (ports of slices against their Service, addresses against the
// clusters' CIDRs, a pinned VIP against the service range).
#pragma once

#include <string>
#include <vector>

#include "common/result.hpp"
#include "services/model.hpp"

namespace vxfed::services {

struct Parsed {
  Objects objects;                  // complete only when errors is empty
  std::vector<std::string> errors;  // every problem found, in input order
};

// Reads `text` as the objects of cluster `cluster` (a DNS label: the cluster the apply is
// for, stamped on Services and ServiceExports, and on EndpointSlices without a source-cluster
// label). `source` names the input in errors ("" leaves it out).
Parsed read_objects(const std::string& text, const std::string& cluster, const std::string& source);

inline constexpr const char* kEndpointSliceApiVersion = "discovery.k8s.io/v1";
inline constexpr const char* kServiceExportApiVersion = "multicluster.x-k8s.io/v1alpha1";

// "2026-12-06T12:16:00Z" (RFC 3339 in UTC, as the API server writes creationTimestamp, an
// optional fraction of a second ignored) -> seconds since the epoch; an error otherwise.
Result<std::int64_t> parse_timestamp(const std::string& text);

}  // namespace vxfed::services
