#include "federation/identities.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

#include <nlohmann/json.hpp>

#include "federation/schema.hpp"
#include "policy/identity.hpp"

namespace vxfed::federation {

using nlohmann::json;

namespace {

StoreError damaged(const KeyValue& kv, const std::string& why) {
  return store_error(Code::internal, "federation store key " + kv.key + " is damaged (" + why +
                                         "); fix or delete it (docs/federation.md, \"Policy\")");
}

bool read_u64(const json& j, const char* field, std::uint64_t& out) {
  if (!j.contains(field)) return true;
  if (!j[field].is_number_unsigned()) return false;
  out = j[field].get<std::uint64_t>();
  return true;
}

// "cluster=a" and "namespace=prod" lines of a canonical key (policy/identity.hpp).
std::string namespace_of_key(const std::string& key) {
  std::string cluster, ns;
  std::size_t start = 0;
  while (start < key.size()) {
    auto end = key.find('\n', start);
    if (end == std::string::npos) end = key.size();
    const std::string line = key.substr(start, end - start);
    if (line.rfind("cluster=", 0) == 0) cluster = line.substr(8);
    if (line.rfind("namespace=", 0) == 0) ns = line.substr(10);
    start = end + 1;
  }
  return "namespace " + ns + " of cluster " + cluster;
}

}  // namespace

std::optional<std::uint32_t> reserved_identity(const std::string& canonical_key) {
  if (canonical_key == policy::canonical_key(policy::Identity::make_unlabelled())) return kIdentityUnlabelled;
  return std::nullopt;
}

StoreStatus validate(const IdentityRange& range) {
  if (range.first < kFirstAllocatableIdentity || range.last > kLastIdentity || range.first > range.last)
    return store_error(Code::invalid, "identity range " + std::to_string(range.first) + "-" + std::to_string(range.last) +
                                          " must lie within " + std::to_string(kFirstAllocatableIdentity) + "-" +
                                          std::to_string(kLastIdentity) + " (0-255 are reserved), first <= last");
  return Done{};
}

std::string encode(const IdentityRange& r) {
  return json{{"first", r.first}, {"last", r.last}, {"hold_down_seconds", r.hold_down_ms / 1000}}.dump();
}

StoreResult<IdentityRange> decode_identity_range(const KeyValue& kv) {
  json j = json::parse(kv.value, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return damaged(kv, "not a JSON object");
  std::uint64_t first = 0, last = 0, hold_s = 0;
  if (!j.contains("first") || !j.contains("last") || !read_u64(j, "first", first) || !read_u64(j, "last", last) ||
      !read_u64(j, "hold_down_seconds", hold_s))
    return damaged(kv, "first and last must be numbers");
  if (first > kLastIdentity || last > kLastIdentity) return damaged(kv, "a number above 65535");
  IdentityRange r{static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(last), hold_s * 1000};
  if (auto ok = validate(r); !ok) return damaged(kv, ok.error());
  return r;
}

std::string encode(const IdentityRecord& r) {
  return json{{"key", r.key},
              {"state", r.state == IdentityState::held ? "held" : "allocated"},
              {"held_until_unix_ms", r.held_until_unix_ms}}
      .dump();
}

StoreResult<IdentityRecord> decode_identity(const KeyValue& kv) {
  IdentityRecord r;
  const std::string text = keys::leaf(kv.key);
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), r.number);
  if (ec != std::errc() || end != text.data() + text.size() || r.number < kFirstAllocatableIdentity ||
      r.number > kLastIdentity)
    return damaged(kv, "the key does not end in an identity number 256-65535");
  json j = json::parse(kv.value, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return damaged(kv, "not a JSON object");
  if (!j.contains("key") || !j["key"].is_string() || !j.contains("state") || !j["state"].is_string() ||
      !read_u64(j, "held_until_unix_ms", r.held_until_unix_ms))
    return damaged(kv, "key and state must be strings, held_until_unix_ms a number");
  r.key = j["key"].get<std::string>();
  const std::string state = j["state"].get<std::string>();
  if (state == "allocated") r.state = IdentityState::allocated;
  else if (state == "held") r.state = IdentityState::held;
  else return damaged(kv, "unknown state '" + state + "'");
  if (r.key.empty()) return damaged(kv, "empty canonical key");
  return r;
}

std::string escape_key_element(const std::string& text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (unsigned char c : text) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                       c == '_' || c == '=' || c == ':' || c == '-';
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::optional<std::string> unescape_key_element(const std::string& text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int hi = hex(text[i + 1]), lo = hex(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

StoreResult<std::uint32_t> pick_identity_number(const IdentityRange& range,
                                                const std::map<std::uint32_t, IdentityRecord>& records,
                                                const std::set<std::uint32_t>& also_taken) {
  for (std::uint32_t n = range.first; n <= range.last; ++n)
    if (!records.count(n) && !also_taken.count(n)) return n;
  std::size_t allocated = 0, held = 0;
  std::uint64_t first_free_again = 0;
  std::map<std::string, std::size_t> per_namespace;
  for (const auto& [n, r] : records) {
    if (n < range.first || n > range.last) continue;
    if (r.state == IdentityState::held) {
      ++held;
      if (first_free_again == 0 || r.held_until_unix_ms < first_free_again) first_free_again = r.held_until_unix_ms;
    } else {
      ++allocated;
    }
    ++per_namespace[namespace_of_key(r.key)];
  }
  std::vector<std::pair<std::size_t, std::string>> top;
  for (const auto& [ns, count] : per_namespace) top.emplace_back(count, ns);
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::string largest;
  for (std::size_t i = 0; i < top.size() && i < 3; ++i)
    largest += (i ? ", " : "") + top[i].second + " (" + std::to_string(top[i].first) + ")";
  const std::size_t size = range.last - range.first + 1;
  std::string message = "identity numbers exhausted: all " + std::to_string(size) + " numbers " +
                        std::to_string(range.first) + "-" + std::to_string(range.last) + " are taken (" +
                        std::to_string(allocated) + " allocated, " + std::to_string(held) + " held down";
  if (held) message += ", the first free again at unix ms " + std::to_string(first_free_again);
  message += ")";
  if (!largest.empty()) message += "; the most identities: " + largest;
  message += "; no new label set can be numbered until numbers are released: reduce the distinct label sets "
             "(docs/policy.md, \"Identity numbers\")";
  return store_error(Code::exhausted, message);
}

}  // namespace vxfed::federation
