#include "cni/requested.hpp"

namespace vxfed::cni {

namespace {

// "10.244.7.7" or "10.244.7.7/16"; IPv6 entries are not ours (IPAM gets them anyway and vxfed
// refuses IPv6 results): nullopt without an error.
Expected<std::optional<net::Ipv4Addr>> parse_ip(const std::string& text, int code, const std::string& where) {
  if (text.find(':') != std::string::npos) return std::optional<net::Ipv4Addr>{};
  if (text.find('/') != std::string::npos) {
    auto i = net::Ipv4Interface::parse(text);
    if (!i) return cni_error(code, where + ": \"" + text + "\" is not an IPv4 address", i.error());
    return std::optional<net::Ipv4Addr>{i->addr};
  }
  auto a = net::Ipv4Addr::parse(text);
  if (!a) return cni_error(code, where + ": \"" + text + "\" is not an IPv4 address", a.error());
  return std::optional<net::Ipv4Addr>{*a};
}

Expected<net::Mac> parse_unicast(const std::string& text, int code, const std::string& where) {
  auto mac = net::parse_mac(text);
  if (!mac || !net::is_unicast(*mac))
    return cni_error(code, where + " \"" + text + "\" is not a unicast MAC address like 0a:58:0a:f4:01:05");
  return *mac;
}

Done add_ips(Requested& r, const std::vector<std::string>& texts, int code, const std::string& where) {
  bool any = false;
  for (const auto& t : texts) {
    auto ip = parse_ip(t, code, where);
    if (!ip) return ip.error();
    if (*ip) {
      r.ips.push_back(**ip);
      any = true;
    }
  }
  if (any) r.ips_source += (r.ips_source.empty() ? "" : ", ") + where;
  return done();
}

Expected<std::vector<std::string>> string_list(const nlohmann::json& j, const std::string& where) {
  if (!j.is_array()) return cni_error(kInvalidConfig, where + " must be a list of addresses");
  std::vector<std::string> out;
  for (const auto& v : j) {
    if (!v.is_string()) return cni_error(kInvalidConfig, where + " must be a list of strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

Expected<Requested> requested(const NetConf& conf, const CniEnv& env) {
  Requested r;
  const nlohmann::json* args_cni = nullptr;
  if (conf.raw.contains("args") && conf.raw["args"].is_object() && conf.raw["args"].contains("cni")) {
    args_cni = &conf.raw["args"]["cni"];
    if (!args_cni->is_object()) return cni_error(kInvalidConfig, "args.cni must be an object");
  }

  // The MAC, weakest source first: a stronger one overwrites it.
  if (args_cni && args_cni->contains("mac") && !(*args_cni)["mac"].is_null()) {
    if (!(*args_cni)["mac"].is_string()) return cni_error(kInvalidConfig, "args.cni.mac must be a string");
    auto mac = parse_unicast((*args_cni)["mac"].get<std::string>(), kInvalidConfig, "args.cni.mac");
    if (!mac) return mac.error();
    r.mac = *mac;
    r.mac_source = "args.cni.mac";
  }
  if (auto it = env.arg_map.find("MAC"); it != env.arg_map.end()) {
    auto mac = parse_unicast(it->second, kInvalidEnv, "CNI_ARGS MAC");
    if (!mac) return mac.error();
    r.mac = *mac;
    r.mac_source = "CNI_ARGS MAC";
  }
  if (conf.runtime_mac) {
    r.mac = *net::parse_mac(*conf.runtime_mac);  // validated by parse_netconf
    r.mac_source = "runtimeConfig.mac";
  }

  if (auto it = env.arg_map.find("IP"); it != env.arg_map.end())
    if (auto st = add_ips(r, split_commas(it->second), kInvalidEnv, "CNI_ARGS IP"); !st) return st.error();
  if (conf.raw.contains("runtimeConfig") && conf.raw["runtimeConfig"].is_object() &&
      conf.raw["runtimeConfig"].contains("ips") && !conf.raw["runtimeConfig"]["ips"].is_null()) {
    auto list = string_list(conf.raw["runtimeConfig"]["ips"], "runtimeConfig.ips");
    if (!list) return list.error();
    if (auto st = add_ips(r, *list, kInvalidConfig, "runtimeConfig.ips"); !st) return st.error();
  }
  if (args_cni && args_cni->contains("ips") && !(*args_cni)["ips"].is_null()) {
    auto list = string_list((*args_cni)["ips"], "args.cni.ips");
    if (!list) return list.error();
    if (auto st = add_ips(r, *list, kInvalidConfig, "args.cni.ips"); !st) return st.error();
  }
  return r;
}

}  // namespace vxfed::cni
