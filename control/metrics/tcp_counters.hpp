// The kernel's TCP extension counters of vxfedd's network namespace (/proc/net/netstat,
// "TcpExt:" header and value lines), for the ones an operator needs from vxfedd's metrics:
// TCP MD5 segments the kernel rejected (TCPMD5NotFound: an unsigned segment from a peer we
// hold a key for; TCPMD5Unexpected: a signed segment from a peer we hold no key for;
// TCPMD5Failure: a wrong signature).
// On a node these are BGP sessions with a wrong or missing password (docs/bgp.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace vxfed::control {

// Pure: every "TcpExt:" name with its value; a malformed text gives what could be paired.
std::map<std::string, std::uint64_t> parse_tcp_ext(const std::string& netstat_text);

// Reads /proc/net/netstat; empty when it cannot be read.
std::map<std::string, std::uint64_t> read_tcp_ext();

}  // namespace vxfed::control
