// Flow hash of a frame received on an uplink without enough RX queues (pcap, a single-queue
// tap): worker 0 reads the one queue and hands each frame to worker hash % N, so a flow
// always lands on the same worker and keeps its order. Uses the NIC's RSS hash when present,
// else the outer IPv4 5-tuple (VXLAN senders put the inner flow's entropy in the UDP source
// port). Non-IPv4 (ARP) goes to worker 0.
#pragma once

#include <cstdint>

#include <rte_mbuf.h>

#include "dataplane/core/flow_hash.hpp"

namespace vxfed::dataplane {

inline std::uint32_t software_rss_hash(const rte_mbuf* m) {
  if (m->ol_flags & RTE_MBUF_F_RX_RSS_HASH) return m->hash.rss;
  const auto* p = rte_pktmbuf_mtod(m, const std::uint8_t*);
  const std::uint32_t len = rte_pktmbuf_data_len(m);
  if (len < 14 + 20 || p[12] != 0x08 || p[13] != 0x00) return 0;
  const std::uint8_t* ip = p + 14;
  const std::uint32_t ihl = (ip[0] & 0x0f) * 4u;
  std::uint32_t src, dst;
  __builtin_memcpy(&src, ip + 12, 4);
  __builtin_memcpy(&dst, ip + 16, 4);
  std::uint16_t sport = 0, dport = 0;
  const bool fragment = (ip[6] & 0x3f) != 0 || ip[7] != 0;
  if (!fragment && (ip[9] == 6 || ip[9] == 17) && ihl >= 20 && len >= 14 + ihl + 4) {
    __builtin_memcpy(&sport, ip + ihl, 2);
    __builtin_memcpy(&dport, ip + ihl + 2, 2);
  }
  return flow_hash(src, dst, ip[9], sport, dport);
}

}  // namespace vxfed::dataplane
