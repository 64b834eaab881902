// Pod keys name pin directories in bpffs (pure: no I/O).
#include <fmt/format.h>

#include "bpf/lib/vxfed_bpf.hpp"

namespace vxfed::bpf {
namespace {
bool key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '=';
}
}  // namespace

Status validate_pod_key(const std::string& key) {
  if (key.empty() || key.size() > 200)
    return make_error(fmt::format("pod key \"{}\" must be 1..200 characters long", key));
  for (char c : key)
    if (!key_char(c))
      return make_error(fmt::format("pod key \"{}\" has '{}': only [A-Za-z0-9_=-] are allowed (bpffs refuses '.')",
                                    key, c));
  return {};
}

std::string pod_key_for(const std::string& container_id, const std::string& ifname) {
  std::string out;
  auto append = [&](const std::string& s) {
    for (unsigned char c : s) {
      if (key_char(static_cast<char>(c)) && c != '=' && c != '_') out += static_cast<char>(c);
      else out += fmt::format("={:02X}", c);
    }
  };
  append(container_id);
  out += '_';
  append(ifname);
  return out;
}

}  // namespace vxfed::bpf
