#include "bgp/instance_kind.hpp"

namespace vxfed::bgp {

BgpInstanceKind running_instance_kind(std::string_view text) {
  // The first `router bgp` line at the start of a line (vxfed renders one instance).
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.starts_with("router bgp ")) {
      // `router bgp ASN view NAME` or `router bgp ASN vrf NAME` (not ours: taken as default,
      // which makes the adapter keep whatever runs rather than delete it).
      return line.find(" view ") != std::string_view::npos ? BgpInstanceKind::kView : BgpInstanceKind::kDefault;
    }
    at = end + 1;
  }
  return BgpInstanceKind::kNone;
}

const char* to_string(BgpInstanceKind kind) {
  switch (kind) {
    case BgpInstanceKind::kNone: return "none";
    case BgpInstanceKind::kDefault: return "the default instance";
    case BgpInstanceKind::kView: return "a view";
  }
  return "?";
}

}  // namespace vxfed::bgp
