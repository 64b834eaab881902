#include "dataplane/runtime/uplink_sockets.hpp"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dataplane/runtime/packet_socket.hpp"

namespace vxfed::dataplane {

Result<std::unique_ptr<UplinkSockets>> UplinkSockets::create(const std::string& iface, unsigned workers,
                                                             unsigned rcvbuf_bytes, bool qdisc_bypass) {
  if (iface.empty() || iface.size() >= IF_NAMESIZE)
    return make_error("--uplink-iface '" + iface + "' is not a valid Linux interface name");
  std::unique_ptr<UplinkSockets> u(new UplinkSockets());
  u->ifindex_ = ::if_nametoindex(iface.c_str());
  if (u->ifindex_ == 0)
    return make_error("--uplink-iface " + iface + ": no such interface in the dataplane's network namespace");
  {
    const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, iface.c_str(), IFNAMSIZ - 1);
    const bool mac_ok = s >= 0 && ::ioctl(s, SIOCGIFHWADDR, &ifr) == 0;
    if (mac_ok) std::memcpy(u->mac_.data(), ifr.ifr_hwaddr.sa_data, 6);
    if (s >= 0 && ::ioctl(s, SIOCGIFMTU, &ifr) == 0) u->mtu_ = static_cast<unsigned>(ifr.ifr_mtu);
    if (s >= 0) ::close(s);
    if (!mac_ok) return make_error("--uplink-iface " + iface + ": cannot read its MAC address: " + std::strerror(errno));
  }
  PacketSocketConfig c;
  c.ifindex = u->ifindex_;
  c.rcvbuf_bytes = rcvbuf_bytes;
  c.qdisc_bypass = qdisc_bypass;
  c.what = "the uplink";
  // Another group than the pod sockets' (pod_sockets.cpp): ids differ per process.
  c.fanout_group = workers > 1 ? static_cast<int>((::getpid() + 0x8000) & 0xffff) : -1;
  for (unsigned w = 0; w < workers; ++w) {
    auto fd = open_packet_socket(c);
    if (!fd) return make_error(fd.error());
    u->fds_.push_back(*fd);
  }
  return u;
}

UplinkSockets::~UplinkSockets() {
  for (int fd : fds_) ::close(fd);
}

std::uint64_t UplinkSockets::take_drops(unsigned worker) const {
  return worker < fds_.size() ? take_socket_drops(fds_[worker]) : 0;
}

}  // namespace vxfed::dataplane
