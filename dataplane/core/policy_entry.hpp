// A network's compiled network policy as the forwarder holds it (docs/policy.md, "Enforcement
// in the forwarder"): the NetworkPolicy message vxfedd sends, checked and converted into
// policy::PolicyTables (the reference semantics the workers call directly), plus what the
// workers have in hand for a local pod: its pod port, mapped to its LocalIndex.
//
// Published like the other immutable entries (tables.hpp): one pointer per network index,
// replaced whole by one store, the old entry freed after a grace period. A new entry is built
// whenever the network's policy or the set of its endpoints changes; each gets a new
// generation, which the connection-tracking entries of the network's flows carry, so a flow
// admitted under an older entry is decided again at its next packet (policy_enforce.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/result.hpp"
#include "dataplane/core/counters.hpp"
#include "dataplane/core/policy_trust.hpp"
#include "policy/tables.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::dataplane {

// What the workers read for a network with policy. Immutable once published.
struct NetworkPolicyEntry {
  static constexpr std::uint32_t kNotSelected = 0xffffffff;  // a pod port no policy selects
  std::shared_ptr<const policy::PolicyTables> shared;  // kept alive while any entry uses it
  const policy::PolicyTables* tables = nullptr;        // shared.get(), read by the workers
  std::uint32_t generation = 0;                         // never 0; unique per published entry
  // By pod port: the LocalIndex of the endpoint on that port, kNotSelected when the port
  // carries no endpoint of this network listed in the policy's endpoints.
  std::array<std::uint32_t, kMaxPorts> local_of_port;
  // The GBP trust check of a new flow's claimed identity (policy_trust.hpp); nullptr: off
  // (the entry lists no clusters). trust_shared keeps it alive.
  std::shared_ptr<const IdentityTrust> trust_shared;
  const IdentityTrust* trust = nullptr;
  NetworkPolicyEntry() { local_of_port.fill(kNotSelected); }
};

// A validated NetworkPolicy, as the planner hands it to the writer.
struct PolicySpec {
  std::uint32_t vni = 0;
  std::shared_ptr<const policy::PolicyTables> tables;
  std::map<std::string, std::uint32_t> local_of_endpoint;  // Endpoint.id -> LocalIndex
  std::shared_ptr<const IdentityTrust> trust;               // nullptr: no clusters, no check
  v1::NetworkPolicy given;                                  // for the dump
};

// Checks a NetworkPolicy's shape and converts it (everything but whether its VNI is a known
// network, which the planner checks). Errors start with `where` and name the field:
// `policies[0] (vni 7): local_ingress[2].peers[5].identity: 70000 is not 0..65535`.
Result<PolicySpec> convert_network_policy(const v1::NetworkPolicy& in, const std::string& where);

// For dumps and `vxfed-dpctl dump`: one network's policy in numbers.
struct PolicySummary {
  std::uint32_t vni = 0;
  std::size_t local_tables = 0;      // LocalIndexes (ingress and egress tables each)
  std::size_t remote_tables = 0;     // remote-egress tables
  std::size_t remote_identities = 0; // identities that have a remote-egress table
  std::size_t endpoints_listed = 0;  // PolicyEndpoint entries
  std::size_t endpoints_mapped = 0;  // of those, on a pod port of this network now
  std::size_t bytes = 0;             // PolicyTables::bytes() + the port map
  std::uint32_t generation = 0;
};

}  // namespace vxfed::dataplane
