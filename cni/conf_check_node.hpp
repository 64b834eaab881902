// `vxfed --check`'s question to this node's vxfedd: are the addresses a vxfed config names
// itself (host-local's own ranges, static's addresses) inside this node's block? Only vxfedd
// knows the block (GetNetwork's node_block), so a config whose ranges fit one node passes the
// pure check (cni/conf_check.hpp) and then fails every ADD on the others with code 7. When
// vxfedd cannot be asked (not running yet, as in the DaemonSet's init container), the check
// says so instead of calling the config valid for this node.
#pragma once

#include <string>

#include "cni/errors.hpp"
#include "cni/netconf.hpp"

namespace vxfed::cni {

struct NodeCheck {
  bool checked = false;  // false: could not ask (`line` says why); not a refusal
  std::string line;      // what was checked, or why it could not be
};

// Code 7 when an address source is outside the block (naming the field, the range and the
// block); otherwise what was done. Nothing to ask when the config names no addresses of its own.
Expected<NodeCheck> check_against_node(const NetConf& conf, const std::string& where);

}  // namespace vxfed::cni
