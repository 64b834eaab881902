#include "federation/policy_store.hpp"

#include <charconv>
#include <optional>

#include "federation/federation_store.hpp"
#include "federation/schema.hpp"
#include "policy/identity.hpp"
#include "policy/names.hpp"

namespace vxfed::federation {

namespace {

const KeyValue* first(const RangeResult& r) { return r.kvs.empty() ? nullptr : &r.kvs.front(); }

std::string user_key(std::uint32_t number, const std::string& cluster, const std::string& ns, const std::string& pod) {
  return keys::identity_users(number) + cluster + "/" + ns + "/" + pod;
}

std::string identity_key_key(const std::string& canonical_key) {
  return keys::identity_keys() + escape_key_element(canonical_key);
}

std::optional<std::uint32_t> parse_number(const std::string& text) {
  std::uint32_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return n;
}

// "a/b/c" -> {"a","b","c"}
std::vector<std::string> split_path(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto slash = text.find('/', start);
    out.push_back(text.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) return out;
    start = slash + 1;
  }
}

std::string object_text(const char* kind, const std::string& cluster, const std::string& ns, const std::string& name) {
  return std::string(kind) + " " + (ns.empty() ? "" : ns + "/") + name + " of cluster " + cluster;
}

// The batch is checked whole before the store is asked: names that can be key elements,
// every object of the batch's cluster, nothing named twice.
StoreStatus validate_batch(const PolicyBatch& b) {
  if (const std::string why = policy::check_dns_label(b.cluster); !why.empty())
    return store_error(Code::invalid, "cluster '" + b.cluster + "' " + why);
  std::set<std::string> seen;
  auto once = [&](const std::string& what) -> StoreStatus {
    if (!seen.insert(what).second)
      return store_error(Code::invalid, what + " appears twice in one apply (put and delete, or two puts)");
    return Done{};
  };
  auto names = [&](const char* kind, const std::string& cluster, const std::string& ns, const std::string& name) -> StoreStatus {
    const std::string what = object_text(kind, b.cluster, ns, name);
    if (cluster != b.cluster)
      return store_error(Code::invalid, what + " is stamped with cluster '" + cluster + "': an apply is for one cluster");
    if (!ns.empty())
      if (auto ok = FederationStore::validate_name(std::string(kind) + " namespace", ns); !ok) return ok;
    if (auto ok = FederationStore::validate_name(kind, name); !ok) return ok;
    return once(what);
  };
  for (const auto& p : b.policies) {
    if (auto ok = names("policy", p.cluster, p.namespace_name, p.name); !ok) return ok;
    if (p.namespace_name.empty()) return store_error(Code::invalid, "policy " + p.name + " has no namespace");
    if (!p.ingress_type && !p.egress_type)
      return store_error(Code::invalid, object_text("policy", b.cluster, p.namespace_name, p.name) +
                                            " has neither Ingress nor Egress in policyTypes");
  }
  for (const auto& n : b.delete_policies)
    if (auto ok = names("policy", b.cluster, n.namespace_name, n.name); !ok) return ok;
  for (const auto& n : b.namespaces)
    if (auto ok = names("namespace", n.cluster, "", n.name); !ok) return ok;
  for (const auto& n : b.delete_namespaces)
    if (auto ok = names("namespace", b.cluster, "", n); !ok) return ok;
  for (const auto& p : b.pods) {
    if (auto ok = names("pod", p.cluster, p.namespace_name, p.name); !ok) return ok;
    if (p.namespace_name.empty()) return store_error(Code::invalid, "pod " + p.name + " has no namespace");
  }
  for (const auto& n : b.delete_pods)
    if (auto ok = names("pod", b.cluster, n.namespace_name, n.name); !ok) return ok;
  return Done{};
}

}  // namespace

PolicyStore::PolicyStore(Kv& kv, PolicyStoreOptions options) : kv_(kv), options_(std::move(options)) {}

