// Runs a helper program (vtysh, frr-reload.py) and collects its output: the adapter's only way
// of talking to FRR's configuration. Blocking, with a timeout; never through a shell.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace vxfed::bgp {

struct CommandResult {
  int exit_code = -1;   // -1: killed (timeout) or did not start
  std::string output;   // stdout and stderr interleaved
  double seconds = 0;
};

// Runs argv[0] (absolute path or found in PATH) with the rest as arguments. Fails only when
// the program cannot be started; a non-zero exit is reported in exit_code.
Result<CommandResult> run_command(const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout);

}  // namespace vxfed::bgp
