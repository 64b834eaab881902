// A dry-run reading of the EAL arguments (everything before `--`), for `vxfed-dataplane
// --check`: what rte_eal_init would refuse that can be known without initialising EAL (an
// unknown option, a missing or malformed value, the lcore count), and what the forwarder
// itself would refuse of them (too few lcores for --queues, an af_packet uplink whose qpairs
// differs from --queues, an uplink no EAL option creates). Pure: reads nothing of the machine,
// so a manifest written for a 64-core node checks on a 2-core laptop.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "dataplane/runtime/options.hpp"

namespace vxfed::dataplane {

struct EalDevice {
  std::string name;                           // "net_af_packet0", "0000:03:00.0"
  std::map<std::string, std::string> kvargs;  // "iface" -> "eth1", ...
};

struct EalSummary {
  std::optional<unsigned> lcores;    // distinct lcores of -l/--lcores/-c; none: EAL takes every CPU
  std::vector<EalDevice> vdevs;      // --vdev
  std::vector<EalDevice> allowed;    // -a/--allow
  bool no_huge = false, in_memory = false, no_pci = false;
  std::string file_prefix;
};

// Parses argv[1..] up to (not including) `--`. Errors name the option.
Result<EalSummary> parse_eal_args(const std::vector<std::string>& args);

// The forwarder's own requirements on the EAL arguments (Dataplane::create and Ports refuse
// the same at start).
Status check_eal_for_options(const EalSummary& eal, const Options& options);

// Counts the lcores of an -l CORELIST ("0-3,5") or --lcores COREMAP ("0@0,1@1", "(0-2)@(0,1)").
Result<unsigned> count_corelist(const std::string& list);
Result<unsigned> count_lcore_map(const std::string& map);

}  // namespace vxfed::dataplane
