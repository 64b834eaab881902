#include "cni/netlink.hpp"

#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>
#include <vector>

#include "common/netns.hpp"

namespace vxfed::cni {

using vxfed::make_error;

namespace {

std::string errno_text(int neg) { return std::strerror(-neg); }

// libmnl's iteration macros assign void* and do not compile as C++; these do the same walk.
template <typename F>
void for_each_attr(const nlmsghdr* m, std::size_t offset, F&& f) {
  const auto* tail = static_cast<const char*>(mnl_nlmsg_get_payload_tail(m));
  for (auto* a = static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(m, offset));
       mnl_attr_ok(a, static_cast<int>(tail - reinterpret_cast<const char*>(a))); a = mnl_attr_next(a))
    f(a);
}

template <typename F>
void for_each_nested(const nlattr* nest, F&& f) {
  const auto* end = static_cast<const char*>(mnl_attr_get_payload(nest)) + mnl_attr_get_payload_len(nest);
  for (auto* a = static_cast<const nlattr*>(mnl_attr_get_payload(nest));
       mnl_attr_ok(a, static_cast<int>(end - reinterpret_cast<const char*>(a))); a = mnl_attr_next(a))
    f(a);
}


struct Buffer {
  std::vector<char> bytes = std::vector<char>(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* header(std::uint16_t type, std::uint16_t flags) {
    std::fill(bytes.begin(), bytes.end(), 0);
    auto* nlh = mnl_nlmsg_put_header(bytes.data());
    nlh->nlmsg_type = type;
    nlh->nlmsg_flags = NLM_F_REQUEST | flags;
    return nlh;
  }
};

}  // namespace

Netlink::Netlink(mnl_socket* sock) : sock_(sock), portid_(mnl_socket_get_portid(sock)) {
  seq_ = static_cast<std::uint32_t>(std::time(nullptr));
}

Netlink::Netlink(Netlink&& o) noexcept : sock_(o.sock_), portid_(o.portid_), seq_(o.seq_) { o.sock_ = nullptr; }

Netlink::~Netlink() {
  if (sock_) mnl_socket_close(sock_);
}

vxfed::Result<Netlink> Netlink::open() {
  mnl_socket* s = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
  if (!s) return make_error(std::string("cannot open a netlink socket: ") + std::strerror(errno));
  if (mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0) {
    const int e = errno;
    mnl_socket_close(s);
    return make_error(std::string("cannot bind a netlink socket: ") + std::strerror(e));
  }
  return Netlink(s);
}

vxfed::Result<Netlink> Netlink::open_in(int netns_fd) {
  // The socket is created on a thread inside the pod's namespace and stays bound to it.
  std::optional<Netlink> nl;
  const Status st = run_in_netns(netns_fd, "the pod's network namespace", [&]() -> Status {
    auto opened = open();
    if (!opened) return make_error(opened.error());
    nl.emplace(std::move(*opened));
    return {};
  });
  if (!st) return make_error(st.error());
  return std::move(*nl);
}

int Netlink::transact(void* msg) {
  auto* nlh = static_cast<nlmsghdr*>(msg);
  nlh->nlmsg_flags |= NLM_F_ACK;
  nlh->nlmsg_seq = ++seq_;
  if (mnl_socket_sendto(sock_, nlh, nlh->nlmsg_len) < 0) return -errno;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(sock_, buf.data(), buf.size());
    if (n < 0) return -errno;
    const int rc = mnl_cb_run(buf.data(), n, nlh->nlmsg_seq, portid_, nullptr, nullptr);
    if (rc == MNL_CB_ERROR) return -errno;
    if (rc <= MNL_CB_STOP) return 0;
  }
}