namespace {

// The store's range and the revision it was read at (for the apply's guard); seeds it first
// when the store has none.
StoreResult<std::pair<IdentityRange, std::int64_t>> read_range(Kv& kv, const PolicyStoreOptions& options) {
  for (unsigned attempt = 0; attempt < options.max_attempts; ++attempt) {
    auto got = kv.get(keys::identity_range());
    if (!got) return got.store_error();
    if (const auto* r = first(*got)) {
      auto range = decode_identity_range(*r);
      if (!range) return range.store_error();
      return std::pair{*range, r->mod_revision};
    }
    if (auto ok = validate(options.identity_range); !ok) return ok.store_error();
    auto seeded = kv.txn({Compare::absent(keys::identity_range())},
                         {Op::put(keys::identity_range(), encode(options.identity_range))}, {});
    if (!seeded) return seeded.store_error();
  }
  return store_error(Code::conflict, "the identity range in " + kv.describe() + " keeps changing; try again");
}

}  // namespace

StoreResult<IdentityRange> PolicyStore::identity_range() {
  auto r = read_range(kv_, options_);
  if (!r) return r.store_error();
  return r->first;
}

// What one attempt collects: the guards (each key once, at the revision it was read) and the
// writes of the one transaction.
struct PolicyStore::Attempt {
  std::vector<Compare> compares;
  std::vector<Op> ops;
  std::set<std::string> guarded;
  void guard(const std::string& key, std::int64_t mod_revision) {
    if (guarded.insert(key).second) compares.push_back(Compare::unchanged(key, mod_revision));
  }
};

StoreResult<ApplyReport> PolicyStore::apply(const PolicyBatch& batch, std::uint64_t now_ms) {
  if (auto ok = validate_batch(batch); !ok) return ok.store_error();
  for (unsigned attempt = 0; attempt < options_.max_attempts; ++attempt) {
    auto range = read_range(kv_, options_);
    if (!range) return range.store_error();
    ApplyReport report;
    std::set<std::uint32_t> released_users;
    std::set<std::string> relabelled;
    auto outcome = try_apply(batch, range->first, range->second, now_ms, report, released_users, relabelled);
    if (!outcome) return outcome.store_error();
    if (*outcome == Outcome::retry) continue;
    report.attempts = attempt + 1;
    // Applied. What follows only tidies up; a failure here leaves the apply in force and is
    // finished by maintain() (numbers) or the next apply of the namespace (renumbering).
    for (auto number : released_users)
      if (auto ok = release_if_unused(number, now_ms); !ok)
        report.warnings.push_back("identity " + std::to_string(number) + " not released yet: " + ok.error());
    for (const auto& ns : relabelled) {
      std::set<std::string> skip;
      for (const auto& p : batch.pods)
        if (p.namespace_name == ns) skip.insert(p.name);
      auto n = renumber_namespace(batch.cluster, ns, skip, now_ms);
      if (n) report.renumbered += *n;
      else report.warnings.push_back("pods of namespace " + ns + " not all renumbered yet: " + n.error());
    }
    return report;
  }
  return store_error(Code::conflict, "policy apply for cluster " + batch.cluster + ": gave up after " +
                                         std::to_string(options_.max_attempts) + " attempts under contention in " +
                                         kv_.describe() + "; try again");
}

