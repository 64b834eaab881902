// What the burst functions of the pipeline share (uplink_burst.cpp, pod_burst.cpp,
// pipeline.cpp): small helpers, all inline. Internal to dataplane/core.
#pragma once

#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include <cstdint>
#include <cstring>

#include "dataplane/core/counters.hpp"
#include "dataplane/core/parse.hpp"
#include "dataplane/core/wire/arp.hpp"
#include "dataplane/core/wire/ethernet.hpp"

namespace vxfed::dataplane::pipeline_detail {

using namespace vxfed::wire;

// How far ahead a burst loop prefetches packet data (docs/conventions.md: hot path).
constexpr std::uint16_t kPrefetchAhead = 3;

inline void drop(rte_mbuf* m, DropReason r, std::uint16_t port, WorkerCounters& c) {
  c.drop(r, port);
  rte_pktmbuf_free(m);
}

inline ByteSpan first_segment(const rte_mbuf* m) {
  return ByteSpan(rte_pktmbuf_mtod(m, const std::uint8_t*), rte_pktmbuf_data_len(m));
}

inline void prefetch_data(rte_mbuf* m) { rte_prefetch0(rte_pktmbuf_mtod(m, void*)); }

inline void count_rx(rte_mbuf** pkts, std::uint16_t n, std::uint16_t port, WorkerCounters& c) {
  std::uint64_t bytes = 0;
  for (std::uint16_t i = 0; i < n; ++i) bytes += rte_pktmbuf_pkt_len(pkts[i]);
  c.ports[port].rx_packets.add(n);
  c.ports[port].rx_bytes.add(bytes);
}

inline std::uint16_t fold_checksum(std::uint32_t sum) {
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

// Rewrites Ethernet dst/src of a frame delivered to a pod (from its gateway).
inline void set_macs(rte_mbuf* m, const MacAddress& dst, const MacAddress& src) {
  auto* eth = rte_pktmbuf_mtod(m, std::uint8_t*);
  std::memcpy(eth, dst.data(), 6);
  std::memcpy(eth + 6, src.data(), 6);
}

// Writes an Ethernet + ARP frame (42 bytes) at p.
inline void write_arp_frame(std::uint8_t* p, const MacAddress& eth_dst, std::uint16_t opcode,
                            const MacAddress& sender_mac, std::uint32_t sender_ip_be,
                            const MacAddress& target_mac, std::uint32_t target_ip_be) {
  const EthernetHeader eth{eth_dst, sender_mac, to_be16(kEtherTypeArp)};
  ArpHeader arp{};
  arp.hardware_type_be = to_be16(kArpHardwareEthernet);
  arp.protocol_type_be = to_be16(kEtherTypeIpv4);
  arp.hardware_len = 6;
  arp.protocol_len = 4;
  arp.opcode_be = to_be16(opcode);
  arp.sender_mac = sender_mac;
  arp.sender_ip_be = sender_ip_be;
  arp.target_mac = target_mac;
  arp.target_ip_be = target_ip_be;
  std::memcpy(p, &eth, sizeof(eth));
  std::memcpy(p + sizeof(eth), &arp, sizeof(arp));
}

// Turns an ARP request in m into our reply, in place: "ip_be is at mac".
inline void arp_reply_in_place(rte_mbuf* m, const ArpFields& req, const MacAddress& mac,
                               std::uint32_t ip_be) {
  write_arp_frame(rte_pktmbuf_mtod(m, std::uint8_t*), req.sender_mac, kArpOpReply, mac, ip_be,
                  req.sender_mac, req.sender_ip_be);
  m->ol_flags = 0;
}

}  // namespace vxfed::dataplane::pipeline_detail
