#include "control/cli/input_file.hpp"

#include <iostream>
#include <iterator>

#include "common/read_file.hpp"

namespace vxfed::control {

std::optional<std::string> read_input(const std::string& path) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  auto text = read_file(path);
  if (!text) {
    std::cerr << "vxfedctl: -f " << path << ": cannot be read (" << text.error().reason << ")\n";
    return std::nullopt;
  }
  return std::move(text).value();
}

bool fits_request(const std::string& path, const std::string& text) {
  // The margin covers the request's other fields.
  constexpr std::size_t kMaxText = (4u << 20) - 4096;
  if (text.size() <= kMaxText) return true;
  std::cerr << "vxfedctl: -f " << path << ": " << text.size() << " bytes; vxfedd takes at most " << kMaxText
            << " in one request (split the file: each apply is one store transaction anyway)\n";
  return false;
}

std::string source_name(const std::string& path) { return path == "-" ? "stdin" : path; }

}  // namespace vxfed::control
