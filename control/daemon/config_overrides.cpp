#include "control/daemon/config_overrides.hpp"

#include <yaml-cpp/yaml.h>

#include "common/read_file.hpp"

namespace vxfed::control {

Result<Config> load_config(const std::string& path, const NodeOverrides& overrides) {
  auto text = read_file(path);
  if (!text) return make_error(path + ": cannot open the config file (" + text.error().reason + ")");
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::ParserException& e) {
    return make_error(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": YAML syntax error: " + e.msg);
  }
  if (!root.IsMap()) return parse_config(*text, path);  // its own error for a non-mapping
  if (!root["node"] || root["node"].IsNull()) root["node"] = YAML::Node(YAML::NodeType::Map);
  if (!root["node"].IsMap()) return parse_config(*text, path);
  if (overrides.name) root["node"]["name"] = *overrides.name;
  if (overrides.vtep_ip) root["node"]["vtep_ip"] = *overrides.vtep_ip;
  YAML::Node bgp = root["bgp"];
  const YAML::Node vtep = root["node"]["vtep_ip"];
  const bool default_router_id = bgp.IsMap() && !bgp["router_id"] && vtep && vtep.IsScalar();
  if (default_router_id) bgp["router_id"] = vtep.Scalar();
  // The file as written when nothing was added (errors then point at its own lines).
  if (!overrides.name && !overrides.vtep_ip && !default_router_id) return parse_config(*text, path);
  YAML::Emitter out;
  out << root;
  return parse_config(out.c_str(), path);
}

}  // namespace vxfed::control