template <typename F>
int Netlink::dump(void* msg, F&& on_message) {
  auto* nlh = static_cast<nlmsghdr*>(msg);
  nlh->nlmsg_flags |= NLM_F_DUMP;
  nlh->nlmsg_seq = ++seq_;
  if (mnl_socket_sendto(sock_, nlh, nlh->nlmsg_len) < 0) return -errno;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE * 4);
  using Fn = std::remove_reference_t<F>;
  auto trampoline = [](const nlmsghdr* m, void* data) -> int {
    (*static_cast<Fn*>(data))(m);
    return MNL_CB_OK;
  };
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(sock_, buf.data(), buf.size());
    if (n < 0) return -errno;
    Fn* fn = &on_message;
    const int rc = mnl_cb_run(buf.data(), n, nlh->nlmsg_seq, portid_, trampoline, fn);
    if (rc == MNL_CB_ERROR) return -errno;
    if (rc <= MNL_CB_STOP) return 0;
  }
}

namespace {

void parse_link(const nlmsghdr* m, LinkInfo& out) {
  const auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(m));
  out.index = ifi->ifi_index;
  out.up = (ifi->ifi_flags & IFF_UP) != 0;
  for_each_attr(m, sizeof(*ifi), [&](const nlattr* attr) {
    switch (mnl_attr_get_type(attr)) {
      case IFLA_IFNAME: out.name = mnl_attr_get_str(attr); break;
      case IFLA_MTU: out.mtu = mnl_attr_get_u32(attr); break;
      case IFLA_LINK: out.peer_index = static_cast<int>(mnl_attr_get_u32(attr)); break;
      case IFLA_ADDRESS:
        if (mnl_attr_get_payload_len(attr) == 6) std::memcpy(out.mac.data(), mnl_attr_get_payload(attr), 6);
        break;
      case IFLA_LINKINFO:
        for_each_nested(attr, [&](const nlattr* nested) {
          if (mnl_attr_get_type(nested) == IFLA_INFO_KIND) out.kind = mnl_attr_get_str(nested);
        });
        break;
      default: break;
    }
  });
}

}  // namespace

vxfed::Result<std::optional<LinkInfo>> Netlink::get_link(const std::string& name) {
  if (name.size() >= IFNAMSIZ) return std::optional<LinkInfo>{};
  Buffer b;
  auto* nlh = b.header(RTM_GETLINK, 0);
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(nlh, IFLA_IFNAME, name.c_str());
  nlh->nlmsg_seq = ++seq_;
  if (mnl_socket_sendto(sock_, nlh, nlh->nlmsg_len) < 0)
    return make_error("netlink: cannot send RTM_GETLINK: " + std::string(std::strerror(errno)));
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE * 2);
  const ssize_t n = mnl_socket_recvfrom(sock_, buf.data(), buf.size());
  if (n < 0) return make_error("netlink: " + std::string(std::strerror(errno)));
  LinkInfo info;
  bool found = false;
  auto cb = [](const nlmsghdr* m, void* data) -> int {
    if (m->nlmsg_type == RTM_NEWLINK) {
      parse_link(m, *static_cast<std::pair<LinkInfo*, bool*>*>(data)->first);
      *static_cast<std::pair<LinkInfo*, bool*>*>(data)->second = true;
    }
    return MNL_CB_OK;
  };
  std::pair<LinkInfo*, bool*> ctx{&info, &found};
  const int rc = mnl_cb_run(buf.data(), n, seq_, portid_, cb, &ctx);
  if (rc == MNL_CB_ERROR) {
    if (errno == ENODEV) return std::optional<LinkInfo>{};
    return make_error("netlink: cannot look up link " + name + ": " + std::strerror(errno));
  }
  if (!found) return std::optional<LinkInfo>{};
  return std::optional<LinkInfo>{info};
}

vxfed::Status Netlink::create_veth(const std::string& name, std::uint32_t mtu, const std::string& peer_name,
                                   std::uint32_t peer_mtu, int peer_netns_fd) {
  Buffer b;
  auto* nlh = b.header(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(nlh, IFLA_IFNAME, name.c_str());
  mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
  auto* linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
  mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
  auto* data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
  auto* peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
  // VETH_INFO_PEER carries a struct ifinfomsg, then the peer's own attributes.
  auto* peer_ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  std::memset(peer_ifi, 0, sizeof(*peer_ifi));
  peer_ifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(nlh, IFLA_IFNAME, peer_name.c_str());
  mnl_attr_put_u32(nlh, IFLA_MTU, peer_mtu);
  if (peer_netns_fd >= 0) mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, static_cast<std::uint32_t>(peer_netns_fd));
  mnl_attr_nest_end(nlh, peer);
  mnl_attr_nest_end(nlh, data);
  mnl_attr_nest_end(nlh, linkinfo);
  if (int rc = transact(nlh); rc != 0)
    return make_error("cannot create veth " + name + " <-> " + peer_name + ": " + errno_text(rc));
  return {};
}

