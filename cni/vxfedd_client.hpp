// A blocking client for vxfedd's control socket (proto/control.proto): one connection per
// plugin invocation, one ControlResponse per ControlRequest.
#pragma once

#include <cstdint>
#include <string>

#include "proto/control.pb.h"
#include "cni/errors.hpp"
#include "common/unique_fd.hpp"

namespace vxfed::cni {

namespace pb = vxfed::control::v1;

inline constexpr int kConnectTimeoutMs = 1000;

class VxfeddClient {
 public:
  // Code 11 (try again later) when vxfedd is not listening: the runtime retries ADD, and DEL
  // queues the detach instead of failing.
  static Expected<VxfeddClient> connect(const std::string& socket_path, int timeout_ms);

  VxfeddClient(VxfeddClient&&) noexcept = default;
  VxfeddClient(const VxfeddClient&) = delete;
  VxfeddClient& operator=(const VxfeddClient&) = delete;
  VxfeddClient& operator=(VxfeddClient&&) = delete;

  // Sends `request` (its request_id is set here) and returns vxfedd's answer whatever its code;
  // transport failures are code 11.
  Expected<pb::ControlResponse> call(pb::ControlRequest request);
  // The same, waiting up to extra_ms longer for the answer (an attach that waits for the
  // dataplane).
  Expected<pb::ControlResponse> call(pb::ControlRequest request, int extra_ms);

 private:
  VxfeddClient(int fd, int timeout_ms, std::string socket) : fd_(fd), timeout_ms_(timeout_ms), socket_(std::move(socket)) {}
  vxfed::UniqueFd fd_;
  int timeout_ms_ = 0;
  std::uint64_t next_id_ = 1;
  std::string socket_;
};

// vxfedd's reason as a CNI error: NOT_FOUND and INVALID_ARGUMENT of a network become 7 (the
// config names something vxfedd does not have), UNAVAILABLE becomes 11, DATAPLANE_REFUSED
// 105 (the dataplane cannot take the pod; vxfedd's message says why), the rest 100.
CniError from_vxfedd(const pb::ControlResponse& response, const std::string& what);

}  // namespace vxfed::cni
