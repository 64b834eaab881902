#include "cni/vxfedd_client.hpp"

#include <unistd.h>

#include <algorithm>

#include "common/delimited.hpp"

namespace vxfed::cni {

Expected<VxfeddClient> VxfeddClient::connect(const std::string& socket_path, int timeout_ms) {
  // Connecting retries while the socket is missing or refusing (vxfedd restarting), but only
  // briefly: a DEL with vxfedd down should queue its detach quickly, not wait out the request
  // timeout.
  auto fd = vxfed::connect_unix(socket_path, std::min(timeout_ms, kConnectTimeoutMs));
  if (!fd)
    return cni_error(kTryAgainLater, "vxfedd is not reachable at " + socket_path + "; is the vxfed DaemonSet running on this node?",
                     fd.error());
  return VxfeddClient(*fd, timeout_ms, socket_path);
}

Expected<pb::ControlResponse> VxfeddClient::call(pb::ControlRequest request) { return call(std::move(request), 0); }

Expected<pb::ControlResponse> VxfeddClient::call(pb::ControlRequest request, int extra_ms) {
  const std::uint64_t id = next_id_++;
  request.set_request_id(id);
  if (auto st = vxfed::write_delimited(fd_.get(), request, timeout_ms_); !st)
    return cni_error(kTryAgainLater, "cannot send a request to vxfedd at " + socket_, st.error());
  pb::ControlResponse response;
  if (auto st = vxfed::read_delimited(fd_.get(), response, timeout_ms_ + extra_ms); !st)
    return cni_error(kTryAgainLater, "vxfedd at " + socket_ + " did not answer", st.error());
  if (response.request_id() != id)
    return cni_error(kVxfeddRefused, "vxfedd answered request " + std::to_string(response.request_id()) +
                                         " instead of " + std::to_string(id));
  return response;
}

CniError from_vxfedd(const pb::ControlResponse& response, const std::string& what) {
  const std::string reason = response.error().empty() ? pb::ErrorCode_Name(response.code()) : response.error();
  switch (response.code()) {
    case pb::NOT_FOUND:
      return cni_error(kInvalidConfig, what + ": " + reason);
    case pb::UNAVAILABLE:
      return cni_error(kTryAgainLater, what + ": vxfedd is not ready (" + reason + ")");
    case pb::DATAPLANE_REFUSED:
      return cni_error(kDataplaneRefused, what + ": " + reason, pb::ErrorCode_Name(response.code()));
    default:
      return cni_error(kVxfeddRefused, what + ": vxfedd refused: " + reason, pb::ErrorCode_Name(response.code()));
  }
}

}  // namespace vxfed::cni
