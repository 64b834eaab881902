// The pods' side of the dataplane without a DPDK port per pod (docs/pod-ports.md): one
// unbound AF_PACKET socket per worker serves every pod interface of the node. The workers'
// sockets form one PACKET_FANOUT_HASH group without PACKET_FANOUT_FLAG_DEFRAG, so the kernel
// spreads the pods' flows over the workers and fragments arrive as fragments; a classic BPF
// filter on every socket accepts only the attached pods' ifindexes. Frames are received with
// recvmmsg() straight into mbufs and sent with sendmmsg() to any pod by ifindex: nothing is
// held per pod (no ring, no descriptor), and a worker's whole pod side is one descriptor in
// its readiness set.
//
// Port indexes: the core indexes counters, the TX stage and the tables' pod entries by a
// 16-bit port index. DPDK ethdev ports keep their ids (< kMaxEthdevPorts); pods get
// kFirstPodPort + slot from Ports (kPodsPort, just below, counts what the pod sockets drop
// before a pod is known).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "common/result.hpp"
#include "dataplane/core/counters.hpp"

namespace vxfed::dataplane {

constexpr std::uint16_t kFirstPodPort = kMaxEthdevPorts;
constexpr std::uint16_t kPodsPort = kMaxEthdevPorts - 1;  // aggregate: frames of no known pod
static_assert(kFirstPodPort + kMaxPodPorts <= kMaxPorts);

class PodSockets {
 public:
  // `rcvbuf_bytes`: each socket's receive buffer (SO_RCVBUFFORCE). `qdisc_bypass`:
  // PACKET_QDISC_BYPASS on the sockets (docs/dataplane.md: qdisc bypass).
  static Result<std::unique_ptr<PodSockets>> create(unsigned workers, unsigned rcvbuf_bytes, bool qdisc_bypass);
  ~PodSockets();
  PodSockets(const PodSockets&) = delete;
  PodSockets& operator=(const PodSockets&) = delete;

  int fd(unsigned worker) const { return fds_[worker]; }
  // Accept frames of exactly these interfaces from now on (every socket, atomically each).
  Status set_interfaces(const std::vector<unsigned>& ifindexes);
  // Frames the kernel dropped on worker's socket (receive buffer full) since the last call.
  std::uint64_t take_drops(unsigned worker) const;

 private:
  PodSockets() = default;
  std::vector<int> fds_;
};

// Worker side. Receives up to `max` frames (max <= kMaxBurst) from `fd` without blocking
// into mbufs from `spare` (refilled from `pool`; unused mbufs stay there for the next call).
// Sets each mbuf's length; ifindex[i] is the interface frame i came from, or 0 when it was
// larger than an mbuf (then pkts[i] holds the truncated frame, for the caller to drop).
struct PodRxSpare {
  rte_mbuf* mbufs[64];
  unsigned count = 0;
};
unsigned pod_receive(int fd, rte_mempool* pool, PodRxSpare& spare, rte_mbuf** pkts,
                     unsigned* ifindex, unsigned max);

// Sends pkts[0..n) to interface `ifindex` with one sendmmsg(); frees what the kernel took
// (it copies) and returns how many that was; the rest stay the caller's.
std::uint16_t pod_send(int fd, unsigned ifindex, rte_mbuf** pkts, std::uint16_t n);

}  // namespace vxfed::dataplane
