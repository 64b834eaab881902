// The node every packet test runs on (addresses from the test ranges of RULES/DESIGN):
//   local VTEP 198.18.0.1, uplink port 0, MAC 02:00:00:00:00:01, underlay MTU 9000
//   tenant A: vni 1001, gateway 10.244.0.1 (derived MAC), pods
//             pod1 10.244.1.10 port 1, pod2 10.244.1.11 port 2
//             routes 10.245.0.0/16 -> 198.18.0.2; 10.245.7.0/24 -> ECMP 198.18.0.3 + .4;
//                    10.246.0.0/16 -> 198.18.0.6 (no static neighbour: resolved by ARP)
//             explicit VTEP 198.18.0.9 allowed for vni 1001
//   tenant B: vni 2002, gateway 10.250.0.1, pod3 10.250.1.10 port 3
//             routes 10.245.0.0/16 -> 198.18.0.5 (same prefix as tenant A, other VTEP)
//   static neighbours: .2 .3 .4 .5 .9 -> 02:00:00:00:02:0N
#pragma once

#include <memory>

#include "common/net/vxlan.hpp"
#include "dataplane/core/tables.hpp"
#include "tests/dataplane/frames.hpp"

namespace vxfed::test {

namespace dp = vxfed::dataplane;

inline const Mac kUplinkMac = {0x02, 0, 0, 0, 0, 0x01};
inline const Mac kPod1Mac = {0x02, 0xaa, 0, 0, 0, 0x10};
inline const Mac kPod2Mac = {0x02, 0xaa, 0, 0, 0, 0x11};
inline const Mac kPod3Mac = {0x02, 0xbb, 0, 0, 0, 0x10};
inline Mac neighbor_mac(int n) { return Mac{0x02, 0, 0, 0, 0x02, static_cast<std::uint8_t>(n)}; }
using net::gateway_mac;  // the derived gateway MAC of a VNI (common/net/vxlan.hpp)
constexpr std::uint16_t kUplink = 0, kPod1 = 1, kPod2 = 2, kPod3 = 3;
constexpr std::uint32_t kVniA = 1001, kVniB = 2002;

dataplane::v1::Tables sample_tables();

// Everything the runtime would keep for one node: the persistent neighbour cache and VNI
// counter slots, and the context tables are built with.
struct Node {
  explicit Node(std::uint32_t neighbor_slots = 1024) : neighbors(neighbor_slots) {}
  dp::NeighborCache neighbors;
  dp::VniCounterSlots vni_slots;
  dp::PathMtuCache path_mtus;
  dp::BuildContext context();
  Result<std::unique_ptr<dp::ForwardingTables>> build(const dataplane::v1::Tables& t) {
    return dp::ForwardingTables::create(t, context());
  }
};

}  // namespace vxfed::test
