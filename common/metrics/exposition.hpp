// Writes the Prometheus text exposition format (version 0.0.4): families with HELP and TYPE,
// samples with escaped label values, histograms as cumulative _bucket/_sum/_count. Pure: the
// metrics server calls it per scrape.
//
// The rules it holds a writer to (Prometheus' naming conventions; `promtool check metrics`
// checks the same in the integration test): a counter's name ends in `_total`, other types'
// names do not; a family is declared once; a family's samples follow its declaration. A
// broken rule is a programming error: the sample is left out and errors() names it (unit
// tests assert it is empty), so a scrape never fails.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/metrics/histogram.hpp"

namespace vxfed::metrics {

enum class Type { counter, gauge, histogram };

struct Label {
  std::string_view name;
  std::string value;
};
using Labels = std::vector<Label>;

class Exposition {
 public:
  // Starts family `name`; the samples that follow belong to it.
  Exposition& family(std::string_view name, Type type, std::string_view help);
  Exposition& sample(std::uint64_t value, const Labels& labels = {});
  Exposition& sample(double value, const Labels& labels = {});
  Exposition& sample(bool value, const Labels& labels = {}) { return sample(std::uint64_t{value ? 1u : 0u}, labels); }
  Exposition& histogram(const Histogram& h, const Labels& labels = {});

  // A family with one unlabelled sample.
  void counter(std::string_view name, std::string_view help, std::uint64_t value);
  void gauge(std::string_view name, std::string_view help, double value);

  std::string take() { return std::move(out_); }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  bool can_sample(bool histogram);  // false (and an error) if the open family cannot take it
  void write_labels(const Labels& labels, std::string_view extra_name = {}, std::string_view extra_value = {});

  std::string out_;
  std::string name_;
  Type type_ = Type::gauge;
  bool open_ = false;
  std::unordered_set<std::string> declared_;
  std::vector<std::string> errors_;
};

// Label values and HELP text escaped as the format requires.
std::string escape_label_value(std::string_view value);
// A float as Prometheus writes it: shortest round-trip form, +Inf, -Inf, NaN.
std::string format_value(double value);

}  // namespace vxfed::metrics
