#include "services/service_store.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "services/parse.hpp"

namespace vxfed::services {

using federation::Code;
using federation::Compare;
using federation::KeyValue;
using federation::Op;
using federation::StoreResult;
using federation::store_error;
using json = nlohmann::ordered_json;

namespace store_keys {
std::string root() { return "v1/services/"; }
std::string range() { return root() + "range"; }
std::string objects() { return root() + "objects/"; }
std::string objects(const ServiceKey& service) { return objects() + service.namespace_name + "/" + service.name + "/"; }
std::string object(const ServiceKey& service, const std::string& cluster) { return objects(service) + cluster; }
std::string vips() { return root() + "vips/"; }
std::string vip(net::Ipv4Addr vip) { return vips() + vip.str(); }
}  // namespace store_keys

namespace {

std::string weights_text(const std::map<std::string, std::uint32_t>& weights) {
  std::string out;
  for (const auto& [cluster, w] : weights) out += (out.empty() ? "" : ",") + cluster + "=" + std::to_string(w);
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

json service_json(const Service& s) {
  json annotations = json::object();
  annotations[kStrategyAnnotation] = strategy_name(s.strategy.strategy);
  if (!s.strategy.weights.empty()) annotations[kWeightsAnnotation] = weights_text(s.strategy.weights);
  if (!s.strategy.failover_order.empty()) annotations[kFailoverOrderAnnotation] = join(s.strategy.failover_order);
  if (s.pinned_vip) annotations[kVipAnnotation] = s.pinned_vip->str();
  json ports = json::array();
  for (const ServicePort& p : s.ports) {
    json port = {{"protocol", protocol_name(p.protocol)}, {"port", p.port}, {"targetPort", p.target_port}};
    if (!p.name.empty()) port["name"] = p.name;
    ports.push_back(port);
  }
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", s.key.name}, {"namespace", s.key.namespace_name}, {"annotations", annotations}}},
          {"spec", {{"type", "ClusterIP"}, {"ports", ports}}}};
}

json slice_json(const EndpointSlice& s) {
  json ports = json::array();
  for (const EndpointPort& p : s.ports) {
    json port = {{"protocol", protocol_name(p.protocol)}, {"port", p.port}};
    if (!p.name.empty()) port["name"] = p.name;
    ports.push_back(port);
  }
  json endpoints = json::array();
  for (const Endpoint& e : s.endpoints) {
    json addresses = json::array();
    for (const auto& a : e.addresses) addresses.push_back(a.str());
    endpoints.push_back({{"addresses", addresses}, {"conditions", {{"ready", e.ready}}}});
  }
  return {{"apiVersion", kEndpointSliceApiVersion},
          {"kind", "EndpointSlice"},
          {"metadata",
           {{"name", s.name},
            {"namespace", s.namespace_name},
            {"labels", {{kServiceNameLabel, s.service_name}, {kSourceClusterLabel, s.cluster}}}}},
          {"addressType", "IPv4"},
          {"ports", ports},
          {"endpoints", endpoints}};
}

json export_json(const ServiceExport& e) {
  json metadata = {{"name", e.key.name}, {"namespace", e.key.namespace_name}};
  if (!e.created_text.empty()) metadata["creationTimestamp"] = e.created_text;
  return {{"apiVersion", kServiceExportApiVersion}, {"kind", "ServiceExport"}, {"metadata", metadata}};
}

const char* state_name(VipState s) { return s == VipState::allocated ? "allocated" : "held"; }

std::string encode_range(const net::Ipv4Prefix& range, std::uint64_t hold_down_ms) {
  return json{{"range", range.str()}, {"hold_down_seconds", hold_down_ms / 1000}}.dump();
}

struct StoredRange {
  net::Ipv4Prefix range;
  std::uint64_t hold_down_ms = 0;
};

StoreResult<StoredRange> decode_range(const std::string& value) {
  const json j = json::parse(value, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("range") || !j["range"].is_string() ||
      !j.contains("hold_down_seconds") || !j["hold_down_seconds"].is_number_unsigned())
    return store_error(Code::internal, "record " + store_keys::range() + " is not {\"range\":...,\"hold_down_seconds\":...}: " + value);
  auto range = net::Ipv4Prefix::parse(j["range"].get<std::string>());
  if (!range) return store_error(Code::internal, "record " + store_keys::range() + ": " + range.error());
  return StoredRange{*range, j["hold_down_seconds"].get<std::uint64_t>() * 1000};
}

// key ".../objects/<ns>/<name>/<cluster>" -> cluster
std::string last_element(const std::string& key) { return key.substr(key.rfind('/') + 1); }

// Objects of one service out of an apply.
Objects objects_of(const Objects& all, const ServiceKey& key) {
  Objects out;
  for (const auto& s : all.services)
    if (s.key == key) out.services.push_back(s);
  for (const auto& s : all.slices)
    if (s.namespace_name == key.namespace_name && s.service_name == key.name) out.slices.push_back(s);
  for (const auto& e : all.exports)
    if (e.key == key) out.exports.push_back(e);
  return out;
}

std::set<ServiceKey> services_named(const Objects& o) {
  std::set<ServiceKey> out;
  for (const auto& s : o.services) out.insert(s.key);
  for (const auto& s : o.slices) out.insert({s.namespace_name, s.service_name});
  for (const auto& e : o.exports) out.insert(e.key);
  return out;
}

StoreResult<Objects> decode_objects(const KeyValue& kv, const std::string& cluster) {
  Parsed parsed = read_objects(kv.value, cluster, kv.key);
  if (!parsed.errors.empty()) {
    std::string message = "record " + kv.key + " does not read back:";
    for (const auto& e : parsed.errors) message += "\n" + e;
    return store_error(Code::internal, message);
  }
  return std::move(parsed.objects);
}

// Everything under v1/services/ at one revision, decoded.
struct Read {
  std::int64_t revision = 0;
  std::optional<KeyValue> range;
  std::map<std::string, KeyValue> objects;  // key -> record
  std::vector<VipRecord> vips;
  std::map<std::string, std::int64_t> vip_revisions;
};

StoreResult<Read> read_all(federation::Kv& kv) {
  auto got = kv.get_prefix(store_keys::root());
  if (!got) return got.store_error();
  Read r;
  r.revision = got->revision;
  for (const KeyValue& k : got->kvs) {
    if (k.key == store_keys::range()) {
      r.range = k;
    } else if (k.key.rfind(store_keys::objects(), 0) == 0) {
      r.objects[k.key] = k;
    } else if (k.key.rfind(store_keys::vips(), 0) == 0) {
      auto v = decode_vip(k.key, k.value);
      if (!v) return store_error(Code::internal, v.error());
      r.vips.push_back(*v);
    }
  }
  return r;
}

// The store's range, seeding it from the options when it has none.
StoreResult<std::pair<StoredRange, std::int64_t>> read_range(federation::Kv& kv, const ServiceStoreOptions& options) {
  for (unsigned attempt = 0; attempt < options.max_attempts; ++attempt) {
    auto got = kv.get(store_keys::range());
    if (!got) return got.store_error();
    if (!got->kvs.empty()) {
      auto range = decode_range(got->kvs.front().value);
      if (!range) return range.store_error();
      return std::pair{*range, got->kvs.front().mod_revision};
    }
    if (options.service_range.len == 0)
      return store_error(Code::invalid, "service range " + options.service_range.str() + " is the whole address space");
    auto seeded = kv.txn({Compare::absent(store_keys::range())},
                         {Op::put(store_keys::range(), encode_range(options.service_range, options.hold_down_ms))}, {});
    if (!seeded) return seeded.store_error();
  }
  return store_error(Code::conflict, "the service range in " + kv.describe() + " keeps changing; try again");
}

// "every key under `prefix` is unchanged since `revision`" (new keys included).
Compare nothing_new_under(const std::string& prefix, std::int64_t revision) {
  return {prefix, true, Compare::Target::mod_revision, Compare::Relation::less, revision + 1, {}};
}

StoreResult<VipPool> pool_of(const StoredRange& range, const std::vector<VipRecord>& records) {
  auto pool = VipPool::create(range.range, range.hold_down_ms);
  if (!pool) return store_error(Code::internal, pool.error());
  if (auto ok = pool->restore(records); !ok) return store_error(Code::internal, "records under " + store_keys::vips() + ": " + ok.error());
  return std::move(*pool);
}

Code vip_error_code(const std::string& message) {
  return message.find("exhausted") != std::string::npos ? Code::exhausted : Code::invalid;
}

}  // namespace

std::string encode_objects(const Objects& objects) {
  json items = json::array();
  for (const auto& s : objects.services) items.push_back(service_json(s));
  for (const auto& s : objects.slices) items.push_back(slice_json(s));
  for (const auto& e : objects.exports) items.push_back(export_json(e));
  return json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}.dump();
}