StoreResult<PolicyStore::Outcome> PolicyStore::try_apply(const PolicyBatch& batch, const IdentityRange& range,
                                                         std::int64_t range_revision, std::uint64_t now_ms,
                                                         ApplyReport& report, std::set<std::uint32_t>& released_users,
                                                         std::set<std::string>& relabelled) {
  (void)now_ms;
  const std::string& cluster = batch.cluster;
  Attempt a;
  // A new number is only taken while the range is the one it was chosen from.
  a.guard(keys::identity_range(), range_revision);

  // Every key written is guarded at the revision read, as every FederationStore transaction
  // is: the client may send a guarded transaction twice (docs/federation.md, "The client"), and
  // a copy applied late then fails its guard instead of undoing a later apply.
  for (const auto& p : batch.policies) {
    const auto key = keys::policy(cluster, p.namespace_name, p.name);
    auto got = kv_.get(key);
    if (!got) return got.store_error();
    a.guard(key, got->kvs.empty() ? 0 : got->kvs.front().mod_revision);
    a.ops.push_back(Op::put(key, encode_policy(p)));
  }
  for (const auto& n : batch.delete_policies) {
    const auto key = keys::policy(cluster, n.namespace_name, n.name);
    auto got = kv_.get(key);
    if (!got) return got.store_error();
    if (got->kvs.empty()) {
      ++report.absent_deletes;
      continue;
    }
    a.guard(key, got->kvs.front().mod_revision);
    a.ops.push_back(Op::erase(key));
  }

  // Namespace labels as they are after the batch: the batch's own, else the store's (guarded,
  // so that no pod is numbered with labels that changed meanwhile).
  std::map<std::string, std::optional<policy::Labels>> ns_labels;
  auto stored_namespace = [&](const std::string& ns) -> StoreResult<std::pair<std::optional<policy::Labels>, std::int64_t>> {
    auto got = kv_.get(keys::namespace_key(cluster, ns));
    if (!got) return got.store_error();
    const auto* kv = first(*got);
    if (kv == nullptr) return std::pair<std::optional<policy::Labels>, std::int64_t>{std::nullopt, 0};
    auto labels = decode_namespace_labels(*kv);
    if (!labels) return labels.store_error();
    return std::pair<std::optional<policy::Labels>, std::int64_t>{*labels, kv->mod_revision};
  };
  for (const auto& n : batch.namespaces) {
    auto stored = stored_namespace(n.name);
    if (!stored) return stored.store_error();
    if (stored->first != n.labels) relabelled.insert(n.name);
    a.guard(keys::namespace_key(cluster, n.name), stored->second);
    a.ops.push_back(Op::put(keys::namespace_key(cluster, n.name), encode_namespace_labels(n.labels)));
    ns_labels[n.name] = n.labels;
  }
  for (const auto& name : batch.delete_namespaces) {
    auto stored = stored_namespace(name);
    if (!stored) return stored.store_error();
    if (!stored->first) {
      ++report.absent_deletes;
    } else {
      a.guard(keys::namespace_key(cluster, name), stored->second);
      a.ops.push_back(Op::erase(keys::namespace_key(cluster, name)));
      relabelled.insert(name);
    }
    ns_labels[name] = std::nullopt;
  }
  auto labels_of = [&](const std::string& ns) -> StoreResult<std::optional<policy::Labels>> {
    if (auto it = ns_labels.find(ns); it != ns_labels.end()) return it->second;
    auto stored = stored_namespace(ns);
    if (!stored) return stored.store_error();
    a.guard(keys::namespace_key(cluster, ns), stored->second);
    ns_labels[ns] = stored->first;
    return stored->first;
  };

  // Identity numbers: the store's for a known key (guarded, so it is not released meanwhile;
  // taken back from hold-down if it is held), else the lowest free one (guarded absent).
  std::map<std::string, std::uint32_t> chosen;
  std::set<std::uint32_t> new_numbers;
  std::optional<std::map<std::uint32_t, IdentityRecord>> records;
  auto number_of = [&](const std::string& key) -> StoreResult<std::uint32_t> {
    if (auto it = chosen.find(key); it != chosen.end()) return it->second;
    if (auto reserved = reserved_identity(key)) return *reserved;
    const auto index_key = identity_key_key(key);
    auto index = kv_.get(index_key);
    if (!index) return index.store_error();
    if (const auto* kv = first(*index)) {
      const auto number = parse_number(kv->value);
      if (!number || *number < kFirstAllocatableIdentity || *number > kLastIdentity)
        return store_error(Code::internal, "federation store key " + kv->key + " is damaged (not an identity number)");
      auto rec = kv_.get(keys::identity(*number));
      if (!rec) return rec.store_error();
      const auto* rec_kv = first(*rec);
      if (rec_kv == nullptr)
        return store_error(Code::internal, "federation store key " + kv->key + " names identity " + kv->value +
                                               ", which has no record: delete the key (docs/federation.md, \"Policy\")");
      auto record = decode_identity(*rec_kv);
      if (!record) return record.store_error();
      if (record->key != key)
        return store_error(Code::internal, "federation store key " + rec_kv->key + " holds another canonical key than " +
                                               kv->key + " names: delete both (docs/federation.md, \"Policy\")");
      a.guard(index_key, kv->mod_revision);
      a.guard(rec_kv->key, rec_kv->mod_revision);
      if (record->state == IdentityState::held) {
        a.ops.push_back(Op::put(rec_kv->key, encode(IdentityRecord{*number, key, IdentityState::allocated, 0})));
        ++report.new_identities;
      }
      chosen[key] = *number;
      return *number;
    }
    if (!records) {
      auto all = kv_.get_prefix(keys::identities());
      if (!all) return all.store_error();
      records.emplace();
      for (const auto& kv : all->kvs) {
        auto record = decode_identity(kv);
        if (!record) return record.store_error();
        (*records)[record->number] = *record;
      }
    }
    auto number = pick_identity_number(range, *records, new_numbers);
    if (!number) {
      exhausted_refusals_.fetch_add(1, std::memory_order_relaxed);
      return number.store_error();
    }
    a.guard(index_key, 0);
    a.guard(keys::identity(*number), 0);
    a.ops.push_back(Op::put(keys::identity(*number), encode(IdentityRecord{*number, key, IdentityState::allocated, 0})));
    a.ops.push_back(Op::put(index_key, std::to_string(*number)));
    new_numbers.insert(*number);
    ++report.new_identities;
    chosen[key] = *number;
    return *number;
  };

  for (const auto& pod : batch.pods) {
    auto labels = labels_of(pod.namespace_name);
    if (!labels) return labels.store_error();
    policy::Namespace ns{cluster, pod.namespace_name, labels->value_or(policy::Labels{}), {}};
    const std::string key = policy::canonical_key(policy::identity_of(pod, *labels ? &ns : nullptr));
    auto number = number_of(key);
    if (!number) {
      if (number.code() == Code::exhausted)
        return store_error(Code::exhausted, object_text("pod", cluster, pod.namespace_name, pod.name) +
                                                ": " + number.error() + "; nothing of this apply was written");
      return number.store_error();
    }
    const auto pod_key = keys::pod(cluster, pod.namespace_name, pod.name);
    auto got = kv_.get(pod_key);
    if (!got) return got.store_error();
    const auto* kv = first(*got);
    a.guard(pod_key, kv ? kv->mod_revision : 0);
    if (kv != nullptr) {
      auto old = decode_pod(*kv);
      if (!old) return old.store_error();
      if (old->identity != *number && old->identity >= kFirstAllocatableIdentity) {
        a.ops.push_back(Op::erase(user_key(old->identity, cluster, pod.namespace_name, pod.name)));
        released_users.insert(old->identity);
      }
    }
    a.ops.push_back(Op::put(pod_key, encode(PodRecord{pod.labels, *number})));
    if (*number >= kFirstAllocatableIdentity)
      a.ops.push_back(Op::put(user_key(*number, cluster, pod.namespace_name, pod.name), ""));
    report.pods.push_back(PodIdentity{pod.namespace_name, pod.name, *number});
  }
  for (const auto& n : batch.delete_pods) {
    const auto pod_key = keys::pod(cluster, n.namespace_name, n.name);
    auto got = kv_.get(pod_key);
    if (!got) return got.store_error();
    const auto* kv = first(*got);
    if (kv == nullptr) {
      ++report.absent_deletes;
      continue;
    }
    auto old = decode_pod(*kv);
    if (!old) return old.store_error();
    a.guard(pod_key, kv->mod_revision);
    a.ops.push_back(Op::erase(pod_key));
    if (old->identity >= kFirstAllocatableIdentity) {
      a.ops.push_back(Op::erase(user_key(old->identity, cluster, n.namespace_name, n.name)));
      released_users.insert(old->identity);
    }
  }

  if (a.compares.size() > options_.max_txn_ops || a.ops.size() > options_.max_txn_ops)
    return store_error(Code::invalid, "this apply needs " + std::to_string(a.ops.size()) + " operations and " +
                                          std::to_string(a.compares.size()) + " guards in one transaction; the store allows " +
                                          std::to_string(options_.max_txn_ops) +
                                          " of each (etcd's --max-txn-ops): apply fewer objects at a time, or raise "
                                          "--max-txn-ops on every etcd member and the store's max_txn_ops with it");
  if (a.ops.empty()) return Outcome::applied;  // only deletes of absent objects
  auto done = kv_.txn(a.compares, a.ops, {});
  if (!done) return done.store_error();
  if (!done->succeeded) return Outcome::retry;  // something it read changed: read again
  report.revision = done->revision;
  return Outcome::applied;
}

