#include "dataplane/runtime/worker.hpp"

#include <poll.h>
#include <sys/prctl.h>

#include <memory>
#include <vector>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <spdlog/spdlog.h>

#include "dataplane/core/coalesce.hpp"
#include "dataplane/core/mbuf_offload.hpp"
#include "dataplane/core/pipeline.hpp"
#include "dataplane/core/uplink_super.hpp"
#include "dataplane/core/vnet_parse.hpp"
#include "dataplane/runtime/idle_backoff.hpp"
#include "dataplane/runtime/packet_socket.hpp"
#include "dataplane/runtime/pod_sockets.hpp"
#include "dataplane/runtime/software_rss.hpp"
#include "dataplane/runtime/worker_scheduling.hpp"

namespace vxfed::dataplane {

namespace {

// Connection-table entries a census visits per loop iteration (64 B each: 256 KiB, tens of
// microseconds): a 65,536-flow table in 16 iterations.
constexpr std::uint32_t kCensusEntriesPerLoop = 4096;

// Packets other workers handed over for pods this worker owns (global services, network
// policy): PodBurst ones resume as pod bursts of their port, Deliver ones are decided by
// policy and delivered (service_nat.hpp, policy_enforce.hpp).
unsigned drain_service_rings(WorkerContext& w, const ForwardingState* s, rte_mbuf** pkts) {
  unsigned work = 0;
  for (unsigned from = 0; from < w.workers; ++from) {
    if (from == w.id) continue;
    for (unsigned stage = 0; stage < kHandoverStages; ++stage) {
      rte_ring* r = w.service_rings[(std::size_t{from} * w.workers + w.id) * kHandoverStages + stage];
      const unsigned n = rte_ring_dequeue_burst(r, reinterpret_cast<void**>(pkts), kMaxBurst, nullptr);
      if (n == 0) continue;
      work += n;
      if (s == nullptr) {
        drop_burst(pkts, static_cast<std::uint16_t>(n), kPodsPort, DropReason::NoTables, *w.counters);
        continue;
      }
      if (stage == static_cast<unsigned>(HandoverStage::Deliver)) {
        // Network policy first (policy_enforce.hpp): the owner of the destination pod decides.
        const std::uint16_t left = admit_handed_over(*s->tables, w.flows, pkts, static_cast<std::uint16_t>(n), *w.counters);
        deliver_handed_over(*s->tables, w.flows, pkts, left, *w.tx, *w.counters);
        continue;
      }
      for (unsigned i = 0; i < n;) {  // runs of one pod port, as received
        unsigned j = i + 1;
        while (j < n && pkts[j]->port == pkts[i]->port) ++j;
        process_pod_burst(*s->tables, pkts[i]->port, pkts + i, static_cast<std::uint16_t>(j - i), *w.tx, *w.counters,
                          &w.flows);
        i = j;
      }
    }
  }
  return work;
}

// Runs one uplink burst through the pipeline (or drops it before the first snapshot).
// `captured`: the port a capture copies now (capture_tap.hpp).
inline void handle_uplink(WorkerContext& w, const ForwardingState* s, std::uint32_t captured, rte_mbuf** pkts,
                          std::uint16_t n) {
  capture_if(w.capture, captured, w.uplink, w.id, pkts, n, false);
  if (s == nullptr) {
    drop_burst(pkts, n, w.uplink, DropReason::NoTables, *w.counters);
    return;
  }
  process_uplink_burst(*s->tables, pkts, n, *w.tx, *w.counters, &w.flows);
}

// Worker 0 on a single-queue uplink: keeps its own share, hands the rest to their workers.
inline std::uint16_t distribute(WorkerContext& w, rte_mbuf** pkts, std::uint16_t n) {
  std::uint16_t mine = 0;
  rte_mbuf* per_worker[16][kMaxBurst];  // --queues is at most 16
  std::uint16_t counts[16] = {};
  for (std::uint16_t i = 0; i < n; ++i) {
    const unsigned target = software_rss_hash(pkts[i]) % w.workers;
    if (target == 0) {
      pkts[mine++] = pkts[i];
    } else {
      per_worker[target][counts[target]++] = pkts[i];
    }
  }
  for (unsigned t = 1; t < w.workers; ++t) {
    if (counts[t] == 0) continue;
    const unsigned done = rte_ring_enqueue_burst(w.handoff[t], reinterpret_cast<void**>(per_worker[t]),
                                                 counts[t], nullptr);
    if (done < counts[t]) {
      // The target worker is behind: count on the uplink as RX then drop.
      w.counters->ports[w.uplink].rx_packets.add(counts[t] - done);
      w.counters->drop(DropReason::TxFull, w.uplink, counts[t] - done);
      w.handoff_drops->fetch_add(counts[t] - done, std::memory_order_relaxed);
      rte_pktmbuf_free_bulk(per_worker[t] + done, counts[t] - done);
    }
  }
  return mine;
}

// handle_pod_frames' interface of a frame whose vnet header was refused.
constexpr unsigned kBadVnetFrame = ~0u;

// The checksum and GSO state of the pod socket's frames from their vnet headers; a header
// the frame contradicts marks the frame for dropping (ifs[i] = kBadVnetFrame).
void take_pod_vnet(rte_mbuf** pkts, const wire::VirtioNetHeader* vnet, unsigned* ifs, unsigned n) {
  for (unsigned i = 0; i < n; ++i) {
    if ((vnet[i].flags | vnet[i].gso_type) == 0 || ifs[i] == 0) continue;  // nothing pending (the common small frame)
    rte_mbuf* m = pkts[i];
    const VnetVerdict v = parse_pod_vnet(vnet[i], ByteSpan(rte_pktmbuf_mtod(m, const std::uint8_t*), m->data_len),
                                         m->pkt_len);
    if (v.ok) {
      set_rx_offload(m, v.offload);
    } else {
      ifs[i] = kBadVnetFrame;
    }
  }
}

// Frames from the pod socket: runs of one interface go through the pipeline as one pod burst;
// frames of no known pod, too big for their buffers or with a refused vnet header are
// dropped on the "pods" port.
void handle_pod_frames(WorkerContext& w, const ForwardingState* s, std::uint32_t captured, rte_mbuf** pkts,
                       const unsigned* ifs, unsigned n) {
  if (s == nullptr) {
    drop_burst(pkts, static_cast<std::uint16_t>(n), kPodsPort, DropReason::NoTables, *w.counters);
    return;
  }
  unsigned i = 0;
  unsigned last_if = 0;
  std::uint16_t last_port = 0;
  while (i < n) {
    const unsigned ifindex = ifs[i];
    if (ifindex != last_if || ifindex == 0 || ifindex == kBadVnetFrame) {
      const bool usable = ifindex != 0 && ifindex != kBadVnetFrame;
      const std::uint16_t* p = usable ? s->pod_port_of_ifindex.find(ifindex) : nullptr;
      if (p == nullptr) {
        drop_burst(pkts + i, 1, kPodsPort,
                   ifindex == 0               ? DropReason::PodFrameTooBig
                   : ifindex == kBadVnetFrame ? DropReason::BadVnetHeader
                                              : DropReason::UnknownPodInterface,
                   *w.counters);
        ++i;
        last_if = 0;
        continue;
      }
      last_if = ifindex;
      last_port = *p;
    }
    unsigned j = i + 1;
    while (j < n && ifs[j] == ifindex) ++j;
    capture_if(w.capture, captured, last_port, w.id, pkts + i, j - i, false);
    process_pod_burst(*s->tables, last_port, pkts + i, static_cast<std::uint16_t>(j - i), *w.tx, *w.counters,
                      &w.flows);
    i = j;
  }
}

// Frames from the uplink socket, through the pipeline in order: those too big for their
// buffers or with a refused vnet header are dropped (counted on the uplink), the rest keep
// their checksum state. A UDP super-packet (a peer's --uplink-gso that a veth kept whole) is
// cut into its datagrams first (uplink_super.hpp), which go through between the frames
// around it.
void forward_uplink_frames(WorkerContext& w, const ForwardingState* s, std::uint32_t captured, rte_mbuf** pkts,
                           const wire::VirtioNetHeader* vnet, const unsigned* ifs, unsigned n) {
  std::uint16_t kept = 0;  // pkts[0..kept): frames waiting for the pipeline
  for (unsigned i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    if (ifs[i] == 0) [[unlikely]] {
      drop_burst(&m, 1, w.uplink, DropReason::FrameTooBig, *w.counters);
      continue;
    }
    if (vnet[i].gso_type == wire::kVnetGsoUdpL4) {
      const UplinkSuperPacket sp =
          parse_uplink_super(vnet[i], ByteSpan(rte_pktmbuf_mtod(m, const std::uint8_t*), m->data_len), m->pkt_len);
      if (!sp.ok) [[unlikely]] {
        drop_burst(&m, 1, w.uplink, DropReason::BadVnetHeader, *w.counters);
        continue;
      }
      if (kept) handle_uplink(w, s, captured, pkts, kept);
      kept = 0;
      rte_mbuf* frames[kMaxUplinkSuperDatagrams];
      unsigned count = 0;
      const SplitResult r = split_uplink_super(m, sp, w.pool, frames, &count);
      if (r != SplitResult::Done) [[unlikely]] {
        w.counters->ports[w.uplink].rx_packets.add(1);
        w.counters->drop(r == SplitResult::NoMbufs ? DropReason::MbufAllocFailed : DropReason::BadVnetHeader, w.uplink, 1);
        continue;
      }
      for (unsigned k = 0; k < count; k += kMaxBurst)
        handle_uplink(w, s, captured, frames + k, static_cast<std::uint16_t>(std::min<unsigned>(kMaxBurst, count - k)));
      continue;
    }
    if ((vnet[i].flags | vnet[i].gso_type) != 0) {
      const VnetVerdict v = parse_uplink_vnet(vnet[i], ByteSpan(rte_pktmbuf_mtod(m, const std::uint8_t*), m->data_len),
                                              m->pkt_len);
      if (!v.ok) [[unlikely]] {
        drop_burst(&m, 1, w.uplink, v.drop, *w.counters);
        continue;
      }
      set_rx_offload(m, v.offload);
    }
    pkts[kept++] = m;
  }
  if (kept) handle_uplink(w, s, captured, pkts, kept);
}

// A DPDK port's TX burst when some staged packet has pending work (mbuf_offload.hpp): DPDK
// ports here are configured without TX offloads, so super-packets are segmented and pending
// checksums finished in software first. Takes pkts[0..taken) (sent, or dropped and counted
// here); the rest stay the caller's. A super-packet counts as taken when its segmentation was
// done; segments the device refused count as tx_full. frames and bytes: the segments sent.
[[gnu::noinline]] TxSent ethdev_send_finishing(WorkerContext& w, std::uint16_t port, std::uint16_t queue,
                                               rte_mbuf** pkts, std::uint16_t n) {
  constexpr unsigned kOut = 256;
  rte_mbuf* out[kOut];
  TxSent r;
  while (r.taken < n) {
    unsigned no = 0;
    std::uint16_t i = r.taken;
    for (; i < n; ++i) {
      bool alloc_failed = false;
      const unsigned k = finish_offloads(pkts[i], w.pool, out + no, kOut - no, &alloc_failed);
      if (alloc_failed) {
        w.counters->drop(DropReason::MbufAllocFailed, port);
        continue;
      }
      if (k == 0) break;  // no room left in out: send what we have first
      no += k;
    }
    if (no == 0 && i == r.taken) {  // a single super-packet with more segments than kOut
      w.counters->drop(DropReason::TxFull, port);
      rte_pktmbuf_free(pkts[i]);
      r.taken = static_cast<std::uint16_t>(i + 1);
      continue;
    }
    // Counted before the send: the device may free what it took at once.
    std::uint64_t bytes[kOut + 1];
    bytes[0] = 0;
    for (unsigned k = 0; k < no; ++k) bytes[k + 1] = bytes[k] + rte_pktmbuf_pkt_len(out[k]);
    const std::uint16_t sent = rte_eth_tx_burst(port, queue, out, static_cast<std::uint16_t>(no));
    r.frames += sent;
    r.bytes += bytes[sent];
    r.taken = i;
    if (sent < no) {
      w.counters->drop(DropReason::TxFull, port, no - sent);
      rte_pktmbuf_free_bulk(out + sent, no - sent);
      break;  // the device is full: the rest stay the caller's
    }
  }
  return r;
}

// The descriptors an idle worker waits on, rebuilt when the published state changes (rare:
// table updates), never per packet.
class WaitSet {
 public:
  // False when some polled source cannot wake the worker: then it naps instead.
  bool update(const WorkerContext& w, const ForwardingState* s) {
    const std::uint64_t version = s == nullptr ? 0 : s->version;
    if (built_ && version == version_) return usable_;
    built_ = true;
    version_ = version;
    usable_ = w.wake != nullptr && w.wake->valid() && !w.uplink_wake_fds.empty() &&
              w.spread == UplinkSpread::Hardware && (s == nullptr || s->pods_wakeable);
    fds_.clear();
    if (!usable_) return false;
    fds_.push_back(pollfd{w.wake->fd(), POLLIN, 0});
    for (int fd : w.uplink_wake_fds) fds_.push_back(pollfd{fd, POLLIN, 0});
    if (w.pod_fd >= 0) fds_.push_back(pollfd{w.pod_fd, POLLIN, 0});
    if (s != nullptr)
      for (int fd : s->pod_wake_fds) fds_.push_back(pollfd{fd, POLLIN, 0});
    return true;
  }

