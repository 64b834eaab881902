// Identity numbers for the whole federation (docs/policy.md, "Identity numbers"): a pod
// identity's canonical key (policy/identity.hpp) -> a 16-bit number, the VXLAN-GBP group
// policy ID the forwarder will put on the wire. This file holds the pure parts: the reserved
// numbers, the federation's range and hold-down, the records, and the choice of a free number
// with the exhaustion error. PolicyStore (policy_store.hpp) allocates them in the store.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "federation/kv.hpp"

namespace vxfed::federation {

// Reserved numbers: never allocated, never in the store, the same on every node.
inline constexpr std::uint32_t kIdentityUnknown = 0;     // nothing known: a packet without a GBP header
                                                         // from a VTEP that should send one
inline constexpr std::uint32_t kIdentityUnlabelled = 1;  // a federation pod whose labels have not
                                                         // arrived (policy::Identity::make_unlabelled)
inline constexpr std::uint32_t kIdentityWorld = 2;       // an address outside every vxfed network
                                                         // (matched by ipBlock peers only)
// 3..255: kept free for later reserved meanings (the node itself, a gateway), so that adding
// one never renumbers an allocated identity.
inline constexpr std::uint32_t kFirstAllocatableIdentity = 256;
inline constexpr std::uint32_t kLastIdentity = 65535;    // 16 bits: the GBP group policy ID

// The reserved number of a canonical key, when it has one (today the unlabelled key only).
std::optional<std::uint32_t> reserved_identity(const std::string& canonical_key);

// The federation's allocatable numbers and hold-down, in the store at v1/policy/identity-range
// (seeded by the first node that finds none, then the store's are used, as the VNI pools).
struct IdentityRange {
  std::uint32_t first = kFirstAllocatableIdentity;
  std::uint32_t last = kLastIdentity;
  // A released number is not given to another key for this long: packets already on the wire
  // and nodes that have not yet heard of the release still read it as the old identity.
  std::uint64_t hold_down_ms = 300 * 1000;
  bool operator==(const IdentityRange&) const = default;
};
StoreStatus validate(const IdentityRange& range);

enum class IdentityState { allocated, held };

// v1/policy/identities/<number>
struct IdentityRecord {
  std::uint32_t number = 0;       // the key's, not in the value
  std::string key;                // the canonical key: the identity's labels, readable by every node
  IdentityState state = IdentityState::allocated;
  std::uint64_t held_until_unix_ms = 0;  // held: the same key may take it back until then; others wait
  bool operator==(const IdentityRecord&) const = default;
};

std::string encode(const IdentityRange& range);
std::string encode(const IdentityRecord& record);
StoreResult<IdentityRange> decode_identity_range(const KeyValue& kv);
StoreResult<IdentityRecord> decode_identity(const KeyValue& kv);

// A canonical key as one etcd key element: bytes other than [A-Za-z0-9._=:-] become %XX, so
// '/' and the newlines cannot split the key and the text stays readable with etcdctl.
std::string escape_key_element(const std::string& text);
std::optional<std::string> unescape_key_element(const std::string& text);

// The lowest number of `range` that has no record (allocated or held) and is not in
// `also_taken` (numbers this batch has already chosen). When none is left: EXHAUSTED, naming
// the range, how many are allocated and held (and when the first held one is free again), and
// the namespaces with the most identities.
StoreResult<std::uint32_t> pick_identity_number(const IdentityRange& range,
                                                const std::map<std::uint32_t, IdentityRecord>& records,
                                                const std::set<std::uint32_t>& also_taken);

}  // namespace vxfed::federation
