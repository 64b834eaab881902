// A Prometheus-style histogram with fixed bucket bounds: one writer, read by whoever renders
// it (common/metrics/exposition.hpp). Observing is a search over at most a few dozen bounds
// and two additions: for control-thread events (a table update, an fsync, an API request),
// never per packet.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace vxfed::metrics {

class Histogram {
 public:
  // `upper_bounds`: finite, strictly increasing; the +Inf bucket is implicit.
  explicit Histogram(std::vector<double> upper_bounds);
  Histogram() : Histogram(latency_seconds()) {}

  void observe(double value);
  // A histogram another process measured (it sent bounds, per-bucket counts, sum and count).
  // Counts of the wrong length (a sender of another version) give an empty histogram.
  static Histogram from_parts(std::vector<double> upper_bounds, std::vector<std::uint64_t> bucket_counts,
                              double sum, std::uint64_t count);

  const std::vector<double>& upper_bounds() const { return bounds_; }
  // Per bucket, not cumulative: bounds().size() + 1 entries, the last one the +Inf bucket.
  const std::vector<std::uint64_t>& bucket_counts() const { return counts_; }
  double sum() const { return sum_; }
  std::uint64_t count() const { return count_; }

  // 100 µs .. 10 s: API requests, fsyncs, table updates on a loaded machine.
  static std::vector<double> latency_seconds();

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

}  // namespace vxfed::metrics
