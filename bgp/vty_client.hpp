// Asks one FRR daemon for the output of "show" commands over its vty socket
// (`<vty_socket_dir>/<daemon>.vty`), the Unix socket vtysh itself talks to.
//
// Why not vtysh: every vtysh start parses FRR's whole command tree before it sends a byte,
// ~90 ms of CPU on the 2-core machines we build on (`time vtysh -c 'show bgp neighbors json'`:
// 49 ms user + 44 ms sys). vxfedd polls its peers' state every frr.status_interval_ms; at the
// demo's 500 ms and four nodes that was ~0.7 of a core, taken from the pods and the
// forwarders, and the pods' p99 latency showed it (docs/bgp.md, "Peer status").
//
// The protocol (FRR 8.4 daemons serve it to vtysh on that socket): the client writes a
// command line ended by one NUL byte; the daemon runs it in VIEW_NODE (enough for every
// "show") and answers with its output followed by four bytes: three NULs and the command's
// return code (0: CMD_SUCCESS). Output is text or JSON and carries no NUL bytes of its own.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace vxfed::bgp {

struct VtyReply {
  std::string output;  // every command's output, in order, as vtysh would print them
  int failed = 0;      // commands whose return code was not CMD_SUCCESS (their text is kept)
};

// Runs `commands` one after another on the daemon at `socket_path`. Fails when the socket
// cannot be reached, the daemon closes it early, or `timeout` (for the whole exchange) runs
// out; a command the daemon refuses is counted in `failed`, not an error.
Result<VtyReply> run_vty_commands(const std::string& socket_path, const std::vector<std::string>& commands,
                                  std::chrono::milliseconds timeout);

// Where FRR's daemons keep their vty sockets and pid files: frr.vty_socket_dir, or FRR's
// default /var/run/frr when that is empty.
std::string frr_run_dir(const std::string& vty_socket_dir);

// Where daemon `name` ("bgpd", "zebra") listens: `<frr_run_dir>/<name>.vty`.
std::string vty_socket_path(const std::string& vty_socket_dir, const std::string& daemon);

}  // namespace vxfed::bgp
