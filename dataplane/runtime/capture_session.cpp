#include "dataplane/runtime/capture_session.hpp"

#include <algorithm>

#include <rte_cycles.h>
#include <spdlog/spdlog.h>

namespace vxfed::dataplane {

Result<CaptureLimits> CaptureLimits::from(const v1::StartCapture& r) {
  CaptureLimits l;
  if (r.snaplen() != 0) {
    if (r.snaplen() < 64 || r.snaplen() > 65535)
      return make_error("snaplen: " + std::to_string(r.snaplen()) + " is outside 64 .. 65535");
    l.snaplen = r.snaplen();
  }
  if (r.max_packets() != 0) l.max_packets = r.max_packets();
  if (r.max_bytes() != 0) l.max_bytes = r.max_bytes();
  if (r.duration_ms() != 0) {
    if (r.duration_ms() > kMaxDurationMs)
      return make_error("duration_ms: " + std::to_string(r.duration_ms()) + " is over one hour (" +
                        std::to_string(kMaxDurationMs) + ")");
    l.duration = std::chrono::milliseconds(r.duration_ms());
  }
  if (r.ring_kib() != 0) {
    if (r.ring_kib() < 64 || r.ring_kib() > 65536)
      return make_error("ring_kib: " + std::to_string(r.ring_kib()) + " is outside 64 .. 65536");
    l.ring_kib = r.ring_kib();
  }
  switch (r.direction()) {
    case v1::StartCapture::BOTH: break;
    case v1::StartCapture::RECEIVED: l.sent = false; break;
    case v1::StartCapture::SENT: l.received = false; break;
    default: return make_error("direction: " + std::to_string(static_cast<int>(r.direction())) + " is not BOTH, RECEIVED or SENT");
  }
  return l;
}

CaptureSession::~CaptureSession() {
  // The workers are stopped before the Dataplane goes; nothing reads the rings any more.
  tap_.port.store(CaptureTap::kNoCapture, std::memory_order_release);
}

Status CaptureSession::start(const v1::StartCapture& request, std::uint32_t port, const std::string& name,
                             std::chrono::steady_clock::time_point now) {
  if (active_) {
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline_ - now).count();
    return make_error("a capture of " + name_ + " is running (" + std::to_string(left) +
                      " s left): stop it first (StopCapture)");
  }
  auto limits = CaptureLimits::from(request);
  if (!limits) return make_error(limits.error());
  limits_ = *limits;
  pending_.clear();
  rings_.clear();
  for (unsigned w = 0; w < workers_ && w < CaptureTap::kMaxWorkers; ++w) {
    rings_.push_back(std::make_unique<CaptureRing>(limits_.snaplen, std::size_t{limits_.ring_kib} << 10));
    tap_.rings[w] = rings_.back().get();
  }
  tap_.received = limits_.received;
  tap_.sent = limits_.sent;
  name_ = name;
  ended_.clear();
  packets_ = bytes_ = ring_full_ = 0;
  tsc_hz_ = std::max<std::uint64_t>(1, rte_get_tsc_hz());
  tsc0_ = rte_rdtsc();
  unix_ns0_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::system_clock::now().time_since_epoch()).count();
  deadline_ = now + limits_.duration;
  active_ = true;
  tap_.port.store(port, std::memory_order_release);  // rings and directions are in place
  spdlog::info("capture of {} started: snaplen {}, at most {} packets, {} bytes, {} ms, {} KiB ring per worker",
               name_, limits_.snaplen, limits_.max_packets, limits_.max_bytes, limits_.duration.count(),
               limits_.ring_kib);
  return {};
}

void CaptureSession::collect() {
  const std::size_t first_new = pending_.size();
  for (std::size_t w = 0; w < rings_.size(); ++w) {
    rings_[w]->drain([&](const CaptureRing::Record& r, const std::uint8_t* data) {
      pending_.push_back(Packet{r.tsc, r.original_length, static_cast<std::uint32_t>(w), r.sent != 0,
                                std::string(reinterpret_cast<const char*>(data), r.length)});
    });
  }
  // Each ring is in time order already; the workers' packets interleave.
  std::stable_sort(pending_.begin() + static_cast<std::ptrdiff_t>(first_new), pending_.end(),
                   [](const Packet& a, const Packet& b) { return a.tsc < b.tsc; });
}

void CaptureSession::halt(const char* why) {
  if (!active_) return;
  tap_.port.store(CaptureTap::kNoCapture, std::memory_order_release);
  // A worker that read the port before the store may still be copying in this loop; once
  // every worker has reported a quiescent state since, none is.
  rte_rcu_qsbr_synchronize(qs_, RTE_QSBR_THRID_INVALID);
  collect();
  for (auto& ring : tap_.rings) ring = nullptr;
  ring_full_ = ring_full();
  rings_.clear();  // what they held is in pending_
  active_ = false;
  ended_ = why;
  spdlog::info("capture of {} ended ({}): {} packets read, {} waiting", name_, ended_, packets_, pending_.size());
}

std::uint64_t CaptureSession::ring_full() const {
  if (!active_) return ring_full_;
  std::uint64_t n = 0;
  for (const auto& r : rings_) n += r->full_drops();
  return n;
}

void CaptureSession::tick(std::chrono::steady_clock::time_point now) {
  if (active_ && now >= deadline_) halt("duration");
}

void CaptureSession::read(v1::CaptureStatus& out) {
  if (active_) collect();
  fill(out);
}

void CaptureSession::stop(v1::CaptureStatus& out) {
  halt("stopped");
  fill(out);
}

void CaptureSession::fill(v1::CaptureStatus& out) {
  std::size_t n = 0;
  std::size_t answer_bytes = 0;
  const char* limit = nullptr;
  for (; n < pending_.size() && answer_bytes < kMaxAnswerBytes; ++n) {
    const Packet& p = pending_[n];
    answer_bytes += p.data.size();
    if (packets_ >= limits_.max_packets) {
      limit = "max_packets";
      break;
    }
    if (bytes_ + p.data.size() > limits_.max_bytes) {
      limit = "max_bytes";
      break;
    }
    auto* c = out.add_packets_read();
    const auto dt = static_cast<std::int64_t>(p.tsc - tsc0_);  // a worker's TSC may trail the start by a little
    c->set_unix_ns(static_cast<std::uint64_t>(
        unix_ns0_ + static_cast<std::int64_t>(static_cast<__int128>(dt) * 1'000'000'000 / static_cast<__int128>(tsc_hz_))));
    c->set_original_length(p.original_length);
    c->set_data(p.data);
    c->set_sent(p.sent);
    c->set_worker(p.worker);
    ++packets_;
    bytes_ += p.data.size();
  }
  if (limit == nullptr && packets_ >= limits_.max_packets) limit = "max_packets";
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
  if (limit != nullptr) {
    halt(limit);
    pending_.clear();  // over the limit: never delivered
  }
  out.set_active(active_);
  out.set_port(name_);
  out.set_snaplen(limits_.snaplen);
  out.set_packets(packets_);
  out.set_bytes(bytes_);
  out.set_ring_full(ring_full());
  out.set_ended(ended_);
  out.set_more(!pending_.empty());
}

}  // namespace vxfed::dataplane
