#include "control/node/policy_cache.hpp"

#include "control/node/tables_file.hpp"

namespace vxfed::control {

namespace dp = ::vxfed::dataplane::v1;

Status save_policy_cache(const std::string& path, const std::map<std::uint32_t, dp::NetworkPolicy>& entries) {
  dp::Tables tables;
  for (const auto& [key, entry] : entries) *tables.add_policies() = entry;
  return write_tables_file(path, tables);
}

Result<std::vector<dp::NetworkPolicy>> load_policy_cache(const std::string& path) {
  auto tables = read_tables_file(path, "policy cache", [](dp::Tables& t) { t.clear_policies(); });
  if (!tables) return make_error(tables.error());
  return std::vector<dp::NetworkPolicy>(tables->policies().begin(), tables->policies().end());
}

}  // namespace vxfed::control
