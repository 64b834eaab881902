#include "cni/version.hpp"

#include <algorithm>
#include <charconv>

namespace vxfed::cni {

std::string SpecVersion::str() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::optional<SpecVersion> parse_version(std::string_view text) {
  int parts[3];
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    if (p == end || *p < '0' || *p > '9') return std::nullopt;
    auto [next, ec] = std::from_chars(p, end, parts[i]);
    if (ec != std::errc{}) return std::nullopt;
    p = next;
    if (i < 2) {
      if (p == end || *p != '.') return std::nullopt;
      ++p;
    }
  }
  if (p != end) return std::nullopt;
  return SpecVersion{parts[0], parts[1], parts[2]};
}

const std::vector<std::string>& supported_versions() {
  static const std::vector<std::string> versions = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
  return versions;
}

bool is_supported(std::string_view version) {
  const auto& v = supported_versions();
  return std::find(v.begin(), v.end(), version) != v.end();
}

bool result_has_ip_version(const SpecVersion& v) { return v < SpecVersion{1, 0, 0}; }
bool result_has_interface_mtu(const SpecVersion& v) { return v >= SpecVersion{1, 1, 0}; }
bool supports_check(const SpecVersion& v) { return v >= SpecVersion{0, 4, 0}; }
bool supports_gc_and_status(const SpecVersion& v) { return v >= SpecVersion{1, 1, 0}; }

std::optional<std::string> highest_common(const std::vector<std::string>& theirs,
                                          std::string_view ours) {
  const auto limit = parse_version(ours);
  if (!limit) return std::nullopt;
  std::optional<SpecVersion> best;
  for (const auto& t : theirs) {
    const auto v = parse_version(t);
    if (!v || *v > *limit || !is_supported(t)) continue;
    if (!best || *v > *best) best = v;
  }
  if (!best) return std::nullopt;
  return best->str();
}

}  // namespace vxfed::cni