std::string encode_vip(const VipRecord& r) {
  return json{{"service", r.service.str()}, {"state", state_name(r.state)}, {"held_until_unix_ms", r.held_until_ms}}.dump();
}

Result<VipRecord> decode_vip(const std::string& key, const std::string& value) {
  auto vip = net::Ipv4Addr::parse(last_element(key));
  if (!vip) return make_error("record " + key + ": " + vip.error());
  const json j = json::parse(value, nullptr, false);
  const auto bad = [&] { return make_error("record " + key + " is not {\"service\":\"ns/name\",\"state\":...}: " + value); };
  if (j.is_discarded() || !j.is_object() || !j.contains("service") || !j["service"].is_string() || !j.contains("state") ||
      !j["state"].is_string() || !j.contains("held_until_unix_ms") || !j["held_until_unix_ms"].is_number_unsigned())
    return bad();
  const std::string service = j["service"].get<std::string>();
  const auto slash = service.find('/');
  const std::string state = j["state"].get<std::string>();
  if (slash == std::string::npos || (state != "allocated" && state != "held")) return bad();
  return VipRecord{*vip, ServiceKey{service.substr(0, slash), service.substr(slash + 1)},
                   state == "allocated" ? VipState::allocated : VipState::held,
                   j["held_until_unix_ms"].get<std::uint64_t>()};
}

