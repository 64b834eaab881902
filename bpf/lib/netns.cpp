#include "bpf/lib/netns.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

namespace vxfed::bpf::detail {

Result<NetnsId> netns_identity(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    return make_error(fmt::format("network namespace {} is not there: {}", path, strerror(errno)));
  return NetnsId{st.st_dev, st.st_ino};
}

Status run_in_netns(const std::string& path, const std::function<Status()>& fn) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(fmt::format("cannot open network namespace {}: {}", path, strerror(errno)));
  Status result;
  std::thread worker([&] {
    // The thread leaves with the namespace: nothing to restore afterwards.
    if (setns(fd, CLONE_NEWNET) != 0) {
      result = make_error(fmt::format("cannot enter network namespace {}: {}", path, strerror(errno)));
      return;
    }
    result = fn();
  });
  worker.join();
  close(fd);
  return result;
}

}  // namespace vxfed::bpf::detail
