// The pods' side of the dataplane without a DPDK port per pod (docs/pod-ports.md): one
// unbound AF_PACKET socket per worker serves every pod interface of the node. The workers'
// sockets form one PACKET_FANOUT_HASH group without PACKET_FANOUT_FLAG_DEFRAG, so the kernel
// spreads the pods' flows over the workers and fragments arrive as fragments; a classic BPF
// filter on every socket accepts only the attached pods' ifindexes. Frames are received with
// recvmmsg() straight into mbufs, behind the vnet header that carries their checksum and GSO
// state, and sent with sendmmsg() to any pod by ifindex: nothing is
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

// Worker side: the pods' frames are received with a SocketReceiver of kPodFrameSegments
// mbufs per frame (a 64 KiB super-packet in mbufs of at least kPodSegmentBytes) and sent with
// a SocketSender by ifindex (packet_socket.hpp).
constexpr unsigned kPodSegmentBytes = 9216;
constexpr unsigned kPodFrameSegments = 8;
static_assert(kPodSegmentBytes * kPodFrameSegments >= 65535 + 14, "a super-packet must fit a slot");

}  // namespace vxfed::dataplane
