// vxfedd's node identity from the command line: a DaemonSet gives every node the same config
// file (a ConfigMap) and the node's name and address through the pod's environment
// (`--node-name $(NODE_NAME) --vtep-ip $(NODE_IP)`), so node.name and node.vtep_ip may be left
// out of the file when they are given here; given in both places, the command line wins.
// For the same reason bgp.router_id, when left out, is the node's VTEP address (a node's one
// underlay address, unique in the federation).
#pragma once

#include <optional>
#include <string>

#include "common/result.hpp"
#include "control/daemon/daemon_config.hpp"

namespace vxfed::control {

struct NodeOverrides {
  std::optional<std::string> name;
  std::optional<std::string> vtep_ip;
};

// load_config with the overrides put into the `node:` section (and the router id defaulted)
// before it is validated, so the errors are the config's own (a bad --vtep-ip reads as
// node.vtep_ip's error). vxfedd reads its config only through this.
Result<Config> load_config(const std::string& path, const NodeOverrides& overrides);

}  // namespace vxfed::control
