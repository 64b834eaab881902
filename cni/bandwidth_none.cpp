// Built when bpf/ is not available: limits are validated (netconf.cpp) but not enforced.
#include <spdlog/spdlog.h>

#include "bandwidth_hook.hpp"

namespace vxfed::cni {

bool bandwidth_enforced() { return false; }

Done bandwidth_validate(const NetConf&) { return done(); }

Done bandwidth_attach(const NetConf& conf, const std::string&, const std::string&, const std::string&) {
  if (conf.bandwidth)
    spdlog::warn("bandwidth limits requested but this vxfed build has no eBPF support; not enforced");
  return done();
}

Done bandwidth_detach(const std::string&, const std::string&) { return done(); }

Done bandwidth_check(const NetConf&, const std::string&, const std::string&, const std::string&) { return done(); }

}  // namespace vxfed::cni
