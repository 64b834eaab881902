// Traffic-class marking rules: defaults, validation, JSON parsing (pure: no I/O).
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bpf/lib/vxfed_bpf.hpp"
#include "bpf/include/vxfed_bpf_abi.h"

namespace vxfed::bpf {
namespace {

bool valid_name(const std::string& n) {
  if (n.empty() || n.size() > 15) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  return true;
}

Status read_port_range(const nlohmann::json& r, const char* key, uint16_t& lo, uint16_t& hi,
                       size_t index) {
  auto it = r.find(key);
  if (it == r.end()) return {};
  auto port = [&](const nlohmann::json& v, uint16_t& out) -> bool {
    if (!v.is_number_unsigned() || v.get<uint64_t>() < 1 || v.get<uint64_t>() > 65535) return false;
    out = static_cast<uint16_t>(v.get<uint64_t>());
    return true;
  };
  if (it->is_array() && it->size() == 2) {
    if (port((*it)[0], lo) && port((*it)[1], hi) && lo <= hi) return {};
  } else if (port(*it, lo)) {
    hi = lo;
    return {};
  }
  return make_error(fmt::format("rule {}: {} must be a port 1..65535 or [lo, hi] with lo <= hi, got {}",
                                index, key, it->dump()));
}

Result<uint8_t> read_small(const nlohmann::json& r, const char* key, unsigned max, size_t index) {
  const auto& v = r.at(key);
  if (!v.is_number_unsigned() || v.get<uint64_t>() > max)
    return make_error(fmt::format("rule {}: {} must be 0..{}, got {}", index, key, max, v.dump()));
  return static_cast<uint8_t>(v.get<uint64_t>());
}

}  // namespace

std::vector<MarkRule> default_mark_rules() {
  MarkRule roce;
  roce.name = "roce";
  roce.protocol = 17;
  roce.dport_lo = roce.dport_hi = kRoceV2Port;
  roce.dscp = kRoceDscp;
  roce.priority = kRocePriority;
  return {roce};
}

Status validate_rules(const std::vector<MarkRule>& rules) {
  if (rules.size() > VXFED_MAX_RULES)
    return make_error(fmt::format("{} marking rules given; at most {} are supported", rules.size(), VXFED_MAX_RULES));
  for (size_t i = 0; i < rules.size(); i++) {
    const auto& r = rules[i];
    if (!valid_name(r.name))
      return make_error(fmt::format("rule {}: name \"{}\" must be 1..15 characters of [a-z0-9_-]", i, r.name));
    if (r.name == "unmatched") return make_error(fmt::format("rule {}: the name \"unmatched\" is reserved", i));
    for (size_t k = 0; k < i; k++)
      if (rules[k].name == r.name) return make_error(fmt::format("rule {}: name \"{}\" is used twice", i, r.name));
    if (r.protocol != 0 && r.protocol != 6 && r.protocol != 17 &&
        (r.dport_lo || r.dport_hi || r.sport_lo || r.sport_hi))
      return make_error(fmt::format("rule {} ({}): ports need protocol tcp, udp or any", i, r.name));
    if (r.dport_lo > r.dport_hi || r.sport_lo > r.sport_hi)
      return make_error(fmt::format("rule {} ({}): port range lo > hi", i, r.name));
    if (!r.dscp && !r.priority)
      return make_error(fmt::format("rule {} ({}): sets neither dscp nor priority", i, r.name));
    if (r.dscp && *r.dscp > 63) return make_error(fmt::format("rule {} ({}): dscp {} is not 0..63", i, r.name, *r.dscp));
    if (r.priority && *r.priority > 7)
      return make_error(fmt::format("rule {} ({}): priority {} is not 0..7", i, r.name, *r.priority));
  }
  return {};
}

Result<std::vector<MarkRule>> parse_rules_json(const nlohmann::json& j) {
  if (!j.is_array()) return make_error("marking rules must be a JSON array");
  std::vector<MarkRule> out;
  for (size_t i = 0; i < j.size(); i++) {
    const auto& r = j[i];
    if (!r.is_object()) return make_error(fmt::format("rule {} must be an object", i));
    for (const auto& [key, _] : r.items())
      if (key != "name" && key != "protocol" && key != "dport" && key != "sport" && key != "dscp" &&
          key != "priority")
        return make_error(fmt::format("rule {}: unknown key \"{}\"", i, key));
    MarkRule m;
    if (!r.contains("name") || !r["name"].is_string()) return make_error(fmt::format("rule {}: needs a string \"name\"", i));
    m.name = r["name"].get<std::string>();
    if (r.contains("protocol")) {
      const auto& p = r["protocol"];
      if (p == "tcp") m.protocol = 6;
      else if (p == "udp") m.protocol = 17;
      else if (p == "any") m.protocol = 0;
      else if (p.is_number_unsigned() && p.get<uint64_t>() <= 255) m.protocol = static_cast<uint8_t>(p.get<uint64_t>());
      else return make_error(fmt::format("rule {}: protocol must be \"tcp\", \"udp\", \"any\" or 0..255, got {}", i, p.dump()));
    }
    if (auto st = read_port_range(r, "dport", m.dport_lo, m.dport_hi, i); !st) return Error{st.error()};
    if (auto st = read_port_range(r, "sport", m.sport_lo, m.sport_hi, i); !st) return Error{st.error()};
    if (r.contains("dscp")) {
      auto v = read_small(r, "dscp", 63, i);
      if (!v) return Error{v.error()};
      m.dscp = *v;
    }
    if (r.contains("priority")) {
      auto v = read_small(r, "priority", 7, i);
      if (!v) return Error{v.error()};
      m.priority = *v;
    }
    out.push_back(std::move(m));
  }
  if (auto st = validate_rules(out); !st) return Error{st.error()};
  return out;
}

}  // namespace vxfed::bpf
