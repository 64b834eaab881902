// A network's compiled policy tables in the wire's form (proto/dataplane.proto NetworkPolicy;
// docs/policy.md, "Publishing to the forwarder"): what vxfedd sends the forwarder, which
// rebuilds policy::PolicyTables from it and decides with decide_*().
//
// Field for field, except where the wire is sparser:
//   - a table that is not isolated is sent as `isolated: false` alone (the forwarder reads
//     nothing else of it; the compiler leaves such tables empty anyway);
//   - remote_egress_of, 65,536 table numbers mostly kNoTable, becomes one PolicyRemoteEgress
//     per table some identity uses, listing those identities (sorted); tables no identity
//     uses any more (free slots of the compiler) are not sent;
//   - peer_starts is an index the forwarder builds itself.
// Port set ids are the compiler's ([0] nothing, [1] everything), so they need no renumbering.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "policy/tables.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::control {

namespace dp = ::vxfed::dataplane::v1;

// A local endpoint and the LocalIndex of its pod's identity in the network's tables.
struct EndpointLocal {
  std::string endpoint_id;  // dp::Endpoint.id
  std::uint32_t local = 0;
  auto operator<=>(const EndpointLocal&) const = default;
};

// The network's entry. `endpoints` are sorted by id and unique in the entry (equal tables and
// mappings give equal bytes, so a publication can be compared by its serialization); each
// `local` must index tables.local_ingress.
dp::NetworkPolicy network_policy_to_wire(std::uint32_t vni, const policy::PolicyTables& tables,
                                         std::vector<EndpointLocal> endpoints);

// The GBP trust check's input (docs/policy.md, "Trusting the identity"): every cluster whose pod
// CIDRs this node knows (its own cluster.pod_cidrs and bgp.clusters), by name.
using ClusterCidrs = std::map<std::string, std::vector<std::string>>;
// The cluster of an allocated identity number, nullptr when not known (or reserved).
using ClusterOf = std::function<const std::string*(std::uint16_t number)>;

// Fills entry.clusters: for each identity the entry's tables name as a claim a remote node
// could make (a local-ingress peer, a remote-egress identity), its cluster when that cluster's
// CIDRs are known; clusters sorted by name, identities sorted (equal input, equal bytes). An
// identity of a cluster without known CIDRs is left out, and so not checked by the forwarder.
void add_identity_clusters(dp::NetworkPolicy& entry, const ClusterCidrs& cidrs, const ClusterOf& cluster_of);

}  // namespace vxfed::control
