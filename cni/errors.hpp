// CNI error codes and the Expected<T> type the plugin's libraries return.
//
// The codes 1-7, 11, 50 and 51 are the CNI specification's (SPEC.md "Error"); 100 and above
// are vxfed's own and documented in docs/cni.md. Every error carries a message a person can act
// on; `details` adds the underlying cause (errno text, the IPAM plugin's output, vxfedd's reply).
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "common/result.hpp"  // vxfed::ValueOr, from common/

namespace vxfed::cni {

enum Code : int {
  kIncompatibleVersion = 1,      // the config's cniVersion is not one we speak
  kUnsupportedField = 2,         // a field whose value we cannot honour
  kContainerUnknown = 3,         // the container (its netns) does not exist
  kInvalidEnv = 4,               // CNI_* environment variables missing or malformed
  kIoFailure = 5,                // reading stdin, writing state files
  kDecodeFailure = 6,            // stdin or a delegate's output is not valid JSON
  kInvalidConfig = 7,            // the network configuration does not validate
  kTryAgainLater = 11,           // transient: vxfedd or the dataplane not reachable or not ready yet
  kNotAvailable = 50,            // STATUS: not ready for ADD
  kLimitedConnectivity = 51,     // STATUS: ADD works but remote clusters are unreachable
  // vxfed's own codes (docs/cni.md):
  kVxfeddRefused = 100,          // vxfedd refused a request; details has its reason
  kInterfaceFailure = 101,       // the kernel refused an interface, address or route operation
  kIpamFailure = 102,            // the IPAM plugin failed without a CNI code of its own
  kCheckFailed = 103,            // CHECK found the attachment different from prevResult
  kInternal = 104,               // a bug: an invariant did not hold
  kDataplaneRefused = 105,       // the dataplane cannot take the pod (e.g. every pod port in use)
  kNoAddressLeft = 106,          // this node's blocks are full and no other block can be had (the limit is named)
};

struct CniError {
  int code = kInternal;
  std::string msg;
  std::string details;
};

inline CniError cni_error(int code, std::string msg, std::string details = {}) {
  return CniError{code, std::move(msg), std::move(details)};
}

// Value or CniError: the CNI-flavoured sibling of vxfed::Result (same body, common/result.hpp),
// whose error also carries the CNI error code.
template <typename T>
class [[nodiscard]] Expected : public vxfed::ValueOr<T, CniError> {
 public:
  using vxfed::ValueOr<T, CniError>::ValueOr;
  const CniError& error() const { return this->error_value(); }
};

struct Unit {};
using Done = Expected<Unit>;
inline Done done() { return Unit{}; }

}  // namespace vxfed::cni