vxfed::Status Netlink::set_mac(int index, const net::Mac& mac) {
  Buffer b;
  auto* nlh = b.header(RTM_NEWLINK, 0);
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = index;
  mnl_attr_put(nlh, IFLA_ADDRESS, mac.size(), mac.data());
  if (int rc = transact(nlh); rc != 0)
    return make_error("cannot set MAC " + net::format_mac(mac) + ": " + errno_text(rc));
  return {};
}

vxfed::Status Netlink::set_up(int index) {
  Buffer b;
  auto* nlh = b.header(RTM_NEWLINK, 0);
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  ifi->ifi_index = index;
  ifi->ifi_flags = IFF_UP;
  ifi->ifi_change = IFF_UP;
  if (int rc = transact(nlh); rc != 0) return make_error("cannot set the link up: " + errno_text(rc));
  return {};
}

vxfed::Result<bool> Netlink::delete_link(const std::string& name) {
  Buffer b;
  auto* nlh = b.header(RTM_DELLINK, 0);
  auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
  ifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz(nlh, IFLA_IFNAME, name.c_str());
  const int rc = transact(nlh);
  if (rc == -ENODEV) return false;
  if (rc != 0) return make_error("cannot delete link " + name + ": " + errno_text(rc));
  return true;
}

vxfed::Status Netlink::add_address(int index, const net::Ipv4Interface& address) {
  Buffer b;
  auto* nlh = b.header(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
  auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
  ifa->ifa_family = AF_INET;
  ifa->ifa_prefixlen = static_cast<unsigned char>(address.len);
  ifa->ifa_scope = RT_SCOPE_UNIVERSE;
  ifa->ifa_index = static_cast<unsigned>(index);
  const std::uint32_t be = address.addr.to_network();
  mnl_attr_put_u32(nlh, IFA_LOCAL, be);
  mnl_attr_put_u32(nlh, IFA_ADDRESS, be);
  if (address.len < 31) mnl_attr_put_u32(nlh, IFA_BROADCAST, address.prefix().last().to_network());
  if (int rc = transact(nlh); rc != 0)
    return make_error("cannot add address " + address.str() + ": " + errno_text(rc));
  return {};
}

vxfed::Result<std::vector<net::Ipv4Interface>> Netlink::addresses(int index) {
  Buffer b;
  auto* nlh = b.header(RTM_GETADDR, 0);
  auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
  ifa->ifa_family = AF_INET;
  std::vector<net::Ipv4Interface> out;
  auto on = [&](const nlmsghdr* m) {
    if (m->nlmsg_type != RTM_NEWADDR) return;
    const auto* a = static_cast<const ifaddrmsg*>(mnl_nlmsg_get_payload(m));
    if (a->ifa_family != AF_INET || static_cast<int>(a->ifa_index) != index) return;
    for_each_attr(m, sizeof(*a), [&](const nlattr* attr) {
      if (mnl_attr_get_type(attr) == IFA_LOCAL)
        out.push_back(net::Ipv4Interface{net::Ipv4Addr::from_network(mnl_attr_get_u32(attr)), a->ifa_prefixlen});
    });
  };
  if (int rc = dump(nlh, on); rc != 0) return make_error("cannot list addresses: " + errno_text(rc));
  return out;
}

namespace {

void put_route(nlmsghdr* nlh, int oif, const net::Ipv4Prefix& dst, net::Ipv4Addr gateway, bool scope_link) {
  auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
  rtm->rtm_family = AF_INET;
  rtm->rtm_dst_len = static_cast<unsigned char>(dst.len);
  rtm->rtm_table = RT_TABLE_MAIN;
  rtm->rtm_protocol = RTPROT_BOOT;
  rtm->rtm_scope = scope_link ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
  rtm->rtm_type = RTN_UNICAST;
  mnl_attr_put_u32(nlh, RTA_DST, dst.network().to_network());
  if (gateway.value != 0) mnl_attr_put_u32(nlh, RTA_GATEWAY, gateway.to_network());
  mnl_attr_put_u32(nlh, RTA_OIF, static_cast<std::uint32_t>(oif));
}

}  // namespace

vxfed::Status Netlink::add_route(int oif, const net::Ipv4Prefix& dst, net::Ipv4Addr gateway, bool scope_link) {
  Buffer b;
  auto* nlh = b.header(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL);
  put_route(nlh, oif, dst, gateway, scope_link);
  if (int rc = transact(nlh); rc != 0)
    return make_error("cannot add route " + dst.str() +
                      (gateway.value ? " via " + gateway.str() : std::string(" (on-link)")) + ": " + errno_text(rc));
  return {};
}

vxfed::Result<bool> Netlink::delete_route(int oif, const net::Ipv4Prefix& dst, net::Ipv4Addr gateway) {
  Buffer b;
  auto* nlh = b.header(RTM_DELROUTE, 0);
  put_route(nlh, oif, dst, gateway, false);
  auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_get_payload(nlh));
  rtm->rtm_protocol = 0;            // match any protocol (kernel-installed prefix routes)
  rtm->rtm_scope = RT_SCOPE_NOWHERE;  // match any scope
  const int rc = transact(nlh);
  if (rc == -ESRCH) return false;
  if (rc != 0) return make_error("cannot delete route " + dst.str() + ": " + errno_text(rc));
  return true;
}

