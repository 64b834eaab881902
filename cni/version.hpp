// CNI specification versions: which ones we speak, and how to compare them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vxfed::cni {

struct SpecVersion {
  int major = 0, minor = 0, patch = 0;
  auto operator<=>(const SpecVersion&) const = default;
  std::string str() const;
};

// "1.0.0" -> {1,0,0}; nullopt unless exactly three dot-separated decimal numbers.
std::optional<SpecVersion> parse_version(std::string_view text);

// The versions this plugin reads configs in and writes results in, oldest first.
const std::vector<std::string>& supported_versions();
inline constexpr const char* kLatestVersion = "1.1.0";

bool is_supported(std::string_view version);

// Result layout: 0.3.x/0.4.0 put "version" in ips; 1.0.0 dropped it; 1.1.0 added interface mtu.
bool result_has_ip_version(const SpecVersion& v);      // < 1.0.0
bool result_has_interface_mtu(const SpecVersion& v);   // >= 1.1.0
bool supports_check(const SpecVersion& v);             // >= 0.4.0
bool supports_gc_and_status(const SpecVersion& v);     // >= 1.1.0

// The highest version in `theirs` not above `ours`; nullopt if none. Used to talk to an IPAM
// plugin that predates our config's version (Debian's host-local stops at 1.0.0).
std::optional<std::string> highest_common(const std::vector<std::string>& theirs,
                                          std::string_view ours);

}  // namespace vxfed::cni
