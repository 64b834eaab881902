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

#include <chrono>
#include <functional>
#include <optional>
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

// A new bgpd loading its own frr.conf. frr-node.sh (the FRR container's entrypoint) loads
// frr.conf into the daemons it starts, with vtysh -b, and says where it is in
// `<run dir>/frr-node.load`: "loading" from before the daemons start, then "loaded <bgpd's
// pid>" once its load is over (done or failed). (It wrote "stopped" when exiting for a while;
// that is still read as "loading", but the script no longer writes it: while it waits for its
// daemons at a stop, vxfedd's start would sit out the whole bound.) An frr-reload against a bgpd still in that
// load races it: vxfedd started together with a new FRR (every container of a node replaced
// at once, as a DaemonSet update does) took the node's block off its reflector for 3-6 s
// (docs/testing.md, test_deploy_podman_cluster). So an apply to a bgpd it has not applied to
// yet waits for that load first (Adapter).
inline constexpr const char* kFrrNodeLoadFile = "frr-node.load";

enum class BgpdLoad {
  kNotManaged,  // no marker: FRR not started by frr-node.sh (a host's FRR, tests): nothing to wait for
  kLoading,     // frr-node.sh has not finished loading frr.conf into this bgpd
  kLoaded,      // it has (or there is no bgpd pid to tell)
};

// Pure: `marker` is the file's content (nullopt: no file), `bgpd_pid` bgpd.pid's ("" none),
// `alive` whether a pid names a running process. "loaded P" speaks for a running bgpd P only:
// with another pid in bgpd.pid the new bgpd's frr-node.sh has not written yet, and with P
// gone (a roll: the old FRR's daemons SIGKILLed, the new FRR not started yet) an apply would
// meet the next bgpd mid-load (seen: the roll lost 5.9 s so). Then, like "stopped" and an
// empty marker (one being written), the state is kLoading.
BgpdLoad bgpd_load_state(const std::optional<std::string>& marker, const std::string& bgpd_pid,
                         const std::function<bool(const std::string& pid)>& alive);

struct BgpdLoadWait {
  BgpdLoad state = BgpdLoad::kNotManaged;  // the last one seen: kLoading after max_wait ran out
  std::string bgpd_pid;                    // bgpd.pid's content when it was seen
  double waited_s = 0;
};

// Reads `<run_dir>/frr-node.load` and `<run_dir>/bgpd.pid` every `poll` until the state is
// not kLoading, at most `max_wait`. No logging: the caller says what it waited for.
BgpdLoadWait wait_for_bgpd_load(const std::string& run_dir, std::chrono::milliseconds max_wait,
                                std::chrono::milliseconds poll = std::chrono::milliseconds(50));

// vtysh argv prefix for these settings ("vtysh [--vty_socket DIR] [--config_dir DIR]").
std::vector<std::string> vtysh_command(const FrrSettings& settings);

}  // namespace vxfed::bgp
