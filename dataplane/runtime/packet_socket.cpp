#include "dataplane/runtime/packet_socket.hpp"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "dataplane/core/mbuf_offload.hpp"
#include "dataplane/core/segment.hpp"
#include "dataplane/core/wire/ipv4.hpp"
#include "dataplane/core/wire/tcp.hpp"
#include "dataplane/core/wire/udp.hpp"

namespace vxfed::dataplane {

namespace {

constexpr unsigned kVnetLen = sizeof(wire::VirtioNetHeader);
constexpr unsigned kMaxChain = 64;  // mbufs of one frame we send (the coalescer's limit)

std::string errno_text() { return std::strerror(errno); }

// A UDP super-packet on the uplink (UplinkSegmenting::UdpGso): outer Ethernet, IPv4 without
// options and UDP in front, at most one IPv4 packet of datagrams.
constexpr std::uint32_t kOuterUdpEnd = kOuterL2Len + kOuterL3Len + sizeof(wire::UdpHeader);
constexpr std::uint32_t kMaxUdpGsoPayload = 65535 - kOuterL3Len - sizeof(wire::UdpHeader);

// iovecs for m's bytes [off, off + len) across its segments; false when more than `room`.
bool add_slices(const rte_mbuf* m, std::uint32_t off, std::uint32_t len, iovec* iov, unsigned* n, unsigned room) {
  for (; m != nullptr && len > 0; m = m->next) {
    if (off >= m->data_len) {
      off -= m->data_len;
      continue;
    }
    if (*n == room) return false;
    const std::uint32_t take = std::min<std::uint32_t>(m->data_len - off, len);
    iov[(*n)++] = {rte_pktmbuf_mtod_offset(m, std::uint8_t*, off), take};
    len -= take;
    off = 0;
  }
  return len == 0;
}

// The underlay's 802.1Q tag (RTE_MBUF_F_TX_VLAN, underlay_tag.hpp), inserted here as a NIC
// would: the message's first frame piece iov[1] (after the vnet header) is split after the
// MACs around the tag, and a pending checksum's start moves with the bytes behind it.
// `iov` has room for two more entries.
void insert_tag(const rte_mbuf* m, std::uint8_t* tag, wire::VirtioNetHeader& vh, iovec* iov, unsigned* k) {
  constexpr std::size_t kMacs = 12;
  if (!(m->ol_flags & RTE_MBUF_F_TX_VLAN) || *k < 2 || iov[1].iov_len < kMacs + 2) return;
  tag[0] = 0x81;
  tag[1] = 0x00;
  tag[2] = static_cast<std::uint8_t>(m->vlan_tci >> 8);
  tag[3] = static_cast<std::uint8_t>(m->vlan_tci);
  std::memmove(iov + 4, iov + 2, (*k - 2) * sizeof(iovec));
  auto* base = static_cast<std::uint8_t*>(iov[1].iov_base);
  const std::size_t len = iov[1].iov_len;
  iov[1] = {base, kMacs};
  iov[2] = {tag, 4};
  iov[3] = {base + kMacs, len - kMacs};
  *k += 2;
  if (vh.flags & wire::kVnetNeedsCsum) {
    vh.csum_start = static_cast<std::uint16_t>(vh.csum_start + 4);
    vh.hdr_len = static_cast<std::uint16_t>(vh.hdr_len + 4);
  }
}

}  // namespace

Result<int> open_packet_socket(const PacketSocketConfig& c, Status (*before_bind)(int fd)) {
  // Protocol 0 until bound: an unbound socket takes nothing before its filter is in place.
  const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, c.drop_until_filtered ? 0 : htons(ETH_P_ALL));
  if (fd < 0)
    return make_error(std::string("cannot open an AF_PACKET socket for ") + c.what + ": " + errno_text() +
                      " (needs CAP_NET_RAW)");
  auto fail = [fd, &c](const char* step) -> Result<int> {
    const std::string why = errno_text();
    ::close(fd);
    return make_error(std::string(step) + " on the socket for " + c.what + ": " + why);
  };
  const int one = 1;
  if (::setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one) != 0) return fail("PACKET_VNET_HDR");
  if (::setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) != 0) return fail("PACKET_IGNORE_OUTGOING");
  if (c.qdisc_bypass && ::setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) != 0)
    return fail("PACKET_QDISC_BYPASS");
  if (c.rcvbuf_bytes != 0) {
    const int rcvbuf = static_cast<int>(c.rcvbuf_bytes);
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) != 0)
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  }
  if (before_bind != nullptr) {
    if (auto st = before_bind(fd); !st) {
      ::close(fd);
      return make_error(st.error());
    }
  }
  sockaddr_ll addr{};
  addr.sll_family = AF_PACKET;
  addr.sll_protocol = htons(ETH_P_ALL);
  addr.sll_ifindex = static_cast<int>(c.ifindex);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return fail("bind");
  if (c.fanout_group >= 0) {
    const int fanout = (c.fanout_group & 0xffff) | (PACKET_FANOUT_HASH << 16);  // no PACKET_FANOUT_FLAG_DEFRAG
    if (::setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof fanout) != 0) return fail("PACKET_FANOUT");
  }
  return fd;
}

