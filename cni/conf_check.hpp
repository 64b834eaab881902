// `vxfed --check FILE`: a network configuration file read as a runtime would hand it to the
// plugin, for manifests and install steps. A conflist ({"cniVersion", "name", "plugins"})
// gives each plugin the list's name and cniVersion, as libcni does; every vxfed plugin in it
// (or a lone vxfed config) must pass parse_netconf, every other plugin must name a type, and
// the reference `bandwidth` plugin is refused (it would do nothing: vxfed-dataplane reads and
// writes the host veth beneath its qdiscs; vxfed's own bandwidth capability replaces it). Pure.
#pragma once

#include <string>

#include "cni/errors.hpp"

namespace vxfed::cni {

// The summary line on success ("conflist fed-a (1.0.0): vxfed network fed-a, host-local IPAM;
// tuning; portmap"); the first problem, naming the plugin, otherwise.
Expected<std::string> check_network_file(const std::string& text);

}  // namespace vxfed::cni
