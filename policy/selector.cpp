#include "policy/selector.hpp"

#include <algorithm>

namespace vxfed::policy {

namespace {

bool holds(const Requirement& r, const Labels& labels) {
  const auto it = labels.find(r.key);
  const bool has = it != labels.end();
  const auto in_values = [&] { return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end(); };
  switch (r.op) {
    case Operator::In: return in_values();
    case Operator::NotIn: return !in_values();
    case Operator::Exists: return has;
    case Operator::DoesNotExist: return !has;
  }
  return false;
}

}  // namespace

bool matches(const LabelSelector& selector, const Labels& labels) {
  for (const auto& [key, value] : selector.match_labels) {
    const auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const auto& r : selector.match_expressions)
    if (!holds(r, labels)) return false;
  return true;
}

}  // namespace vxfed::policy
