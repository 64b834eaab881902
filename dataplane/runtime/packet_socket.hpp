// AF_PACKET sockets with vnet headers (PACKET_VNET_HDR): what the pod sockets
// (pod_sockets.hpp) and the uplink sockets (uplink_sockets.hpp) are made of. Frames come in
// with recvmmsg() straight into mbufs, behind the vnet header that carries their checksum
// and GSO state (docs/pod-ports.md), and go out with sendmmsg() behind one that hands the
// kernel what is still pending. Nothing here runs per packet but the receive and send calls
// of the workers: no allocation (mbufs come from the pool), no locks, one system call per
// burst.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdint>
#include <memory>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "common/result.hpp"
#include "dataplane/core/segment.hpp"
#include "dataplane/core/tx_stage.hpp"
#include "dataplane/core/wire/virtio_net.hpp"

namespace vxfed::dataplane {

struct PacketSocketConfig {
  unsigned ifindex = 0;        // bound to this interface (0: every interface; a filter chooses)
  unsigned rcvbuf_bytes = 0;   // SO_RCVBUFFORCE (0: the kernel's default)
  bool qdisc_bypass = true;    // PACKET_QDISC_BYPASS (docs/dataplane.md: qdisc bypass)
  int fanout_group = -1;       // PACKET_FANOUT_HASH group (without PACKET_FANOUT_FLAG_DEFRAG); -1: none
  bool drop_until_filtered = false;  // unbound: take nothing until a filter is attached (protocol 0 at open)
  const char* what = "";       // for messages: "the pods", "the uplink"
};

// Opens and configures one socket: PACKET_VNET_HDR, PACKET_IGNORE_OUTGOING (not our own
// frames back), bound, in the fanout group. For an unbound socket that drops until filtered,
// `before_bind` runs first (attaching the filter).
Result<int> open_packet_socket(const PacketSocketConfig& config, Status (*before_bind)(int fd) = nullptr);

// Frames the kernel dropped on the socket (receive buffer full) since the last call.
std::uint64_t take_socket_drops(int fd);

// A worker's receive side of one socket: kMaxBurst message slots, each with the mbufs for
// the largest frame it takes (`segments` mbufs: 1 for the uplink's frames, enough for a
// 64 KiB super-packet for the pods'), refilled from the pool only where frames landed.
class SocketReceiver {
 public:
  SocketReceiver(rte_mempool* pool, unsigned segments);
  ~SocketReceiver();
  SocketReceiver(const SocketReceiver&) = delete;
  SocketReceiver& operator=(const SocketReceiver&) = delete;

  // Receives up to `max` (<= kMaxBurst) frames without blocking. Frame i: pkts[i] (an mbuf
  // chain with its lengths set), vnet[i] its header, ifindex[i] the interface it came from,
  // or 0 when it was larger than the slot (pkts[i] then holds the truncated frame, for the
  // caller to drop). Returns how many; 0 when there was nothing (or no mbufs). A receive the
  // kernel refused (a frame it could not describe in a vnet header; it is gone) is counted
  // in *refused.
  unsigned receive(int fd, rte_mbuf** pkts, wire::VirtioNetHeader* vnet, unsigned* ifindex, unsigned max,
                   std::uint64_t* refused);

