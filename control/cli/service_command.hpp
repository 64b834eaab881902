// vxfedctl service apply | delete | get: global services in the federation store, through
// vxfedd (docs/services.md, "vxfedctl service"). vxfedctl only reads the file and sends its
// text; vxfedd parses and validates it (services/) for this node's cluster.
#pragma once

#include <CLI/CLI.hpp>

#include "control/cli/policy_command.hpp"

namespace vxfed::control {

// The same borrowings from vxfedctl_main.cpp as the policy command's.
using ServiceCommandContext = PolicyCommandContext;

void add_service_command(CLI::App& app, ServiceCommandContext context);

}  // namespace vxfed::control
