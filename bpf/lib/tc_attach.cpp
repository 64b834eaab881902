#include "bpf/lib/tc_attach.hpp"

#include <cerrno>
#include <cstring>
#include <linux/netlink.h>
#include <linux/gen_stats.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include "bpf/include/vxfed_bpf_abi.h"

namespace vxfed::bpf::detail {
namespace {

bpf_tc_hook make_hook(int ifindex, Hook hook) {
  bpf_tc_hook h{};
  h.sz = sizeof(h);
  h.ifindex = ifindex;
  h.attach_point = hook == Hook::ingress ? BPF_TC_INGRESS : BPF_TC_EGRESS;
  return h;
}

const char* hook_name(Hook hook) { return hook == Hook::ingress ? "ingress" : "egress"; }

// A minimal rtnetlink request/ack exchange for qdisc messages; libbpf covers the filters.
class Rtnl {
 public:
  Rtnl() : fd_(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)) {}
  ~Rtnl() {
    if (fd_ >= 0) close(fd_);
  }
  Rtnl(const Rtnl&) = delete;
  Rtnl& operator=(const Rtnl&) = delete;

  // Sends one qdisc message; kind may be empty. Returns the kernel's errno (0 on success).
  int qdisc(uint16_t type, uint16_t flags, int ifindex, const char* kind) {
    struct {
      nlmsghdr nh;
      tcmsg tc;
      char attrs[64];
    } req{};
    req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(tcmsg));
    req.nh.nlmsg_type = type;
    req.nh.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | NLM_F_ACK | flags);
    req.nh.nlmsg_seq = ++seq_;
    req.tc.tcm_family = AF_UNSPEC;
    req.tc.tcm_ifindex = ifindex;
    req.tc.tcm_parent = TC_H_ROOT;
    if (kind && *kind) {
      auto* rta = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(&req) + NLMSG_ALIGN(req.nh.nlmsg_len));
      size_t len = strlen(kind) + 1;
      rta->rta_type = TCA_KIND;
      rta->rta_len = static_cast<unsigned short>(RTA_LENGTH(len));
      memcpy(RTA_DATA(rta), kind, len);
      req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
    }
    if (fd_ < 0) return errno;
    if (send(fd_, &req, req.nh.nlmsg_len, 0) < 0) return errno;
    return read_ack();
  }

  // Dumps qdiscs and returns the root qdisc of ifindex: its kind ("" if none reported) and the
  // packets it dropped (TCA_STATS2's queue statistics; a tbf drops what overflows its queue).
  Result<RootQdisc> root(int ifindex) {
    struct {
      nlmsghdr nh;
      tcmsg tc;
    } req{};
    req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(tcmsg));
    req.nh.nlmsg_type = RTM_GETQDISC;
    req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.nh.nlmsg_seq = ++seq_;
    req.tc.tcm_family = AF_UNSPEC;
    req.tc.tcm_ifindex = ifindex;
    if (fd_ < 0 || send(fd_, &req, req.nh.nlmsg_len, 0) < 0)
      return make_error(fmt::format("cannot ask the kernel for qdiscs: {}", strerror(errno)));
    RootQdisc root;
    char buf[16384];
    for (;;) {
      ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n < 0) return make_error(fmt::format("reading the qdisc dump failed: {}", strerror(errno)));
      for (auto* nh = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(nh, static_cast<unsigned>(n));
           nh = NLMSG_NEXT(nh, n)) {
        if (nh->nlmsg_type == NLMSG_DONE) return root;
        if (nh->nlmsg_type == NLMSG_ERROR) {
          auto* err = static_cast<nlmsgerr*>(NLMSG_DATA(nh));
          return make_error(fmt::format("qdisc dump refused: {}", strerror(-err->error)));
        }
        auto* tc = static_cast<tcmsg*>(NLMSG_DATA(nh));
        if (tc->tcm_ifindex != ifindex || tc->tcm_parent != TC_H_ROOT) continue;
        int alen = static_cast<int>(nh->nlmsg_len - NLMSG_LENGTH(sizeof(tcmsg)));
        for (auto* rta = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(tc) + NLMSG_ALIGN(sizeof(tcmsg)));
             RTA_OK(rta, alen); rta = RTA_NEXT(rta, alen)) {
          if (rta->rta_type == TCA_KIND) root.kind = static_cast<const char*>(RTA_DATA(rta));
          if (rta->rta_type != TCA_STATS2) continue;
          int slen = static_cast<int>(RTA_PAYLOAD(rta));
          for (auto* st = static_cast<rtattr*>(RTA_DATA(rta)); RTA_OK(st, slen); st = RTA_NEXT(st, slen))
            if (st->rta_type == TCA_STATS_QUEUE && RTA_PAYLOAD(st) >= sizeof(gnet_stats_queue)) {
              gnet_stats_queue q{};
              std::memcpy(&q, RTA_DATA(st), sizeof(q));
              root.drops = q.drops;
            }
        }
      }
    }
  }

 private:
  int read_ack() {
    char buf[4096];
    for (;;) {
      ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n < 0) return errno;
      for (auto* nh = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(nh, static_cast<unsigned>(n));
           nh = NLMSG_NEXT(nh, n)) {
        if (nh->nlmsg_seq != seq_) continue;
        if (nh->nlmsg_type == NLMSG_ERROR) return -static_cast<nlmsgerr*>(NLMSG_DATA(nh))->error;
      }
    }
  }

  int fd_;
  uint32_t seq_ = 0;
};

}  // namespace

