#include "cni/netconf.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include "cni/env.hpp"
#include "common/net/mac.hpp"

namespace vxfed::cni {

namespace {

bool valid_plugin_type(const std::string& t) {
  // A type is a file name looked up in CNI_PATH; anything that could climb out of it is refused.
  if (t.empty() || t == "." || t == "..") return false;
  for (char c : t)
    if (c == '/' || c == '\\' || c == '\0') return false;
  return true;
}

bool valid_config_name(const std::string& n) {
  // SPEC.md: network name, same alphabet as a container id.
  return !validate_container_id(n).has_value();
}

Expected<std::uint64_t> read_bw_value(const nlohmann::json& obj, const char* key) {
  if (!obj.contains(key) || obj[key].is_null()) return std::uint64_t{0};
  const auto& v = obj[key];
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer())
    return cni_error(kInvalidConfig, std::string("runtimeConfig.bandwidth.") + key +
                                         " is negative; rates and bursts must be positive integers");
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= 0 && d == static_cast<double>(static_cast<std::uint64_t>(d)) && d < 1.8e19)
      return static_cast<std::uint64_t>(d);
  }
  return cni_error(kInvalidConfig, std::string("runtimeConfig.bandwidth.") + key +
                                       " must be a positive integer (bit/s for rates, bits for bursts)");
}

Expected<std::vector<Attachment>> read_attachments(const nlohmann::json& list, const char* key) {
  std::vector<Attachment> out;
  if (!list.is_array()) return cni_error(kInvalidConfig, std::string(key) + " must be an array");
  for (const auto& a : list) {
    if (!a.is_object() || !a.contains("containerID") || !a["containerID"].is_string() ||
        !a.contains("ifname") || !a["ifname"].is_string())
      return cni_error(kInvalidConfig, std::string(key) + " entries need string containerID and ifname");
    out.push_back({a["containerID"].get<std::string>(), a["ifname"].get<std::string>()});
  }
  return out;
}

// "serviceCidrs": a list of IPv4 prefixes in the strict spelling (host bits zero), each once.
// Length 0 is refused: it would be a second default route, and in the chained install it would
// take the place of the one IPAM sends to the node hop (the first route to a destination wins).
Expected<std::vector<net::Ipv4Prefix>> read_service_cidrs(const nlohmann::json& list) {
  std::vector<net::Ipv4Prefix> out;
  if (!list.is_array())
    return cni_error(kInvalidConfig, "\"serviceCidrs\" must be an array of IPv4 prefixes like [\"10.96.0.0/24\"]");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string field = "serviceCidrs[" + std::to_string(i) + "]";
    if (!list[i].is_string())
      return cni_error(kInvalidConfig, field + " must be a string, an IPv4 prefix like \"10.96.0.0/24\"");
    const std::string text = list[i].get<std::string>();
    if (text.find(':') != std::string::npos)
      return cni_error(kUnsupportedField, field + ": \"" + text + "\" is IPv6; vxfed networks are IPv4 only");
    auto prefix = net::Ipv4Prefix::parse(text);
    if (!prefix) return cni_error(kInvalidConfig, field + ": " + prefix.error());
    if (prefix->len == 0)
      return cni_error(kInvalidConfig, field + ": \"" + text + "\" is every address; give the service range "
                                                                "(vxfedd's services.range), a prefix of length 1 to 32");
    if (std::find(out.begin(), out.end(), *prefix) != out.end())
      return cni_error(kInvalidConfig, field + ": \"" + text + "\" is listed twice");
    out.push_back(*prefix);
  }
  return out;
}