StoreResult<bool> PolicyStore::release_if_unused(std::uint32_t number, std::uint64_t now_ms) {
  auto range = read_range(kv_, options_);
  if (!range) return range.store_error();
  auto got = kv_.get(keys::identity(number));
  if (!got) return got.store_error();
  const auto* kv = first(*got);
  if (kv == nullptr) return false;
  auto record = decode_identity(*kv);
  if (!record) return record.store_error();
  if (record->state == IdentityState::held) return false;
  IdentityRecord held{number, record->key, IdentityState::held, now_ms + range->first.hold_down_ms};
  // Only if nobody took it meanwhile; otherwise it simply stays allocated.
  auto r = kv_.txn({Compare::none_under(keys::identity_users(number)), Compare::unchanged(kv->key, kv->mod_revision)},
                   {Op::put(kv->key, encode(held))}, {});
  if (!r) return r.store_error();
  return r->succeeded;
}

StoreResult<std::size_t> PolicyStore::renumber_namespace(const std::string& cluster, const std::string& ns,
                                                         const std::set<std::string>& skip, std::uint64_t now_ms) {
  auto pods = kv_.get_prefix(keys::pods(cluster, ns));
  if (!pods) return pods.store_error();
  auto ns_got = kv_.get(keys::namespace_key(cluster, ns));
  if (!ns_got) return ns_got.store_error();
  std::optional<policy::Namespace> namespace_object;
  if (const auto* kv = first(*ns_got)) {
    auto labels = decode_namespace_labels(*kv);
    if (!labels) return labels.store_error();
    namespace_object = policy::Namespace{cluster, ns, *labels, {}};
  }
  std::map<std::uint32_t, std::string> key_of;  // number -> canonical key, read once each
  std::size_t renumbered = 0;
  for (const auto& kv : pods->kvs) {
    const std::string name = keys::leaf(kv.key);
    if (skip.count(name)) continue;
    auto record = decode_pod(kv);
    if (!record) return record.store_error();
    policy::Pod pod{cluster, ns, name, record->labels, {}};
    const std::string key = policy::canonical_key(policy::identity_of(pod, namespace_object ? &*namespace_object : nullptr));
    if (!key_of.count(record->identity)) {
      auto got = kv_.get(keys::identity(record->identity));
      if (!got) return got.store_error();
      std::string current;
      if (const auto* rec = first(*got)) {
        auto decoded = decode_identity(*rec);
        if (!decoded) return decoded.store_error();
        current = decoded->key;
      }
      key_of[record->identity] = current;
    }
    if (key_of[record->identity] == key) continue;
    // One pod per transaction: a namespace may hold more pods than one transaction may write.
    PolicyBatch one;
    one.cluster = cluster;
    one.pods.push_back(std::move(pod));
    auto done = apply(one, now_ms);
    if (!done) return done.store_error();
    ++renumbered;
  }
  return renumbered;
}

