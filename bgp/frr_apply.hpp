// Applies a rendered frr.conf to a running FRR through FRR's own tools.
//
// - reload (default): the file is written to frr.config_path, then
//   `frr-reload.py --reload` computes the difference against FRR's running config and applies
//   only that. Unchanged neighbours are not touched, so their sessions stay up; applying the
//   same text twice executes nothing.
//   Its exit status alone is not the verdict: when it fails, `frr-reload.py --test` tells
//   whether FRR's running config holds every line of the file (then the apply succeeded).
// - vtysh: `vtysh -f file` (additive: lines that disappeared are not removed).
// - none: the file is only written (an operator or FRR's service loads it).
// The file is written with mode 0640 (it holds peer passwords). Output of the tools is
// returned redacted (no passwords) and frr-reload runs at log level warning so that it does
// not log the commands it executes (which would include passwords) anywhere.
#pragma once

#include <string>

#include "bgp/config.hpp"
#include "common/result.hpp"

namespace vxfed::bgp {

struct ApplyReport {
  double seconds = 0;
  std::string output;  // redacted
  // frr-reload exited non-zero, yet FRR's running config holds every line of the file: only
  // lines already in force were refused (its second pass, frr_apply.cpp).
  bool lines_refused_but_in_force = false;
};

// Writes `text` to settings.config_path atomically (temporary file + rename).
Status write_config_file(const std::string& path, const std::string& text);

Result<ApplyReport> apply_frr_config(const FrrSettings& settings, const std::string& text);

// vtysh argv prefix for these settings ("vtysh [--vty_socket DIR] [--config_dir DIR]").
std::vector<std::string> vtysh_command(const FrrSettings& settings);

}  // namespace vxfed::bgp
