// Global services in the federation store (docs/services.md, "The store"): what each cluster
// applied (its Services, EndpointSlices and ServiceExports, per namespace/name) and the
// federation's VIPs, so that every node of every cluster computes the same federated set.
//
// Keys, under the store's prefix (docs/federation.md's key table):
//   v1/services/range                          the service range and hold-down (seeded once)
//   v1/services/objects/<ns>/<name>/<cluster>  that cluster's objects of the service, as a
//                                              Kubernetes List in JSON (read back with
//                                              services/parse.hpp, so one codec and one set of
//                                              checks for files and for the store)
//   v1/services/vips/<a.b.c.d>                 the VIP's service, allocated or held down
//
// An apply is one guarded transaction: its records are written together with the VIPs the
// exported services need, or nothing is. A service has one VIP for the federation: whichever
// cluster exports it first allocates it, later exports find it (every allocation is guarded
// by "nothing under vips/ changed since it was read", so two clusters racing get one VIP). The
// VIP is released (held down as services/vip_pool.hpp says) when no cluster exports the
// service any more. No I/O besides the Kv, no clock: callers pass now_ms.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"
#include "common/result.hpp"
#include "federation/kv.hpp"
#include "services/federate.hpp"
#include "services/model.hpp"
#include "services/vip_pool.hpp"

namespace vxfed::services {

namespace store_keys {
std::string root();                    // "v1/services/"
std::string range();                   // "v1/services/range"
std::string objects();                 // "v1/services/objects/"
std::string objects(const ServiceKey& service);  // ".../objects/<ns>/<name>/"
std::string object(const ServiceKey& service, const std::string& cluster);
std::string vips();                    // "v1/services/vips/"
std::string vip(net::Ipv4Addr vip);
}  // namespace store_keys

struct ServiceStoreOptions {
  net::Ipv4Prefix service_range;   // seeds the store when it has none; the store's is used after
  std::uint64_t hold_down_ms = kDefaultVipHoldDownMs;
  unsigned max_attempts = 32;      // transaction retries under contention before giving up
  std::size_t max_txn_ops = 128;   // etcd's --max-txn-ops: larger applies are refused (split them)
};

// One apply, for one cluster. For every namespace/name in `objects`, the cluster's record of
// that service is replaced by the apply's objects of it (its Service, slices and export: a
// service is applied whole). `deletes` erase the cluster's record of a service; deleting one
// the store does not have is no error (counted), so an apply may be repeated.
struct ServiceApply {
  std::string cluster;
  Objects objects;  // parsed and validated (services/validate.hpp) for `cluster`
  std::vector<ServiceKey> deletes;
};

struct ServiceApplyReport {
  std::int64_t revision = 0;
  unsigned attempts = 0;
  std::vector<ServiceKey> written;         // records put
  std::vector<ServiceKey> deleted;         // records erased
  std::size_t absent_deletes = 0;
  std::vector<VipRecord> allocated;        // VIPs this apply gave to services that had none
  std::vector<VipRecord> released;         // VIPs this apply held down (no export left)
};

// Everything under v1/services/ at one revision: what federate() needs.
struct ServiceSnapshot {
  std::int64_t revision = 0;
  std::optional<net::Ipv4Prefix> range;    // absent until a node seeded it
  std::vector<Objects> applies;            // one per cluster that has records, by cluster name
  std::vector<VipRecord> vips;             // allocated and held
};

class ServiceStore {
 public:
  ServiceStore(federation::Kv& kv, ServiceStoreOptions options);

  // The federation's service range; seeds it from the options when the store has none.
  federation::StoreResult<net::Ipv4Prefix> service_range();

  // Writes the apply in one transaction (see ServiceApply). INVALID for objects of another
  // cluster, a service both put and deleted, a pinned VIP the range cannot give, or an apply
  // needing more than max_txn_ops operations; EXHAUSTED when the range has no VIP left.
  federation::StoreResult<ServiceApplyReport> apply(const ServiceApply& apply, std::uint64_t now_ms);

  federation::StoreResult<ServiceSnapshot> list();

 private:
  enum class Outcome { applied, retry };
  federation::StoreResult<Outcome> try_apply(const ServiceApply& apply, std::uint64_t now_ms,
                                             ServiceApplyReport& report);
  federation::Kv& kv_;
  ServiceStoreOptions options_;
};

// federate() over the snapshot's applies, each service given its VIP from the snapshot (a
// service exported but without a VIP record keeps none: it shows as such).
Result<FederatedSet> federated(const ServiceSnapshot& snapshot);

// A VipAllocator over the store: each call is one guarded transaction of its own (the service
// store folds the same decisions into its apply's transaction instead).
class StoreVipAllocator final : public VipAllocator {
 public:
  StoreVipAllocator(federation::Kv& kv, ServiceStoreOptions options) : kv_(kv), options_(std::move(options)) {}
  Result<VipRecord> allocate(const ServiceKey& service, std::optional<net::Ipv4Addr> pinned,
                             std::uint64_t now_ms) override;
  Result<VipRecord> release(const ServiceKey& service, std::uint64_t now_ms) override;
  std::optional<VipRecord> find(const ServiceKey& service) override;

 private:
  Result<VipRecord> change(const ServiceKey& service, std::optional<net::Ipv4Addr> pinned, std::uint64_t now_ms,
                           bool release);
  federation::Kv& kv_;
  ServiceStoreOptions options_;
};

// The records' codecs (exposed for tests and for `vxfedctl service get --json`).
std::string encode_objects(const Objects& objects);  // a Kubernetes List, JSON
std::string encode_vip(const VipRecord& record);     // {"service":"ns/name","state":...,"held_until_unix_ms":...}
Result<VipRecord> decode_vip(const std::string& key, const std::string& value);

}  // namespace vxfed::services