ServiceStore::ServiceStore(federation::Kv& kv, ServiceStoreOptions options) : kv_(kv), options_(std::move(options)) {}

StoreResult<net::Ipv4Prefix> ServiceStore::service_range() {
  auto r = read_range(kv_, options_);
  if (!r) return r.store_error();
  return r->first.range;
}

StoreResult<ServiceApplyReport> ServiceStore::apply(const ServiceApply& apply, std::uint64_t now_ms) {
  // Checked whole before the store is asked.
  const std::string who = "service apply for cluster " + apply.cluster;
  for (const auto& s : apply.objects.services)
    if (s.cluster != apply.cluster)
      return store_error(Code::invalid, who + ": Service " + s.key.str() + " is of cluster " + s.cluster);
  for (const auto& e : apply.objects.exports)
    if (e.cluster != apply.cluster)
      return store_error(Code::invalid, who + ": ServiceExport " + e.key.str() + " is of cluster " + e.cluster);
  const std::set<ServiceKey> named = services_named(apply.objects);
  std::set<ServiceKey> deleted;
  for (const auto& d : apply.deletes) {
    if (named.contains(d)) return store_error(Code::invalid, who + ": " + d.str() + " is both applied and deleted");
    if (!deleted.insert(d).second) return store_error(Code::invalid, who + ": " + d.str() + " is deleted twice");
  }
  for (unsigned attempt = 0; attempt < options_.max_attempts; ++attempt) {
    ServiceApplyReport report;
    auto outcome = try_apply(apply, now_ms, report);
    if (!outcome) return outcome.store_error();
    if (*outcome == Outcome::retry) continue;
    report.attempts = attempt + 1;
    return report;
  }
  return store_error(Code::conflict, who + ": gave up after " + std::to_string(options_.max_attempts) +
                                         " attempts under contention in " + kv_.describe() + "; try again");
}

