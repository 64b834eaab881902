// pod_port_probe: which kernel mechanism should carry a pod's traffic into the dataplane?
//
// A standalone measurement (no DPDK) of the candidates for the host end of a pod's
// interface, on this kernel, with the pod's offloads ON (docs/pod-ports.md records the
// results and the decision):
//
//   packet-mmsg     one unbound AF_PACKET socket for every pod (PACKET_VNET_HDR,
//                   PACKET_IGNORE_OUTGOING, a classic BPF filter on the pods' ifindexes),
//                   recvmmsg()/sendmmsg() straight into/out of our buffers, demux by sll_ifindex
//   packet-v3       the same socket with a TPACKET_V3 RX ring (blocks retired by timeout)
//   packet-v2       the same socket with a TPACKET_V2 RX ring of 64 KiB frames
//   packet-perpod   one AF_PACKET socket per pod, bound to its interface, in one epoll set
//   tap             the pod's interface is a tap (IFF_VNET_HDR + TUNSETOFFLOAD) we hold the fd of
//   af-xdp          an AF_XDP socket with XDP_USE_SG on the host end of the veth (libxdp)
//
// Per mechanism: throughput of 64 KB GSO super-packets pod -> us (the pod's UDP socket with
// UDP_SEGMENT, the kernel's GSO path as TCP uses it) and us -> pod (GSO super-packets with a
// vnet header, received by a UDP_GRO socket in the pod), the small-packet rate and our CPU per
// packet, wake-up latency of a worker blocked in poll()/epoll_wait(), and, with N pods
// attached, attach time, memory, demultiplexing of one frame from every pod, the cost of one
// empty poll of all pods, and idle CPU.
//
// Runs as root; builds its own namespaces (ppb<pid>n for the node, ppb<pid>p/t for the pods)
// and removes them. JSON to --out (default perf/results/pod-ports-<UTC>.json).
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/if_xdp.h>
#include <linux/udp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/net/ipv4.hpp"
#include "common/net/mac.hpp"
#include "common/netns.hpp"

// linux/virtio_net.h names a member `class` (not C++): the 10-byte header and its values
// from the kernel's uapi, as the packet socket and the tap read and write it.
struct virtio_net_hdr {
  std::uint8_t flags;
  std::uint8_t gso_type;
  std::uint16_t hdr_len, gso_size, csum_start, csum_offset;  // little-endian (x86)
};
static_assert(sizeof(virtio_net_hdr) == 10);
constexpr std::uint8_t VIRTIO_NET_HDR_F_NEEDS_CSUM = 1;
constexpr std::uint8_t VIRTIO_NET_HDR_GSO_NONE = 0;
constexpr std::uint8_t VIRTIO_NET_HDR_GSO_UDP_L4 = 5;
#ifndef SOL_UDP
#define SOL_UDP 17
#endif
// Newer than Debian 12's kernel headers (6.1); values from the kernel's uapi.
#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20
#define TUN_F_USO6 0x40
#endif
#ifndef XDP_USE_SG
#define XDP_USE_SG (1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD (1 << 0)
#endif
#ifndef BPF_F_XDP_HAS_FRAGS
#define BPF_F_XDP_HAS_FRAGS (1U << 5)
#endif

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr unsigned kPodMtu = 8950;
constexpr unsigned kGsoSize = kPodMtu - 20 - 8;  // UDP payload per segment
constexpr unsigned kSegments = 7;                  // 62,454 bytes of payload per super-packet
constexpr unsigned kSuperPayload = kGsoSize * kSegments;
constexpr unsigned kBufSize = 65536 + 256;         // one frame of any size we may meet
constexpr unsigned kBurst = 64;
constexpr std::uint16_t kProbePort = 47001;        // UDP destination port of our frames
constexpr const char* kPodIp = "10.244.0.10";
constexpr const char* kGatewayIp = "10.244.0.1";
constexpr const char* kPodMac = "02:00:00:00:00:10";
constexpr const char* kGatewayMac = "02:76:78:00:03:e8";

std::string g_prefix;  // namespace prefix, ppb<pid>
bool g_keep = false;

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

void die(const std::string& what) {
  std::fprintf(stderr, "pod_port_probe: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(2);
}

// For errors that carry their own explanation (no errno behind them).
void fail(const std::string& what) {
  std::fprintf(stderr, "pod_port_probe: %s\n", what.c_str());
  std::exit(2);
}

void sh(const std::string& cmd) {
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "pod_port_probe: command failed: %s\n", cmd.c_str());
    std::exit(2);
  }
}

std::string node_ns() { return g_prefix + "n"; }

void cleanup() {
  if (g_prefix.empty() || g_keep) return;
  for (const char* s : {"n", "p", "t", "x"})
    std::system(("ip netns del " + g_prefix + s + " 2>/dev/null").c_str());
}

// Runs `work` inside namespace `name` (common/netns.hpp: on a thread of its own, so the
// caller never changes namespace); threads `work` starts are born in that namespace too.
void in_netns(const std::string& name, const std::function<void()>& work) {
  const vxfed::Status st = vxfed::run_in_netns("/run/netns/" + name, [&]() -> vxfed::Status {
    work();
    return {};
  });
  if (!st) fail(st.error());
}

unsigned ifindex_of(const std::string& name) {
  const unsigned i = if_nametoindex(name.c_str());
  if (i == 0) die("if_nametoindex " + name);
  return i;
}

std::uint64_t status_kib(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::strtoull(line.c_str() + std::strlen(key), nullptr, 10);
  return 0;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size())));
  return v[i];
}

// ---- frames ----

