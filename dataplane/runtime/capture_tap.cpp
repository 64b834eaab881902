#include "dataplane/runtime/capture_tap.hpp"

#include <algorithm>
#include <cstring>

#include <rte_cycles.h>

namespace vxfed::dataplane {

CaptureRing::CaptureRing(std::uint32_t snaplen, std::size_t bytes)
    : snaplen_(snaplen),
      // Slots start on cache lines, so two packets' copies never share one.
      slot_bytes_((sizeof(Record) + snaplen + 63) / 64 * 64),
      slots_(std::max<std::size_t>(16, bytes / slot_bytes_)),
      memory_(new std::uint8_t[slots_ * slot_bytes_]) {}

bool CaptureRing::push(const rte_mbuf* m, std::uint64_t tsc, bool sent) {
  const std::uint64_t head = head_.load(std::memory_order_relaxed);
  if (head - tail_.load(std::memory_order_acquire) >= slots_) {
    full_drops_.store(full_drops_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return false;
  }
  std::uint8_t* slot = slot_at(head);
  // Segment by segment: super-packets and socket frames span several mbufs.
  std::uint32_t copied = 0;
  for (const rte_mbuf* seg = m; seg != nullptr && copied < snaplen_; seg = seg->next) {
    const std::uint32_t take = std::min<std::uint32_t>(seg->data_len, snaplen_ - copied);
    std::memcpy(slot + sizeof(Record) + copied, rte_pktmbuf_mtod(seg, const std::uint8_t*), take);
    copied += take;
  }
  Record r{};
  r.tsc = tsc;
  r.original_length = m->pkt_len;
  r.length = static_cast<std::uint16_t>(copied);
  r.sent = sent ? 1 : 0;
  std::memcpy(slot, &r, sizeof(r));
  head_.store(head + 1, std::memory_order_release);
  return true;
}

void capture_burst(CaptureTap& tap, unsigned worker, rte_mbuf* const* pkts, unsigned n, bool sent) {
  if (sent ? !tap.sent : !tap.received) return;
  CaptureRing* ring = worker < CaptureTap::kMaxWorkers ? tap.rings[worker] : nullptr;
  if (ring == nullptr) return;
  const std::uint64_t tsc = rte_rdtsc();
  for (unsigned i = 0; i < n; ++i) ring->push(pkts[i], tsc, sent);
}

}  // namespace vxfed::dataplane
