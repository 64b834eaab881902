// vxfed-dpctl capture: asks the dataplane for a capture of one port (StartCapture), empties
// it into a pcap file (ReadCapture, every interval) until it ends by itself at a limit, or
// stops it (StopCapture) on SIGINT/SIGTERM, and says on standard error what it got.
#pragma once

#include <cstdint>
#include <string>

namespace vxfed::dataplane {

struct CaptureRequestOptions {
  std::string port;               // "uplink" or a pod's host-side interface
  std::string out;                // pcap file, "-" for standard output
  std::uint64_t count = 0;        // 0: the dataplane's default (1000)
  std::uint64_t max_bytes = 0;    // 0: the dataplane's default (64 MiB)
  double seconds = 0;             // 0: the dataplane's default (10 s)
  std::uint32_t snaplen = 0;      // 0: the dataplane's default (9216)
  std::uint32_t ring_kib = 0;     // 0: the dataplane's default (4096)
  std::string direction = "both"; // both, received, sent
  int interval_ms = 50;
};

// Runs the capture over a connected API socket. Returns the process exit code: 0 done,
// 1 refused by the dataplane, 2 a local or transport error.
int run_capture(int fd, const CaptureRequestOptions& options, int timeout_ms);

}  // namespace vxfed::dataplane
