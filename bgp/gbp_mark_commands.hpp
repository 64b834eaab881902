// The GBP mark changed on a running bgpd without a frr-reload (docs/bgp.md, "The GBP mark").
//
// Why: a frr-reload of the mark took about 1 s (its own start, FRR's running config read and
// diffed), and bgpd then sent the changed route-map's routes only when its route-map delay
// timer fired (5 s by default): a node's isolated pods refused selector-allowed flows from the
// other nodes for 4-7 s after its roll (docs/policy.md, "Mixed releases"). Lowering the timer
// for every change cost an FRR restart's routes (reverted, b81b353). Instead, the one line that
// changes is set in bgpd over its vty socket, and the routes are sent again at once with a soft
// clear out (no route refresh asked of the peers, no session reset); the delay timer's own run
// later finds nothing to send. frr.conf is written with the mark as well, so a restarted FRR
// loads it.
//
// Only bgpd holds the line: `set large-community` is a bgpd command (zebra's copy of the
// route-map has no such line), so no other daemon needs it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bgp/config.hpp"

namespace vxfed::bgp {

// Commands for bgpd's vty socket (vty_client.hpp), in one session: the outbound route-map's
// entry gets the mark (`set large-community`) or loses it, then every peer of the instance
// bgpd runs now (`config.bmp_in_default_instance` says which) is sent our routes again. `enable`
// first: a vty socket starts in the view node.
std::vector<std::string> gbp_mark_commands(const BgpConfig& config, bool mark);

// The last of them: every peer of the instance bgpd runs is sent our routes again, without
// asking for theirs (`clear bgp [view NAME] ipv4 unicast * soft out`; an enable-node command).
std::string send_routes_again_command(const BgpConfig& config);

// For vxfedd's start when the mark is wanted before its first apply (the forwarder answered
// first, as when a node's forwarder is rolled before its vxfedd): that apply is a frr-reload of
// a second or more, and until the mark is out the other nodes send this node no identities.
// Given the running bgpd's `show running-config`: the commands that set the mark in place and
// send our routes again, for the instance it runs; none when it has no `router bgp`, its
// outbound route-map's entry is absent (entering it would create an entry without its
// `match`, which permits everything) or already carries the mark (an FRR that loaded our
// frr.conf itself: nothing to do, nothing sent).
std::vector<std::string> early_gbp_mark_commands(std::string_view running_config);

}  // namespace vxfed::bgp
