// What the control thread publishes to the workers as one RCU object: the immutable
// forwarding tables and the endpoint ports to poll. Published whole, so a worker never polls
// a port the tables do not know, nor sees tables that name a port it does not poll.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dataplane/core/flat_map.hpp"
#include "dataplane/core/tables.hpp"

namespace vxfed::dataplane {

struct ForwardingState {
  std::unique_ptr<ForwardingTables> tables;
  std::vector<std::uint16_t> pod_ports;  // every DPDK port that carries an endpoint (polled by rx_burst)
  // Pod ports served by the pod sockets (pod_sockets.hpp): ifindex -> port index, and
  // port index - kFirstPodPort -> ifindex (0: none).
  FlatMap64<std::uint16_t> pod_port_of_ifindex;
  std::vector<unsigned> pod_ifindex;
  // socket_wakeup.hpp: the af_packet sockets of pod_ports, and whether every pod port has
  // them (otherwise an idle worker naps instead of blocking).
  std::vector<int> pod_wake_fds;
  bool pods_wakeable = true;
  std::uint64_t version = 0;             // distinct per published state (workers cache by it)
};

}  // namespace vxfed::dataplane
