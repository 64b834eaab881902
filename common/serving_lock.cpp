#include "common/serving_lock.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace vxfed {

Result<ServingLock> ServingLock::acquire(const std::string& socket_path, const std::function<bool()>& stop,
                                         const std::function<void()>& on_wait) {
  const std::string path = path_for(socket_path);
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return make_error("cannot open " + path + ": " + std::strerror(errno));
  bool waiting = false;
  // Polled, not a blocking flock(): a blocking one could miss a SIGTERM that arrives just
  // before it and stand by for good.
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return make_error("cannot lock " + path + ": " + std::strerror(errno));
    if (!waiting) {
      waiting = true;
      if (on_wait) on_wait();
    }
    if (stop && stop()) return ServingLock();
    ::poll(nullptr, 0, kPollMs);
  }
  return ServingLock(std::move(fd));
}

}  // namespace vxfed