StoreResult<ServiceStore::Outcome> ServiceStore::try_apply(const ServiceApply& apply, std::uint64_t now_ms,
                                                           ServiceApplyReport& report) {
  auto range = read_range(kv_, options_);
  if (!range) return range.store_error();
  auto read = read_all(kv_);
  if (!read) return read.store_error();
  auto pool = pool_of(range->first, read->vips);
  if (!pool) return pool.store_error();

  std::vector<Compare> compares{Compare::unchanged(store_keys::range(), range->second),
                                nothing_new_under(store_keys::vips(), read->revision)};
  std::vector<Op> ops;
  // Held VIPs whose hold-down ended are forgotten on the way.
  for (const auto vip : pool->expire(now_ms)) ops.push_back(Op::erase(store_keys::vip(vip)));

  std::set<ServiceKey> touched = services_named(apply.objects);
  for (const auto& d : apply.deletes) touched.insert(d);
  for (const ServiceKey& key : touched) {
    // Every record of the service as read is guarded (an erase elsewhere fails the guard), and
    // so is the service's prefix (a new record elsewhere fails it): whether the service is
    // still exported after this apply is decided on what is still there.
    compares.push_back(nothing_new_under(store_keys::objects(key), read->revision));
    bool exported_elsewhere = false;
    const std::string own = store_keys::object(key, apply.cluster);
    std::int64_t own_revision = 0;
    for (auto it = read->objects.lower_bound(store_keys::objects(key));
         it != read->objects.end() && it->first.rfind(store_keys::objects(key), 0) == 0; ++it) {
      compares.push_back(Compare::unchanged(it->first, it->second.mod_revision));
      if (it->first == own) {
        own_revision = it->second.mod_revision;
        continue;
      }
      auto other = decode_objects(it->second, last_element(it->first));
      if (!other) return other.store_error();
      exported_elsewhere = exported_elsewhere || !other->exports.empty();
    }
    if (own_revision == 0) compares.push_back(Compare::absent(own));
    bool exported_here = false;
    std::optional<net::Ipv4Addr> pinned;
    if (std::find(apply.deletes.begin(), apply.deletes.end(), key) != apply.deletes.end()) {
      if (own_revision == 0) {
        ++report.absent_deletes;
      } else {
        ops.push_back(Op::erase(own));
        report.deleted.push_back(key);
      }
    } else {
      const Objects mine = objects_of(apply.objects, key);
      exported_here = !mine.exports.empty();
      if (!mine.services.empty()) pinned = mine.services.front().pinned_vip;
      ops.push_back(Op::put(own, encode_objects(mine)));
      report.written.push_back(key);
    }
    const VipRecord* live = pool->find(key);
    if ((exported_here || exported_elsewhere) && !live) {
      auto got = pool->allocate(key, pinned, now_ms);
      if (!got) return store_error(vip_error_code(got.error()), "service apply for cluster " + apply.cluster + ": " + got.error());
      ops.push_back(Op::put(store_keys::vip(got->vip), encode_vip(*got)));
      report.allocated.push_back(*got);
    } else if (!exported_here && !exported_elsewhere && live) {
      auto held = pool->release(key, now_ms);
      if (!held) return store_error(Code::internal, held.error());
      ops.push_back(Op::put(store_keys::vip(held->vip), encode_vip(*held)));
      report.released.push_back(*held);
    }
  }
  if (compares.size() + ops.size() > options_.max_txn_ops)
    return store_error(Code::invalid, "service apply for cluster " + apply.cluster + " needs " +
                                          std::to_string(compares.size() + ops.size()) +
                                          " operations in one transaction, more than the store's limit of " +
                                          std::to_string(options_.max_txn_ops) + ": split the file");
  auto txn = kv_.txn(compares, ops, {});
  if (!txn) return txn.store_error();
  if (!txn->succeeded) return Outcome::retry;
  report.revision = txn->revision;
  return Outcome::applied;
}

