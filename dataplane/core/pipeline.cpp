// The pipeline's entry points besides the two burst functions (uplink_burst.cpp,
// pod_burst.cpp): dropping a whole burst, building an ARP request.
#include "dataplane/core/pipeline.hpp"

#include <rte_ether.h>

#include <cstring>

#include "dataplane/core/pipeline_common.hpp"

namespace vxfed::dataplane {

static_assert(kMaxEthdevPorts >= RTE_MAX_ETHPORTS, "DPDK port ids must be port indexes below the pods'");

using namespace pipeline_detail;

void drop_burst(rte_mbuf** pkts, std::uint16_t n, std::uint16_t rx_port, DropReason reason,
                WorkerCounters& counters) {
  count_rx(pkts, n, rx_port, counters);
  counters.drop(reason, rx_port, n);
  rte_pktmbuf_free_bulk(pkts, n);
}

bool build_arp_request(rte_mbuf* m, const MacAddress& sender_mac, std::uint32_t sender_ip_be,
                       std::uint32_t target_ip_be) {
  rte_pktmbuf_reset(m);
  auto* p = reinterpret_cast<std::uint8_t*>(
      rte_pktmbuf_append(m, sizeof(EthernetHeader) + sizeof(ArpHeader)));
  if (!p) return false;
  write_arp_frame(p, kBroadcastMac, kArpOpRequest, sender_mac, sender_ip_be, MacAddress{}, target_ip_be);
  return true;
}

}  // namespace vxfed::dataplane