std::uint64_t take_socket_drops(int fd) {
  tpacket_stats stats{};
  socklen_t len = sizeof stats;
  if (::getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &stats, &len) != 0) return 0;
  return stats.tp_drops;
}

// ---- receive ----

SocketReceiver::SocketReceiver(rte_mempool* pool, unsigned segments)
    : pool_(pool), segments_(std::clamp(segments, 1u, kMaxSegments)) {
  std::memset(msgs_, 0, sizeof msgs_);
}

SocketReceiver::~SocketReceiver() {
  for (auto& s : slots_) rte_pktmbuf_free_bulk(s.mbufs, s.count);
}

bool SocketReceiver::refill(unsigned slot) {
  Slot& s = slots_[slot];
  if (s.count < segments_) {
    if (rte_pktmbuf_alloc_bulk(pool_, s.mbufs + s.count, segments_ - s.count) != 0) return false;
    s.count = segments_;
  }
  return true;
}

void SocketReceiver::point(unsigned slot) {
  Slot& s = slots_[slot];
  iovec* iov = iov_[slot];
  iov[0] = {&vnet_[slot], kVnetLen};
  for (unsigned k = 0; k < segments_; ++k) {
    rte_mbuf* m = s.mbufs[k];
    // The first keeps its headroom (the outer headers are prepended there); the rest of a
    // super-packet fills whole buffers.
    m->data_off = k == 0 ? static_cast<std::uint16_t>(std::min<unsigned>(RTE_PKTMBUF_HEADROOM, m->buf_len)) : 0;
    iov[1 + k] = {rte_pktmbuf_mtod(m, void*), rte_pktmbuf_tailroom(m)};
  }
  msghdr& h = msgs_[slot].msg_hdr;
  h.msg_name = from_[slot];
  h.msg_iov = iov;
  h.msg_iovlen = 1 + segments_;
  h.msg_control = nullptr;
  h.msg_controllen = 0;
}

