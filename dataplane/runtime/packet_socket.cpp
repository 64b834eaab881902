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
                                 SendTally* tally, UplinkSegmenting segmenting) {
  sockaddr_ll to{};
  to.sll_family = AF_PACKET;
  to.sll_ifindex = static_cast<int>(ifindex);
  to.sll_halen = 6;
  void* name = ifindex != 0 ? &to : nullptr;
  const socklen_t namelen = ifindex != 0 ? sizeof to : 0;

  std::uint16_t taken = 0;   // pkts[0..taken) are done (sent or refused, and freed)
  std::uint32_t resume = 0;  // segments of pkts[taken] already handled by an earlier batch
  while (taken < n) {
    unsigned nm = 0, ni = 0, nh = 0;  // messages, iovecs, header slots used
    std::uint16_t p = taken;
    std::uint32_t seg = resume;
    const std::uint32_t first_seg_in_batch = resume;  // of pkts[taken]
    bool batch_full = false;   // stopped inside a super-packet: it continues in the next batch
    bool undescribable = false;  // stopped at a packet no message can carry (see below)
    while (p < n && !batch_full) {
      rte_mbuf* m = pkts[p];
      if (uplink && (m->ol_flags & kTxSegFlags)) {
        const SegmentLayout l = segment_layout(m);
        const std::uint32_t hdrs = l.headers();
        if (hdrs > kHeaderRoom || m->data_len < hdrs || l.mss == 0) {
          undescribable = true;
          break;
        }
        const std::uint32_t count = segment_count(l, m->pkt_len);
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
            msg_bytes_[nm] = hdrs + len;
            msg_pkt_[nm++] = p;
            ni += k;
          }
          if (batch_full) break;
        }
      } else {
        if (m->nb_segs > kMaxChain) {
          undescribable = true;
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
        msg_bytes_[nm] = m->pkt_len;
        msg_pkt_[nm++] = p;
        ni += k;
      }
      ++p;
      seg = 0;
    }
    if (nm == 0) {
      // The batch's first packet gave no message: headers beyond kHeaderRoom, a chain longer
      // than a message takes. It is refused, not left for the caller to count as tx_full.
      if (!undescribable && !batch_full) break;
      rte_pktmbuf_free(pkts[taken]);
      ++tally->refused;
      ++taken;
      resume = 0;
      continue;
    }
    // Send the batch. sendmmsg stops at the first message that fails and returns how many
    // went before it (the error itself is lost), so a short count is sent again from there:
    // then the failing message comes first and its errno says why. A full queue ends the
    // call; any other error refuses that message's packet and the batch goes on after it.
    unsigned done = 0;               // messages sent, or skipped with a refused packet
    bool full = false;
    bool continuing_refused = false;  // pkts[p], which continues in the next batch, was refused
    while (done < nm) {
      const int rc = ::sendmmsg(fd, msgs_ + done, nm - done, MSG_DONTWAIT);
      if (rc > 0) {
        for (unsigned k = done; k < done + static_cast<unsigned>(rc); ++k) {
          tally->frames += msg_segs_[k];
          tally->bytes += msg_bytes_[k];
        }
        done += static_cast<unsigned>(rc);
        continue;
      }
      if (rc < 0 && errno == EINTR) continue;
      if (rc == 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
        full = true;
        break;
      }
      const std::uint16_t bad = msg_pkt_[done];
      std::uint64_t frames = 0;
      for (; done < nm && msg_pkt_[done] == bad; ++done) frames += msg_segs_[done];
      if (bad == p && batch_full) {
        frames += segment_count(segment_layout(pkts[p]), pkts[p]->pkt_len) - seg;
        continuing_refused = true;
      }
      tally->refused += frames;
    }
    if (!full) {
      const std::uint16_t end = batch_full && continuing_refused ? static_cast<std::uint16_t>(p + 1) : p;
      rte_pktmbuf_free_bulk(pkts + taken, static_cast<unsigned>(end - taken));
      taken = end;
      resume = batch_full && !continuing_refused ? seg : 0;
      continue;
    }
    // The queue is full at message `done`: its packet is the first not fully sent. If some
    // of its segments went out it counts as sent, the rest lost; the packets behind it stay
    // the caller's.
    const std::uint16_t stop = msg_pkt_[done];
    const bool started = (done > 0 && msg_pkt_[done - 1] == stop) || (stop == taken && first_seg_in_batch > 0);
    std::uint16_t end = stop;
    if (started) {
      std::uint64_t remaining = 0;
      for (unsigned k = done; k < nm && msg_pkt_[k] == stop; ++k) remaining += msg_segs_[k];
      if (p == stop && batch_full) remaining += segment_count(segment_layout(pkts[stop]), pkts[stop]->pkt_len) - seg;
      tally->queue_full += remaining;
      end = static_cast<std::uint16_t>(stop + 1);
    }
    rte_pktmbuf_free_bulk(pkts + taken, static_cast<unsigned>(end - taken));
    taken = end;
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
  const bool udp = l.l4_proto != 6;
  const std::uint32_t field = udp ? wire::kUdpChecksumOffset : wire::kTcpChecksumOffset;
  while (*seg < count) {
    if (*nm == kMessages) return false;
    // The segments of this message: as many as fit in one IPv4 packet, at most
    // kMaxUdpGsoSegments (the kernel refuses more), each with all of its iovecs (a segment's
    // payload may span several mbufs, so the room is checked as they are added).
    iovec* iov = iov_ + *ni;
    const unsigned room = kIovecs - *ni;
    unsigned k = 0;
    iov[k++] = {&vnet_[*nm], kVnetLen};
    std::uint8_t* first = headers_[*nh];
    std::uint32_t take = 0, udp_payload = 0;
    while (*seg + take < count && take < kMaxUdpGsoSegments && *nh + take < kMessages && k < room) {
      std::uint8_t* h = headers_[*nh + take];
      const std::uint32_t len = write_segment_headers(l, super, m->pkt_len, *seg + take, h);
      if (udp_payload + datagram_hdrs + len > kMaxUdpGsoPayload) break;
      const unsigned at = k;
      iov[k++] = take == 0 ? iovec{h, hdrs} : iovec{h + kOuterUdpEnd, datagram_hdrs};
      if (!add_slices(m, hdrs + (*seg + take) * l.mss, len, iov, &k, room)) {
        k = at;  // not this segment: the next message takes it
        break;
      }
      // The inner checksum, complete: the header's field holds the pseudo-header sum
      // (write_segment_headers), so the sum over header and payload is the whole one.
      OnesSum sum;
      sum.add(h + l.l4_offset(), l.l4_len);
      for (unsigned j = at + 1; j < k; ++j) sum.add(static_cast<const std::uint8_t*>(iov[j].iov_base), iov[j].iov_len);
      store_l4_checksum(h + l.l4_offset() + field, sum, udp);
      udp_payload += datagram_hdrs + len;
      ++take;
    }
    if (take == 0) return false;  // no room left in this batch
    // The outer headers describe the whole message; the kernel's UDP segmentation gives each
    // datagram its length, IPv4 ID (the message's + i) and checksums, and leaves the outer
    // UDP checksum pending. The message's ID is the super-packet's + its first segment, so
    // the IDs run on across the messages of one super-packet as within one.
    std::uint8_t* ip = first + kOuterL2Len;
    std::uint8_t* uh = ip + kOuterL3Len;
    std::uint8_t* id = ip + offsetof(wire::Ipv4Header, id_be);
    wire::store_be16(id, static_cast<std::uint16_t>(wire::load_be16(id) + *seg));
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
    msg_bytes_[*nm] = take * kOuterUdpEnd + udp_payload;  // each datagram behind its own outer headers
    msg_pkt_[(*nm)++] = p;
    *ni += k;
    *nh += take;
    *seg += take;
  }
  return true;
}

}  // namespace vxfed::dataplane
