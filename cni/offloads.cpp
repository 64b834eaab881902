#include "cni/offloads.hpp"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/netns.hpp"

namespace vxfed::cni {

using vxfed::make_error;

namespace {

// A datagram socket in `netns_fd`: SIOCETHTOOL acts on the namespace the socket lives in.
vxfed::Result<int> socket_in(int netns_fd) {
  int fd = -1;
  const Status st = run_in_netns(netns_fd, "the pod's network namespace", [&]() -> Status {
    fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return make_error(std::string("socket: ") + std::strerror(errno));
    return {};
  });
  if (!st) return make_error(st.error());
  return fd;
}

int ethtool_ioctl(int fd, const std::string& ifname, std::uint32_t cmd, std::uint32_t& data) {
  struct ethtool_value v{};
  v.cmd = cmd;
  v.data = data;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = reinterpret_cast<char*>(&v);
  if (::ioctl(fd, SIOCETHTOOL, &ifr) != 0) return -errno;
  data = v.data;
  return 0;
}

}  // namespace

vxfed::Result<OffloadState> read_offloads(int netns_fd, const std::string& ifname) {
  auto fd = socket_in(netns_fd);
  if (!fd) return make_error(fd.error());
  OffloadState st;
  std::uint32_t v = 0;
  int rc = ethtool_ioctl(*fd, ifname, ETHTOOL_GTXCSUM, v);
  st.tx_checksum = v != 0;
  if (rc == 0) rc = ethtool_ioctl(*fd, ifname, ETHTOOL_GTSO, v = 0), st.tso = v != 0;
  if (rc == 0) rc = ethtool_ioctl(*fd, ifname, ETHTOOL_GGSO, v = 0), st.gso = v != 0;
  ::close(*fd);
  if (rc != 0) return make_error("cannot read offloads of " + ifname + ": " + std::strerror(-rc));
  return st;
}

}  // namespace vxfed::cni
