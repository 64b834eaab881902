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
  // FRR's "Active (NSF passive)" (bgpStateIs "passiveNSF"): the session went down, its routes are
  // kept stale as graceful-restart helper, and bgpd waits for the restarting peer to dial: it
  // never dials itself until the restart timer expires and the routes are gone.
  bool nsf_passive = false;
  std::uint64_t max_prefix_teardowns = 0;  // times seen going into that state (carry_peer_counters)
};

// The show commands, run in this order on bgpd (vty_client.hpp), whose outputs
// parse_peer_status() reads.
std::vector<std::string> peer_status_commands(const BgpConfig& config);

// `output`: the concatenated JSON documents of those commands. Every configured peer gets an
// entry; peers FRR does not report keep state "Unknown".
std::vector<PeerStatus> parse_peer_status(const BgpConfig& config, const std::string& output);

// A route reflector takes its nodes on a `bgp listen range` and never dials them, and a node
// whose reflector went down waits passively as its graceful-restart helper (nsf_passive): after
// a reflector restart nobody dials, until the node's restart timer drops the stale routes (104 s
// in issue 37's bed). The commands that make this node's bgpd dial every reflector peer in that
// state, keeping the stale routes (`clear bgp X` on a peer that is not established only restarts
// its connection attempt); empty when there is none. `clear` is an enable-node command.
std::vector<std::string> redial_commands(const BgpConfig& config, const std::vector<PeerStatus>& status);

// What asks every peer of a bgpd for its routes again and sends ours again (a soft clear, after
// a bare bgpd got its config: docs/bgp.md, "Applying"). `enable` first, as above.
std::vector<std::string> soft_clear_commands(const BgpConfig& config);

// FRR counts no max-prefix teardowns: each poll that finds a peer held down for max-prefix
// when the previous one did not adds one to the count `before` had. A teardown lasts at least
// max_prefix_restart minutes (1..), polls come every few seconds: none is missed.
void carry_peer_counters(const std::vector<PeerStatus>& before, std::vector<PeerStatus>& now);

}  // namespace vxfed::bgp
