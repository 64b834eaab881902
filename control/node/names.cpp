#include "control/node/names.hpp"

namespace vxfed::control {

bool is_dns_label(const std::string& text) {
  if (text.empty() || text.size() > 63 || text.front() == '-' || text.back() == '-') return false;
  for (char c : text)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

}  // namespace vxfed::control
