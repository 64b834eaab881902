// An in-memory Kv with etcd's semantics for the parts the model uses: one revision counter,
// create/mod revisions and versions per key, guarded transactions (a compare over a prefix
// holds for every key under it; no key compares as absent), leases whose keys vanish when
// the test expires them. Tests can take it "down" (every call UNAVAILABLE) and run a hook
// just before a transaction applies, to play a competing node.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "federation/kv.hpp"

namespace vxfed::federation::testing {

class FakeKv : public Kv {
 public:
  bool down = false;
  std::uint64_t cluster = 1;
  std::function<void()> before_txn;   // runs once per transaction, before its guard is checked
  std::size_t txns = 0;

  StoreResult<RangeResult> get(const std::string& key) override {
    if (down) return unavailable();
    RangeResult out{{}, revision_};
    if (auto it = kvs_.find(key); it != kvs_.end()) out.kvs.push_back(it->second);
    return out;
  }
  StoreResult<RangeResult> get_prefix(const std::string& prefix) override {
    if (down) return unavailable();
    RangeResult out{{}, revision_};
    for (auto it = kvs_.lower_bound(prefix); it != kvs_.end() && it->first.rfind(prefix, 0) == 0; ++it)
      out.kvs.push_back(it->second);
    return out;
  }
  StoreResult<TxnResult> txn(const std::vector<Compare>& compares, const std::vector<Op>& success,
                             const std::vector<Op>& failure) override {
    if (down) return unavailable();
    ++txns;
    if (before_txn) {
      auto hook = std::move(before_txn);
      before_txn = nullptr;
      hook();
    }
    TxnResult out;
    out.succeeded = true;
    for (const auto& c : compares) out.succeeded = out.succeeded && holds(c);
    const auto& ops = out.succeeded ? success : failure;
    bool wrote = false;
    for (const auto& op : ops) wrote = wrote || op.kind != Op::Kind::get;
    if (wrote) ++revision_;
    for (const auto& op : ops) {
      switch (op.kind) {
        case Op::Kind::get: {
          std::vector<KeyValue> kvs;
          if (auto it = kvs_.find(op.key); it != kvs_.end()) kvs.push_back(it->second);
          out.gets.push_back(std::move(kvs));
          break;
        }
        case Op::Kind::put: {
          auto& kv = kvs_[op.key];
          if (kv.version == 0) kv.create_revision = revision_;
          kv.key = op.key;
          kv.value = op.value;
          kv.mod_revision = revision_;
          ++kv.version;
          kv.lease = op.lease;
          break;
        }
        case Op::Kind::erase: {
          if (op.prefix) {
            for (auto it = kvs_.lower_bound(op.key); it != kvs_.end() && it->first.rfind(op.key, 0) == 0;)
              it = kvs_.erase(it);
          } else {
            kvs_.erase(op.key);
          }
          break;
        }
      }
    }
    out.revision = revision_;
    return out;
  }
  StoreResult<std::int64_t> lease_grant(std::int64_t ttl_s) override {
    if (down) return unavailable();
    leases_.insert(++next_lease_);
    (void)ttl_s;
    return next_lease_;
  }
  StoreResult<std::int64_t> lease_keep_alive(std::int64_t id) override {
    if (down) return unavailable();
    if (!leases_.count(id)) return store_error(Code::not_found, "lease " + std::to_string(id) + " has expired");
    return std::int64_t{15};
  }
  StoreStatus lease_revoke(std::int64_t id) override {
    if (down) return unavailable();
    expire_lease(id);
    return Done{};
  }
  std::string describe() const override { return "fake etcd"; }
  std::uint64_t cluster_id() const override { return cluster; }

  // Test controls.
  void expire_lease(std::int64_t id) {
    leases_.erase(id);
    for (auto it = kvs_.begin(); it != kvs_.end();) it = it->second.lease == id ? kvs_.erase(it) : std::next(it);
    ++revision_;
  }
  void wipe() {  // a new, empty cluster
    kvs_.clear();
    leases_.clear();
    ++cluster;
  }
  void put(const std::string& key, const std::string& value) { (void)txn({}, {Op::put(key, value)}, {}); }
  void erase(const std::string& key) { (void)txn({}, {Op::erase(key)}, {}); }
  std::map<std::string, std::string> dump() const {
    std::map<std::string, std::string> out;
    for (const auto& [k, kv] : kvs_) out[k] = kv.value;
    return out;
  }
  std::map<std::string, std::string> dump(const std::string& prefix) const {
    std::map<std::string, std::string> out;
    for (const auto& [k, kv] : kvs_)
      if (k.rfind(prefix, 0) == 0) out[k] = kv.value;
    return out;
  }

 private:
  StoreError unavailable() const { return store_error(Code::unavailable, "federation store fake etcd is unavailable"); }

  bool holds(const Compare& c) const {
    std::vector<KeyValue> subjects;
    if (c.prefix) {
      for (auto it = kvs_.lower_bound(c.key); it != kvs_.end() && it->first.rfind(c.key, 0) == 0; ++it)
        subjects.push_back(it->second);
    } else if (auto it = kvs_.find(c.key); it != kvs_.end()) {
      subjects.push_back(it->second);
    }
    if (subjects.empty()) {
      if (c.target == Compare::Target::value) return false;  // etcd: no key has no value
      subjects.push_back(KeyValue{});
    }
    for (const auto& kv : subjects) {
      std::int64_t have = 0;
      int order = 0;
      switch (c.target) {
        case Compare::Target::version: have = kv.version; break;
        case Compare::Target::create_revision: have = kv.create_revision; break;
        case Compare::Target::mod_revision: have = kv.mod_revision; break;
        case Compare::Target::value: order = kv.value.compare(c.value); break;
      }
      if (c.target != Compare::Target::value) order = have < c.number ? -1 : have > c.number ? 1 : 0;
      bool ok = false;
      switch (c.relation) {
        case Compare::Relation::equal: ok = order == 0; break;
        case Compare::Relation::not_equal: ok = order != 0; break;
        case Compare::Relation::greater: ok = order > 0; break;
        case Compare::Relation::less: ok = order < 0; break;
      }
      if (!ok) return false;
    }
    return true;
  }

  std::map<std::string, KeyValue> kvs_;
  std::set<std::int64_t> leases_;
  std::int64_t revision_ = 1;
  std::int64_t next_lease_ = 100;
};

}  // namespace vxfed::federation::testing
