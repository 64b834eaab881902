// A feed that FRR's daemons connect *out* to (zebra's FPM, bgpd's BMP) goes to whoever holds
// the port first: an unprivileged process that binds it before vxfedd (or while vxfedd
// restarts) receives the node's whole route table while the node learns nothing. So such a
// listener must sit on a port no unprivileged process may bind: below the network namespace's
// net.ipv4.ip_unprivileged_port_start (1024 unless an operator lowered it). docs/security.md.
#pragma once

#include <string>

#include "common/result.hpp"

namespace vxfed::bgp {

// The sysctl's value in this thread's network namespace (`text`: its file's content, for tests).
Result<unsigned> unprivileged_port_start();
Result<unsigned> parse_unprivileged_port_start(const std::string& text);

// OK when `port` is below `unprivileged_start`; else an error naming `field` and what to do.
Status require_privileged_port(const std::string& field, unsigned port, unsigned unprivileged_start);

}  // namespace vxfed::bgp
