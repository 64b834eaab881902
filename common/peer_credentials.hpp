// Who is on the other end of a local socket, and whether they may talk to us. Every listener
// that can change forwarding (vxfedd's API, the dataplane's table API, the FPM server) admits
// a peer by what the kernel says about it, never by what the peer says about itself:
// SO_PEERCRED for unix sockets, the owner of the peer's socket in /proc/net/tcp for loopback
// TCP (tcp_peer_uid).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace vxfed {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
};

// SO_PEERCRED of a connected unix socket.
Result<PeerCredentials> unix_peer_credentials(int fd);

// "pid 12 uid 0 gid 0", for logs.
std::string describe(const PeerCredentials& peer);

// Local admission rule of the unix-socket APIs: root, our own effective uid, or (when given)
// a member of `group` (primary or supplementary, read from /proc/PID/status).
bool local_peer_allowed(const PeerCredentials& peer, std::optional<gid_t> group = std::nullopt);

// True when process `pid` has `group` among its supplementary groups.
bool in_supplementary_groups(pid_t pid, gid_t group);

// The uid owning the IPv4 TCP socket whose local end is `local_ip:local_port` and remote end
// `remote_ip:remote_port` (host order), looked up in the text of /proc/net/tcp (pure: tests
// feed it text). For a connection we accepted, pass the peer's endpoint as local and ours as
// remote: the row is the peer's own socket, and its uid column is who opened it.
std::optional<uid_t> tcp_socket_uid(std::string_view proc_net_tcp, std::uint32_t local_ip, std::uint16_t local_port,
                                    std::uint32_t remote_ip, std::uint16_t remote_port);

// The same, reading /proc/net/tcp of our network namespace. Only meaningful for loopback
// peers (the peer's socket must be in this namespace's table).
Result<uid_t> tcp_peer_uid(std::uint32_t peer_ip, std::uint16_t peer_port, std::uint32_t our_ip,
                           std::uint16_t our_port);

// The uid of a user name ("frr"); an error naming it when there is no such user.
Result<uid_t> uid_of_user(const std::string& name);

}  // namespace vxfed