vxfed::Status Netlink::set_neighbor(int index, net::Ipv4Addr ip, const net::Mac& mac) {
  Buffer b;
  auto* nlh = b.header(RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE);
  auto* nd = static_cast<ndmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ndmsg)));
  nd->ndm_family = AF_INET;
  nd->ndm_ifindex = index;
  nd->ndm_state = NUD_PERMANENT;
  mnl_attr_put_u32(nlh, NDA_DST, ip.to_network());
  mnl_attr_put(nlh, NDA_LLADDR, mac.size(), mac.data());
  if (int rc = transact(nlh); rc != 0)
    return make_error("cannot set the neighbour " + ip.str() + " lladdr " + net::format_mac(mac) + ": " + errno_text(rc));
  return {};
}

vxfed::Result<std::vector<RouteEntry>> Netlink::routes(int oif) {
  Buffer b;
  auto* nlh = b.header(RTM_GETROUTE, 0);
  auto* rtm = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
  rtm->rtm_family = AF_INET;
  std::vector<RouteEntry> out;
  auto on = [&](const nlmsghdr* m) {
    if (m->nlmsg_type != RTM_NEWROUTE) return;
    const auto* r = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(m));
    if (r->rtm_family != AF_INET || r->rtm_table != RT_TABLE_MAIN) return;
    RouteEntry e;
    std::uint32_t dst_be = 0;
    e.scope = r->rtm_scope;
    e.protocol = r->rtm_protocol;
    for_each_attr(m, sizeof(*r), [&](const nlattr* attr) {
      switch (mnl_attr_get_type(attr)) {
        case RTA_DST: dst_be = mnl_attr_get_u32(attr); break;
        case RTA_GATEWAY: e.gateway = net::Ipv4Addr::from_network(mnl_attr_get_u32(attr)); break;
        case RTA_OIF: e.oif = static_cast<int>(mnl_attr_get_u32(attr)); break;
        default: break;
      }
    });
    e.dst = net::Ipv4Prefix::make(net::Ipv4Addr::from_network(dst_be), r->rtm_dst_len);
    if (e.oif == oif) out.push_back(e);
  };
  if (int rc = dump(nlh, on); rc != 0) return make_error("cannot list routes: " + errno_text(rc));
  return out;
}

void disable_ipv6(const std::string& ifname) {
  const std::string path = "/proc/sys/net/ipv6/conf/" + ifname + "/disable_ipv6";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;  // IPv6 not built in: nothing to disable
  (void)!::write(fd, "1", 1);
  ::close(fd);
}

}  // namespace vxfed::cni