  // Offline for RCU while blocked: a table swap must not wait for an idle worker.
  void block(const WorkerContext& w) {
    rte_rcu_qsbr_thread_offline(w.qs, w.id);
    ::poll(fds_.data(), fds_.size(), IdleBackoff::kBlockTimeoutMs);
    if (fds_[0].revents & POLLIN) w.wake->drain();
    rte_rcu_qsbr_thread_online(w.qs, w.id);
  }

 private:
  bool built_ = false;
  bool usable_ = false;
  std::uint64_t version_ = 0;
  std::vector<pollfd> fds_;
};

}  // namespace

int worker_main(void* arg) {
  auto& w = *static_cast<WorkerContext*>(arg);
  // Short sleeps must stay short: the default 50 us timer slack would stretch a 10 us nap.
  ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  // Once, before the loop: a worker that cannot be real-time runs on as an ordinary thread.
  if (const std::string why = schedule_worker_thread(w.rt_priority); !why.empty())
    spdlog::warn("worker {}: not real-time: {}; running as an ordinary thread (latency under CPU load suffers)",
                 w.id, why);
  else if (w.rt_priority != 0)
    spdlog::info("worker {}: real-time, SCHED_FIFO priority {}", w.id, w.rt_priority);
  rte_rcu_qsbr_thread_register(w.qs, w.id);
  rte_rcu_qsbr_thread_online(w.qs, w.id);
  IdleBackoff backoff(w.idle);
  WaitSet wait_set;
  rte_mbuf* pkts[kMaxBurst];
  unsigned frame_ifs[kMaxBurst];
  wire::VirtioNetHeader frame_vnet[kMaxBurst];
  // The sockets' receive slots and send scratch (tens of KiB: on the heap, once).
  auto pod_rx = std::make_unique<SocketReceiver>(w.pool, kPodFrameSegments);
  auto uplink_rx = std::make_unique<SocketReceiver>(w.pool, w.uplink_segments);
  auto sender = std::make_unique<SocketSender>();
  std::uint64_t pod_refused = 0, uplink_refused = 0;
  const auto queue = static_cast<std::uint16_t>(w.id);
  const ForwardingState* s = nullptr;
  // Without a capture tap (tests that build a context by hand) nothing is ever captured.
  static CaptureTap no_capture;
  if (w.capture == nullptr) w.capture = &no_capture;
  std::uint32_t captured = CaptureTap::kNoCapture;
  // Pod ports are sent to through the pod socket by ifindex (super-packets whole), the uplink
  // socket gets super-packets cut into segments, DPDK ports go on our TX queue. Each says
  // what it put on the wire: a super-packet cut into segments counts every segment.
  const auto send = [queue, &w, &s, &sender, &captured](std::uint16_t port, rte_mbuf** p, std::uint16_t n) -> TxSent {
    capture_if(w.capture, captured, port, w.id, p, n, true);
    SendTally t;
    std::uint16_t taken;
    if (port >= kFirstPodPort) {
      const unsigned ifindex = s == nullptr ? 0 : s->pod_ifindex[port - kFirstPodPort];
      taken = ifindex == 0 ? 0 : sender->send(w.pod_fd, ifindex, p, n, false, &t);
    } else if (port == w.uplink && w.uplink_fd >= 0) {
      taken = sender->send(w.uplink_fd, 0, p, n, true, &t, w.uplink_segmenting);
    } else {
      std::uint64_t pending = 0;
      for (std::uint16_t i = 0; i < n; ++i) pending |= p[i]->ol_flags;
      if (pending & kTxPendingFlags) return ethdev_send_finishing(w, port, queue, p, n);
      TxSent r;
      for (std::uint16_t i = 0; i < n; ++i) r.bytes += rte_pktmbuf_pkt_len(p[i]);
      r.taken = rte_eth_tx_burst(port, queue, p, n);
      for (std::uint16_t i = r.taken; i < n; ++i) r.bytes -= rte_pktmbuf_pkt_len(p[i]);
      r.frames = r.taken;
      return r;
    }
    if (t.queue_full | t.refused) [[unlikely]] {
      if (t.queue_full) w.counters->drop(DropReason::TxFull, port, t.queue_full);
      if (t.refused) w.counters->drop(DropReason::TxRefused, port, t.refused);
    }
    return TxSent{taken, t.frames, t.bytes};
  };

  while (!w.stop->load(std::memory_order_relaxed)) {
    const std::uint64_t loop_start = rte_rdtsc();
    w.flows.now = loop_start;
    // Expiry a little per loop, never a pause (docs/conntrack.md, "Expiry"); nothing to visit
    // while no flow is tracked.
    if (w.conntrack && w.conntrack->size() != 0) w.conntrack->sweep(loop_start, 64);
    // A census of the translated flows the control thread asked for (GetServiceCounters): a
    // part of the table per loop, never a pause; the worker neither naps nor blocks meanwhile.
    bool censusing = false;
    if (w.census.state.load(std::memory_order_acquire) == FlowCensus::kRequested) [[unlikely]] {
      if (w.conntrack && w.conntrack->size() != 0)
        census_step(w.census, *w.conntrack, loop_start, kCensusEntriesPerLoop);
      else  // nothing tracked: nothing to walk
        w.census.state.store(FlowCensus::kDone, std::memory_order_release);
      censusing = true;
    }
    s = w.state->read();
    captured = w.capture->current();
    unsigned work = 0;

    // Uplink.
    if (w.uplink_fd >= 0) {
      const unsigned got = uplink_rx->receive(w.uplink_fd, pkts, frame_vnet, frame_ifs, kMaxBurst, &uplink_refused);
      if (got) {
        work += got;
        forward_uplink_frames(w, s, captured, pkts, frame_vnet, frame_ifs, got);
      }
      if (uplink_refused) [[unlikely]] {
        w.counters->drop(DropReason::UnreadableFrame, w.uplink, uplink_refused);
        uplink_refused = 0;
      }
    } else if (w.spread == UplinkSpread::Hardware) {
      const std::uint16_t n = rte_eth_rx_burst(w.uplink, queue, pkts, kMaxBurst);
      if (n) {
        work += n;
        handle_uplink(w, s, captured, pkts, n);
      }
    } else {
      if (w.id == 0) {
        std::uint16_t n = rte_eth_rx_burst(w.uplink, 0, pkts, kMaxBurst);
        if (n) {
          work += n;
          n = distribute(w, pkts, n);
          if (n) handle_uplink(w, s, captured, pkts, n);
        }
      } else {
        const unsigned n = rte_ring_dequeue_burst(w.handoff[w.id], reinterpret_cast<void**>(pkts),
                                                  kMaxBurst, nullptr);
        if (n) {
          work += n;
          handle_uplink(w, s, captured, pkts, static_cast<std::uint16_t>(n));
        }
      }
    }

    // Endpoint ports: this worker's queue of each.
    if (s != nullptr) {
      for (const std::uint16_t port : s->pod_ports) {
        const std::uint16_t n = rte_eth_rx_burst(port, queue, pkts, kMaxBurst);
        if (n) {
          work += n;
          capture_if(w.capture, captured, port, w.id, pkts, n, false);
          process_pod_burst(*s->tables, port, pkts, n, *w.tx, *w.counters, &w.flows);
        }
      }
    }

    // Pods served by the pod socket (none attached: nothing to read, and no system call).
    if (w.pod_fd >= 0 && s != nullptr && s->socket_pods != 0) {
      const unsigned n = pod_rx->receive(w.pod_fd, pkts, frame_vnet, frame_ifs, kMaxBurst, &pod_refused);
      if (n) {
        work += n;
        take_pod_vnet(pkts, frame_vnet, frame_ifs, n);
        handle_pod_frames(w, s, captured, pkts, frame_ifs, n);
      }
      if (pod_refused) [[unlikely]] {
        w.counters->drop(DropReason::UnreadableFrame, kPodsPort, pod_refused);
        pod_refused = 0;
      }
    }

    // Frames the control thread asked worker 0 to send (ARP requests) when the uplink has
    // no TX queue of its own for it.
    if (w.control_tx != nullptr) {
      const unsigned n = rte_ring_dequeue_burst(w.control_tx, reinterpret_cast<void**>(pkts),
                                                kMaxBurst, nullptr);
      for (unsigned i = 0; i < n; ++i) w.tx->stage(w.uplink, pkts[i], *w.counters);
      work += n;
    }

    if (w.service_rings) work += drain_service_rings(w, s, pkts);

    // Read while `s` is still ours (before the quiescent report below).
    const bool can_block = work == 0 && !censusing && wait_set.update(w, s);

    // TCP segments headed for one pod leave as super-packets where they continue each other
    // (coalesce.hpp): the pod's kernel takes one packet instead of each segment.
    for (std::uint16_t d = 0; d < w.tx->n_dirty; ++d) {
      const std::uint16_t port = w.tx->dirty[d];
      TxStage::Queue& q = w.tx->ports[port];
      if (port >= kFirstPodPort && q.count > 1) q.count = coalesce_tcp_segments(q.pkts, q.count);
    }
    // Everything staged leaves before the quiescent report, so once a grace period ends no
    // mbuf is still headed for a port the old tables named.
    w.tx->flush(send, *w.counters);
    if (w.handed_to) [[unlikely]] {  // they may be blocked on their sockets
      for (unsigned to = 0; to < w.workers; ++to)
        if ((w.handed_to >> to) & 1) (*w.all_wakes)[to]->signal();
      w.handed_to = 0;
    }
    rte_rcu_qsbr_quiescent(w.qs, w.id);
    w.loops.store(w.loops.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);

    if (censusing && !work) [[unlikely]] {
      backoff.work_done();
      continue;
    }
    if (work) {
      w.busy_loops.store(w.busy_loops.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      w.busy_cycles.store(w.busy_cycles.load(std::memory_order_relaxed) + (rte_rdtsc() - loop_start),
                          std::memory_order_relaxed);
      backoff.work_done();
      continue;
    }
    switch (backoff.idle(can_block)) {
      case IdleBackoff::Step::spun:
        break;
      case IdleBackoff::Step::block:
        wait_set.block(w);
        backoff.woke();
        [[fallthrough]];
      case IdleBackoff::Step::slept:
        w.sleeps.store(w.sleeps.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        break;
    }
  }
  rte_rcu_qsbr_thread_offline(w.qs, w.id);
  rte_rcu_qsbr_thread_unregister(w.qs, w.id);
  return 0;
}

bool hand_over_to_worker(void* context, std::uint32_t to, HandoverStage stage, rte_mbuf* m) {
  auto& w = *static_cast<WorkerContext*>(context);
  rte_ring* r = w.service_rings[(std::size_t{w.id} * w.workers + to) * kHandoverStages + static_cast<unsigned>(stage)];
  if (rte_ring_enqueue(r, m) != 0) return false;  // the caller counts service_handover_full
  w.handed_to |= 1ull << to;
  w.counters->services.handed_over.add(1);
  return true;
}

}  // namespace vxfed::dataplane
