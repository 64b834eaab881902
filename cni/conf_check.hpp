// `vxfed --check FILE`: a network configuration file read as a runtime would hand it to the
// plugin, for manifests and install steps. A conflist ({"cniVersion", "name", "plugins"})
// gives each plugin the list's name and cniVersion, as libcni does; every vxfed plugin in it
// (or a lone vxfed config) must pass parse_netconf, every other plugin must name a type, and
// the reference `bandwidth` plugin is refused (it would do nothing: vxfed-dataplane reads and
// writes the host veth beneath its qdiscs; vxfed's own bandwidth capability replaces it). Pure:
// what only this node's vxfedd knows (its block) is checked by cni/conf_check_node.hpp.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cni/errors.hpp"
#include "cni/netconf.hpp"

namespace vxfed::cni {

struct CheckedFile {
  // "conflist fed-a (1.0.0): vxfed network fed-a, host-local IPAM; tuning; portmap"
  std::string summary;
  // Valid, but likely to fail with some runtimes: each a sentence that says what to change.
  std::vector<std::string> warnings;
  // Each vxfed plugin as ADD sees it, with where it is ("plugins[0]", "the configuration").
  std::vector<std::pair<std::string, NetConf>> vxfed;
};

// The first problem, naming the plugin, or what was read.
Expected<CheckedFile> check_network_file(const std::string& text);

// The warning for cniVersion 1.1.0 (runtimes on libcni before 1.2 cannot read its results).
std::string cni_version_1_1_warning(const std::string& where);

}  // namespace vxfed::cni
