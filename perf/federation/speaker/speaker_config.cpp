#include "perf/federation/speaker/speaker_config.hpp"

#include <nlohmann/json.hpp>

namespace vxfed::perf::speaker {

std::string SessionConfig::name() const { return local.str() + " -> " + peer.str(); }

namespace {

using nlohmann::json;

Result<std::uint32_t> number(const json& s, const char* key, const std::string& where, std::uint64_t min,
                             std::uint64_t max, std::optional<std::uint32_t> fallback = std::nullopt) {
  if (!s.contains(key)) {
    if (fallback) return *fallback;
    return Error{where + "." + key + ": missing"};
  }
  const json& v = s[key];
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() < min || v.get<std::uint64_t>() > max)
    return Error{where + "." + key + ": must be an integer in " + std::to_string(min) + ".." + std::to_string(max)};
  return static_cast<std::uint32_t>(v.get<std::uint64_t>());
}

Result<net::Ipv4Addr> address(const json& s, const char* key, const std::string& where) {
  if (!s.contains(key) || !s[key].is_string()) return Error{where + "." + key + ": missing or not a string"};
  auto a = net::Ipv4Addr::parse(s[key].get<std::string>());
  if (!a) return Error{where + "." + key + ": " + a.error()};
  return *a;
}

}  // namespace

Result<std::vector<SessionConfig>> parse_config(const std::string& text) {
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return Error{"config: not valid JSON"};
  if (!doc.is_object() || !doc.contains("sessions") || !doc["sessions"].is_array() || doc["sessions"].empty())
    return Error{"config: sessions: missing, not a list or empty"};
  std::vector<SessionConfig> out;
  for (std::size_t i = 0; i < doc["sessions"].size(); ++i) {
    const json& s = doc["sessions"][i];
    const std::string where = "sessions[" + std::to_string(i) + "]";
    if (!s.is_object()) return Error{where + ": not an object"};
    SessionConfig c;
    auto peer = address(s, "peer", where);
    if (!peer) return Error{peer.error()};
    auto local = address(s, "local", where);
    if (!local) return Error{local.error()};
    c.peer = *peer;
    c.local = *local;
    auto local_as = number(s, "local_as", where, 1, 0xffffffffu);
    if (!local_as) return Error{local_as.error()};
    auto peer_as = number(s, "peer_as", where, 1, 0xffffffffu);
    if (!peer_as) return Error{peer_as.error()};
    // RFC 4271 4.2: 0 (no keepalives) or at least 3 seconds.
    auto hold = number(s, "hold", where, 0, 0xffff, 30);
    if (!hold) return Error{hold.error()};
    if (*hold == 1 || *hold == 2) return Error{where + ".hold: must be 0 or 3..65535"};
    auto retry = number(s, "connect_retry", where, 1, 3600, 1);
    if (!retry) return Error{retry.error()};
    c.local_as = *local_as;
    c.peer_as = *peer_as;
    c.hold_s = static_cast<std::uint16_t>(*hold);
    c.connect_retry_s = *retry;
    if (!s.contains("routes") || !s["routes"].is_array()) return Error{where + ".routes: missing or not a list"};
    c.routes.reserve(s["routes"].size());
    for (std::size_t j = 0; j < s["routes"].size(); ++j) {
      const json& r = s["routes"][j];
      const std::string rw = where + ".routes[" + std::to_string(j) + "]";
      if (!r.is_array() || r.size() != 2 || !r[0].is_string() || !r[1].is_string())
        return Error{rw + ": must be [prefix, next hop]"};
      auto prefix = net::Ipv4Prefix::parse(r[0].get<std::string>());
      if (!prefix) return Error{rw + ": prefix: " + prefix.error()};
      auto nh = net::Ipv4Addr::parse(r[1].get<std::string>());
      if (!nh) return Error{rw + ": next hop: " + nh.error()};
      c.routes.push_back(Route{*prefix, *nh});
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace vxfed::perf::speaker
