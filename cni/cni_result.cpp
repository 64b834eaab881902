#include "cni/cni_result.hpp"

#include "cni/version.hpp"

namespace vxfed::cni {

namespace {

Expected<std::string> opt_string(const nlohmann::json& obj, const char* key, const char* where) {
  if (!obj.contains(key) || obj[key].is_null()) return std::string{};
  if (!obj[key].is_string())
    return cni_error(kDecodeFailure, std::string(where) + "." + key + " must be a string");
  return obj[key].get<std::string>();
}

}  // namespace

Expected<CniResult> parse_result(const nlohmann::json& j) {
  if (!j.is_object()) return cni_error(kDecodeFailure, "a CNI result must be a JSON object");
  CniResult r;
  auto version = opt_string(j, "cniVersion", "result");
  if (!version) return version.error();
  r.cni_version = *version;
  if (j.contains("interfaces") && !j["interfaces"].is_null()) {
    if (!j["interfaces"].is_array()) return cni_error(kDecodeFailure, "result.interfaces must be an array");
    for (const auto& i : j["interfaces"]) {
      if (!i.is_object()) return cni_error(kDecodeFailure, "result.interfaces[] must be objects");
      ResultInterface ri;
      auto name = opt_string(i, "name", "interfaces[]");
      auto mac = opt_string(i, "mac", "interfaces[]");
      auto sandbox = opt_string(i, "sandbox", "interfaces[]");
      if (!name) return name.error();
      if (!mac) return mac.error();
      if (!sandbox) return sandbox.error();
      ri.name = *name;
      ri.mac = *mac;
      ri.sandbox = *sandbox;
      if (i.contains("mtu") && i["mtu"].is_number_unsigned()) ri.mtu = i["mtu"].get<std::uint32_t>();
      r.interfaces.push_back(std::move(ri));
    }
  }
  if (j.contains("ips") && !j["ips"].is_null()) {
    if (!j["ips"].is_array()) return cni_error(kDecodeFailure, "result.ips must be an array");
    for (const auto& i : j["ips"]) {
      if (!i.is_object()) return cni_error(kDecodeFailure, "result.ips[] must be objects");
      ResultIp ip;
      auto address = opt_string(i, "address", "ips[]");
      auto gateway = opt_string(i, "gateway", "ips[]");
      if (!address) return address.error();
      if (!gateway) return gateway.error();
      if (address->empty()) return cni_error(kDecodeFailure, "result.ips[] entry without an address");
      ip.address = *address;
      ip.gateway = *gateway;
      if (i.contains("interface") && !i["interface"].is_null()) {
        if (!i["interface"].is_number_integer())
          return cni_error(kDecodeFailure, "result.ips[].interface must be an integer");
        ip.interface = i["interface"].get<int>();
      }
      r.ips.push_back(std::move(ip));
    }
  }
  if (j.contains("routes") && !j["routes"].is_null()) {
    if (!j["routes"].is_array()) return cni_error(kDecodeFailure, "result.routes must be an array");
    for (const auto& i : j["routes"]) {
      if (!i.is_object()) return cni_error(kDecodeFailure, "result.routes[] must be objects");
      auto dst = opt_string(i, "dst", "routes[]");
      auto gw = opt_string(i, "gw", "routes[]");
      if (!dst) return dst.error();
      if (!gw) return gw.error();
      r.routes.push_back({*dst, *gw});
    }
  }
  if (j.contains("dns") && j["dns"].is_object()) r.dns = j["dns"];
  return r;
}

nlohmann::json write_result(const CniResult& r, const std::string& version) {
  const auto v = parse_version(version).value_or(SpecVersion{1, 1, 0});
  nlohmann::json j;
  j["cniVersion"] = version;
  j["interfaces"] = nlohmann::json::array();
  for (const auto& i : r.interfaces) {
    nlohmann::json o;
    o["name"] = i.name;
    if (!i.mac.empty()) o["mac"] = i.mac;
    if (!i.sandbox.empty()) o["sandbox"] = i.sandbox;
    if (i.mtu && result_has_interface_mtu(v)) o["mtu"] = *i.mtu;
    j["interfaces"].push_back(std::move(o));
  }
  j["ips"] = nlohmann::json::array();
  for (const auto& ip : r.ips) {
    nlohmann::json o;
    if (result_has_ip_version(v))
      o["version"] = ip.address.find(':') == std::string::npos ? "4" : "6";
    o["address"] = ip.address;
    if (!ip.gateway.empty()) o["gateway"] = ip.gateway;
    if (ip.interface) o["interface"] = *ip.interface;
    j["ips"].push_back(std::move(o));
  }
  j["routes"] = nlohmann::json::array();
  for (const auto& rt : r.routes) {
    nlohmann::json o;
    o["dst"] = rt.dst;
    if (!rt.gw.empty()) o["gw"] = rt.gw;
    j["routes"].push_back(std::move(o));
  }
  j["dns"] = r.dns.is_object() ? r.dns : nlohmann::json::object();
  return j;
}

nlohmann::json write_error(const CniError& e, const std::string& version) {
  nlohmann::json j;
  j["cniVersion"] = version;
  j["code"] = e.code;
  j["msg"] = e.msg;
  if (!e.details.empty()) j["details"] = e.details;
  return j;
}

nlohmann::json write_version_info(const std::string& version) {
  nlohmann::json j;
  j["cniVersion"] = version;
  j["supportedVersions"] = supported_versions();
  return j;
}

}  // namespace vxfed::cni
