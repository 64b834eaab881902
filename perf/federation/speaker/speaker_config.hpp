// The speaker's configuration: its sessions, each with the routes it announces once
// Established. JSON, written by the harness (harness/vxfed_harness/native_speaker.py):
//   {"sessions": [{"peer": "198.18.0.10", "local": "198.18.0.12", "local_as": 65001,
//                  "peer_as": 65001, "hold": 30, "connect_retry": 1,
//                  "routes": [["10.64.0.64/26", "198.18.1.1"], ...]}]}
// Every field is checked before anything starts; an error names the session and the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"
#include "common/result.hpp"
#include "perf/federation/speaker/bgp_wire.hpp"

namespace vxfed::perf::speaker {

struct SessionConfig {
  net::Ipv4Addr peer;
  net::Ipv4Addr local;  // bound before connecting; also the BGP identifier
  std::uint32_t local_as = 0;
  std::uint32_t peer_as = 0;
  std::uint16_t hold_s = 30;
  std::uint32_t connect_retry_s = 1;
  std::vector<Route> routes;

  bool ibgp() const { return local_as == peer_as; }
  std::string name() const;  // "198.18.0.12 -> 198.18.0.10"
};

Result<std::vector<SessionConfig>> parse_config(const std::string& json_text);

}  // namespace vxfed::perf::speaker
