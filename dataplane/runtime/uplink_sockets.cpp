#include "dataplane/runtime/uplink_sockets.hpp"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <spdlog/spdlog.h>

#include "dataplane/runtime/packet_socket.hpp"

namespace vxfed::dataplane {

bool kernel_takes_udp_gso(const std::string& release) {
  unsigned major = 0, minor = 0;
  if (std::sscanf(release.c_str(), "%u.%u", &major, &minor) != 2) return false;
  return major > 6 || (major == 6 && minor >= 2);
}

Result<std::unique_ptr<UplinkSockets>> UplinkSockets::create(const std::string& iface, unsigned workers,
                                                             unsigned rcvbuf_bytes, bool udp_gso) {
  if (udp_gso) {
    utsname u{};
    const std::string release = ::uname(&u) == 0 ? u.release : "";
    if (!kernel_takes_udp_gso(release)) {
      spdlog::warn("--uplink-gso: kernel {} cannot take UDP super-packets from a packet socket (needs 6.2+); "
                   "sending frame by frame", release.empty() ? "(unknown)" : release);
      udp_gso = false;
    }
  }
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
  // With UDP super-packets the sockets send through the qdisc layer: the bypass
  // (dev_direct_xmit) drops a packet the interface cannot segment itself (ENOBUFS, measured
  // with a veth's tx-udp-segmentation off), where the qdisc path segments it in software. A
  // 64 KiB message carries up to 45 frames, so the qdisc's cost per packet hardly counts.
  c.qdisc_bypass = !udp_gso;
  c.what = "the uplink";
  // Another group than the pod sockets' (pod_sockets.cpp): ids differ per process.
  c.fanout_group = workers > 1 ? static_cast<int>((::getpid() + 0x8000) & 0xffff) : -1;
  for (unsigned w = 0; w < workers; ++w) {
    auto fd = open_packet_socket(c);
    if (!fd) return make_error(fd.error());
    u->fds_.push_back(*fd);
  }
  u->udp_gso_ = udp_gso;
  return u;
}

UplinkSockets::~UplinkSockets() {
  for (int fd : fds_) ::close(fd);
}

std::uint64_t UplinkSockets::take_drops(unsigned worker) const {
  return worker < fds_.size() ? take_socket_drops(fds_[worker]) : 0;
}

}  // namespace vxfed::dataplane