std::uint16_t ip_checksum(const void* data, std::size_t len) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < len; i += 2) sum += static_cast<std::uint32_t>(p[i] << 8 | p[i + 1]);
  if (len & 1) sum += static_cast<std::uint32_t>(p[len - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return htons(static_cast<std::uint16_t>(~sum));
}

void put_mac(const char* text, std::uint8_t* out) {
  const auto mac = vxfed::net::parse_mac(text);
  if (!mac) fail(std::string(text) + ": " + mac.error());
  std::memcpy(out, mac->data(), mac->size());
}

// A constant of this file as the network-order word a header or sockaddr holds.
std::uint32_t addr_be(const char* text) {
  const auto a = vxfed::net::Ipv4Addr::parse(text);
  if (!a) fail(std::string(text) + ": " + a.error());
  return a->to_network();
}

// Ethernet/IPv4/UDP from the gateway to the pod with `payload` bytes; for GSO the UDP
// checksum field holds the pseudo-header sum (CHECKSUM_PARTIAL), else 0 (none).
std::vector<std::uint8_t> udp_frame(unsigned payload, bool partial_csum) {
  std::vector<std::uint8_t> f(14 + 20 + 8 + payload, 0);
  put_mac(kPodMac, f.data());
  put_mac(kGatewayMac, f.data() + 6);
  f[12] = 0x08;
  auto* ip = reinterpret_cast<iphdr*>(f.data() + 14);
  ip->version = 4;
  ip->ihl = 5;
  ip->tot_len = htons(static_cast<std::uint16_t>(20 + 8 + payload));
  ip->frag_off = htons(0x4000);
  ip->ttl = 64;
  ip->protocol = IPPROTO_UDP;
  ip->saddr = addr_be(kGatewayIp);
  ip->daddr = addr_be(kPodIp);
  ip->check = ip_checksum(ip, 20);
  auto* udp = reinterpret_cast<udphdr*>(f.data() + 34);
  udp->source = htons(kProbePort);
  udp->dest = htons(kProbePort);
  udp->len = htons(static_cast<std::uint16_t>(8 + payload));
  if (partial_csum) {
    std::uint32_t sum = 0;
    const auto* a = reinterpret_cast<const std::uint8_t*>(&ip->saddr);
    for (int i = 0; i < 8; i += 2) sum += static_cast<std::uint32_t>(a[i] << 8 | a[i + 1]);
    sum += IPPROTO_UDP + 8 + payload;
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    udp->check = htons(static_cast<std::uint16_t>(sum));
  }
  return f;
}

// ---- mechanisms ----

struct RxFrame {
  unsigned ifindex = 0;
  unsigned len = 0;        // frame bytes (without vnet header)
  std::uint8_t gso_type = 0;
  std::uint8_t flags = 0;  // virtio_net_hdr flags
  const std::uint8_t* data = nullptr;
};

class Mechanism {
 public:
  virtual ~Mechanism() = default;
  virtual std::string name() const = 0;
  // Interfaces the "pods" use: for veth mechanisms the host ends exist already; a tap
  // mechanism creates them (names given) in the current namespace.
  virtual void attach(const std::vector<std::string>& host_ifaces) = 0;
  // Non-blocking: frames received so far (at most kBurst), copied into our buffers.
  virtual unsigned rx_burst(RxFrame* out) = 0;
  // Blocks until something may be readable (or timeout).
  virtual void wait(int timeout_ms) = 0;
  // Sends n copies of `frame` with vnet header `vh` to host interface `i` (index in attach
  // order). Returns frames accepted.
  virtual unsigned tx_burst(unsigned i, const virtio_net_hdr& vh, const std::vector<std::uint8_t>& frame, unsigned n) = 0;
  // Bytes we preallocate for the attached pods (rings, buffers), total.
  virtual std::uint64_t prealloc_bytes() const = 0;
  // Host-side ifindex of attached interface i.
  virtual unsigned ifindex(unsigned i) const = 0;
  virtual bool carries_gso() const { return true; }
};

// Per-worker receive buffers for recvmmsg: kBurst slots of a vnet header and one 64 KiB
// buffer each (the runtime uses mbuf chains instead).
struct MmsgSlots {
  virtio_net_hdr vh[kBurst];
  sockaddr_ll from[kBurst];
  iovec iov[kBurst][2];
  mmsghdr msgs[kBurst];
  std::vector<std::uint8_t> bufs = std::vector<std::uint8_t>(std::size_t{kBurst} * kBufSize);
  void reset() {
    for (unsigned i = 0; i < kBurst; ++i) {
      iov[i][0] = {&vh[i], sizeof(virtio_net_hdr)};
      iov[i][1] = {bufs.data() + std::size_t{i} * kBufSize, kBufSize};
      msgs[i].msg_hdr = msghdr{};
      msgs[i].msg_hdr.msg_name = &from[i];
      msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_ll);
      msgs[i].msg_hdr.msg_iov = iov[i];
      msgs[i].msg_hdr.msg_iovlen = 2;
    }
  }
  // Receives up to `max` frames into slots [first, first + max): what the kernel copies
  // straight into our buffers, the one copy of this mechanism.
  unsigned take(int fd, RxFrame* out, unsigned first = 0, unsigned max = kBurst) {
    reset();
    const int n = ::recvmmsg(fd, msgs + first, max, MSG_DONTWAIT, nullptr);
    if (n <= 0) return 0;
    for (int k = 0; k < n; ++k) {
      const unsigned i = first + static_cast<unsigned>(k);
      out[k].ifindex = static_cast<unsigned>(from[i].sll_ifindex);
      out[k].len = msgs[i].msg_len > sizeof(virtio_net_hdr) ? msgs[i].msg_len - sizeof(virtio_net_hdr) : 0;
      out[k].gso_type = vh[i].gso_type;
      out[k].flags = vh[i].flags;
      out[k].data = bufs.data() + std::size_t(i) * kBufSize;
    }
    return static_cast<unsigned>(n);
  }
};

int packet_socket(bool bound_later) {
  const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, bound_later ? 0 : htons(ETH_P_ALL));
  if (fd < 0) die("socket(AF_PACKET)");
  const int one = 1;
  if (::setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one) != 0) die("PACKET_VNET_HDR");
  if (::setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) != 0) die("PACKET_IGNORE_OUTGOING");
  const int rcvbuf = 16 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
  return fd;
}

unsigned packet_tx(int fd, unsigned ifindex, const virtio_net_hdr& vh, const std::vector<std::uint8_t>& frame, unsigned n) {
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_ifindex = static_cast<int>(ifindex);
  to.sll_protocol = htons(ETH_P_IP);
  to.sll_halen = 6;
  std::memcpy(to.sll_addr, frame.data(), 6);
  iovec iov[2] = {{const_cast<virtio_net_hdr*>(&vh), sizeof vh}, {const_cast<std::uint8_t*>(frame.data()), frame.size()}};
  mmsghdr msgs[kBurst];
  n = std::min(n, kBurst);
  for (unsigned i = 0; i < n; ++i) {
    msgs[i].msg_hdr = msghdr{};
    msgs[i].msg_hdr.msg_name = &to;
    msgs[i].msg_hdr.msg_namelen = sizeof to;
    msgs[i].msg_hdr.msg_iov = iov;
    msgs[i].msg_hdr.msg_iovlen = 2;
  }
  const int sent = ::sendmmsg(fd, msgs, n, 0);
  return sent < 0 ? 0 : static_cast<unsigned>(sent);
}

// Classic BPF: accept frames whose ifindex is one of `ifs`, reject the rest. Groups of up to
// 250 compares jump to an accept placed after them (jt is 8 bits).
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

void attach_filter(int fd, const std::vector<unsigned>& ifs) {
  auto prog = ifindex_filter(ifs);
  sock_fprog fp{static_cast<unsigned short>(prog.size()), prog.data()};
  if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &fp, sizeof fp) != 0) die("SO_ATTACH_FILTER");
}

