#include "common/netns.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace vxfed {

Result<NetnsId> netns_identity(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    return make_error("network namespace " + path + " is not there: " + std::strerror(errno));
  return NetnsId{st.st_dev, st.st_ino};
}

Status run_in_netns(int netns_fd, const std::string& what, const std::function<Status()>& fn) {
  Status result;
  std::thread worker([&] {
    // The thread leaves with the namespace: nothing to restore afterwards.
    if (setns(netns_fd, CLONE_NEWNET) != 0) {
      result = make_error("cannot enter " + what + ": " + std::strerror(errno));
      return;
    }
    result = fn();
  });
  worker.join();
  return result;
}

Status run_in_netns(const std::string& path, const std::function<Status()>& fn) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("cannot open network namespace " + path + ": " + std::strerror(errno));
  Status result = run_in_netns(fd, "network namespace " + path, fn);
  close(fd);
  return result;
}

}  // namespace vxfed
