#include "common/metrics/exposition.hpp"

#include <cmath>

#include <fmt/format.h>

namespace vxfed::metrics {

namespace {

const char* type_name(Type t) {
  switch (t) {
    case Type::counter: return "counter";
    case Type::gauge: return "gauge";
    case Type::histogram: return "histogram";
  }
  return "untyped";
}

bool valid_name(std::string_view name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string escape_help(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

Exposition& Exposition::family(std::string_view name, Type type, std::string_view help) {
  open_ = false;
  std::string why;
  if (!valid_name(name)) why = "is not a valid metric name";
  else if (type == Type::counter && !ends_with(name, "_total")) why = "is a counter without the _total suffix";
  else if (type != Type::counter && ends_with(name, "_total")) why = "ends in _total but is not a counter";
  else if (!declared_.insert(std::string(name)).second) why = "is declared twice";
  if (!why.empty()) {
    errors_.push_back(std::string(name) + " " + why);
    return *this;
  }
  name_ = name;
  type_ = type;
  open_ = true;
  out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, escape_help(help), name, type_name(type));
  return *this;
}

bool Exposition::can_sample(bool histogram) {
  if (!open_) return false;  // family() refused: its error is recorded already
  if (histogram != (type_ == Type::histogram)) {
    errors_.push_back(name_ + ": a " + (histogram ? "histogram" : "plain") + " sample in a " +
                      type_name(type_) + " family");
    return false;
  }
  return true;
}

void Exposition::write_labels(const Labels& labels, std::string_view extra_name, std::string_view extra_value) {
  if (labels.empty() && extra_name.empty()) return;
  out_ += '{';
  bool first = true;
  for (const auto& l : labels) {
    if (!first) out_ += ',';
    first = false;
    out_ += fmt::format("{}=\"{}\"", l.name, escape_label_value(l.value));
  }
  if (!extra_name.empty()) {
    if (!first) out_ += ',';
    out_ += fmt::format("{}=\"{}\"", extra_name, extra_value);
  }
  out_ += '}';
}

Exposition& Exposition::sample(std::uint64_t value, const Labels& labels) {
  if (!can_sample(false)) return *this;
  out_ += name_;
  write_labels(labels);
  out_ += fmt::format(" {}\n", value);
  return *this;
}

Exposition& Exposition::sample(double value, const Labels& labels) {
  if (!can_sample(false)) return *this;
  out_ += name_;
  write_labels(labels);
  out_ += ' ';
  out_ += format_value(value);
  out_ += '\n';
  return *this;
}

Exposition& Exposition::histogram(const Histogram& h, const Labels& labels) {
  if (!can_sample(true)) return *this;
  std::uint64_t cumulative = 0;
  const auto& bounds = h.upper_bounds();
  const auto& counts = h.bucket_counts();
  for (std::size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += counts[i];
    out_ += name_ + "_bucket";
    write_labels(labels, "le", i < bounds.size() ? format_value(bounds[i]) : "+Inf");
    out_ += fmt::format(" {}\n", cumulative);
  }
  out_ += name_ + "_sum";
  write_labels(labels);
  out_ += ' ' + format_value(h.sum()) + '\n';
  out_ += name_ + "_count";
  write_labels(labels);
  out_ += fmt::format(" {}\n", h.count());
  return *this;
}

void Exposition::counter(std::string_view name, std::string_view help, std::uint64_t value) {
  family(name, Type::counter, help).sample(value);
}

void Exposition::gauge(std::string_view name, std::string_view help, double value) {
  family(name, Type::gauge, help).sample(value);
}

}  // namespace vxfed::metrics