unsigned SocketReceiver::receive(int fd, rte_mbuf** pkts, wire::VirtioNetHeader* vnet, unsigned* ifindex,
                                 unsigned max, std::uint64_t* refused) {
  max = std::min<unsigned>(max, kMaxBurst);
  while (ready_ < max && refill(ready_)) point(ready_++);
  const unsigned want = std::min(max, ready_);
  if (want == 0) return 0;  // no mbufs: the frames wait in the socket
  for (unsigned i = 0; i < want; ++i) msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_ll);
  const int got = ::recvmmsg(fd, msgs_, want, MSG_DONTWAIT, nullptr);
  if (got <= 0) {
    if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ++*refused;
    return 0;
  }
  const unsigned n = static_cast<unsigned>(got);
  for (unsigned i = 0; i < n; ++i) {
    Slot& s = slots_[i];
    const msghdr& h = msgs_[i].msg_hdr;
    const unsigned capacity = [&] {
      unsigned c = 0;
      for (unsigned k = 0; k < segments_; ++k) c += static_cast<unsigned>(iov_[i][1 + k].iov_len);
      return c;
    }();
    const unsigned len = std::min(msgs_[i].msg_len > kVnetLen ? msgs_[i].msg_len - kVnetLen : 0u, capacity);
    vnet[i] = vnet_[i];
    // The frame's bytes filled the slot's mbufs in order: chain the used ones.
    unsigned left = len, used = 0;
    rte_mbuf* head = s.mbufs[0];
    rte_mbuf* prev = nullptr;
    do {
      rte_mbuf* m = s.mbufs[used];
      const unsigned take = std::min<unsigned>(left, static_cast<unsigned>(iov_[i][1 + used].iov_len));
      m->data_len = static_cast<std::uint16_t>(take);
      m->next = nullptr;
      if (prev != nullptr) prev->next = m;
      prev = m;
      left -= take;
      ++used;
    } while (left > 0 && used < segments_);
    head->pkt_len = len;
    head->nb_segs = static_cast<std::uint16_t>(used);
    pkts[i] = head;
    const auto* from = reinterpret_cast<const sockaddr_ll*>(from_[i]);
    ifindex[i] = (h.msg_flags & MSG_TRUNC) ? 0 : static_cast<unsigned>(from->sll_ifindex);
    // What the frame did not use stays for the next.
    std::memmove(s.mbufs, s.mbufs + used, (segments_ - used) * sizeof(rte_mbuf*));
    s.count = segments_ - used;
  }
  // Refill the slots that took frames; a slot left short ends the ready prefix.
  for (unsigned i = 0; i < n; ++i) {
    if (!refill(i)) {
      ready_ = i;
      return n;
    }
    point(i);
  }
  return n;
}

// ---- send ----

SocketSender::SocketSender() { std::memset(msgs_, 0, sizeof msgs_); }

