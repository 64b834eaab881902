// The CNI result: the structure ADD prints, IPAM plugins return and CHECK/DEL receive as
// prevResult. Parsed from any version we speak and written in the version the config asks
// for (SPEC.md "Result"; 0.3.x/0.4.0 carry ips[].version, 1.1.0 adds interfaces[].mtu).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cni/errors.hpp"

namespace vxfed::cni {

struct ResultInterface {
  std::string name;
  std::string mac;
  std::string sandbox;                 // empty for host-side interfaces
  std::optional<std::uint32_t> mtu;    // written from 1.1.0 on
};

struct ResultIp {
  std::string address;                 // CIDR, "10.244.1.5/16"
  std::string gateway;                 // may be empty
  std::optional<int> interface;        // index into interfaces
};

struct ResultRoute {
  std::string dst;
  std::string gw;
};

struct CniResult {
  std::string cni_version;
  std::vector<ResultInterface> interfaces;
  std::vector<ResultIp> ips;
  std::vector<ResultRoute> routes;
  nlohmann::json dns = nlohmann::json::object();
};

// Parses a result of any supported version. Only IPv4/IPv6 text is checked for presence, not
// for meaning: the caller decides what it can use. Errors use code 6 (decode failure).
Expected<CniResult> parse_result(const nlohmann::json& j);

// Writes `r` in the layout of `version` (must be supported).
nlohmann::json write_result(const CniResult& r, const std::string& version);

// {"cniVersion","code","msg","details"}; details omitted when empty.
nlohmann::json write_error(const CniError& e, const std::string& version);

// {"cniVersion","supportedVersions"}.
nlohmann::json write_version_info(const std::string& version);

}  // namespace vxfed::cni
