#include "control/node/policy_cache.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace vxfed::control {

namespace dp = ::vxfed::dataplane::v1;

Status save_policy_cache(const std::string& path, const std::map<std::uint32_t, dp::NetworkPolicy>& entries) {
  dp::Tables tables;
  for (const auto& [vni, entry] : entries) *tables.add_policies() = entry;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out || !tables.SerializeToOstream(&out) || !out.flush())
      return make_error("cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return make_error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  return {};
}

Result<std::vector<dp::NetworkPolicy>> load_policy_cache(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return std::vector<dp::NetworkPolicy>{};
    return make_error("cannot read " + path + ": " + std::strerror(errno));
  }
  std::stringstream text;
  text << in.rdbuf();
  dp::Tables tables;
  if (!tables.ParseFromString(text.str()))
    return make_error(path + ": not a policy cache (does not parse as dataplane.proto Tables)");
  if (tables.networks_size() || tables.endpoints_size() || tables.routes_size() || tables.services_size())
    return make_error(path + ": not a policy cache (it holds other tables than policies)");
  return std::vector<dp::NetworkPolicy>(tables.policies().begin(), tables.policies().end());
}

}  // namespace vxfed::control
