#include "policy/yaml_stream.hpp"

#include <string_view>

namespace vxfed::policy {

namespace {

// "---" or "..." at the line's start, then a blank, '#' or nothing (YAML 1.2's c-forbidden).
bool is_marker(std::string_view line, std::string_view marker) {
  if (!line.starts_with(marker)) return false;
  if (line.size() == marker.size()) return true;
  const char next = line[marker.size()];
  return next == ' ' || next == '\t' || next == '\r' || next == '\n' || next == '#';
}

}  // namespace

std::vector<YamlDocument> split_documents(const std::string& text) {
  std::vector<YamlDocument> out(1);
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    const std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
    const std::string_view line(text.data() + start, end - start);
    if (is_marker(line, "---")) {
      // A new document from this line; the marker becomes blanks so columns stay right.
      out.push_back(YamlDocument{std::string(3, ' ') + std::string(line.substr(3)), line_no});
    } else if (is_marker(line, "...")) {
      // The end of a document; what follows (if anything) is the next one.
      out.push_back(YamlDocument{"", line_no + 1});
    } else {
      out.back().text += line;
    }
    start = end;
    ++line_no;
  }
  return out;
}

bool has_content(const std::string& text) {
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t first = text.find_first_not_of(" \t\r", start);
    if (first == std::string::npos) return false;
    if (text[first] != '\n' && text[first] != '#') return true;
    const std::size_t nl = text.find('\n', first);
    if (nl == std::string::npos) return false;
    start = nl + 1;
  }
  return false;
}

}  // namespace vxfed::policy
