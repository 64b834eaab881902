// Turns one ControlRequest into one ControlResponse against the node state. No sockets: the
// API server feeds it, unit tests call it directly.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "proto/control.pb.h"
#include "control/node_state.hpp"

namespace vxfed::control {

// What the handler needs from the rest of the daemon (dataplane link, BGP, uptime).
struct DaemonView {
  std::function<v1::DaemonStatus()> status;           // node/dataplane/bgp fields
  std::function<std::vector<v1::PeerInfo>()> peers;
  std::function<dp::Counters()> counters;
};

struct ApiCounters {
  std::uint64_t requests = 0;
  std::uint64_t errors = 0;
  std::uint64_t attaches = 0;
  std::uint64_t detaches = 0;
  std::uint64_t by_code[8] = {};
};

class ApiHandler {
 public:
  ApiHandler(NodeState& state, DaemonView view) : state_(state), view_(std::move(view)) {}
  v1::ControlResponse handle(const v1::ControlRequest& request);
  const ApiCounters& counters() const { return counters_; }

 private:
  NodeState& state_;
  DaemonView view_;
  ApiCounters counters_;
};

const char* error_code_name(v1::ErrorCode code);

}  // namespace vxfed::control
