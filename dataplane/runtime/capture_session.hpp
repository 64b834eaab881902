// The control thread's side of packet capture: StartCapture / ReadCapture / StopCapture of
// the table API (proto/dataplane.proto). One capture at a time, bounded in packets, bytes,
// time and ring memory, ended by itself at the first limit; the workers' side is
// capture_tap.hpp. Control thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <rte_rcu_qsbr.h>

#include "common/result.hpp"
#include "dataplane/runtime/capture_tap.hpp"
#include "proto/dataplane.pb.h"

namespace vxfed::dataplane {

namespace v1 = vxfed::dataplane::v1;

// StartCapture's limits with the defaults filled in, or an error naming the field.
struct CaptureLimits {
  static constexpr std::uint32_t kDefaultSnaplen = 9216;      // a jumbo frame and its VLAN tag
  static constexpr std::uint64_t kDefaultPackets = 1000;
  static constexpr std::uint64_t kDefaultBytes = 64ull << 20;
  static constexpr std::uint32_t kDefaultDurationMs = 10'000;
  static constexpr std::uint32_t kMaxDurationMs = 3'600'000;
  static constexpr std::uint32_t kDefaultRingKib = 4096;

  std::uint32_t snaplen = kDefaultSnaplen;
  std::uint64_t max_packets = kDefaultPackets;
  std::uint64_t max_bytes = kDefaultBytes;
  std::chrono::milliseconds duration{kDefaultDurationMs};
  std::uint32_t ring_kib = kDefaultRingKib;
  bool received = true;
  bool sent = true;

  static Result<CaptureLimits> from(const v1::StartCapture& request);
};

class CaptureSession {
 public:
  CaptureSession(CaptureTap& tap, rte_rcu_qsbr* qs, unsigned workers) : tap_(tap), qs_(qs), workers_(workers) {}
  ~CaptureSession();

  // Starts capturing `port` (the port index the workers use, named `name` for people). Refused
  // while another capture runs.
  Status start(const v1::StartCapture& request, std::uint32_t port, const std::string& name,
               std::chrono::steady_clock::time_point now);
  // The packets captured since the last read, in time order, and the capture's state. Ends
  // the capture when a packet or byte limit is reached.
  void read(v1::CaptureStatus& out);
  // Ends the capture (if it runs) and answers as read() does with what was left.
  void stop(v1::CaptureStatus& out);
  // Ends the capture once its time is up.
  void tick(std::chrono::steady_clock::time_point now);
  // Ends the capture because its port is going away (a pod detached).
  void port_removed() { halt("port_removed"); }

  bool active() const { return active_; }
  const std::string& port_name() const { return name_; }

 private:
  // Takes the port away from the workers, waits until none can still be copying, then keeps
  // what the rings hold for the next read and frees them.
  void halt(const char* why);
  // Moves what the rings hold into pending_, in time order, within the limits.
  void collect();
  void fill(v1::CaptureStatus& out);
  std::uint64_t ring_full() const;
  // One answer's packet data at most (the client's socket and its message ceiling).
  static constexpr std::size_t kMaxAnswerBytes = 8u << 20;  // packets the workers could not keep (ring full)

  struct Packet {
    std::uint64_t tsc;
    std::uint32_t original_length;
    std::uint32_t worker;
    bool sent;
    std::string data;
  };

  CaptureTap& tap_;
  rte_rcu_qsbr* qs_;
  unsigned workers_;
  std::vector<std::unique_ptr<CaptureRing>> rings_;
  std::vector<Packet> pending_;
  CaptureLimits limits_;
  std::string name_;
  std::string ended_;
  bool active_ = false;
  std::chrono::steady_clock::time_point deadline_{};
  std::uint64_t tsc0_ = 0;           // rte_rdtsc() at start ...
  std::int64_t unix_ns0_ = 0;        // ... and the system clock at that moment
  std::uint64_t tsc_hz_ = 1;
  std::uint64_t packets_ = 0, bytes_ = 0, ring_full_ = 0;
};

}  // namespace vxfed::dataplane
