#include "dataplane/runtime/vxlan_port_claim.hpp"

#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vxfed::dataplane {

VxlanPortClaim::VxlanPortClaim(net::Ipv4Addr vtep, std::uint16_t port) : vtep_(vtep), port_(port) {
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) {
    error_ = errno;
    return;
  }
  // "return 0": every datagram dropped before it is queued (nothing read, nothing held).
  sock_filter drop_all[] = {{BPF_RET | BPF_K, 0, 0, 0}};
  sock_fprog prog{1, drop_all};
  const int one = 1;
  if (::setsockopt(fd_, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) != 0 ||
      ::setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
    error_ = errno;
    ::close(fd_);
    fd_ = -1;
    return;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port_);
  a.sin_addr.s_addr = vtep_.to_network();
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) == 0) {
    state_ = State::claimed;
    return;
  }
  error_ = errno;
  state_ = errno == EADDRNOTAVAIL ? State::not_local : errno == EADDRINUSE ? State::taken : State::failed;
  ::close(fd_);
  fd_ = -1;
}

VxlanPortClaim::~VxlanPortClaim() {
  if (fd_ >= 0) ::close(fd_);
}

const char* VxlanPortClaim::name(State s) {
  switch (s) {
    case State::claimed: return "claimed";
    case State::not_local: return "not_local";
    case State::taken: return "taken";
    case State::failed: return "failed";
  }
  return "failed";
}

std::string VxlanPortClaim::describe() const {
  const std::string where = vtep_.str() + ":" + std::to_string(port_);
  switch (state_) {
    case State::claimed:
      return "UDP " + where + " claimed: the node's kernel drops the VXLAN datagrams it also sees, without "
             "ICMP port unreachable";
    case State::not_local:
      return "UDP " + where + ": the VTEP is not an address of this network namespace; the kernel does not "
             "take the VXLAN traffic, nothing to claim";
    case State::taken:
      return "UDP " + where + " is held by another socket of this network namespace (a kernel VXLAN device, or "
             "a process that took the port): without the uplink's tc drop it would read the VXLAN traffic this "
             "dataplane forwards; the claim is tried again every 0.5 s (`ss -ulpn sport = :" + std::to_string(port_) +
             "` names the holder)";
    case State::failed:
      break;
  }
  return "UDP " + where + " could not be claimed: " + std::strerror(error_) +
         "; the node's kernel may answer VXLAN datagrams with ICMP port unreachable";
}

}  // namespace vxfed::dataplane
