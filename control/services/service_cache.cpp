#include "control/services/service_cache.hpp"

#include "control/node/tables_file.hpp"

namespace vxfed::control {

namespace dp = ::vxfed::dataplane::v1;

Status save_service_cache(const std::string& path, const std::map<std::string, dp::Service>& entries) {
  dp::Tables tables;
  for (const auto& [key, entry] : entries) *tables.add_services() = entry;
  return write_tables_file(path, tables);
}

Result<std::vector<dp::Service>> load_service_cache(const std::string& path) {
  auto tables = read_tables_file(path, "service cache", [](dp::Tables& t) { t.clear_services(); });
  if (!tables) return make_error(tables.error());
  return std::vector<dp::Service>(tables->services().begin(), tables->services().end());
}

}  // namespace vxfed::control
