#include "bpf/lib/shaper.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include "common/unique_fd.hpp"

namespace vxfed::bpf::detail {
namespace {

// One rtnetlink request built attribute by attribute, sent, and its ack read.
class NlRequest {
 public:
  NlRequest(uint16_t type, uint16_t flags, const void* header, size_t header_len) {
    auto* nh = reinterpret_cast<nlmsghdr*>(buf_);
    nh->nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(header_len));
    nh->nlmsg_type = type;
    nh->nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | NLM_F_ACK | flags);
    nh->nlmsg_seq = 1;
    std::memcpy(NLMSG_DATA(nh), header, header_len);
  }

  void put(uint16_t type, const void* data, size_t len) {
    auto* nh = reinterpret_cast<nlmsghdr*>(buf_);
    auto* rta = reinterpret_cast<rtattr*>(buf_ + NLMSG_ALIGN(nh->nlmsg_len));
    rta->rta_type = type;
    rta->rta_len = static_cast<unsigned short>(RTA_LENGTH(len));
    if (len) std::memcpy(RTA_DATA(rta), data, len);
    nh->nlmsg_len = NLMSG_ALIGN(nh->nlmsg_len) + RTA_ALIGN(rta->rta_len);
  }
  void put_str(uint16_t type, const std::string& s) { put(type, s.c_str(), s.size() + 1); }
  // Opens a nested attribute; close it with end_nest(the returned offset).
  size_t begin_nest(uint16_t type) {
    size_t at = NLMSG_ALIGN(reinterpret_cast<nlmsghdr*>(buf_)->nlmsg_len);
    put(type, nullptr, 0);
    return at;
  }
  void end_nest(size_t at) {
    auto* rta = reinterpret_cast<rtattr*>(buf_ + at);
    rta->rta_len = static_cast<unsigned short>(reinterpret_cast<nlmsghdr*>(buf_)->nlmsg_len - at);
  }

  // The kernel's errno for the request (0 on success).
  int send() {
    UniqueFd fd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
    if (!fd) return errno;
    auto* nh = reinterpret_cast<nlmsghdr*>(buf_);
    if (::send(fd.get(), buf_, nh->nlmsg_len, 0) < 0) return errno;
    char in[4096];
    for (;;) {
      ssize_t n = recv(fd.get(), in, sizeof(in), 0);
      if (n < 0) return errno;
      for (auto* r = reinterpret_cast<nlmsghdr*>(in); NLMSG_OK(r, static_cast<unsigned>(n)); r = NLMSG_NEXT(r, n))
        if (r->nlmsg_type == NLMSG_ERROR) return -static_cast<nlmsgerr*>(NLMSG_DATA(r))->error;
    }
  }

 private:
  alignas(nlmsghdr) char buf_[1024]{};
};

}  // namespace

TbfParams tbf_params(uint64_t rate_bits, uint64_t burst_bits, uint32_t mtu) {
  TbfParams p;
  p.rate_bytes = rate_bits / 8;
  const uint64_t frame = uint64_t{mtu} + 18;  // Ethernet header and one VLAN tag
  const uint64_t burst = std::max(burst_bits / 8, frame);
  const uint64_t queue = p.rate_bytes * kTbfQueueNs / 1'000'000'000ULL;
  p.burst_bytes = static_cast<uint32_t>(std::min<uint64_t>(burst, UINT32_MAX));
  p.limit_bytes = static_cast<uint32_t>(std::min<uint64_t>(burst + std::max(queue, frame), UINT32_MAX));
  return p;
}

std::string ifb_name_for(int ifindex) { return fmt::format("vxin{}", ifindex); }

Status install_root_tbf(int ifindex, const TbfParams& p) {
  tcmsg tc{};
  tc.tcm_family = AF_UNSPEC;
  tc.tcm_ifindex = ifindex;
  tc.tcm_parent = TC_H_ROOT;
  NlRequest req(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE, &tc, sizeof(tc));
  req.put_str(TCA_KIND, "tbf");
  size_t opts = req.begin_nest(TCA_OPTIONS);
  tc_tbf_qopt q{};
  q.rate.rate = static_cast<uint32_t>(std::min<uint64_t>(p.rate_bytes, UINT32_MAX));
  q.rate.linklayer = TC_LINKLAYER_ETHERNET;  // no rate table: the kernel computes from the rate
  q.limit = p.limit_bytes;
  req.put(TCA_TBF_PARMS, &q, sizeof(q));
  uint64_t rate64 = p.rate_bytes;
  req.put(TCA_TBF_RATE64, &rate64, sizeof(rate64));
  uint32_t burst = p.burst_bytes;
  req.put(TCA_TBF_BURST, &burst, sizeof(burst));
  req.end_nest(opts);
  if (int err = req.send(); err)
    return make_error(fmt::format("cannot install the tbf qdisc (rate {} B/s, burst {} B, limit {} B) on ifindex {}: {}",
                                  p.rate_bytes, p.burst_bytes, p.limit_bytes, ifindex, strerror(err)));
  return {};
}

Result<int> ensure_ifb(const std::string& name, uint32_t mtu) {
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_flags = IFF_UP;
  ifi.ifi_change = IFF_UP;
  int existing = static_cast<int>(if_nametoindex(name.c_str()));
  NlRequest req(RTM_NEWLINK, existing ? 0 : NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
  req.put_str(IFLA_IFNAME, name);
  req.put(IFLA_MTU, &mtu, sizeof(mtu));
  if (!existing) {
    size_t info = req.begin_nest(IFLA_LINKINFO);
    req.put_str(IFLA_INFO_KIND, "ifb");
    req.end_nest(info);
  }
  if (int err = req.send(); err)
    return make_error(fmt::format("cannot {} the ifb device {} for ingress shaping (CONFIG_IFB): {}",
                                  existing ? "bring up" : "create", name, strerror(err)));
  int idx = static_cast<int>(if_nametoindex(name.c_str()));
  if (idx == 0) return make_error(fmt::format("the ifb device {} vanished right after it was created", name));
  return idx;
}

Status delete_link(const std::string& name) {
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  NlRequest req(RTM_DELLINK, 0, &ifi, sizeof(ifi));
  req.put_str(IFLA_IFNAME, name);
  int err = req.send();
  if (err && err != ENODEV) return make_error(fmt::format("cannot delete {}: {}", name, strerror(err)));
  return {};
}

Result<uint32_t> link_mtu(int ifindex) {
  char name[IF_NAMESIZE] = {};
  if (!if_indextoname(static_cast<unsigned>(ifindex), name))
    return make_error(fmt::format("no interface with ifindex {}: {}", ifindex, strerror(errno)));
  UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) return make_error(fmt::format("cannot open a socket to read the MTU: {}", strerror(errno)));
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, name, sizeof(ifr.ifr_name));  // both IF_NAMESIZE, NUL-terminated
  if (ioctl(fd.get(), SIOCGIFMTU, &ifr) != 0)
    return make_error(fmt::format("cannot read the MTU of {}: {}", name, strerror(errno)));
  return static_cast<uint32_t>(ifr.ifr_mtu);
}

}  // namespace vxfed::bpf::detail
