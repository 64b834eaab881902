// A dry-run reading of the EAL arguments (everything before `--`), for `vxfed-dataplane
// --check`: what rte_eal_init would refuse that can be known without initialising EAL (an
// unknown option, a missing or malformed value, the lcore count), and what the forwarder
// itself would refuse of them (too few lcores for --queues, an af_packet uplink whose qpairs
// differs from --queues, an uplink no EAL option creates, an lcore list naming CPUs this
// process may not run on). Pure but for the one default argument that reads this process's CPU
// affinity; without -l/-c/--lcores nothing of the machine matters, so a manifest written for a
// 64-core node (EAL takes the container's cpuset) checks on a 2-core laptop.
#pragma once

#include <map>
#include <optional>
#include <set>
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
  std::set<unsigned> cpus;           // the CPUs those lcores run on (--lcores: after '@')
  std::string lcores_given_by;       // "-l '2,3'": the option and value, for errors
  std::vector<EalDevice> vdevs;      // --vdev
  std::vector<EalDevice> allowed;    // -a/--allow
  bool no_huge = false, in_memory = false, no_pci = false;
  std::string file_prefix;
};

// Parses argv[1..] up to (not including) `--`. Errors name the option.
Result<EalSummary> parse_eal_args(const std::vector<std::string>& args);

// The CPUs this process may run on (sched_getaffinity): a container's cpuset, taskset's mask.
std::set<unsigned> process_cpus();

// The forwarder's own requirements on the EAL arguments (Dataplane::create and Ports refuse
// the same at start), and EAL's on an explicit lcore list: every CPU it names must be in
// `allowed_cpus` (EAL pins each lcore's thread to its CPU and fails to start otherwise).
Status check_eal_for_options(const EalSummary& eal, const Options& options,
                             const std::set<unsigned>& allowed_cpus = process_cpus());

// Counts the lcores of an -l CORELIST ("0-3,5") or --lcores COREMAP ("0@0,1@1", "(0-2)@(0,1)");
// with `cpus`, also collects the CPUs they run on.
Result<unsigned> count_corelist(const std::string& list, std::set<unsigned>* cpus = nullptr);
Result<unsigned> count_lcore_map(const std::string& map, std::set<unsigned>* cpus = nullptr);

}  // namespace vxfed::dataplane
