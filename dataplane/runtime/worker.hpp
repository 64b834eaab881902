// A worker lcore: polls its uplink (RX queue or socket), its pod socket and its queue of every
// endpoint port, runs the core pipeline on each burst, flushes the TX stage (coalescing TCP
// segments for the pods, segmenting super-packets for the uplink: docs/pod-ports.md) to its
// own TX queues and sockets, reports a quiescent state to RCU once per loop, and backs off
// when idle.
#pragma once

#include <atomic>
#include <memory>
#include <vector>
#include <cstdint>

#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include "dataplane/core/counters.hpp"
#include "dataplane/core/policy_enforce.hpp"
#include "dataplane/core/service_counters.hpp"
#include "dataplane/core/service_nat.hpp"
#include "dataplane/core/tx_stage.hpp"
#include "dataplane/runtime/capture_tap.hpp"
#include "dataplane/runtime/forwarding_state.hpp"
#include "dataplane/runtime/idle_backoff.hpp"
#include "dataplane/runtime/packet_socket.hpp"
#include "dataplane/runtime/ports.hpp"
#include "dataplane/runtime/rcu_slot.hpp"
#include "dataplane/runtime/socket_wakeup.hpp"

namespace vxfed::dataplane {

constexpr unsigned kHandoverStages = 2;  // HandoverStage's values

struct WorkerContext {
  unsigned id = 0;                    // worker index = RX/TX queue index = RCU thread id
  unsigned workers = 1;
  std::uint16_t uplink = 0;
  UplinkSpread spread = UplinkSpread::Hardware;
  RcuSlot<ForwardingState>* state = nullptr;
  rte_rcu_qsbr* qs = nullptr;
  WorkerCounters* counters = nullptr; // this worker's, zeroed
  TxStage* tx = nullptr;              // this worker's
  rte_ring** handoff = nullptr;       // software spread: ring per worker (index 0 unused)
  rte_ring* control_tx = nullptr;     // worker 0 only: frames from the control thread
  std::atomic<std::uint64_t>* handoff_drops = nullptr;  // software spread ring full
  IdlePolicy idle;
  unsigned rt_priority = 0;           // SCHED_FIFO priority of this worker's thread; 0: ordinary
  // Blocking when idle (socket_wakeup.hpp): the uplink's af_packet sockets (empty: the uplink
  // cannot wake us, so we never block) and this worker's event for everything else.
  std::vector<int> uplink_wake_fds;
  int pod_fd = -1;                    // this worker's pod socket (pod_sockets.hpp)
  int uplink_fd = -1;                 // this worker's uplink socket (uplink_sockets.hpp), or -1: a DPDK port
  unsigned uplink_segments = 1;       // mbufs per frame from the uplink socket
  UplinkSegmenting uplink_segmenting = UplinkSegmenting::PerSegment;  // super-packets to the uplink socket
  rte_mempool* pool = nullptr;        // mbufs for frames from the sockets, and software segmentation
  const WakeEvent* wake = nullptr;
  CaptureTap* capture = nullptr;      // packet capture (capture_tap.hpp); shared by the workers
  const std::atomic<bool>* stop = nullptr;
  // Global services (service_nat.hpp): this worker's connection table (--conntrack-flows),
  // its clock set once per loop from the TSC, and a sweep of expired flows per loop.
  std::unique_ptr<ConntrackTable> conntrack;
  ServiceFlows flows;
  // Several workers: the rings of every (from, to, stage), index (from * workers + to) *
  // kHandoverStages + stage; the workers' wake events, signalled once per loop for those this
  // worker handed packets to (bit per worker in handed_to).
  rte_ring** service_rings = nullptr;
  const std::vector<std::unique_ptr<WakeEvent>>* all_wakes = nullptr;
  std::uint64_t handed_to = 0;
  // GetServiceCounters' census of this worker's translated flows (service_counters.hpp): asked
  // by the control thread, done by this worker a part of its table per loop iteration.
  FlowCensus census;
  // Written by the worker (relaxed load + store), read by the control thread for GetCounters.
  std::atomic<std::uint64_t> loops{0};
  std::atomic<std::uint64_t> busy_loops{0};   // iterations that moved packets ...
  std::atomic<std::uint64_t> busy_cycles{0};  // ... and their TSC cycles (busy ratio)
  std::atomic<std::uint64_t> sleeps{0};   // naps and blocks
};

// lcore entry point (rte_eal_remote_launch); arg is a WorkerContext*.
int worker_main(void* arg);

// ServiceFlows::hand_over of a worker (context: its WorkerContext): enqueues on the ring to
// `to` for `stage` and marks `to` to be woken at the end of the loop.
bool hand_over_to_worker(void* context, std::uint32_t to, HandoverStage stage, rte_mbuf* m);

}  // namespace vxfed::dataplane
