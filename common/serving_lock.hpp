// One process serves a daemon's socket at a time: an flock(2) on "<socket>.lock".
//
// A second process started on the same socket (a rolling update's new container, started
// before the old one stops: DaemonSet maxSurge) does its slow start-up first and then stands
// by on this lock until the process serving lets go; it takes over within kPollMs of that.
// The kernel drops the lock of a process that dies, so a crash never leaves it held, and a
// process that finds the lock free serves at once, as before (docs/deploy.md "Upgrade").
#pragma once
#include <functional>
#include <string>
#include <utility>

#include "common/result.hpp"
#include "common/unique_fd.hpp"

namespace vxfed {

class ServingLock {
 public:
  // How often a standing-by process tries the lock: the hand-over's added delay at most, and
  // 100 cheap system calls a second while it waits (a stand-by is a rolling update's moment).
  static constexpr int kPollMs = 10;

  // Takes the lock beside `socket_path` (its directory is created if missing), waiting while
  // another process holds it; `on_wait` runs once, when the first try finds it held. Returns a
  // lock that is not held when `stop()` turned true while waiting.
  static Result<ServingLock> acquire(const std::string& socket_path, const std::function<bool()>& stop,
                                     const std::function<void()>& on_wait);

  ServingLock() = default;

  bool held() const { return fd_.valid(); }
  // Lets a standing-by process take over. Call it once this one no longer serves: its workers
  // stopped and its socket removed (the next one binds the same path). Closing the only
  // descriptor of the lock file drops the flock; so does destroying the lock.
  void release() { fd_.reset(); }

  static std::string path_for(const std::string& socket_path) { return socket_path + ".lock"; }

 private:
  explicit ServingLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace vxfed
