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
  // How many pods the pod sockets serve. With none the workers skip reading them: a read is a
  // system call (recvmmsg) per loop, which cost the uplink path a third of its rate.
  unsigned socket_pods = 0;
  // socket_wakeup.hpp: the af_packet sockets of pod_ports, and whether every pod port has
  // them (otherwise an idle worker naps instead of blocking).
  std::vector<int> pod_wake_fds;
  bool pods_wakeable = true;
  std::uint64_t version = 0;             // distinct per published state (workers cache by it)
};

}  // namespace vxfed::dataplane
