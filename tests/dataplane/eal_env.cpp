#include "tests/dataplane/eal_env.hpp"

#include <rte_eal.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace vxfed::test {

bool eal_ready() {
  static const bool ready = [] {
    const std::string prefix = "vxfedtest" + std::to_string(getpid());
    std::vector<std::string> args = {"vxfed-test", "-l", "0", "--no-huge", "-m", "512",
                                     "--no-pci", "--no-shconf", "--no-telemetry",
                                     "--file-prefix", prefix, "--log-level=error"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    const int rc = rte_eal_init(static_cast<int>(argv.size()), argv.data());
    if (rc < 0) std::fprintf(stderr, "rte_eal_init failed (%d)\n", rc);
    return rc >= 0;
  }();
  return ready;
}

}  // namespace vxfed::test
