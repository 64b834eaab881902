#include "cni/offloads.hpp"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

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

// Feature names (ETH_SS_FEATURES) whose prefix matches are turned off: every TX checksum and
// every segmentation offload (the kernel keeps adding TSO variants, e.g. tx-tcp-accecn-*).
bool offload_feature(const std::string& name) {
  for (const char* prefix : {"tx-checksum", "tx-tcp", "tx-generic-segmentation", "tx-udp-segmentation",
                             "tx-sctp-segmentation", "tx-gso-partial", "tx-gso-list"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

vxfed::Status disable_offloads(int netns_fd, const std::string& ifname) {
  auto fd = socket_in(netns_fd);
  if (!fd) return make_error(fd.error());
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{*fd};
  auto ioctl_on = [&](void* data) -> int {
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    ifr.ifr_data = static_cast<char*>(data);
    return ::ioctl(*fd, SIOCETHTOOL, &ifr) == 0 ? 0 : -errno;
  };
  // How many feature names there are, then the names, then one SFEATURES clearing ours.
  std::vector<std::uint8_t> info_buf(sizeof(ethtool_sset_info) + sizeof(std::uint32_t));
  auto* info = reinterpret_cast<ethtool_sset_info*>(info_buf.data());
  info->cmd = ETHTOOL_GSSET_INFO;
  info->sset_mask = 1ull << ETH_SS_FEATURES;
  if (int rc = ioctl_on(info); rc != 0)
    return make_error("cannot list the features of " + ifname + ": " + std::strerror(-rc));
  const std::uint32_t count = info->sset_mask ? info->data[0] : 0;
  std::vector<std::uint8_t> names_buf(sizeof(ethtool_gstrings) + count * ETH_GSTRING_LEN);
  auto* names = reinterpret_cast<ethtool_gstrings*>(names_buf.data());
  names->cmd = ETHTOOL_GSTRINGS;
  names->string_set = ETH_SS_FEATURES;
  names->len = count;
  if (int rc = ioctl_on(names); rc != 0)
    return make_error("cannot read the feature names of " + ifname + ": " + std::strerror(-rc));
  const std::uint32_t blocks = (count + 31) / 32;
  std::vector<std::uint8_t> set_buf(sizeof(ethtool_sfeatures) + blocks * sizeof(ethtool_set_features_block));
  auto* set = reinterpret_cast<ethtool_sfeatures*>(set_buf.data());
  set->cmd = ETHTOOL_SFEATURES;
  set->size = blocks;
  for (std::uint32_t i = 0; i < count; ++i) {
    const char* raw = reinterpret_cast<const char*>(names->data + i * ETH_GSTRING_LEN);
    const std::string name(raw, strnlen(raw, ETH_GSTRING_LEN));
    if (offload_feature(name)) set->features[i / 32].valid |= 1u << (i % 32);  // requested bit stays 0: off
  }
  if (int rc = ioctl_on(set); rc < 0)
    return make_error("cannot turn off TX checksum/segmentation offloads on " + ifname + ": " + std::strerror(-rc));
  return {};
}

namespace {
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
