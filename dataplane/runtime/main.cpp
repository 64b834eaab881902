// vxfed-dataplane: EAL arguments, then `--`, then our options (options.cpp). A thin shell
// around Dataplane: parse, initialise EAL, run until SIGTERM/SIGINT, print final counters.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <rte_eal.h>
#include <rte_errno.h>
#include <spdlog/spdlog.h>

#include "common/cpu_baseline.h"
#include "dataplane/runtime/dataplane.hpp"
#include "dataplane/runtime/eal_args.hpp"
#include "dataplane/runtime/options.hpp"
#include "dataplane/runtime/tables_json.hpp"

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

// --check: what a start would refuse of the command line, without EAL, ports or sockets.
int check_only(const char* argv0, const std::vector<std::string>& eal_args,
               const vxfed::dataplane::Options& options) {
  using namespace vxfed::dataplane;
  const auto fail = [&](const std::string& why) {
    std::cerr << argv0 << " --check: " << why << "\n";
    return 2;
  };
  auto eal = parse_eal_args(eal_args);
  if (!eal) return fail(eal.error());
  if (auto st = check_eal_for_options(*eal, options); !st) return fail(st.error());
  std::size_t tables = 0;
  if (!options.tables_file.empty()) {
    auto snapshot = snapshot_from_file(options.tables_file);
    if (!snapshot) return fail("--tables-file: " + snapshot.error());
    tables = static_cast<std::size_t>(snapshot->tables().endpoints_size());
  }
  std::cout << argv0 << " --check: valid: uplink "
            << (options.uplink_iface.empty() ? options.uplink : "interface " + options.uplink_iface) << ", VTEP " << options.parsed.vtep.str()
            << ", " << options.queues << " worker(s) + the control thread on "
            << (eal->lcores ? std::to_string(*eal->lcores) + " lcores" : std::string("every CPU (no -l/--lcores)"))
            << ", MTU " << options.mtu;
  const auto& u = options.parsed.underlay;
  if (u.routed()) {
    std::cout << ", underlay routed:";
    if (u.subnet()) std::cout << " on-link " << u.subnet()->str();
    if (u.gateway()) std::cout << " gateway " << u.gateway()->str();
    for (const auto& r : u.routes()) std::cout << " " << r.prefix.str() << "=" << (r.via ? r.via->str() : "direct");
  }
  if (!options.tables_file.empty()) std::cout << ", --tables-file with " << tables << " endpoint(s)";
  std::cout << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  vxfed_require_cpu_baseline(argv[0]);  // before anything that may use the baseline's instructions
  using namespace vxfed::dataplane;
  // Our options follow the first `--`; everything before it belongs to EAL.
  int split = argc;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--") == 0) {
      split = i;
      break;
    }
  std::vector<std::string> ours(argv + std::min(split + 1, argc), argv + argc);
  for (int i = 1; i < split; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) ours = {"--help"};
  auto parsed = parse_options(argv[0], ours);
  if (!parsed) {
    std::cerr << "vxfed-dataplane: " << parsed.error() << "\n";
    return 2;
  }
  if (parsed->help) {
    std::cout << parsed->help_text;
    return 0;
  }
  Options& options = parsed->options;
  // An af_packet PMD uplink sits on a kernel interface too: the tc drop serves it.
  if (options.uplink_iface.empty()) {
    if (auto eal = parse_eal_args(std::vector<std::string>(argv + 1, argv + split)))
      for (const auto& vdev : eal->vdevs)
        if (vdev.name == options.uplink && vdev.name.rfind("net_af_packet", 0) == 0)
          if (auto it = vdev.kvargs.find("iface"); it != vdev.kvargs.end()) options.uplink_pmd_iface = it->second;
  }
  if (options.check) return check_only(argv[0], std::vector<std::string>(argv + 1, argv + split), options);
  spdlog::set_level(spdlog::level::from_str(options.log_level));
  spdlog::set_pattern("[%H:%M:%S.%e] [vxfed-dataplane] [%l] %v");

  std::vector<char*> eal_args(argv, argv + split);
  if (rte_eal_init(static_cast<int>(eal_args.size()), eal_args.data()) < 0) {
    std::cerr << "vxfed-dataplane: EAL initialisation failed: " << rte_strerror(rte_errno)
              << " (check the EAL options before `--`)\n";
    return 1;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  int status = 0;
  {
    auto dp = Dataplane::create(options);
    if (!dp) {
      spdlog::error("{}", dp.error());
      rte_eal_cleanup();
      return 1;
    }
    auto st = (*dp)->run(g_stop);
    if (!st) {
      spdlog::error("{}", st.error());
      status = 1;
    }
    std::cout << (*dp)->counters_text() << std::flush;
  }
  rte_eal_cleanup();
  spdlog::info("exit {}", status);
  return status;
}