StoreResult<ServiceSnapshot> ServiceStore::list() {
  auto read = read_all(kv_);
  if (!read) return read.store_error();
  ServiceSnapshot snap;
  snap.revision = read->revision;
  if (read->range) {
    auto range = decode_range(read->range->value);
    if (!range) return range.store_error();
    snap.range = range->range;
  }
  std::map<std::string, Objects> by_cluster;
  for (const auto& [key, kv] : read->objects) {
    const std::string cluster = last_element(key);
    auto objects = decode_objects(kv, cluster);
    if (!objects) return objects.store_error();
    Objects& into = by_cluster[cluster];
    for (auto& s : objects->services) into.services.push_back(std::move(s));
    for (auto& s : objects->slices) into.slices.push_back(std::move(s));
    for (auto& e : objects->exports) into.exports.push_back(std::move(e));
  }
  for (auto& [cluster, objects] : by_cluster) snap.applies.push_back(std::move(objects));
  snap.vips = std::move(read->vips);
  return snap;
}

Result<FederatedSet> federated(const ServiceSnapshot& snapshot) {
  auto set = federate(snapshot.applies);
  if (!set) return set;
  for (auto& [key, fs] : set->services)
    for (const VipRecord& r : snapshot.vips)
      if (r.service == key && r.state == VipState::allocated) fs.vip = r.vip;
  return set;
}

Result<VipRecord> StoreVipAllocator::change(const ServiceKey& service, std::optional<net::Ipv4Addr> pinned,
                                            std::uint64_t now_ms, bool release) {
  for (unsigned attempt = 0; attempt < options_.max_attempts; ++attempt) {
    auto range = read_range(kv_, options_);
    if (!range) return make_error(range.error());
    auto read = read_all(kv_);
    if (!read) return make_error(read.error());
    auto pool = pool_of(range->first, read->vips);
    if (!pool) return make_error(pool.error());
    const bool had = pool->find(service) != nullptr;
    auto record = release ? pool->release(service, now_ms) : pool->allocate(service, pinned, now_ms);
    if (!record) return record;
    if (!release && had) return record;  // nothing to write
    auto txn = kv_.txn({Compare::unchanged(store_keys::range(), range->second),
                        nothing_new_under(store_keys::vips(), read->revision)},
                       {Op::put(store_keys::vip(record->vip), encode_vip(*record))}, {});
    if (!txn) return make_error(txn.error());
    if (txn->succeeded) return record;
  }
  return make_error("VIP for " + service.str() + ": gave up under contention in " + kv_.describe() + "; try again");
}

Result<VipRecord> StoreVipAllocator::allocate(const ServiceKey& service, std::optional<net::Ipv4Addr> pinned,
                                              std::uint64_t now_ms) {
  return change(service, pinned, now_ms, false);
}

Result<VipRecord> StoreVipAllocator::release(const ServiceKey& service, std::uint64_t now_ms) {
  return change(service, std::nullopt, now_ms, true);
}

std::optional<VipRecord> StoreVipAllocator::find(const ServiceKey& service) {
  auto read = read_all(kv_);
  if (!read) return std::nullopt;
  for (const VipRecord& r : read->vips)
    if (r.service == service && r.state == VipState::allocated) return r;
  return std::nullopt;
}

}  // namespace vxfed::services
