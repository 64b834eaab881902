#include "policy/names.hpp"

namespace vxfed::policy {

namespace {

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// The name part of a label key and a label value share this rule (Kubernetes'
// qualifiedNameFmt without the length).
bool is_label_name(std::string_view text) {
  if (text.empty() || !is_alnum(text.front()) || !is_alnum(text.back())) return false;
  for (char c : text)
    if (!is_alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

const char* kLabelNameRule = "must be at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric";

}  // namespace

std::string check_label_key(std::string_view key) {
  std::string_view name = key;
  if (const auto slash = key.find('/'); slash != std::string_view::npos) {
    const std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty()) return "has an empty prefix before '/'";
    if (const std::string why = check_dns_subdomain(prefix); !why.empty())
      return "has prefix '" + std::string(prefix) + "', which " + why;
  }
  if (name.empty()) return "must have a name (the part after any prefix '/')";
  if (name.size() > 63 || !is_label_name(name))
    return std::string("has name part '") + std::string(name) + "', which " + kLabelNameRule;
  return "";
}

std::string check_label_value(std::string_view value) {
  if (value.empty()) return "";
  if (value.size() > 63 || !is_label_name(value)) return kLabelNameRule;
  return "";
}

std::string check_dns_label(std::string_view name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 63) return "must be at most 63 characters";
  if (name.front() == '-' || name.back() == '-') return "must start and end with [a-z0-9]";
  for (char c : name)
    if (!is_lower_alnum(c) && c != '-') return "must consist of [a-z0-9-] (a DNS label)";
  return "";
}

std::string check_dns_subdomain(std::string_view name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 253) return "must be at most 253 characters";
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = name.find('.', start);
    const std::string_view part = name.substr(start, dot == std::string_view::npos ? name.npos : dot - start);
    if (part.empty() || part.front() == '-' || part.back() == '-')
      return "must be DNS labels of [a-z0-9-] joined by '.', each starting and ending with [a-z0-9]";
    for (char c : part)
      if (!is_lower_alnum(c) && c != '-') return "must consist of [a-z0-9-.] (a DNS subdomain)";
    if (dot == std::string_view::npos) return "";
    start = dot + 1;
  }
}

}  // namespace vxfed::policy
