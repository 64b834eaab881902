// Keeps the node's kernel out of the VXLAN traffic the dataplane forwards.
//
// The uplink's frames reach the dataplane through AF_PACKET (or the af_packet PMD) as a copy:
// the original still climbs the node kernel's stack. Where the VTEP address is the node's own
// (the node IP on the uplink, as on every Kubernetes node), each VXLAN datagram was delivered
// to UDP port 4789, found no socket, was counted in UdpNoPorts and answered with ICMP port
// unreachable toward the sending VTEP (rate-limited; measured 2026-12-05: 200 pings across
// gave 200 UdpNoPorts and 9 ICMP errors on the receiving node, the rest rate-limited).
//
// The claim is a UDP socket bound to VTEP:4789 whose socket filter drops every datagram: the
// kernel finds a socket, says nothing on the wire, and counts the datagrams as that socket's
// drops (`/proc/net/udp`, and UdpInErrors). SO_REUSEPORT lets a second dataplane of the same
// node (a make-before-break upgrade) claim it too. The claim also detects a conflict: if
// another socket holds the port without SO_REUSEPORT (a kernel VXLAN device of the node, e.g.
// another CNI's), the kernel would decapsulate our traffic as well, and the dataplane says so.
#pragma once

#include <cstdint>
#include <string>

#include "common/net/ipv4.hpp"

namespace vxfed::dataplane {

class VxlanPortClaim {
 public:
  enum class State {
    claimed,    // our socket holds the port: the kernel drops what reaches it, quietly
    not_local,  // the VTEP is not an address of this network namespace: the kernel never takes it
    taken,      // another socket holds the port (a kernel VXLAN device?): see describe()
    failed,     // the socket could not be made (see describe())
  };

  VxlanPortClaim(net::Ipv4Addr vtep, std::uint16_t port);
  ~VxlanPortClaim();
  VxlanPortClaim(const VxlanPortClaim&) = delete;
  VxlanPortClaim& operator=(const VxlanPortClaim&) = delete;

  State state() const { return state_; }
  static const char* name(State s);
  // One line for the log: what the claim found and what it means.
  std::string describe() const;

 private:
  net::Ipv4Addr vtep_;
  std::uint16_t port_;
  State state_ = State::failed;
  int fd_ = -1;
  int error_ = 0;
};

}  // namespace vxfed::dataplane
