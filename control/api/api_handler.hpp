// Turns one ControlRequest into one ControlResponse against the node state. No sockets: the
// API server feeds it, unit tests call it directly.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/metrics/histogram.hpp"
#include "proto/control.pb.h"
#include "control/node/node_state.hpp"

namespace vxfed::control {

// What the handler needs from the rest of the daemon (dataplane link, BGP, uptime).
struct DaemonView {
  std::function<v1::DaemonStatus()> status;           // node/dataplane/bgp fields
  std::function<std::vector<v1::PeerInfo>()> peers;
  std::function<dp::Counters()> counters;
  // Network policy (PolicyApply/PolicyDelete/PolicyGet, control/policy/): answers through its
  // reply, on this thread, once the federation store has. Unset: those requests are unknown.
  std::function<bool(const v1::ControlRequest&, std::function<void(v1::ControlResponse)>)> policy;
  // Global services (ServiceApply/ServiceDelete/ServiceGet, control/services/): likewise.
  std::function<bool(const v1::ControlRequest&, std::function<void(v1::ControlResponse)>)> services;
};

// Per operation (the name of the request's `op` field: "attach_endpoint", ...; requests with
// none are "unknown"): answers by code and the time to answer, persistence included (and, for
// an attach that waits for the dataplane, the wait).
struct ApiOpFigures {
  std::uint64_t by_code[9] = {};  // as ApiCounters::by_code
  metrics::Histogram latency;
};

struct ApiCounters {
  std::uint64_t requests = 0;
  std::uint64_t errors = 0;
  std::uint64_t attaches = 0;
  std::uint64_t detaches = 0;
  std::uint64_t by_code[9] = {};
  std::uint64_t attach_waits = 0;        // attaches that waited for the dataplane
  std::uint64_t attach_wait_timeouts = 0;
  std::map<std::string, ApiOpFigures> by_op;   // every operation of control.proto, from the start
};

class ApiHandler {
 public:
  using Reply = std::function<void(v1::ControlResponse)>;
  static constexpr std::uint32_t kMaxAttachWaitMs = 30000;

  ApiHandler(NodeState& state, DaemonView view);
  // Answers through reply, at once or, for an AddNetwork that needs the federation store, once
  // it answered (NodeState::prepare_network) or, for an AttachEndpoint with wait_ms, once the dataplane
  // carries the endpoint, refused it, or wait_ms passed (progress() decides; on a refusal or
  // timeout the endpoint is detached again, so a failed attach leaves nothing behind).
  void handle(const v1::ControlRequest& request, Reply reply);
  // The same, answered at once (wait_ms is ignored).
  v1::ControlResponse handle(const v1::ControlRequest& request);
  // Looks at the waiting attaches again: the dataplane answered or went away, or time passed.
  void progress();
  std::size_t waiting() const { return waiting_.size(); }
  const ApiCounters& counters() const { return counters_; }

 private:
  struct Waiting {
    std::uint64_t request_id;
    std::string container_id, ifname;
    std::chrono::steady_clock::time_point deadline;
    std::uint32_t wait_ms;
    Reply reply;
    std::string op;                                // for the per-operation figures
    std::chrono::steady_clock::time_point started;
  };
  v1::ControlResponse answer(const v1::ControlRequest& request);
  // Counts the answer, by code and per operation with the time since `started`.
  void finish(v1::ControlResponse& response, const std::string& op, std::chrono::steady_clock::time_point started);
  // A waiting attach's answer, or nullopt while it still waits.
  std::optional<v1::ControlResponse> settle(const Waiting& w, bool expired);

  NodeState& state_;
  DaemonView view_;
  ApiCounters counters_;
  std::vector<Waiting> waiting_;
};

const char* error_code_name(v1::ErrorCode code);

}  // namespace vxfed::control
