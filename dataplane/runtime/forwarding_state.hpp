// What the control thread publishes to the workers as one RCU object: the immutable
// forwarding tables and the endpoint ports to poll. Published whole, so a worker never polls
// a port the tables do not know, nor sees tables that name a port it does not poll.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/tables.hpp"

namespace vxfed::dataplane {

struct ForwardingState {
  std::unique_ptr<ForwardingTables> tables;
  std::vector<std::uint16_t> pod_ports;  // every port that carries an endpoint
};

}  // namespace vxfed::dataplane
