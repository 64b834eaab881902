#include "bgp/privileged_port.hpp"

#include <sstream>

#include "common/read_file.hpp"

namespace vxfed::bgp {

Result<unsigned> parse_unprivileged_port_start(const std::string& text) {
  std::istringstream in(text);
  long value = -1;
  if (!(in >> value) || value < 0 || value > 65536)
    return make_error("net.ipv4.ip_unprivileged_port_start: cannot read '" + text + "'");
  return static_cast<unsigned>(value);
}

Result<unsigned> unprivileged_port_start() {
  auto text = read_file("/proc/sys/net/ipv4/ip_unprivileged_port_start");
  if (!text) return make_error(text.error().message());
  return parse_unprivileged_port_start(*text);
}

Status require_privileged_port(const std::string& field, unsigned port, unsigned unprivileged_start) {
  if (port < unprivileged_start) return {};
  return make_error(field + ": port " + std::to_string(port) + " is one any local process may bind " +
                    "(net.ipv4.ip_unprivileged_port_start is " + std::to_string(unprivileged_start) +
                    "): a process that takes it first would receive FRR's route feed instead of vxfedd; use a port "
                    "below " + std::to_string(unprivileged_start) + " (the default is 620; vxfedd then needs "
                    "CAP_NET_BIND_SERVICE, which root has), docs/security.md");
}

}  // namespace vxfed::bgp