 private:
  static constexpr unsigned kMaxSegments = 8;
  struct Slot {
    rte_mbuf* mbufs[kMaxSegments];
    unsigned count = 0;        // mbufs present (segments_ when filled)
  };
  bool refill(unsigned slot);
  void point(unsigned slot);   // the slot's iovecs at its mbufs
  rte_mempool* pool_;
  unsigned segments_;
  unsigned ready_ = 0;         // slots 0..ready_-1 are complete
  Slot slots_[kMaxBurst];
  wire::VirtioNetHeader vnet_[kMaxBurst];
  iovec iov_[kMaxBurst][1 + kMaxSegments];
  mmsghdr msgs_[kMaxBurst];
  unsigned char from_[kMaxBurst][32];  // sockaddr_ll
};

// How a sender hands the kernel a VXLAN super-packet (a pod's, encapsulated once).
enum class UplinkSegmenting : std::uint8_t {
  // One message per segment, each inner checksum left pending (NEEDS_CSUM): the legacy
  // vnet header has no VXLAN segmentation.
  PerSegment,
  // One UDP super-packet (GSO_UDP_L4) per up to 64 KiB of datagrams: the outer headers
  // once, then each segment's VXLAN and inner headers and payload; the kernel (or a NIC with
  // UDP segmentation offload) cuts it at gso_size, one VXLAN frame per datagram. The inner
  // checksums are completed here, as the kernel's UDP segmentation does not know the inner
  // header (docs/pod-ports.md, "The uplink's UDP super-packets").
  UdpGso,
};

// The most datagrams one UDP super-packet of ours carries. The kernel refuses a GSO_UDP_L4
// packet of more than UDP_MAX_SEGMENTS (128, include/linux/udp.h; not in the uapi headers)
// segments from a packet socket with EINVAL (UplinkGso.TheKernelRefusesMoreThan128Segments);
// a peer dataplane behind a veth takes at most kMaxUplinkSuperDatagrams (64) of them whole
// (uplink_super.hpp), so we send no more than that: a pod's super-packet of more segments (a
// peer's small MSS) goes as several.
constexpr std::uint32_t kKernelUdpGsoMaxSegments = 128;
constexpr std::uint32_t kMaxUdpGsoSegments = 64;
static_assert(kMaxUdpGsoSegments <= kKernelUdpGsoMaxSegments);

// What one SocketSender::send put on the wire and what it dropped, in frames: a
// super-packet cut into segments counts each segment, a UDP super-packet each of its
// datagrams (as the kernel or the NIC sends them), a super-packet handed whole to a pod one.
struct SendTally {
  std::uint64_t frames = 0;      // frames sent
  std::uint64_t bytes = 0;       // their bytes as on the wire (each with its own headers; no 802.1Q tag)
  std::uint64_t queue_full = 0;  // segments of a super-packet the socket's full queue cut short (tx_full)
  std::uint64_t refused = 0;     // frames the kernel refused or that no message can describe (tx_refused)
};

// A worker's send side (scratch for the messages of one call, shared by its sockets).
// Sends pkts[0..n) with one vnet header each, to `ifindex` (0: the socket's own interface).
// Pending checksums and super-packets are handed to the kernel as they are (a pod's kernel
// takes GSO), unless `uplink`: then super-packets are cut into their segments here (as
// `segmenting` says) and a single packet's pending checksum is handed on. An mbuf with
// RTE_MBUF_F_TX_VLAN gets its vlan_tci inserted as an 802.1Q tag (the underlay tag,
// underlay_tag.hpp; such super-packets always go per segment). Returns how many of pkts it
// consumed: sent, or dropped and counted in tally->refused (a packet the kernel refused with
// an error other than a full queue, or one no message can describe: the packets behind it
// are still sent); all are freed. It stops at a full queue (EAGAIN, ENOBUFS): the rest stay
// the caller's, and a super-packet cut short there counts as sent with its unsent segments
// in tally->queue_full. Adds to *tally, never resets it.
class SocketSender {
 public:
  SocketSender();
  std::uint16_t send(int fd, unsigned ifindex, rte_mbuf** pkts, std::uint16_t n, bool uplink, SendTally* tally,
                     UplinkSegmenting segmenting = UplinkSegmenting::PerSegment);

 private:
  // UplinkSegmenting::UdpGso: whether m's segments can go as UDP super-packets, and adding
  // its messages from segment *seg on (false: the batch is full; *seg says where it stopped).
  static bool udp_gso_fits(const rte_mbuf* m, const SegmentLayout& l);
  bool add_udp_gso_messages(const rte_mbuf* m, const SegmentLayout& l, const std::uint8_t* super, std::uint32_t count,
                            std::uint16_t p, void* name, socklen_t namelen, std::uint32_t* seg, unsigned* nm,
                            unsigned* ni, unsigned* nh);

  static constexpr unsigned kMessages = 256;
  static constexpr unsigned kIovecs = 2048;
  static constexpr unsigned kHeaderRoom = 256;  // outer + inner headers of a segment
  mmsghdr msgs_[kMessages];
  std::uint16_t msg_pkt_[kMessages];            // which of pkts a message belongs to
  std::uint16_t msg_segs_[kMessages];           // how many of its segments a message carries
  std::uint32_t msg_bytes_[kMessages];          // the bytes of those segments' frames on the wire
  wire::VirtioNetHeader vnet_[kMessages];
  iovec iov_[kIovecs];
  std::uint8_t tags_[kMessages][4];            // 802.1Q tags inserted (RTE_MBUF_F_TX_VLAN)
  alignas(64) std::uint8_t headers_[kMessages][kHeaderRoom];  // one per segment
};

}  // namespace vxfed::dataplane