Status tc_attach(int ifindex, Hook hook, int prog_fd) {
  bpf_tc_hook h = make_hook(ifindex, hook);
  h.attach_point = static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS);
  int err = bpf_tc_hook_create(&h);  // the clsact qdisc; -EEXIST when it is already there
  if (err && err != -EEXIST)
    return make_error(fmt::format("cannot create the clsact qdisc on ifindex {}: {}", ifindex, strerror(-err)));
  h = make_hook(ifindex, hook);
  bpf_tc_opts opts{};
  opts.sz = sizeof(opts);
  opts.handle = VXFED_TC_HANDLE;
  opts.priority = VXFED_TC_PRIORITY;
  opts.prog_fd = prog_fd;
  opts.flags = BPF_TC_F_REPLACE;
  err = bpf_tc_attach(&h, &opts);
  if (err)
    return make_error(fmt::format("cannot attach the {} program on ifindex {}: {}", hook_name(hook), ifindex,
                                  strerror(-err)));
  return {};
}

Status tc_detach(int ifindex, Hook hook) {
  bpf_tc_hook h = make_hook(ifindex, hook);
  bpf_tc_opts opts{};
  opts.sz = sizeof(opts);
  opts.handle = VXFED_TC_HANDLE;
  opts.priority = VXFED_TC_PRIORITY;
  int err = bpf_tc_detach(&h, &opts);
  if (err && err != -ENOENT && err != -EINVAL && err != -ENODEV)
    return make_error(fmt::format("cannot detach the {} program from ifindex {}: {}", hook_name(hook), ifindex,
                                  strerror(-err)));
  return {};
}

Result<uint32_t> tc_attached_prog_id(int ifindex, Hook hook) {
  bpf_tc_hook h = make_hook(ifindex, hook);
  bpf_tc_opts opts{};
  opts.sz = sizeof(opts);
  opts.handle = VXFED_TC_HANDLE;
  opts.priority = VXFED_TC_PRIORITY;
  int err = bpf_tc_query(&h, &opts);
  if (err == -ENOENT || err == -EINVAL) return uint32_t{0};
  if (err) return make_error(fmt::format("cannot query the {} hook of ifindex {}: {}", hook_name(hook), ifindex,
                                         strerror(-err)));
  return opts.prog_id;
}

Result<RootQdisc> root_qdisc(int ifindex) { return Rtnl().root(ifindex); }

Result<std::string> root_qdisc_kind(int ifindex) {
  auto root = root_qdisc(ifindex);
  if (!root) return Error{root.error()};
  return root->kind;
}

Status install_root_fq(int ifindex, bool* unsupported) {
  int err = Rtnl().qdisc(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE, ifindex, "fq");
  *unsupported = err == ENOENT;  // "Specified qdisc kind is unknown"
  if (err == ENOENT)
    return make_error(fmt::format("this kernel has no fq qdisc (CONFIG_NET_SCH_FQ), which EDT pacing needs"));
  if (err) return make_error(fmt::format("cannot install the fq qdisc on ifindex {}: {}", ifindex, strerror(err)));
  return {};
}

Status delete_root_qdisc(int ifindex) {
  int err = Rtnl().qdisc(RTM_DELQDISC, 0, ifindex, nullptr);
  if (err && err != ENOENT && err != EINVAL && err != ENODEV)
    return make_error(fmt::format("cannot delete the root qdisc of ifindex {}: {}", ifindex, strerror(err)));
  return {};
}

}  // namespace vxfed::bpf::detail
