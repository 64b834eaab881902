#include "control/daemon/memory_trim.hpp"

#include <malloc.h>

namespace vxfed::control {

void MemoryTrim::changed(std::size_t entries) {
  pending_ += entries;
  if (armed_ || pending_ < threshold_) return;
  armed_ = true;
  timer_.expires_after(delay_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    armed_ = false;
    if (ec) return;
    pending_ = 0;
    ::malloc_trim(0);
    ++trims_;
  });
}

}  // namespace vxfed::control
