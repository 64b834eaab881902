#include "control/node/tables_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/read_file.hpp"

namespace vxfed::control {

namespace dp = ::vxfed::dataplane::v1;

Status write_tables_file(const std::string& path, const dp::Tables& tables) {
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

Result<dp::Tables> read_tables_file(const std::string& path, const std::string& what,
                                    void (*clear_own_field)(dp::Tables&)) {
  auto text = read_file(path);
  if (!text) {
    if (text.error().absent()) return dp::Tables{};
    return make_error(text.error().message());
  }
  dp::Tables tables;
  if (!tables.ParseFromString(*text))
    return make_error(path + ": not a " + what + " (does not parse as dataplane.proto Tables)");
  dp::Tables others = tables;
  clear_own_field(others);
  if (others.ByteSizeLong() != 0) return make_error(path + ": not a " + what + " (it holds other tables too)");
  return tables;
}

}  // namespace vxfed::control
