#include "dataplane/runtime/kernel_vxlan_devices.hpp"

#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/unique_fd.hpp"

namespace vxfed::dataplane {

namespace {

// The attribute of type `type` among those in [at, at + len), or nullptr.
const rtattr* find_attr(const rtattr* at, int len, unsigned short type) {
  for (; RTA_OK(at, len); at = RTA_NEXT(at, len))
    if ((at->rta_type & NLA_TYPE_MASK) == type) return at;
  return nullptr;
}

// True when the link message describes an up VXLAN device whose UDP port is `port`.
bool is_vxlan_on_port(const nlmsghdr* h, std::uint16_t port) {
  const auto* info = static_cast<const ifinfomsg*>(NLMSG_DATA(h));
  if ((info->ifi_flags & IFF_UP) == 0) return false;
  const int len = static_cast<int>(h->nlmsg_len) - static_cast<int>(NLMSG_LENGTH(sizeof(*info)));
  const rtattr* linkinfo = find_attr(IFLA_RTA(info), len, IFLA_LINKINFO);
  if (linkinfo == nullptr) return false;
  const int linkinfo_len = static_cast<int>(RTA_PAYLOAD(linkinfo));
  const rtattr* kind = find_attr(static_cast<const rtattr*>(RTA_DATA(linkinfo)), linkinfo_len, IFLA_INFO_KIND);
  if (kind == nullptr) return false;
  const std::string_view kind_name(static_cast<const char*>(RTA_DATA(kind)), ::strnlen(static_cast<const char*>(RTA_DATA(kind)), RTA_PAYLOAD(kind)));
  if (kind_name != "vxlan") return false;
  const rtattr* data = find_attr(static_cast<const rtattr*>(RTA_DATA(linkinfo)), linkinfo_len, IFLA_INFO_DATA);
  if (data == nullptr) return false;
  const rtattr* port_attr = find_attr(static_cast<const rtattr*>(RTA_DATA(data)), static_cast<int>(RTA_PAYLOAD(data)), IFLA_VXLAN_PORT);
  if (port_attr == nullptr || RTA_PAYLOAD(port_attr) < 2) return false;
  std::uint16_t port_be = 0;
  std::memcpy(&port_be, RTA_DATA(port_attr), 2);
  return ntohs(port_be) == port;
}

}  // namespace

Result<bool> kernel_vxlan_device_on_port(std::uint16_t port) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd) return make_error(std::string("rtnetlink socket: ") + std::strerror(errno));
  // The dump asks the kernel for vxlan links only (IFLA_LINKINFO { IFLA_INFO_KIND "vxlan" }, a
  // filter rtnetlink applies itself): a node with hundreds of pod veths answers with a few
  // links, not all of them, twice a second. A kernel that ignores the filter sends every link,
  // which the kind check below sorts out.
  static constexpr char kKind[] = "vxlan";
  struct {
    nlmsghdr h;
    ifinfomsg info;
    rtattr linkinfo;
    rtattr kind;
    char kind_name[RTA_ALIGN(sizeof(kKind))];
  } req{};
  req.h.nlmsg_len = sizeof(req);
  req.h.nlmsg_type = RTM_GETLINK;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.h.nlmsg_seq = 1;
  req.info.ifi_family = AF_UNSPEC;
  req.linkinfo.rta_type = IFLA_LINKINFO;
  req.linkinfo.rta_len = static_cast<unsigned short>(sizeof(rtattr) + RTA_LENGTH(sizeof(kKind)));
  req.kind.rta_type = IFLA_INFO_KIND;
  req.kind.rta_len = static_cast<unsigned short>(RTA_LENGTH(sizeof(kKind)));
  std::memcpy(req.kind_name, kKind, sizeof(kKind));
  if (::send(fd.get(), &req, sizeof(req), 0) < 0) return make_error(std::string("RTM_GETLINK: ") + std::strerror(errno));
  std::vector<char> buf(1 << 16);
  bool found = false;
  for (;;) {
    const ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(std::string("RTM_GETLINK reply: ") + std::strerror(errno));
    }
    int left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<const nlmsghdr*>(buf.data()); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) return found;
      if (h->nlmsg_type == NLMSG_ERROR) return make_error("RTM_GETLINK refused");
      if (h->nlmsg_type == RTM_NEWLINK && is_vxlan_on_port(h, port)) found = true;
    }
  }
}

}  // namespace vxfed::dataplane
