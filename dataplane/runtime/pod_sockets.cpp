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

#include "dataplane/core/tx_stage.hpp"

namespace vxfed::dataplane {

namespace {

constexpr unsigned kMaxSegments = 8;  // iovecs per frame sent (an mbuf chain longer is linearised by refusal)

std::string errno_text() { return std::strerror(errno); }

// Classic BPF accepting frames whose ifindex is one of `ifs`: compares in groups of up to 250
// (jt is 8 bits), each group jumping to an accept placed after it; no match rejects.
std::vector<sock_filter> ifindex_filter(const std::vector<unsigned>& ifs) {
  std::vector<sock_filter> p;
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
  // One fanout group per process: the id only has to differ from other processes' groups in
  // this network namespace.
  const int group = static_cast<int>(::getpid() & 0xffff);
  for (unsigned w = 0; w < workers; ++w) {
    // Protocol 0 until bound: receives nothing before the filter is in place.
    const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0) return make_error("cannot open an AF_PACKET socket for the pods: " + errno_text() + " (needs CAP_NET_RAW)");
    s->fds_.push_back(fd);
    const int one = 1;
    if (::setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) != 0)
      return make_error("PACKET_IGNORE_OUTGOING: " + errno_text());
    if (qdisc_bypass && ::setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) != 0)
      return make_error("PACKET_QDISC_BYPASS: " + errno_text());
    const int rcvbuf = static_cast<int>(rcvbuf_bytes);
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) != 0)
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    if (auto st = attach_filter(fd, {}); !st) return make_error(st.error());
    sockaddr_ll any{};
    any.sll_family = AF_PACKET;
    any.sll_protocol = htons(ETH_P_ALL);
    any.sll_ifindex = 0;  // every interface; the filter chooses
    if (::bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0)
      return make_error("binding the pod socket: " + errno_text());
    if (workers > 1) {
      const int fanout = group | (PACKET_FANOUT_HASH << 16);  // no PACKET_FANOUT_FLAG_DEFRAG
      if (::setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof fanout) != 0)
        return make_error("PACKET_FANOUT on the pod sockets: " + errno_text());
    }
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

unsigned pod_receive(int fd, rte_mempool* pool, PodRxSpare& spare, rte_mbuf** pkts, unsigned* ifindex, unsigned max) {
  if (spare.count < max) {
    if (rte_pktmbuf_alloc_bulk(pool, spare.mbufs + spare.count, max - spare.count) == 0) spare.count = max;
    if (spare.count == 0) return 0;  // no mbufs: leave the frames in the socket
    max = std::min(max, spare.count);
  }
  mmsghdr msgs[kMaxBurst];
  iovec iov[kMaxBurst];
  sockaddr_ll from[kMaxBurst];
  // Take mbufs from the top of the spare stack; what is not filled stays there.
  rte_mbuf** m = spare.mbufs + spare.count - max;
  for (unsigned i = 0; i < max; ++i) {
    iov[i].iov_base = rte_pktmbuf_mtod(m[i], void*);
    iov[i].iov_len = rte_pktmbuf_tailroom(m[i]);
    msgs[i].msg_hdr = msghdr{};
    msgs[i].msg_hdr.msg_name = &from[i];
    msgs[i].msg_hdr.msg_namelen = sizeof from[i];
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  const int got = ::recvmmsg(fd, msgs, max, MSG_DONTWAIT, nullptr);
  if (got <= 0) return 0;
  const unsigned n = static_cast<unsigned>(got);
  for (unsigned i = 0; i < n; ++i) {
    rte_mbuf* mb = m[i];
    const unsigned len = std::min<unsigned>(msgs[i].msg_len, static_cast<unsigned>(iov[i].iov_len));
    mb->data_len = static_cast<std::uint16_t>(len);
    mb->pkt_len = len;
    pkts[i] = mb;
    ifindex[i] = (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) ? 0 : static_cast<unsigned>(from[i].sll_ifindex);
  }
  // The filled ones were the first n of the taken block: move the unfilled rest down.
  const unsigned keep = spare.count - max;
  std::memmove(spare.mbufs + keep, m + n, (max - n) * sizeof(rte_mbuf*));
  spare.count = keep + (max - n);
  return n;
}

std::uint16_t pod_send(int fd, unsigned ifindex, rte_mbuf** pkts, std::uint16_t n) {
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_ifindex = static_cast<int>(ifindex);
  to.sll_halen = 6;
  mmsghdr msgs[kTxStageCapacity];
  iovec iov[kTxStageCapacity][kMaxSegments];
  std::uint16_t ready = 0;
  for (; ready < n && ready < kTxStageCapacity; ++ready) {
    const rte_mbuf* seg = pkts[ready];
    unsigned k = 0;
    for (; seg != nullptr && k < kMaxSegments; seg = seg->next, ++k)
      iov[ready][k] = {rte_pktmbuf_mtod(seg, void*), seg->data_len};
    if (seg != nullptr) break;  // longer chain than we send: stop here, the caller frees it
    msgs[ready].msg_hdr = msghdr{};
    msgs[ready].msg_hdr.msg_name = &to;
    msgs[ready].msg_hdr.msg_namelen = sizeof to;
    msgs[ready].msg_hdr.msg_iov = iov[ready];
    msgs[ready].msg_hdr.msg_iovlen = k;
  }
  if (ready == 0) return 0;
  const int sent = ::sendmmsg(fd, msgs, ready, MSG_DONTWAIT);
  if (sent <= 0) return 0;
  rte_pktmbuf_free_bulk(pkts, static_cast<unsigned>(sent));
  return static_cast<std::uint16_t>(sent);
}

}  // namespace vxfed::dataplane