StoreResult<PolicySnapshot> PolicyStore::list() {
  auto all = kv_.get_prefix(keys::policy_root());
  if (!all) return all.store_error();
  PolicySnapshot out;
  out.revision = all->revision;
  const std::string root = keys::policy_root();
  for (const auto& kv : all->kvs) {
    const auto parts = split_path(kv.key.substr(root.size()));
    const std::string& kind = parts[0];
    auto damaged_key = [&] {
      return store_error(Code::internal, "federation store key " + kv.key + " is damaged (not a key of the policy schema)");
    };
    if (kind == "policies") {
      if (parts.size() != 4) return damaged_key();
      auto p = decode_policy(kv, parts[1]);
      if (!p) return p.store_error();
      if (p->namespace_name != parts[2] || p->name != parts[3])
        return store_error(Code::internal, "federation store key " + kv.key + " holds policy " + p->namespace_name + "/" +
                                               p->name + " (damaged: fix or delete it)");
      out.policies.push_back(std::move(*p));
    } else if (kind == "namespaces") {
      if (parts.size() != 3) return damaged_key();
      auto labels = decode_namespace_labels(kv);
      if (!labels) return labels.store_error();
      out.namespaces.push_back(policy::Namespace{parts[1], parts[2], std::move(*labels), {}});
    } else if (kind == "pods") {
      if (parts.size() != 4) return damaged_key();
      auto record = decode_pod(kv);
      if (!record) return record.store_error();
      out.pods.push_back(StoredPod{parts[1], parts[2], parts[3], std::move(*record)});
    } else if (kind == "identities") {
      auto record = decode_identity(kv);
      if (!record) return record.store_error();
      out.identities[record->number] = std::move(*record);
    } else if (kind == "identity-users") {
      auto number = parse_number(parts.size() > 1 ? parts[1] : "");
      if (!number) return damaged_key();
      ++out.users[*number];
    }
  }
  return out;
}