std::uint16_t SocketSender::send(int fd, unsigned ifindex, rte_mbuf** pkts, std::uint16_t n, bool uplink,
                                 std::uint64_t* lost_segments, UplinkSegmenting segmenting) {
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_ifindex = static_cast<int>(ifindex);
  to.sll_halen = 6;
  void* name = ifindex != 0 ? &to : nullptr;
  const socklen_t namelen = ifindex != 0 ? sizeof to : 0;

  std::uint16_t taken = 0;   // pkts[0..taken) are done (sent and freed)
  std::uint32_t resume = 0;  // segments of pkts[taken] already sent by an earlier batch
  while (taken < n) {
    unsigned nm = 0, ni = 0, nh = 0;  // messages, iovecs, header slots used
    std::uint16_t p = taken;
    std::uint32_t seg = resume;
    std::uint32_t first_seg_in_batch = resume;  // of pkts[taken]
    bool batch_full = false;   // stopped inside a super-packet: it continues in the next batch
    bool unsendable = false;   // stopped at a packet we cannot send: the caller drops it
    while (p < n && !batch_full) {
      rte_mbuf* m = pkts[p];
      if (uplink && (m->ol_flags & kTxSegFlags)) {
        const SegmentLayout l = segment_layout(m);
        const std::uint32_t hdrs = l.headers();
        const std::uint32_t count = segment_count(l, m->pkt_len);
        if (hdrs > kHeaderRoom || m->data_len < hdrs || l.mss == 0) {
          unsendable = true;
          break;
        }
        const auto* super = rte_pktmbuf_mtod(m, const std::uint8_t*);
        if (segmenting == UplinkSegmenting::UdpGso && udp_gso_fits(m, l)) {
          batch_full = !add_udp_gso_messages(m, l, super, count, p, name, namelen, &seg, &nm, &ni, &nh);
          if (batch_full) break;
        } else {
          const wire::VirtioNetHeader vh = vnet_header_for(m, true);
          for (; seg < count; ++seg) {
            if (nm == kMessages || ni + 4 + kMaxChain > kIovecs) {
              batch_full = true;
              break;
            }
            const std::uint32_t len = write_segment_headers(l, super, m->pkt_len, seg, headers_[nh]);
            vnet_[nm] = vh;
            iovec* iov = iov_ + ni;
            unsigned k = 0;
            iov[k++] = {&vnet_[nm], kVnetLen};
            iov[k++] = {headers_[nh++], hdrs};
            add_slices(m, hdrs + seg * l.mss, len, iov, &k, 2 + kMaxChain);
            insert_tag(m, tags_[nm], vnet_[nm], iov, &k);
            msgs_[nm].msg_hdr = msghdr{name, namelen, iov, k, nullptr, 0, 0};
            msg_segs_[nm] = 1;
            msg_pkt_[nm++] = p;
            ni += k;
          }
          if (batch_full) break;
        }
      } else {
        if (m->nb_segs > kMaxChain) {
          unsendable = true;
          break;
        }
        if (nm == kMessages || ni + 3 + m->nb_segs > kIovecs) break;  // the next batch takes it
        vnet_[nm] = vnet_header_for(m, uplink);
        iovec* iov = iov_ + ni;
        unsigned k = 0;
        iov[k++] = {&vnet_[nm], kVnetLen};
        for (const rte_mbuf* s = m; s != nullptr; s = s->next) iov[k++] = {rte_pktmbuf_mtod(s, void*), s->data_len};
        insert_tag(m, tags_[nm], vnet_[nm], iov, &k);
        msgs_[nm].msg_hdr = msghdr{name, namelen, iov, k, nullptr, 0, 0};
        msg_segs_[nm] = 1;
        msg_pkt_[nm++] = p;
        ni += k;
      }
      ++p;
      seg = 0;
    }
    if (nm == 0) break;
    const int rc = ::sendmmsg(fd, msgs_, nm, MSG_DONTWAIT);
    const unsigned sent = rc > 0 ? static_cast<unsigned>(rc) : 0;
    if (sent == nm && batch_full) {
      // All sent, the last packet continues in the next batch.
      rte_pktmbuf_free_bulk(pkts + taken, static_cast<unsigned>(p - taken));
      resume = seg;
      taken = p;
      continue;
    }
    if (sent == nm) {
      rte_pktmbuf_free_bulk(pkts + taken, static_cast<unsigned>(p - taken));
      taken = p;
      resume = 0;
      if (unsendable) break;
      continue;
    }
    // The socket took only `sent` messages: the packet of message `sent` is the first not
    // fully sent. If some of its segments went out it counts as sent, the rest lost.
    const std::uint16_t stop = msg_pkt_[sent];
    const bool started = (sent > 0 && msg_pkt_[sent - 1] == stop) || (stop == taken && first_seg_in_batch > 0);
    std::uint16_t done = stop;
    if (started) {
      std::uint32_t remaining = 0;
      for (unsigned k = sent; k < nm && msg_pkt_[k] == stop; ++k) remaining += msg_segs_[k];
      if (p == stop && batch_full) remaining += segment_count(segment_layout(pkts[stop]), pkts[stop]->pkt_len) - seg;
      *lost_segments += remaining;
      done = static_cast<std::uint16_t>(stop + 1);
    }
    rte_pktmbuf_free_bulk(pkts + taken, static_cast<unsigned>(done - taken));
    taken = done;
    break;
  }
  return taken;
}

bool SocketSender::udp_gso_fits(const rte_mbuf* m, const SegmentLayout& l) {
  // Our own VXLAN encapsulation (outer IPv4 without options at 14, UDP at 34), untagged (the
  // tag's insertion is per segment), and one whole segment's datagram within an IPv4 packet.
  const std::uint32_t hdrs = l.headers();
  return l.outer && !(m->ol_flags & RTE_MBUF_F_TX_VLAN) && m->outer_l3_len == kOuterL3Len && hdrs > kOuterUdpEnd &&
         hdrs - kOuterUdpEnd + l.mss <= kMaxUdpGsoPayload;
}

