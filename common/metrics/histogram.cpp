#include "common/metrics/histogram.hpp"

#include <algorithm>

namespace vxfed::metrics {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  // Prometheus buckets are "less than or equal": the first bound >= value.
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  ++counts_[static_cast<std::size_t>(it - bounds_.begin())];
  sum_ += value;
  ++count_;
}

Histogram Histogram::from_parts(std::vector<double> upper_bounds, std::vector<std::uint64_t> bucket_counts,
                                double sum, std::uint64_t count) {
  Histogram h(std::move(upper_bounds));
  if (bucket_counts.size() != h.counts_.size()) return h;
  h.counts_ = std::move(bucket_counts);
  h.sum_ = sum;
  h.count_ = count;
  return h;
}

std::vector<double> Histogram::latency_seconds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

}  // namespace vxfed::metrics
