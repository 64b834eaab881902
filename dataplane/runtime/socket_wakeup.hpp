// Letting an idle worker sleep in the kernel until a packet arrives, instead of waking on a
// timer to look.
//
// Why: on a shared or virtualised host a timed nap is far longer than asked (nanosleep(20 us)
// measured ~70 us here, nanosleep(5 us) ~50 us), so a worker that naps adds that much latency to
// every packet that finds it asleep, and one that naps shorter burns the core the pods need.
// af_packet ports are kernel sockets with an mmap'ed RX ring: poll() on the socket reports
// POLLIN as soon as the kernel has written a frame the reader has not consumed yet, and
// wakes a sleeper the moment one lands. DPDK's af_packet PMD offers no RX interrupts, but
// its sockets are ordinary descriptors of this process: we find them by the interface they
// are bound to (getsockname -> sockaddr_ll.sll_ifindex).
//
// A worker blocks only when every source it polls can wake it: the af_packet sockets of all
// its ports, and its WakeEvent for everything else (new tables, frames queued by the control
// thread, stop). Ports without sockets (PCI NICs, null, tap, pcap) keep the timed back-off.
#pragma once

#include <cstdint>
#include <vector>

#include "common/unique_fd.hpp"

namespace vxfed::dataplane {

// The AF_PACKET socket descriptors of this process bound to interface `ifindex`, in
// ascending order (the PMD opens one per queue pair). Empty when there are none or /proc is
// not readable.
std::vector<int> packet_socket_fds(unsigned ifindex);

// Frames the kernel dropped since the last call because the socket's RX ring was full
// (PACKET_STATISTICS; reading resets the kernel's count, and the PMD never reads it).
std::uint64_t take_ring_drops(int packet_socket_fd);

// An eventfd a worker waits on besides its sockets. signal() is async-signal-safe and cheap
// enough for the control path; the worker drains it after waking.
class WakeEvent {
 public:
  WakeEvent();
  WakeEvent(const WakeEvent&) = delete;
  WakeEvent& operator=(const WakeEvent&) = delete;

  bool valid() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  void signal() const;
  void drain() const;

 private:
  UniqueFd fd_;
};

}  // namespace vxfed::dataplane
