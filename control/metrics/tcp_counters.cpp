#include "control/metrics/tcp_counters.hpp"

#include <sstream>
#include <vector>

#include "common/read_file.hpp"

namespace vxfed::control {

std::map<std::string, std::uint64_t> parse_tcp_ext(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  std::vector<std::string> names;
  std::map<std::string, std::uint64_t> out;
  while (std::getline(lines, line)) {
    if (line.rfind("TcpExt:", 0) != 0) continue;
    std::istringstream words(line.substr(7));
    std::vector<std::string> fields;
    for (std::string w; words >> w;) fields.push_back(w);
    if (names.empty()) {  // the header line comes first, then the values
      names = std::move(fields);
      continue;
    }
    for (std::size_t i = 0; i < names.size() && i < fields.size(); ++i) {
      try {
        std::size_t used = 0;
        const auto v = std::stoull(fields[i], &used);
        if (used == fields[i].size()) out[names[i]] = v;
      } catch (...) {
      }
    }
    break;
  }
  return out;
}

std::map<std::string, std::uint64_t> read_tcp_ext() {
  const FileRead text = read_file("/proc/net/netstat");
  if (!text) return {};
  return parse_tcp_ext(*text);
}

}  // namespace vxfed::control