// A configuration's unknown keys are ignored (SPEC.md: plugins may ignore fields they do not
// know), so a misspelt "serviceCidrs" would silently route no VIP: the spellings a user is
// likely to write (Kubernetes' serviceCIDR, the snake case of vxfedd's protos) are refused.
std::optional<std::string> misspelt_service_cidrs(const nlohmann::json& j) {
  for (const auto& [key, value] : j.items()) {
    if (key == "serviceCidrs") continue;
    std::string folded;
    for (char ch : key)
      if (ch != '_' && ch != '-') folded += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (folded == "servicecidrs" || folded == "servicecidr" || folded == "serviceranges" || folded == "servicerange")
      return key;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> validate_rate_and_burst(std::uint64_t rate, std::uint64_t burst) {
  if (burst == 0 && rate != 0) return "if rate is set, burst must also be set";
  if (rate == 0 && burst != 0) return "if burst is set, rate must also be set";
  if (burst / 8 >= std::numeric_limits<std::uint32_t>::max()) return "burst cannot be more than 4GB";
  return std::nullopt;
}

bool valid_network_name(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-'))
      return false;
  return name.front() != '-' && name.back() != '-';
}

std::optional<std::string> peek_version(const std::string& stdin_text) {
  auto j = nlohmann::json::parse(stdin_text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("cniVersion") || !j["cniVersion"].is_string())
    return std::nullopt;
  return j["cniVersion"].get<std::string>();
}

Expected<NetConf> parse_netconf(const std::string& stdin_text) {
  NetConf c;
  c.raw = nlohmann::json::parse(stdin_text, nullptr, false);
  if (c.raw.is_discarded())
    return cni_error(kDecodeFailure, "the network configuration on stdin is not valid JSON");
  if (!c.raw.is_object())
    return cni_error(kDecodeFailure, "the network configuration on stdin must be a JSON object");
  const auto& j = c.raw;

  auto str = [&](const char* key, std::string& out, bool required) -> Done {
    if (!j.contains(key) || j[key].is_null()) {
      if (required) return cni_error(kInvalidConfig, std::string("the network configuration has no \"") + key + "\"");
      return done();
    }
    if (!j[key].is_string()) return cni_error(kInvalidConfig, std::string("\"") + key + "\" must be a string");
    out = j[key].get<std::string>();
    return done();
  };

  if (auto r = str("cniVersion", c.cni_version, true); !r) return r.error();
  const auto v = parse_version(c.cni_version);
  if (!v || !is_supported(c.cni_version))
    return cni_error(kIncompatibleVersion, "cniVersion \"" + c.cni_version + "\" is not supported",
                     "vxfed supports 0.3.0, 0.3.1, 0.4.0, 1.0.0 and 1.1.0");
  c.version = *v;
  if (auto r = str("name", c.name, true); !r) return r.error();
  if (!valid_config_name(c.name))
    return cni_error(kInvalidConfig, "the network name \"" + c.name +
                                         "\" must start with a letter or digit and contain only letters, digits, '_', '.', '-'");
  if (auto r = str("type", c.type, true); !r) return r.error();
  if (!valid_plugin_type(c.type))
    return cni_error(kInvalidConfig, "\"type\": \"" + c.type + "\" names a path; a plugin type is a file name found in CNI_PATH");

  c.network = c.name;
  if (auto r = str("network", c.network, false); !r) return r.error();
  if (!valid_network_name(c.network))
    return cni_error(kInvalidConfig, "the vxfed network \"" + c.network +
                                         "\" must be 1-63 characters of [a-z0-9-] (set \"network\" when the config's name is not)");
  if (j.contains("mtu") && !j["mtu"].is_null()) {
    if (!j["mtu"].is_number_unsigned() || j["mtu"].get<std::uint64_t>() < 68 || j["mtu"].get<std::uint64_t>() > 65535)
      return cni_error(kInvalidConfig, "\"mtu\" must be an integer between 68 and 65535");
    c.mtu = j["mtu"].get<std::uint32_t>();
  }
  if (auto r = str("socket", c.socket, false); !r) return r.error();
  if (auto r = str("stateDir", c.state_dir, false); !r) return r.error();
  if (auto r = str("logFile", c.log_file, false); !r) return r.error();
  if (auto r = str("logLevel", c.log_level, false); !r) return r.error();
  if (c.socket.empty() || c.socket[0] != '/') return cni_error(kInvalidConfig, "\"socket\" must be an absolute path");
  if (c.state_dir.empty() || c.state_dir[0] != '/') return cni_error(kInvalidConfig, "\"stateDir\" must be an absolute path");
  if (j.contains("timeoutMs")) {
    if (!j["timeoutMs"].is_number_unsigned() || j["timeoutMs"].get<std::uint64_t>() == 0 ||
        j["timeoutMs"].get<std::uint64_t>() > 60000)
      return cni_error(kInvalidConfig, "\"timeoutMs\" must be an integer between 1 and 60000");
    c.timeout_ms = j["timeoutMs"].get<std::uint32_t>();
  }
  if (j.contains("dataplaneTimeoutMs")) {
    if (!j["dataplaneTimeoutMs"].is_number_unsigned() || j["dataplaneTimeoutMs"].get<std::uint64_t>() == 0 ||
        j["dataplaneTimeoutMs"].get<std::uint64_t>() > 30000)
      return cni_error(kInvalidConfig, "\"dataplaneTimeoutMs\" must be an integer between 1 and 30000");
    c.dataplane_timeout_ms = j["dataplaneTimeoutMs"].get<std::uint32_t>();
  }

  if (auto key = misspelt_service_cidrs(j))
    return cni_error(kInvalidConfig, "\"" + *key + "\" is not a vxfed field: the service range is \"serviceCidrs\"");
  if (j.contains("serviceCidrs") && !j["serviceCidrs"].is_null()) {
    auto cidrs = read_service_cidrs(j["serviceCidrs"]);
    if (!cidrs) return cidrs.error();
    c.service_cidrs = std::move(*cidrs);
  }

  if (j.contains("ipam") && !j["ipam"].is_null()) {
    if (!j["ipam"].is_object()) return cni_error(kInvalidConfig, "\"ipam\" must be an object");
    const auto& ipam = j["ipam"];
    if (!ipam.contains("type") || !ipam["type"].is_string())
      return cni_error(kInvalidConfig, "\"ipam\" has no \"type\" (for example \"host-local\")");
    c.ipam_type = ipam["type"].get<std::string>();
    if (!valid_plugin_type(c.ipam_type))
      return cni_error(kInvalidConfig, "\"ipam.type\": \"" + c.ipam_type +
                                           "\" names a path; an IPAM type is a file name found in CNI_PATH");
  }

  if (j.contains("runtimeConfig") && !j["runtimeConfig"].is_null()) {
    const auto& rc = j["runtimeConfig"];
    if (!rc.is_object()) return cni_error(kInvalidConfig, "\"runtimeConfig\" must be an object");
    if (rc.contains("mac") && !rc["mac"].is_null()) {
      if (!rc["mac"].is_string()) return cni_error(kInvalidConfig, "runtimeConfig.mac must be a string");
      const auto mac = net::parse_mac(rc["mac"].get<std::string>());
      if (!mac || !net::is_unicast(*mac))
        return cni_error(kInvalidConfig, "runtimeConfig.mac \"" + rc["mac"].get<std::string>() +
                                             "\" is not a unicast MAC address like 0a:58:0a:f4:01:05");
      c.runtime_mac = net::format_mac(*mac);
    }
    if (rc.contains("bandwidth") && !rc["bandwidth"].is_null()) {
      const auto& bw = rc["bandwidth"];
      if (!bw.is_object()) return cni_error(kInvalidConfig, "runtimeConfig.bandwidth must be an object");
      Bandwidth b;
      auto ir = read_bw_value(bw, "ingressRate");
      auto ib = read_bw_value(bw, "ingressBurst");
      auto er = read_bw_value(bw, "egressRate");
      auto eb = read_bw_value(bw, "egressBurst");
      for (auto* r : {&ir, &ib, &er, &eb})
        if (!*r) return r->error();
      b = {*ir, *ib, *er, *eb};
      if (auto bad = validate_rate_and_burst(b.ingress_rate, b.ingress_burst))
        return cni_error(kInvalidConfig, "runtimeConfig.bandwidth ingress: " + *bad);
      if (auto bad = validate_rate_and_burst(b.egress_rate, b.egress_burst))
        return cni_error(kInvalidConfig, "runtimeConfig.bandwidth egress: " + *bad);
      c.bandwidth = b;
    }
  }

  if (j.contains("prevResult") && !j["prevResult"].is_null()) {
    auto prev = parse_result(j["prevResult"]);
    if (!prev) return cni_error(kDecodeFailure, "prevResult: " + prev.error().msg);
    c.prev_result = std::move(*prev);
  }

  for (const char* key : {"cni.dev/valid-attachments", "cni.dev/attachments"}) {
    if (j.contains(key) && !j[key].is_null()) {
      auto list = read_attachments(j[key], key);
      if (!list) return list.error();
      c.valid_attachments.insert(c.valid_attachments.end(), list->begin(), list->end());
      c.has_valid_attachments = true;
    }
  }
  return c;
}

std::string ipam_stdin(const NetConf& conf, const std::string& version) {
  if (version == conf.cni_version) return conf.raw.dump();
  nlohmann::json copy = conf.raw;
  copy["cniVersion"] = version;
  return copy.dump();
}

}  // namespace vxfed::cni
