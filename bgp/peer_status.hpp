// Peer status from FRR's JSON (`show bgp neighbors json`, `show route-map json` and, per peer,
// `show bgp ipv4 unicast neighbors X prefix-counts json`). Parsing is pure; polling lives in
// the adapter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bgp/config.hpp"

namespace vxfed::bgp {

struct PeerStatus {  // maps 1:1 onto control.proto PeerInfo
  std::string address;
  std::uint32_t remote_asn = 0;
  std::string cluster;             // a reflector's: this node's own (BgpConfig::local_cluster)
  bool ibgp = false;                // a reflector of this node's cluster (remote_asn == asn)
  std::string state = "Unknown";  // FRR's bgpState; "Unknown" if FRR did not answer
  std::uint64_t uptime_s = 0;
  std::uint32_t prefixes_received = 0;    // = accepted: FRR 8.4 counts pre-policy only with
                                          // soft-reconfiguration inbound (not used, docs/bgp.md)
  std::uint32_t prefixes_accepted = 0;    // after inbound policy
  std::uint32_t prefixes_advertised = 0;
  std::uint32_t prefixes_stale = 0;       // kept by graceful restart while the peer restarts
  std::uint32_t connections_dropped = 0;
  std::uint64_t established_epoch = 0;    // when the session came up (unix s); 0: not up
  bool end_of_rib_received = false;       // this session's End-of-RIB (IPv4 unicast) is in
  // Routes of the peer FRR's inbound policy (route-map vxfed-in-<peer>: outside the accept list)
  // refused, counted at each evaluation (a route refresh evaluates them again); FRR's count,
  // since bgpd started or the route-map was made. FRR 8.4 keeps no per-peer count of them
  // without soft-reconfiguration inbound, which vxfed does not use (docs/bgp.md).
  std::uint64_t prefixes_denied = 0;
  bool max_prefix_overflow = false;        // FRR holds the session down: it went over max_prefix
  std::uint64_t max_prefix_teardowns = 0;  // times seen going into that state (carry_peer_counters)
};

// The show commands, run in this order on bgpd (vty_client.hpp), whose outputs
// parse_peer_status() reads.
std::vector<std::string> peer_status_commands(const BgpConfig& config);

// `output`: the concatenated JSON documents of those commands. Every configured peer gets an
// entry; peers FRR does not report keep state "Unknown".
std::vector<PeerStatus> parse_peer_status(const BgpConfig& config, const std::string& output);

// FRR counts no max-prefix teardowns: each poll that finds a peer held down for max-prefix
// when the previous one did not adds one to the count `before` had. A teardown lasts at least
// max_prefix_restart minutes (1..), polls come every few seconds: none is missed.
void carry_peer_counters(const std::vector<PeerStatus>& before, std::vector<PeerStatus>& now);

}  // namespace vxfed::bgp