void drain(int fd) {
  char buf[256];
  while (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
}

// One unbound socket for all pods, recvmmsg into our buffers.
class PacketShared : public Mechanism {
 public:
  explicit PacketShared(int ring_version) : ring_(ring_version) {}
  ~PacketShared() override {
    if (map_ != nullptr) ::munmap(map_, map_len_);
    if (fd_ >= 0) ::close(fd_);
  }
  std::string name() const override {
    return ring_ == 0 ? "packet-mmsg" : ring_ == 3 ? "packet-v3" : "packet-v2";
  }
  void attach(const std::vector<std::string>& ifaces) override {
    for (const auto& n : ifaces) ifs_.push_back(ifindex_of(n));
    fd_ = packet_socket(false);
    attach_filter(fd_, ifs_);
    if (ring_ == 3) {
      const int v = TPACKET_V3;
      if (::setsockopt(fd_, SOL_PACKET, PACKET_VERSION, &v, sizeof v) != 0) die("PACKET_VERSION 3");
      tpacket_req3 req{};
      req.tp_block_size = 1u << 18;
      req.tp_block_nr = 32;
      req.tp_frame_size = 2048;
      req.tp_frame_nr = req.tp_block_size / req.tp_frame_size * req.tp_block_nr;
      req.tp_retire_blk_tov = 1;  // ms: the shortest block timeout
      if (::setsockopt(fd_, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0) die("PACKET_RX_RING v3");
      block_size_ = req.tp_block_size;
      blocks_ = req.tp_block_nr;
      map_len_ = std::size_t{block_size_} * blocks_;
    } else if (ring_ == 2) {
      const int v = TPACKET_V2;
      if (::setsockopt(fd_, SOL_PACKET, PACKET_VERSION, &v, sizeof v) != 0) die("PACKET_VERSION 2");
      tpacket_req req{};
      req.tp_frame_size = 69632;  // 64 KiB frame + vnet header + TPACKET2 header, 17 pages
      req.tp_block_size = req.tp_frame_size;
      req.tp_block_nr = 128;
      req.tp_frame_nr = 128;
      if (::setsockopt(fd_, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0) die("PACKET_RX_RING v2");
      block_size_ = req.tp_frame_size;
      blocks_ = req.tp_frame_nr;
      map_len_ = std::size_t{block_size_} * blocks_;
    }
    if (map_len_ != 0) {
      map_ = static_cast<std::uint8_t*>(::mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_LOCKED, fd_, 0));
      if (map_ == MAP_FAILED) die("mmap ring");
    } else {
      drain(fd_);
    }
  }
  unsigned rx_burst(RxFrame* out) override {
    if (ring_ == 0) return slots_.take(fd_, out);
    unsigned n = 0;
    if (ring_ == 2) {
      while (n < kBurst) {
        auto* h = reinterpret_cast<tpacket2_hdr*>(map_ + std::size_t{cur_} * block_size_);
        if ((__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) == 0) break;
        copy_out(reinterpret_cast<std::uint8_t*>(h), h->tp_mac, h->tp_snaplen,
                 reinterpret_cast<sockaddr_ll*>(reinterpret_cast<std::uint8_t*>(h) + TPACKET_ALIGN(sizeof(tpacket2_hdr))),
                 out[n], n);
        ++n;
        __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        cur_ = (cur_ + 1) % blocks_;
      }
      return n;
    }
    // V3: a block becomes ours when the kernel retires it (full, or its timeout).
    while (n < kBurst) {
      auto* b = reinterpret_cast<tpacket_block_desc*>(map_ + std::size_t{cur_} * block_size_);
      if ((__atomic_load_n(&b->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) == 0) break;
      if (in_block_ == 0) {
        pkt_ = reinterpret_cast<std::uint8_t*>(b) + b->hdr.bh1.offset_to_first_pkt;
        left_ = b->hdr.bh1.num_pkts;
        in_block_ = 1;
      }
      while (left_ > 0 && n < kBurst) {
        auto* h = reinterpret_cast<tpacket3_hdr*>(pkt_);
        copy_out(pkt_, h->tp_mac, h->tp_snaplen, reinterpret_cast<sockaddr_ll*>(pkt_ + TPACKET_ALIGN(sizeof(tpacket3_hdr))), out[n], n);
        ++n;
        --left_;
        pkt_ += h->tp_next_offset;
      }
      if (left_ == 0) {
        __atomic_store_n(&b->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        cur_ = (cur_ + 1) % blocks_;
        in_block_ = 0;
      }
    }
    return n;
  }
  void wait(int timeout_ms) override {
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, timeout_ms);
  }
  unsigned tx_burst(unsigned i, const virtio_net_hdr& vh, const std::vector<std::uint8_t>& f, unsigned n) override {
    return packet_tx(fd_, ifs_[i], vh, f, n);
  }
  std::uint64_t prealloc_bytes() const override {
    return ring_ == 0 ? std::uint64_t{kBurst} * kBufSize : map_len_ + std::uint64_t{kBurst} * kBufSize;
  }
  unsigned ifindex(unsigned i) const override { return ifs_[i]; }

 private:
  // The ring frame's copy into our buffer (the runtime's mbufs), vnet header before tp_mac.
  void copy_out(std::uint8_t* base, unsigned mac, unsigned len, const sockaddr_ll* sll, RxFrame& f, unsigned slot) {
    const auto* vh = reinterpret_cast<const virtio_net_hdr*>(base + mac - sizeof(virtio_net_hdr));
    std::uint8_t* dst = slots_.bufs.data() + std::size_t{slot} * kBufSize;
    std::memcpy(dst, base + mac, std::min(len, kBufSize));
    f.ifindex = static_cast<unsigned>(sll->sll_ifindex);
    f.len = len;
    f.gso_type = vh->gso_type;
    f.flags = vh->flags;
    f.data = dst;
  }

  int ring_;
  int fd_ = -1;
  std::vector<unsigned> ifs_;
  MmsgSlots slots_;
  std::uint8_t* map_ = nullptr;
  std::size_t map_len_ = 0;
  unsigned block_size_ = 0, blocks_ = 0, cur_ = 0;
  unsigned in_block_ = 0, left_ = 0;
  std::uint8_t* pkt_ = nullptr;
};

// One bound socket per pod in an epoll set.
class PacketPerPod : public Mechanism {
 public:
  ~PacketPerPod() override {
    for (int fd : fds_) ::close(fd);
    if (ep_ >= 0) ::close(ep_);
  }
  std::string name() const override { return "packet-perpod"; }
  void attach(const std::vector<std::string>& ifaces) override {
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    for (const auto& n : ifaces) {
      const unsigned ifi = ifindex_of(n);
      const int fd = packet_socket(true);
      sockaddr_ll a{};
      a.sll_family = AF_PACKET;
      a.sll_protocol = htons(ETH_P_ALL);
      a.sll_ifindex = static_cast<int>(ifi);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("bind " + n);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = static_cast<std::uint32_t>(fds_.size());
      if (::epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl");
      fds_.push_back(fd);
      ifs_.push_back(ifi);
    }
  }
  unsigned rx_burst(RxFrame* out) override {
    epoll_event evs[kBurst];
    const int ready = ::epoll_wait(ep_, evs, kBurst, 0);
    unsigned n = 0;
    for (int i = 0; i < ready && n < kBurst; ++i)  // one recvmmsg per ready pod
      n += slots_.take(fds_[evs[i].data.u32], out + n, n, kBurst - n);
    return n;
  }
  void wait(int timeout_ms) override {
    epoll_event ev;
    // Level-triggered: readiness stays reported until rx_burst drains it.
    ::epoll_wait(ep_, &ev, 1, timeout_ms);
  }
  unsigned tx_burst(unsigned i, const virtio_net_hdr& vh, const std::vector<std::uint8_t>& f, unsigned n) override {
    return packet_tx(fds_[i], ifs_[i], vh, f, n);
  }
  std::uint64_t prealloc_bytes() const override { return std::uint64_t{kBurst} * kBufSize; }
  unsigned ifindex(unsigned i) const override { return ifs_[i]; }

 private:
  int ep_ = -1;
  std::vector<int> fds_;
  std::vector<unsigned> ifs_;
  MmsgSlots slots_;
};

// The pod's interface is a tap whose fd we hold: read()/write() with a vnet header.
class Tap : public Mechanism {
 public:
  ~Tap() override {
    for (int fd : fds_) ::close(fd);
    if (ep_ >= 0) ::close(ep_);
  }
  std::string name() const override { return "tap"; }
  void attach(const std::vector<std::string>& ifaces) override {
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    for (const auto& n : ifaces) {
      const int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0) die("open /dev/net/tun");
      ifreq ifr{};
      std::strncpy(ifr.ifr_name, n.c_str(), IFNAMSIZ - 1);
      ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
      if (::ioctl(fd, TUNSETIFF, &ifr) != 0) die("TUNSETIFF " + n);
      int hdr = sizeof(virtio_net_hdr);
      if (::ioctl(fd, TUNSETVNETHDRSZ, &hdr) != 0) die("TUNSETVNETHDRSZ");
      const unsigned off = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_USO4 | TUN_F_USO6;
      if (::ioctl(fd, TUNSETOFFLOAD, off) != 0) die("TUNSETOFFLOAD");
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = static_cast<std::uint32_t>(fds_.size());
      if (::epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl");
      fds_.push_back(fd);
      ifs_.push_back(ifindex_of(n));
    }
  }
  unsigned rx_burst(RxFrame* out) override {
    epoll_event evs[kBurst];
    const int ready = ::epoll_wait(ep_, evs, kBurst, 0);
    unsigned n = 0;
    for (int i = 0; i < ready && n < kBurst; ++i) {
      const unsigned pod = evs[i].data.u32;
      while (n < kBurst) {  // one read() per frame: tap has no batch read
        iovec iov[2] = {{&vh_[n], sizeof(virtio_net_hdr)}, {bufs_.data() + std::size_t{n} * kBufSize, kBufSize}};
        const ssize_t r = ::readv(fds_[pod], iov, 2);
        if (r <= 0) break;
        out[n].ifindex = ifs_[pod];
        out[n].len = static_cast<unsigned>(r) - sizeof(virtio_net_hdr);
        out[n].gso_type = vh_[n].gso_type;
        out[n].flags = vh_[n].flags;
        out[n].data = bufs_.data() + std::size_t{n} * kBufSize;
        ++n;
      }
    }
    return n;
  }
  void wait(int timeout_ms) override {
    epoll_event ev;
    ::epoll_wait(ep_, &ev, 1, timeout_ms);
  }
  unsigned tx_burst(unsigned i, const virtio_net_hdr& vh, const std::vector<std::uint8_t>& f, unsigned n) override {
    unsigned done = 0;
    for (; done < n; ++done) {
      iovec iov[2] = {{const_cast<virtio_net_hdr*>(&vh), sizeof vh}, {const_cast<std::uint8_t*>(f.data()), f.size()}};
      if (::writev(fds_[i], iov, 2) < 0) break;
    }
    return done;
  }
  std::uint64_t prealloc_bytes() const override { return std::uint64_t{kBurst} * kBufSize; }
  unsigned ifindex(unsigned i) const override { return ifs_[i]; }

 private:
  int ep_ = -1;
  std::vector<int> fds_;
  std::vector<unsigned> ifs_;
  virtio_net_hdr vh_[kBurst];
  std::vector<std::uint8_t> bufs_ = std::vector<std::uint8_t>(std::size_t{kBurst} * kBufSize);
};

// AF_XDP on the host end of the veth, copy mode, multi-buffer (XDP_USE_SG): frames arrive in
// 4 KiB chunks without any GSO or checksum metadata. Our own 5-instruction redirect program
// (loaded with BPF_F_XDP_HAS_FRAGS: veth refuses XDP above ~3.5 KB MTU without it).
class AfXdp : public Mechanism {
 public:
  ~AfXdp() override {
    if (xsk_ != nullptr) xsk_socket__delete(xsk_);
    if (umem_ != nullptr) xsk_umem__delete(umem_);
    if (ifindex_ != 0) bpf_xdp_detach(static_cast<int>(ifindex_), 0, nullptr);
    if (prog_ >= 0) ::close(prog_);
    if (map_ >= 0) ::close(map_);
    if (area_ != nullptr) ::munmap(area_, kFrames * kFrame);
  }
  std::string name() const override { return "af-xdp"; }
  bool carries_gso() const override { return false; }
  void attach(const std::vector<std::string>& ifaces) override {
    ifindex_ = ifindex_of(ifaces.at(0));
    map_ = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "probe_xsks", 4, 4, 1, nullptr);
    if (map_ < 0) throw std::runtime_error("XSKMAP: " + std::string(std::strerror(errno)));
    bpf_insn insns[] = {
        // r2 = ctx->rx_queue_index; r1 = map; r3 = XDP_PASS; call redirect_map; exit
        {BPF_LDX | BPF_W | BPF_MEM, 2, 1, 16, 0},
        {BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_FD, 0, map_},
        {0, 0, 0, 0, 0},
        {BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, 2},
        {BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_redirect_map},
        {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
    };
    LIBBPF_OPTS(bpf_prog_load_opts, opts, .prog_flags = BPF_F_XDP_HAS_FRAGS);
    prog_ = bpf_prog_load(BPF_PROG_TYPE_XDP, "probe_redirect", "GPL", insns, 6, &opts);
    if (prog_ < 0) throw std::runtime_error("XDP program load: " + std::string(std::strerror(errno)));
    if (int rc = bpf_xdp_attach(static_cast<int>(ifindex_), prog_, XDP_FLAGS_DRV_MODE, nullptr); rc != 0)
      throw std::runtime_error("XDP attach (native, veth) at MTU " + std::to_string(kPodMtu) + ": " + std::strerror(-rc));
    area_ = ::mmap(nullptr, kFrames * kFrame, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    xsk_umem_config ucfg{kFrames / 2, kFrames / 2, kFrame, 0, 0};
    if (int rc = xsk_umem__create(&umem_, area_, kFrames * kFrame, &fill_, &comp_, &ucfg); rc != 0)
      throw std::runtime_error("xsk_umem__create: " + std::string(std::strerror(-rc)));
    xsk_socket_config scfg{};
    scfg.rx_size = kFrames / 2;
    scfg.tx_size = 64;
    scfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
    scfg.bind_flags = XDP_USE_SG | XDP_COPY;
    if (int rc = xsk_socket__create(&xsk_, ifaces.at(0).c_str(), 0, umem_, &rx_, &tx_, &scfg); rc != 0)
      throw std::runtime_error("xsk_socket__create with XDP_USE_SG: " + std::string(std::strerror(-rc)));
    const int fd = xsk_socket__fd(xsk_);
    const std::uint32_t key = 0;
    if (bpf_map_update_elem(map_, &key, &fd, 0) != 0) throw std::runtime_error("xskmap update");
    std::uint32_t idx = 0;
    const unsigned n = xsk_ring_prod__reserve(&fill_, kFrames / 2, &idx);
    for (unsigned i = 0; i < n; ++i) *xsk_ring_prod__fill_addr(&fill_, idx + i) = std::uint64_t{i} * kFrame;
    xsk_ring_prod__submit(&fill_, n);
  }
  unsigned rx_burst(RxFrame* out) override {
    std::uint32_t idx = 0;
    const unsigned got = xsk_ring_cons__peek(&rx_, kBurst, &idx);
    unsigned n = 0;
    std::uint32_t fidx = 0;
    xsk_ring_prod__reserve(&fill_, got, &fidx);
    for (unsigned i = 0; i < got; ++i) {
      const xdp_desc* d = xsk_ring_cons__rx_desc(&rx_, idx + i);
      // Reassemble the chunks of one frame into our buffer (what a runtime would do for mbufs).
      std::memcpy(buf_.data() + acc_, xsk_umem__get_data(area_, d->addr), std::min<std::size_t>(d->len, kBufSize - acc_));
      acc_ += d->len;
      ++chunks_;
      *xsk_ring_prod__fill_addr(&fill_, fidx + i) = xsk_umem__extract_addr(d->addr);
      if ((d->options & XDP_PKT_CONTD) == 0) {
        out[n].ifindex = ifindex_;
        out[n].len = static_cast<unsigned>(acc_);
        out[n].data = buf_.data();
        ++n;
        acc_ = 0;
      }
    }
    xsk_ring_prod__submit(&fill_, got);
    xsk_ring_cons__release(&rx_, got);
    return n;
  }
  void wait(int timeout_ms) override {
    pollfd p{xsk_socket__fd(xsk_), POLLIN, 0};
    ::poll(&p, 1, timeout_ms);
  }
  unsigned tx_burst(unsigned, const virtio_net_hdr&, const std::vector<std::uint8_t>&, unsigned) override { return 0; }
  std::uint64_t prealloc_bytes() const override { return std::uint64_t{kFrames} * kFrame; }
  unsigned ifindex(unsigned) const override { return ifindex_; }
  std::uint64_t chunks() const { return chunks_; }

 private:
  static constexpr unsigned kFrames = 8192, kFrame = 4096;
  unsigned ifindex_ = 0;
  int map_ = -1, prog_ = -1;
  void* area_ = nullptr;
  xsk_umem* umem_ = nullptr;
  xsk_socket* xsk_ = nullptr;
  xsk_ring_prod fill_{}, tx_{};
  xsk_ring_cons comp_{}, rx_{};
  std::vector<std::uint8_t> buf_ = std::vector<std::uint8_t>(kBufSize);
  std::size_t acc_ = 0;
  std::uint64_t chunks_ = 0;
};

std::unique_ptr<Mechanism> make(const std::string& name) {
  if (name == "packet-mmsg") return std::make_unique<PacketShared>(0);
  if (name == "packet-v3") return std::make_unique<PacketShared>(3);
  if (name == "packet-v2") return std::make_unique<PacketShared>(2);
  if (name == "packet-perpod") return std::make_unique<PacketPerPod>();
  if (name == "tap") return std::make_unique<Tap>();
  if (name == "af-xdp") return std::make_unique<AfXdp>();
  std::fprintf(stderr, "unknown mechanism %s\n", name.c_str());
  std::exit(2);
}

// ---- the pod ----

// Configures the pod end (eth0 in `pod_ns`): address, gateway route, static neighbour,
// offloads left at their defaults (on).
void configure_pod(const std::string& pod_ns) {
  const std::string n = "ip -n " + pod_ns + " ";
  sh(n + "link set lo up");
  sh(n + "link set eth0 address " + kPodMac + " mtu " + std::to_string(kPodMtu) + " up");
  sh(n + "addr add " + kPodIp + "/32 dev eth0");
  sh(n + "route add " + kGatewayIp + " dev eth0 scope link");
  sh(n + "route add default via " + kGatewayIp + " dev eth0");
  sh(n + "neigh add " + kGatewayIp + " lladdr " + kGatewayMac + " dev eth0 nud permanent");
}

// Sends from inside the pod with its UDP stack: super-packets (UDP_SEGMENT) or small
// datagrams, or one timestamped datagram per `gap_us` (wake-up latency), until stop.
void pod_sender(const std::string& pod_ns, unsigned payload, bool gso, unsigned gap_us, unsigned count,
                const std::atomic<bool>& stop, std::atomic<std::uint64_t>& sent) {
  in_netns(pod_ns, [&] {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (gso) {
      const int seg = kGsoSize;
      if (::setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof seg) != 0) die("UDP_SEGMENT");
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(kProbePort);
    to.sin_addr.s_addr = addr_be("10.245.0.10");  // off-pod: routed to the gateway
    if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) die("connect");
    std::vector<std::uint8_t> buf(payload, 0x5a);
    std::uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed) && (count == 0 || n < count)) {
      if (gap_us != 0) {
        const std::uint64_t t = now_ns();
        std::memcpy(buf.data(), &t, sizeof t);
      }
      if (::send(fd, buf.data(), buf.size(), 0) > 0) ++n;
      if (gap_us != 0) std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
    }
    sent.store(n);
    ::close(fd);
  });
}

struct PodReceiver {
  std::atomic<std::uint64_t> bytes{0}, datagrams{0};
};

void pod_receiver(const std::string& pod_ns, const std::atomic<bool>& stop, PodReceiver& r) {
  in_netns(pod_ns, [&] {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const int one = 1, rcvbuf = 32 << 20;
    ::setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    timeval tv{0, 100'000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(kProbePort);
    a.sin_addr.s_addr = addr_be(kPodIp);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("bind pod receiver");
    std::vector<std::uint8_t> buf(kBufSize);
    while (!stop.load(std::memory_order_relaxed)) {
      const ssize_t got = ::recv(fd, buf.data(), buf.size(), 0);
      if (got > 0) {
        r.bytes.fetch_add(static_cast<std::uint64_t>(got), std::memory_order_relaxed);
        r.datagrams.fetch_add(1, std::memory_order_relaxed);
      }
    }
    ::close(fd);
  });
}

bool ours(const RxFrame& f) {
  if (f.len < 42 || f.data[12] != 0x08 || f.data[13] != 0x00 || f.data[23] != IPPROTO_UDP) return false;
  std::uint16_t port;
  std::memcpy(&port, f.data + 36, 2);
  return ntohs(port) == kProbePort;
}

// ---- measurements ----

struct RxResult {
  double gbps = 0, frames_per_s = 0, cpu_ns_per_frame = 0, cpu_pct = 0, busy_ns_per_frame = 0;
  std::uint64_t frames = 0, gso_frames = 0, max_len = 0, sent = 0;
};

// Pod -> us for `seconds`: the receiver polls without blocking (a busy worker).
RxResult measure_rx(Mechanism& m, const std::string& pod_ns, unsigned payload, bool gso, double seconds) {
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> sent{0};
  RxFrame frames[kBurst];
  while (m.rx_burst(frames) != 0) {
  }
  std::thread sender(pod_sender, pod_ns, payload, gso, 0u, 0u, std::cref(stop), std::ref(sent));
  RxResult r;
  std::uint64_t bytes = 0;
  const auto t0 = Clock::now();
  const std::uint64_t c0 = thread_cpu_ns();
  const auto until = t0 + std::chrono::duration<double>(seconds);
  std::uint64_t busy_ns = 0;  // wall time inside calls that returned frames
  while (Clock::now() < until) {
    const std::uint64_t b0 = now_ns();
    const unsigned n = m.rx_burst(frames);
    if (n != 0) busy_ns += now_ns() - b0;
    for (unsigned i = 0; i < n; ++i) {
      if (!ours(frames[i])) continue;
      ++r.frames;
      bytes += frames[i].len;
      if (frames[i].gso_type != VIRTIO_NET_HDR_GSO_NONE) ++r.gso_frames;
      r.max_len = std::max<std::uint64_t>(r.max_len, frames[i].len);
    }
  }
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::uint64_t cpu = thread_cpu_ns() - c0;
  stop = true;
  sender.join();
  r.sent = sent.load();
  r.gbps = static_cast<double>(bytes) * 8 / dt / 1e9;
  r.frames_per_s = static_cast<double>(r.frames) / dt;
  r.cpu_ns_per_frame = r.frames ? static_cast<double>(cpu) / static_cast<double>(r.frames) : 0;
  r.cpu_pct = static_cast<double>(cpu) / (dt * 1e9) * 100;
  r.busy_ns_per_frame = r.frames ? static_cast<double>(busy_ns) / static_cast<double>(r.frames) : 0;
  return r;
}

struct TxResult {
  double gbps = 0, cpu_ns_per_frame = 0;
  std::uint64_t frames = 0, delivered_bytes = 0, delivered_datagrams = 0;
};

// Us -> pod: GSO super-packets with NEEDS_CSUM, received whole by the pod's UDP_GRO socket.
TxResult measure_tx(Mechanism& m, const std::string& pod_ns, double seconds) {
  std::atomic<bool> stop{false};
  PodReceiver recv;
  std::thread receiver(pod_receiver, pod_ns, std::cref(stop), std::ref(recv));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto frame = udp_frame(kSuperPayload, true);
  virtio_net_hdr vh{};
  vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
  vh.gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
  vh.hdr_len = 42;
  vh.gso_size = kGsoSize;
  vh.csum_start = 34;
  vh.csum_offset = 6;
  TxResult r;
  const auto t0 = Clock::now();
  const std::uint64_t c0 = thread_cpu_ns();
  const auto until = t0 + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    const unsigned n = m.tx_burst(0, vh, frame, 8);
    r.frames += n;
    if (n == 0) std::this_thread::yield();
  }
  const std::uint64_t cpu = thread_cpu_ns() - c0;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count() - 0.3;
  stop = true;
  receiver.join();
  r.delivered_bytes = recv.bytes.load();
  r.delivered_datagrams = recv.datagrams.load();
  r.gbps = static_cast<double>(r.delivered_bytes) * 8 / dt / 1e9;
  r.cpu_ns_per_frame = r.frames ? static_cast<double>(cpu) / static_cast<double>(r.frames) : 0;
  return r;
}

struct WakeResult {
  double p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
  std::size_t samples = 0;
};

// A pod sends one timestamped datagram every `gap_us`; the receiver blocks in wait() between
// them, as an idle worker does. Latency = pod's send() -> frame in our hands.
WakeResult measure_wake(Mechanism& m, const std::string& pod_ns, unsigned count, unsigned gap_us) {
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> sent{0};
  RxFrame frames[kBurst];
  while (m.rx_burst(frames) != 0) {
  }
  std::vector<double> lat;
  std::thread sender(pod_sender, pod_ns, 64u, false, gap_us, count, std::cref(stop), std::ref(sent));
  const auto until = Clock::now() + std::chrono::microseconds(std::uint64_t{count} * (gap_us + 200) + 2'000'000);
  while (lat.size() < count && Clock::now() < until) {
    m.wait(100);
    const unsigned n = m.rx_burst(frames);
    const std::uint64_t t = now_ns();
    for (unsigned i = 0; i < n; ++i) {
      if (!ours(frames[i]) || frames[i].len < 42 + 8) continue;
      std::uint64_t ts;
      std::memcpy(&ts, frames[i].data + 42, sizeof ts);
      lat.push_back(static_cast<double>(t - ts) / 1000.0);
    }
  }
  stop = true;
  sender.join();
  WakeResult r;
  r.samples = lat.size();
  r.p50_us = percentile(lat, 50);
  r.p99_us = percentile(lat, 99);
  r.p999_us = percentile(lat, 99.9);
  r.max_us = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end());
  return r;
}

struct CapacityResult {
  unsigned pods = 0, received = 0, misrouted = 0;
  double attach_ms = 0, empty_poll_ns = 0, idle_cpu_pct = 0;
  std::int64_t rss_kib = 0, locked_kib = 0;
  std::uint64_t prealloc = 0;
};

// N pods on one worker: veth pairs h<i>/p<i> (or taps t<i>) in the node namespace; one frame
// sent into each; every one must come out with the right pod's ifindex.
CapacityResult measure_capacity(const std::string& mech, unsigned pods) {
  CapacityResult r;
  r.pods = pods;
  const bool tap = mech == "tap";
  std::vector<std::string> host, peer;
  {
    std::ofstream batch("/tmp/" + g_prefix + ".batch");
    for (unsigned i = 0; i < pods; ++i) {
      host.push_back((tap ? "t" : "c") + std::to_string(i));
      peer.push_back("q" + std::to_string(i));
      if (!tap) batch << "link add " << host.back() << " mtu 1500 type veth peer name " << peer.back() << "\n";
    }
  }
  if (!tap) sh("ip -n " + node_ns() + " -batch /tmp/" + g_prefix + ".batch");
  const std::int64_t rss0 = static_cast<std::int64_t>(status_kib("VmRSS:"));
  const std::int64_t lck0 = static_cast<std::int64_t>(status_kib("VmLck:"));
  auto m = make(mech);
  const auto t0 = Clock::now();
  m->attach(host);
  r.attach_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  r.rss_kib = static_cast<std::int64_t>(status_kib("VmRSS:")) - rss0;
  r.locked_kib = static_cast<std::int64_t>(status_kib("VmLck:")) - lck0;
  r.prealloc = m->prealloc_bytes();
  {
    std::ofstream batch("/tmp/" + g_prefix + ".batch");
    for (unsigned i = 0; i < pods; ++i) {
      if (!tap) batch << "link set " << peer[i] << " up\n";
      batch << "link set " << host[i] << " up\n";
    }
  }
  sh("ip -n " + node_ns() + " -batch /tmp/" + g_prefix + ".batch");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  RxFrame frames[kBurst];
  while (m->rx_burst(frames) != 0) {
  }
  // One frame into each pod's interface, from the pod side (veth peer, or the tap's netdev).
  const int tx = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  auto f = udp_frame(64, false);
  for (unsigned i = 0; i < pods; ++i) {
    const std::uint32_t id = i;
    std::memcpy(f.data() + 42, &id, sizeof id);
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = static_cast<int>(ifindex_of(tap ? host[i] : peer[i]));
    to.sll_halen = 6;
    if (::sendto(tx, f.data(), f.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0) die("sendto " + peer[i]);
  }
  ::close(tx);
  const auto until = Clock::now() + std::chrono::seconds(3);
  while (r.received + r.misrouted < pods && Clock::now() < until) {
    m->wait(100);
    const unsigned n = m->rx_burst(frames);
    for (unsigned k = 0; k < n; ++k) {
      if (!ours(frames[k])) continue;
      std::uint32_t id;
      std::memcpy(&id, frames[k].data + 42, sizeof id);
      if (id < pods && frames[k].ifindex == m->ifindex(id)) ++r.received;
      else ++r.misrouted;
    }
  }
  // A busy worker's look at every pod when nothing arrived.
  constexpr unsigned kPolls = 20000;
  const auto p0 = Clock::now();
  for (unsigned k = 0; k < kPolls; ++k) m->rx_burst(frames);
  r.empty_poll_ns = std::chrono::duration<double, std::nano>(Clock::now() - p0).count() / kPolls;
  // An idle worker blocked on all of them (100 ms safety timeout as the runtime's).
  const std::uint64_t c0 = thread_cpu_ns();
  const auto i0 = Clock::now();
  while (Clock::now() - i0 < std::chrono::seconds(2)) {
    m->wait(100);
    m->rx_burst(frames);
  }
  r.idle_cpu_pct = static_cast<double>(thread_cpu_ns() - c0) /
                   std::chrono::duration<double, std::nano>(Clock::now() - i0).count() * 100;
  m.reset();
  if (!tap) {
    std::ofstream batch("/tmp/" + g_prefix + ".batch");
    for (unsigned i = 0; i < pods; ++i) batch << "link del " << host[i] << "\n";
  }
  if (!tap) sh("ip -n " + node_ns() + " -batch /tmp/" + g_prefix + ".batch");
  std::remove(("/tmp/" + g_prefix + ".batch").c_str());
  return r;
}

void on_signal(int) {
  cleanup();
  std::_Exit(130);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Compares pod-port mechanisms for the dataplane (docs/pod-ports.md)"};
  std::vector<std::string> mechs{"packet-mmsg", "packet-v3", "packet-v2", "packet-perpod", "tap", "af-xdp"};
  double seconds = 2;
  unsigned pods = 250, wake_samples = 2000, wake_gap_us = 500, rounds = 3;
  std::string out;
  app.add_option("--mechanisms", mechs, "which to measure")->delimiter(',');
  app.add_option("--seconds", seconds, "per throughput measurement");
  app.add_option("--rounds", rounds, "rounds over all mechanisms (alternating order)");
  app.add_option("--pods", pods, "pods on one worker for the capacity measurement (0: skip)");
  app.add_option("--wake-samples", wake_samples, "wake-up latency samples");
  app.add_option("--wake-gap-us", wake_gap_us, "gap between wake-up samples");
  app.add_option("--out", out, "JSON output (default perf/results/pod-ports-<UTC>.json)");
  app.add_flag("--keep", g_keep, "leave the namespaces (debugging)");
  CLI11_PARSE(app, argc, argv);
  if (::geteuid() != 0) {
    std::fprintf(stderr, "pod_port_probe: needs root (namespaces, veths, taps)\n");
    return 77;
  }
  if (out.empty()) {
    char t[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(t, sizeof t, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
    ::mkdir("perf/results", 0755);
    out = std::string("perf/results/pod-ports-") + t + ".json";
  }
  g_prefix = "ppb" + std::to_string(::getpid());
  std::atexit(cleanup);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  ::setrlimit(RLIMIT_MEMLOCK, &unlimited);

  // The node, a veth pod (p) and a tap pod (t).
  const std::string n = node_ns(), pod = g_prefix + "p", tpod = g_prefix + "t";
  sh("ip netns add " + n);
  sh("ip netns add " + pod);
  sh("ip netns add " + tpod);
  sh("ip netns exec " + n + " sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1");
  sh("ip -n " + n + " link set lo up");
  sh("ip -n " + n + " link add h0 mtu " + std::to_string(kPodMtu) + " type veth peer name eth0 netns " + pod);
  sh("ip -n " + n + " link set h0 up");
  configure_pod(pod);
  // The rest runs in the node's namespace, where the mechanisms attach to h0.
  in_netns(n, [&] {

    json results = json::object();
    results["kernel"] = [] {
      utsname u{};
      ::uname(&u);
      return std::string(u.release);
    }();
    results["config"] = {{"seconds", seconds}, {"rounds", rounds}, {"pods", pods}, {"pod_mtu", kPodMtu},
                         {"gso_size", kGsoSize}, {"super_payload", kSuperPayload}};
    json& per = results["mechanisms"];
    // Rounds alternate the order of the mechanisms so that the machine's load, which swings
    // by 2x within minutes here, falls on all of them alike; the summary is the median.
    for (unsigned round = 0; round < rounds; ++round) {
    std::vector<std::string> order = mechs;
    if (round % 2 == 1) std::reverse(order.begin(), order.end());
    for (const auto& mech : order) {
      json j;
      std::printf("== round %u: %s\n", round + 1, mech.c_str());
      std::fflush(stdout);
      try {
        const bool tap = mech == "tap";
        std::string pod_ns = pod;
        std::unique_ptr<Mechanism> m = make(mech);
        if (tap) {
          // The tap's netdev becomes the pod's eth0; we keep the fd.
          m->attach({"tp0"});
          sh("ip -n " + n + " link set tp0 netns " + tpod + " name eth0");
          configure_pod(tpod);
          pod_ns = tpod;
        } else {
          m->attach({"h0"});
        }
        const RxResult big = measure_rx(*m, pod_ns, kSuperPayload, true, seconds);
        const RxResult small = measure_rx(*m, pod_ns, 22, false, seconds);
        j["rx_super"] = {{"gbps", big.gbps}, {"frames_per_s", big.frames_per_s}, {"frames", big.frames},
                         {"gso_frames", big.gso_frames}, {"max_frame", big.max_len}, {"sent", big.sent},
                         {"cpu_ns_per_frame", big.cpu_ns_per_frame}, {"busy_ns_per_frame", big.busy_ns_per_frame}};
        j["rx_64"] = {{"frames_per_s", small.frames_per_s}, {"frames", small.frames}, {"sent", small.sent},
                      {"cpu_ns_per_frame", small.cpu_ns_per_frame}, {"busy_ns_per_frame", small.busy_ns_per_frame}};
        std::printf("  rx super-packets: %.2f Gbit/s, %.0f frames/s, %llu of %llu GSO, largest %llu B, %.0f ns per frame in non-empty calls\n",
                    big.gbps, big.frames_per_s, static_cast<unsigned long long>(big.gso_frames),
                    static_cast<unsigned long long>(big.frames), static_cast<unsigned long long>(big.max_len), big.busy_ns_per_frame);
        std::printf("  rx 64 B: %.0f frames/s (pod sent %llu), %.0f ns per frame in non-empty calls\n", small.frames_per_s,
                    static_cast<unsigned long long>(small.sent), small.busy_ns_per_frame);
        if (m->carries_gso()) {
          const TxResult tx = measure_tx(*m, pod_ns, seconds);
          j["tx_super"] = {{"gbps", tx.gbps}, {"frames", tx.frames}, {"delivered_bytes", tx.delivered_bytes},
                           {"delivered_datagrams", tx.delivered_datagrams}, {"cpu_ns_per_frame", tx.cpu_ns_per_frame}};
          std::printf("  tx super-packets: %.2f Gbit/s delivered to the pod's socket (%llu sent, %llu datagrams), %.0f ns CPU/frame\n",
                      tx.gbps, static_cast<unsigned long long>(tx.frames),
                      static_cast<unsigned long long>(tx.delivered_datagrams), tx.cpu_ns_per_frame);
        }
        const WakeResult w = measure_wake(*m, pod_ns, wake_samples, wake_gap_us);
        j["wake_us"] = {{"p50", w.p50_us}, {"p99", w.p99_us}, {"p999", w.p999_us}, {"max", w.max_us}, {"samples", w.samples}};
        std::printf("  wake-up: p50 %.1f us, p99 %.1f us, p99.9 %.1f us (%zu samples)\n", w.p50_us, w.p99_us, w.p999_us, w.samples);
        if (auto* x = dynamic_cast<AfXdp*>(m.get())) j["af_xdp_chunks"] = x->chunks();
        m.reset();
        if (tap) {
          sh("ip netns del " + tpod);
          sh("ip netns add " + tpod);
        }
        if (round == 0 && pods != 0 && mech != "af-xdp") {
          const CapacityResult c = measure_capacity(mech, pods);
          j["capacity"] = {{"pods", c.pods}, {"received", c.received}, {"misrouted", c.misrouted},
                           {"attach_ms", c.attach_ms}, {"rss_kib", c.rss_kib}, {"locked_kib", c.locked_kib},
                           {"prealloc_bytes", c.prealloc}, {"empty_poll_ns", c.empty_poll_ns},
                           {"idle_cpu_pct", c.idle_cpu_pct}};
          std::printf("  %u pods: %u/%u frames demultiplexed right (%u wrong), attach %.1f ms, RSS +%lld KiB, locked +%lld KiB, "
                      "preallocated %.1f MiB, empty poll of all %.0f ns, idle CPU %.3f %%\n",
                      c.pods, c.received, c.pods, c.misrouted, c.attach_ms, static_cast<long long>(c.rss_kib),
                      static_cast<long long>(c.locked_kib), static_cast<double>(c.prealloc) / 1048576.0, c.empty_poll_ns,
                      c.idle_cpu_pct);
        }
      } catch (const std::exception& e) {
        j["error"] = e.what();
        std::printf("  unavailable: %s\n", e.what());
      }
      std::fflush(stdout);
      if (j.contains("capacity")) per[mech]["capacity"] = j["capacity"];
      j.erase("capacity");
      per[mech]["rounds"].push_back(j);
    }
    }
    // Summary: median [min-max] over the rounds.
    const std::vector<std::pair<std::string, std::string>> keys{
        {"rx_super", "gbps"}, {"rx_super", "busy_ns_per_frame"}, {"rx_64", "busy_ns_per_frame"},
        {"tx_super", "gbps"}, {"tx_super", "cpu_ns_per_frame"}, {"wake_us", "p50"}, {"wake_us", "p99"},
        {"wake_us", "p999"}};
    std::printf("\nsummary over %u rounds: median [min-max]\n", rounds);
    for (const auto& mech : mechs) {
      json& m = per[mech];
      std::printf("%-14s", mech.c_str());
      for (const auto& [group, key] : keys) {
        std::vector<double> v;
        for (const auto& r : m["rounds"])
          if (r.contains(group) && r[group].contains(key)) v.push_back(r[group][key].get<double>());
        if (v.empty()) continue;
        std::sort(v.begin(), v.end());
        const double med = v[v.size() / 2];
        m["summary"][group + "." + key] = {{"median", med}, {"min", v.front()}, {"max", v.back()}};
        std::printf("  %s.%s %.4g [%.4g-%.4g]", group.c_str(), key.c_str(), med, v.front(), v.back());
      }
      std::printf("\n");
    }
    std::ofstream(out) << results.dump(2) << "\n";
    std::printf("results: %s\n", out.c_str());
  });
  return 0;
}
