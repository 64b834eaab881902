// The key/value operations the federation model needs, in etcd v3's terms: ranges, guarded
// transactions (compare-and-swap), leases. The real implementation is EtcdClient
// (etcd_client.hpp); unit tests use an in-memory fake with the same semantics. Keys here are
// relative: the client puts its key prefix in front of every key and takes it off again.
//
// Every call returns a StoreResult: a value, or a StoreError whose code says what a caller
// can do about it (UNAVAILABLE: the store cannot be reached or has no quorum, try again
// later; CONFLICT: somebody else holds it; EXHAUSTED: nothing left to allocate; ...) and whose
// message is a sentence naming the store.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace vxfed::federation {

enum class Code { unavailable, conflict, exhausted, invalid, not_found, internal };
const char* code_name(Code code);

struct StoreError {
  Code code = Code::internal;
  std::string message;
};

template <typename T>
class [[nodiscard]] StoreResult : public ValueOr<T, StoreError> {
 public:
  using ValueOr<T, StoreError>::ValueOr;
  const std::string& error() const { return this->error_value().message; }
  Code code() const { return this->error_value().code; }
  const StoreError& store_error() const { return this->error_value(); }
};

struct Done {};
using StoreStatus = StoreResult<Done>;

inline StoreError store_error(Code code, std::string message) { return StoreError{code, std::move(message)}; }

struct KeyValue {
  std::string key;                  // relative to the client's prefix
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t version = 0;
  std::int64_t lease = 0;
};

// One guard predicate of a transaction. `prefix` makes it hold for every key under `key`;
// no key under it compares as an absent key (version 0).
struct Compare {
  enum class Target { version, create_revision, mod_revision, value };
  enum class Relation { equal, not_equal, greater, less };
  std::string key;
  bool prefix = false;
  Target target = Target::version;
  Relation relation = Relation::equal;
  std::int64_t number = 0;
  std::string value;

  static Compare absent(std::string key) { return {std::move(key), false, Target::version, Relation::equal, 0, {}}; }
  // The key is unchanged since it was read at `mod_revision` (0: it is still absent).
  static Compare unchanged(std::string key, std::int64_t mod_revision) {
    return {std::move(key), false, Target::mod_revision, Relation::equal, mod_revision, {}};
  }
  static Compare value_is(std::string key, std::string value) {
    return {std::move(key), false, Target::value, Relation::equal, 0, std::move(value)};
  }
  static Compare none_under(std::string prefix) {
    return {std::move(prefix), true, Target::version, Relation::equal, 0, {}};
  }
};

struct Op {
  enum class Kind { put, erase, get };
  Kind kind = Kind::get;
  std::string key;
  bool prefix = false;              // erase/get: every key under `key`
  std::string value;                // put
  std::int64_t lease = 0;           // put

  static Op put(std::string key, std::string value, std::int64_t lease = 0) {
    return {Kind::put, std::move(key), false, std::move(value), lease};
  }
  static Op erase(std::string key) { return {Kind::erase, std::move(key), false, {}, 0}; }
  static Op erase_prefix(std::string prefix) { return {Kind::erase, std::move(prefix), true, {}, 0}; }
  static Op get(std::string key) { return {Kind::get, std::move(key), false, {}, 0}; }
};

struct RangeResult {
  std::vector<KeyValue> kvs;        // sorted by key
  std::int64_t revision = 0;        // store revision the read saw
};

struct TxnResult {
  bool succeeded = false;
  std::int64_t revision = 0;
  std::vector<std::vector<KeyValue>> gets;  // one per get Op of the branch that ran, in order
};

class Kv {
 public:
  virtual ~Kv() = default;
  virtual StoreResult<RangeResult> get(const std::string& key) = 0;
  virtual StoreResult<RangeResult> get_prefix(const std::string& prefix) = 0;
  virtual StoreResult<TxnResult> txn(const std::vector<Compare>& compares, const std::vector<Op>& success,
                                     const std::vector<Op>& failure) = 0;
  // A lease of `ttl_s` seconds; keys put with it vanish when it is not kept alive.
  virtual StoreResult<std::int64_t> lease_grant(std::int64_t ttl_s) = 0;
  // Renews the lease; returns its TTL in seconds; NOT_FOUND when it has expired (or the store
  // that knew it is gone).
  virtual StoreResult<std::int64_t> lease_keep_alive(std::int64_t id) = 0;
  virtual StoreStatus lease_revoke(std::int64_t id) = 0;
  // "etcd at 10.0.0.1:2379,10.0.0.2:2379 (prefix /vxfed)": named in every error.
  virtual std::string describe() const = 0;
  // Identity of the store cluster last answering (etcd's cluster_id; 0 unknown). A change
  // means the store was replaced, e.g. rebuilt empty: the node re-asserts what it knows.
  virtual std::uint64_t cluster_id() const = 0;
};

// The end of the key range holding every key that starts with `prefix` (etcd's convention:
// the prefix with its last byte incremented, dropping trailing 0xff bytes; "\0" for all keys).
std::string prefix_range_end(const std::string& prefix);

}  // namespace vxfed::federation