StoreResult<MaintenanceReport> PolicyStore::maintain(std::uint64_t now_ms) {
  MaintenanceReport report;
  auto all = kv_.get_prefix(keys::identities());
  if (!all) return all.store_error();
  auto users = kv_.get_prefix(keys::identity_users_all());
  if (!users) return users.store_error();
  std::set<std::uint32_t> used;
  const std::string users_root = keys::identity_users_all();
  for (const auto& kv : users->kvs) {
    const auto rest = kv.key.substr(users_root.size());
    if (auto n = parse_number(rest.substr(0, rest.find('/')))) used.insert(*n);
  }
  for (const auto& kv : all->kvs) {
    auto record = decode_identity(kv);
    if (!record) return record.store_error();
    if (record->state == IdentityState::allocated) {
      if (used.count(record->number)) continue;
      auto released = release_if_unused(record->number, now_ms);
      if (!released) return released.store_error();
      if (*released) ++report.released;
      continue;
    }
    if (record->held_until_unix_ms > now_ms) continue;
    // Forget it: the number and its key's index go together, each only if unchanged.
    const auto index_key = identity_key_key(record->key);
    auto index = kv_.get(index_key);
    if (!index) return index.store_error();
    std::vector<Compare> guard{Compare::unchanged(kv.key, kv.mod_revision)};
    std::vector<Op> ops{Op::erase(kv.key)};
    if (const auto* i = first(*index); i && i->value == std::to_string(record->number)) {
      guard.push_back(Compare::unchanged(index_key, i->mod_revision));
      ops.push_back(Op::erase(index_key));
    }
    auto gone = kv_.txn(guard, ops, {});
    if (!gone) return gone.store_error();
    if (gone->succeeded) ++report.forgotten;
  }
  return report;
}

}  // namespace vxfed::federation
