#include "bgp/gbp_mark_commands.hpp"

#include "bgp/frr_render.hpp"
#include "bgp/gbp_mark.hpp"
#include "bgp/instance_kind.hpp"

#include <algorithm>
#include <optional>

namespace vxfed::bgp {
namespace {

std::vector<std::string> commands(const std::string& instance_suffix, bool mark) {
  return {"enable",
          "configure terminal",
          outbound_route_map_entry(),
          mark ? "set large-community " + gbp_mark_text() : std::string("no set large-community"),
          "end",
          // `soft out`: only our side sends again; no session reset, no route refresh asked of the peers.
          "clear bgp" + instance_suffix + " ipv4 unicast * soft out"};
}

// The lines of the outbound route-map's entry (indented, after its header), if it is there.
std::optional<std::vector<std::string_view>> entry_lines(std::string_view text) {
  const std::string header = outbound_route_map_entry();
  std::optional<std::vector<std::string_view>> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (lines) {
      if (line.empty() || line.front() != ' ') break;  // `exit`, `!` or the next block
      lines->push_back(line);
    } else if (line == header) {
      lines.emplace();
    }
  }
  return lines;
}

}  // namespace

std::vector<std::string> gbp_mark_commands(const BgpConfig& config, bool mark) {
  return commands(bgp_instance_suffix(config), mark);
}

std::string send_routes_again_command(const BgpConfig& config) { return commands(bgp_instance_suffix(config), true).back(); }

std::vector<std::string> early_gbp_mark_commands(std::string_view running_config) {
  const BgpInstanceKind kind = running_instance_kind(running_config);
  if (kind == BgpInstanceKind::kNone) return {};
  const auto lines = entry_lines(running_config);
  if (!lines) return {};
  const std::string set = "set large-community " + gbp_mark_text();
  for (std::string_view line : *lines) {
    line.remove_prefix(std::min(line.find_first_not_of(' '), line.size()));
    if (line == set) return {};
  }
  return commands(kind == BgpInstanceKind::kView ? std::string(" view ") + kBgpViewName : std::string(), true);
}

}  // namespace vxfed::bgp
