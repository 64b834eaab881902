#include "federation/schema.hpp"

#include <charconv>

#include <nlohmann/json.hpp>

namespace vxfed::federation {

using nlohmann::json;

std::string keys::leaf(const std::string& key) {
  const auto slash = key.rfind('/');
  return slash == std::string::npos ? key : key.substr(slash + 1);
}

bool PoolsRecord::operator==(const PoolsRecord& other) const {
  if (hold_down_ms != other.hold_down_ms || pools.size() != other.pools.size()) return false;
  for (std::size_t i = 0; i < pools.size(); ++i) {
    const auto& a = pools[i];
    const auto& b = other.pools[i];
    if (a.name != b.name || a.selector != b.selector || a.ranges.size() != b.ranges.size()) return false;
    for (std::size_t j = 0; j < a.ranges.size(); ++j)
      if (a.ranges[j].first != b.ranges[j].first || a.ranges[j].last != b.ranges[j].last) return false;
  }
  return true;
}

namespace {

StoreError damaged(const KeyValue& kv, const std::string& why) {
  return store_error(Code::internal, "federation store key " + kv.key + " is damaged (" + why +
                                         "); fix or delete it (docs/federation.md, \"Repairing the store\")");
}

StoreResult<json> parse_object(const KeyValue& kv) {
  json j = json::parse(kv.value, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return damaged(kv, "not a JSON object");
  return j;
}

json labels_json(const vni::Labels& labels) {
  json j = json::object();
  for (const auto& [k, v] : labels) j[k] = v;
  return j;
}

bool read_labels(const json& j, vni::Labels& out) {
  if (!j.is_object()) return false;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) return false;
    out[k] = v.get<std::string>();
  }
  return true;
}

template <typename T>
bool read_number(const json& j, const char* field, T& out) {
  if (!j.contains(field)) return true;  // absent: default
  if (!j[field].is_number_unsigned()) return false;
  out = j[field].get<T>();
  return true;
}

bool read_string(const json& j, const char* field, std::string& out) {
  if (!j.contains(field)) return true;
  if (!j[field].is_string()) return false;
  out = j[field].get<std::string>();
  return true;
}

}  // namespace

std::string encode(const PoolsRecord& record) {
  json pools = json::array();
  for (const auto& p : record.pools) {
    json ranges = json::array();
    for (const auto& r : p.ranges) ranges.push_back(r.str());
    pools.push_back({{"name", p.name}, {"ranges", ranges}, {"selector", labels_json(p.selector)}});
  }
  return json{{"pools", pools}, {"hold_down_seconds", record.hold_down_ms / 1000}}.dump();
}

StoreResult<PoolsRecord> decode_pools(const KeyValue& kv) {
  auto j = parse_object(kv);
  if (!j) return j.store_error();
  PoolsRecord out;
  std::uint64_t hold_down_s = out.hold_down_ms / 1000;
  if (!read_number(*j, "hold_down_seconds", hold_down_s)) return damaged(kv, "hold_down_seconds is not a number");
  out.hold_down_ms = hold_down_s * 1000;
  if (!j->contains("pools") || !(*j)["pools"].is_array()) return damaged(kv, "no pools list");
  for (const auto& p : (*j)["pools"]) {
    vni::PoolSpec spec;
    if (!p.is_object() || !read_string(p, "name", spec.name) || !p.contains("ranges") || !p["ranges"].is_array())
      return damaged(kv, "a pool needs a name and ranges");
    for (const auto& r : p["ranges"]) {
      if (!r.is_string()) return damaged(kv, "pool '" + spec.name + "': a range is not a string");
      auto range = vni::parse_range(r.get<std::string>());
      if (!range) return damaged(kv, "pool '" + spec.name + "': " + range.error());
      spec.ranges.push_back(*range);
    }
    if (p.contains("selector") && !read_labels(p["selector"], spec.selector))
      return damaged(kv, "pool '" + spec.name + "': selector is not a map of strings");
    out.pools.push_back(std::move(spec));
  }
  if (auto ok = vni::validate_pools(out.pools); !ok) return damaged(kv, ok.error());
  return out;
}

std::string encode(const NetworkRecord& r) {
  return json{{"vni", r.vni},
              {"pool", r.pool},
              {"labels", labels_json(r.labels)},
              {"block_len", r.block_len},
              {"created_by", r.created_by},
              {"created_unix_ms", r.created_unix_ms}}
      .dump();
}

StoreResult<NetworkRecord> decode_network(const KeyValue& kv) {
  auto j = parse_object(kv);
  if (!j) return j.store_error();
  NetworkRecord r;
  if (!read_number(*j, "vni", r.vni) || r.vni < vni::kMinVni || r.vni > vni::kMaxVni)
    return damaged(kv, "vni missing or outside 1-16777214");
  if (!read_string(*j, "pool", r.pool) || !read_string(*j, "created_by", r.created_by) ||
      !read_number(*j, "block_len", r.block_len) || !read_number(*j, "created_unix_ms", r.created_unix_ms) ||
      (j->contains("labels") && !read_labels((*j)["labels"], r.labels)))
    return damaged(kv, "a field has the wrong type");
  if (r.block_len > 32) return damaged(kv, "block_len above 32");
  return r;
}

std::string encode(const NodeRecord& r) {
  return json{{"vtep", r.vtep},
              {"cluster", r.cluster},
              {"registered_unix_ms", r.registered_unix_ms},
              {"gone_since_unix_ms", r.gone_since_unix_ms},
              {"gbp", r.gbp}}
      .dump();
}

StoreResult<NodeRecord> decode_node(const KeyValue& kv) {
  auto j = parse_object(kv);
  if (!j) return j.store_error();
  NodeRecord r;
  if (!read_string(*j, "vtep", r.vtep) || !read_string(*j, "cluster", r.cluster) ||
      !read_number(*j, "registered_unix_ms", r.registered_unix_ms) ||
      !read_number(*j, "gone_since_unix_ms", r.gone_since_unix_ms))
    return damaged(kv, "a field has the wrong type");
  if (auto gbp = j->find("gbp"); gbp != j->end()) {  // absent in the previous release's records
    if (!gbp->is_boolean()) return damaged(kv, "gbp is not true or false");
    r.gbp = gbp->get<bool>();
  }
  return r;
}

std::string encode(const vni::Allocation& r) {
  return json{{"state", vni::state_name(r.state)},
              {"pool", r.pool},
              {"network", r.network},
              {"held_until_unix_ms", r.held_until_ms}}
      .dump();
}

StoreResult<vni::Allocation> decode_vni(const KeyValue& kv) {
  auto j = parse_object(kv);
  if (!j) return j.store_error();
  vni::Allocation r;
  const std::string text = keys::leaf(kv.key);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), r.vni);
  if (ec != std::errc() || end != text.data() + text.size() || r.vni < vni::kMinVni || r.vni > vni::kMaxVni)
    return damaged(kv, "the key does not end in a VNI 1-16777214");
  std::string state;
  if (!read_string(*j, "state", state) || !read_string(*j, "pool", r.pool) || !read_string(*j, "network", r.network) ||
      !read_number(*j, "held_until_unix_ms", r.held_until_ms))
    return damaged(kv, "a field has the wrong type");
  auto parsed = vni::parse_state(state);
  if (!parsed) return damaged(kv, "unknown state '" + state + "'");
  r.state = *parsed;
  if (r.network.empty()) return damaged(kv, "no network");
  return r;
}

}  // namespace vxfed::federation