bool SocketSender::add_udp_gso_messages(const rte_mbuf* m, const SegmentLayout& l, const std::uint8_t* super,
                                        std::uint32_t count, std::uint16_t p, void* name, socklen_t namelen,
                                        std::uint32_t* seg, unsigned* nm, unsigned* ni, unsigned* nh) {
  const std::uint32_t hdrs = l.headers();
  const std::uint32_t datagram_hdrs = hdrs - kOuterUdpEnd;  // VXLAN + inner headers of each datagram
  const std::uint32_t payload_total = m->pkt_len - hdrs;
  const bool udp = l.l4_proto != 6;
  const std::uint32_t field = udp ? wire::kUdpChecksumOffset : wire::kTcpChecksumOffset;
  auto payload_of = [&](std::uint32_t i) {
    return std::min<std::uint32_t>(l.mss, payload_total - std::min(payload_total, i * l.mss));
  };
  while (*seg < count) {
    // The segments of this message: as many as fit in one IPv4 packet.
    std::uint32_t take = 0, udp_payload = 0;
    while (*seg + take < count && udp_payload + datagram_hdrs + payload_of(*seg + take) <= kMaxUdpGsoPayload) {
      udp_payload += datagram_hdrs + payload_of(*seg + take);
      ++take;
    }
    const unsigned room = 1 + take * (1 + m->nb_segs);  // vnet header, then per segment headers + slices
    if (*nm == kMessages || *nh + take > kMessages || *ni + room > kIovecs) return false;
    iovec* iov = iov_ + *ni;
    unsigned k = 0;
    iov[k++] = {&vnet_[*nm], kVnetLen};
    std::uint8_t* first = headers_[*nh];
    for (std::uint32_t i = 0; i < take; ++i) {
      std::uint8_t* h = headers_[*nh + i];
      const std::uint32_t len = write_segment_headers(l, super, m->pkt_len, *seg + i, h);
      iov[k++] = i == 0 ? iovec{h, hdrs} : iovec{h + kOuterUdpEnd, datagram_hdrs};
      const unsigned slices = k;
      add_slices(m, hdrs + (*seg + i) * l.mss, len, iov, &k, room);
      // The inner checksum, complete: the header's field holds the pseudo-header sum
      // (write_segment_headers), so the sum over header and payload is the whole one.
      OnesSum sum;
      sum.add(h + l.l4_offset(), l.l4_len);
      for (unsigned j = slices; j < k; ++j) sum.add(static_cast<const std::uint8_t*>(iov[j].iov_base), iov[j].iov_len);
      store_l4_checksum(h + l.l4_offset() + field, sum, udp);
    }
    // The outer headers describe the whole message; the kernel's UDP segmentation gives each
    // datagram its length, IPv4 ID and checksums, and leaves the outer UDP checksum pending.
    std::uint8_t* ip = first + kOuterL2Len;
    std::uint8_t* uh = ip + kOuterL3Len;
    wire::store_be16(ip + offsetof(wire::Ipv4Header, total_length_be), kOuterL3Len + 8 + udp_payload);
    wire::store_be16(ip + offsetof(wire::Ipv4Header, checksum_be), ipv4_header_checksum(ip, kOuterL3Len));
    wire::store_be16(uh + offsetof(wire::UdpHeader, length_be), 8 + udp_payload);
    wire::store_be16(uh + wire::kUdpChecksumOffset,
             pseudo_header_sum(ip + offsetof(wire::Ipv4Header, src_be), wire::kIpProtoUdp, 8 + udp_payload));
    wire::VirtioNetHeader& vh = vnet_[*nm];
    vh = wire::VirtioNetHeader{};
    vh.flags = wire::kVnetNeedsCsum;
    vh.gso_type = take > 1 ? wire::kVnetGsoUdpL4 : wire::kVnetGsoNone;
    vh.gso_size = static_cast<std::uint16_t>(take > 1 ? datagram_hdrs + l.mss : 0);
    vh.hdr_len = static_cast<std::uint16_t>(kOuterUdpEnd);
    vh.csum_start = static_cast<std::uint16_t>(kOuterL2Len + kOuterL3Len);
    vh.csum_offset = static_cast<std::uint16_t>(wire::kUdpChecksumOffset);
    msgs_[*nm].msg_hdr = msghdr{name, namelen, iov, k, nullptr, 0, 0};
    msg_segs_[*nm] = static_cast<std::uint16_t>(take);
    msg_pkt_[(*nm)++] = p;
    *ni += k;
    *nh += take;
    *seg += take;
  }
  return true;
}

}  // namespace vxfed::dataplane
