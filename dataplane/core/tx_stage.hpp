// Output of the pipeline: mbufs staged per output port, flushed by the runtime after each
// burst with rte_eth_tx_burst on the worker's own TX queue. Staging never blocks: a full
// port queue drops (tx_full), which only happens if the runtime does not flush per burst.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <rte_mbuf.h>

#include "dataplane/core/counters.hpp"

namespace vxfed::dataplane {

constexpr std::uint16_t kMaxBurst = 64;               // most packets one process_* call takes
constexpr std::uint16_t kTxStageCapacity = 2 * kMaxBurst;

// What a sender that counts for itself reports to TxStage::flush: it took (sent, or dropped
// and counted) pkts[0..taken), and put `frames` frames of `bytes` bytes on the wire.
struct TxSent {
  std::uint16_t taken = 0;
  std::uint64_t frames = 0;
  std::uint64_t bytes = 0;
};

struct TxStage {
  struct Queue {
    std::uint16_t count = 0;
    rte_mbuf* pkts[kTxStageCapacity];
  };
  Queue ports[kMaxPorts];
  std::uint16_t dirty[kMaxPorts];   // ports with count > 0, in order of first use
  std::uint16_t n_dirty = 0;

  // Stages m for port; on overflow frees it and counts tx_full.
  [[gnu::always_inline]] void stage(std::uint16_t port, rte_mbuf* m, WorkerCounters& counters) {
    Queue& q = ports[port];
    if (q.count == kTxStageCapacity) [[unlikely]] {
      counters.drop(DropReason::TxFull, port);
      rte_pktmbuf_free(m);
      return;
    }
    if (q.count == 0) dirty[n_dirty++] = port;
    q.pkts[q.count++] = m;
  }

  // Stages n mbufs for port at once (a burst's worth headed the same way); what does not fit
  // is freed and counted as tx_full.
  void stage_many(std::uint16_t port, rte_mbuf* const* pkts, std::uint16_t n, WorkerCounters& counters) {
    if (n == 0) return;
    Queue& q = ports[port];
    if (q.count == 0) dirty[n_dirty++] = port;
    const std::uint16_t room = static_cast<std::uint16_t>(kTxStageCapacity - q.count);
    const std::uint16_t take = n < room ? n : room;
    std::memcpy(q.pkts + q.count, pkts, take * sizeof(rte_mbuf*));
    q.count = static_cast<std::uint16_t>(q.count + take);
    if (take < n) [[unlikely]] {
      counters.drop(DropReason::TxFull, port, n - take);
      for (std::uint16_t i = take; i < n; ++i) rte_pktmbuf_free(pkts[i]);
    }
  }

  // Hands every staged queue to send(port, pkts, n) and leaves the stage empty. send returns
  // either the number accepted (e.g. a lambda around rte_eth_tx_burst(port, my_queue, pkts,
  // n)): then the accepted packets and their bytes are counted as sent; or a TxSent, for a
  // sender that puts other frames on the wire than the packets it took (a super-packet cut
  // into segments) or drops some itself: then its own figures are. What was not taken is
  // freed and counted as tx_full.
  template <typename Send>
  void flush(Send&& send, WorkerCounters& counters) {
    for (std::uint16_t i = 0; i < n_dirty; ++i) {
      const std::uint16_t port = dirty[i];
      Queue& q = ports[port];
      std::uint16_t sent;
      if constexpr (std::is_same_v<std::invoke_result_t<Send&, std::uint16_t, rte_mbuf**, std::uint16_t>, TxSent>) {
        const TxSent r = send(port, q.pkts, q.count);
        sent = r.taken;
        for (std::uint16_t k = sent; k < q.count; ++k) rte_pktmbuf_free(q.pkts[k]);
        counters.ports[port].tx_packets.add(r.frames);
        counters.ports[port].tx_bytes.add(r.bytes);
      } else {
        std::uint64_t bytes = 0;
        for (std::uint16_t k = 0; k < q.count; ++k) bytes += rte_pktmbuf_pkt_len(q.pkts[k]);
        sent = send(port, q.pkts, q.count);
        for (std::uint16_t k = sent; k < q.count; ++k) {
          bytes -= rte_pktmbuf_pkt_len(q.pkts[k]);
          rte_pktmbuf_free(q.pkts[k]);
        }
        counters.ports[port].tx_packets.add(sent);
        counters.ports[port].tx_bytes.add(bytes);
      }
      if (sent < q.count) counters.drop(DropReason::TxFull, port, q.count - sent);
      q.count = 0;
    }
    n_dirty = 0;
  }
};

}  // namespace vxfed::dataplane
