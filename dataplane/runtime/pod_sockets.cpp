#include "dataplane/runtime/pod_sockets.hpp"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "dataplane/runtime/packet_socket.hpp"

namespace vxfed::dataplane {

namespace {

std::string errno_text() { return std::strerror(errno); }

// Classic BPF accepting frames whose ifindex is one of `ifs`: compares in groups of up to 250
// (jt is 8 bits), each group jumping to an accept placed after it; no match rejects.
// First, a frame the pod addressed to the host end's own MAC (PACKET_HOST) is rejected: it is
// for the node's kernel (a pod answering the node, cni/node_path.hpp), which takes it itself;
// what the pod sends us goes to the gateway MAC (PACKET_OTHERHOST) or is broadcast (ARP).
std::vector<sock_filter> ifindex_filter(const std::vector<unsigned>& ifs) {
  std::vector<sock_filter> p;
  p.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<std::uint32_t>(SKF_AD_OFF + SKF_AD_PKTTYPE)));
  p.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_HOST, 0, 1));
  p.push_back(BPF_STMT(BPF_RET | BPF_K, 0));
  p.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<std::uint32_t>(SKF_AD_OFF + SKF_AD_IFINDEX)));
  for (std::size_t g = 0; g < ifs.size(); g += 250) {
    const std::size_t end = std::min(ifs.size(), g + 250);
    for (std::size_t i = g; i < end; ++i)
      p.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ifs[i], static_cast<std::uint8_t>(end - i), 0));
    p.push_back(BPF_JUMP(BPF_JMP | BPF_JA, 1, 0, 0));
    p.push_back(BPF_STMT(BPF_RET | BPF_K, 0xffffffffu));
  }
  p.push_back(BPF_STMT(BPF_RET | BPF_K, 0));
  return p;
}

Status attach_filter(int fd, const std::vector<unsigned>& ifs) {
  auto prog = ifindex_filter(ifs);
  if (prog.size() > BPF_MAXINSNS)
    return make_error("too many pod interfaces for one socket filter (" + std::to_string(ifs.size()) + ")");
  sock_fprog fp{static_cast<unsigned short>(prog.size()), prog.data()};
  if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof fp) != 0)
    return make_error("SO_ATTACH_FILTER on a pod socket: " + errno_text());
  return {};
}

}  // namespace

Result<std::unique_ptr<PodSockets>> PodSockets::create(unsigned workers, unsigned rcvbuf_bytes, bool qdisc_bypass) {
  std::unique_ptr<PodSockets> s(new PodSockets());
  PacketSocketConfig c;
  c.rcvbuf_bytes = rcvbuf_bytes;
  c.qdisc_bypass = qdisc_bypass;
  c.drop_until_filtered = true;  // the filter (no interface yet) goes on before the bind
  c.what = "the pods";
  // One fanout group per process: the id only has to differ from other processes' groups in
  // this network namespace (the uplink sockets use the next one).
  c.fanout_group = workers > 1 ? static_cast<int>(::getpid() & 0xffff) : -1;
  for (unsigned w = 0; w < workers; ++w) {
    auto fd = open_packet_socket(c, [](int fd) { return attach_filter(fd, {}); });
    if (!fd) return make_error(fd.error());
    s->fds_.push_back(*fd);
  }
  return s;
}

PodSockets::~PodSockets() {
  for (int fd : fds_) ::close(fd);
}

Status PodSockets::set_interfaces(const std::vector<unsigned>& ifindexes) {
  for (int fd : fds_)
    if (auto st = attach_filter(fd, ifindexes); !st) return st;
  return {};
}

std::uint64_t PodSockets::take_drops(unsigned worker) const {
  tpacket_stats stats{};
  socklen_t len = sizeof stats;
  if (worker >= fds_.size() || ::getsockopt(fds_[worker], SOL_PACKET, PACKET_STATISTICS, &stats, &len) != 0) return 0;
  return stats.tp_drops;
}

}  // namespace vxfed::dataplane
