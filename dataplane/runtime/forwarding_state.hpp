// What the control thread publishes to the workers as one RCU object: the forwarding tables
// (changed in place by Deltas; a Snapshot brings new ones) and the endpoint ports to poll.
// A new state is published when a Snapshot replaces the tables or the set of endpoint ports
// changes: a port is polled only once the tables name it, and polled no more before it is
// detached.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dataplane/core/flat_map.hpp"
#include "dataplane/core/tables.hpp"

namespace vxfed::dataplane {

struct ForwardingState {
  ForwardingTables* tables = nullptr;    // owned by the Dataplane, freed after a grace period
  std::vector<std::uint16_t> pod_ports;  // every port that carries an endpoint
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
