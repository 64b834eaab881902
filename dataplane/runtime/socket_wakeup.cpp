#include "dataplane/runtime/socket_wakeup.hpp"

#include <dirent.h>
#include <linux/if_packet.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace vxfed::dataplane {

std::vector<int> packet_socket_fds(unsigned ifindex) {
  std::vector<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  const int own = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == own) continue;
    int domain = 0;
    socklen_t len = sizeof domain;
    if (::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_PACKET)
      continue;
    sockaddr_ll addr{};
    socklen_t alen = sizeof addr;
    if (::getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
    if (addr.sll_ifindex > 0 && static_cast<unsigned>(addr.sll_ifindex) == ifindex) fds.push_back(static_cast<int>(fd));
  }
  ::closedir(dir);
  std::sort(fds.begin(), fds.end());
  return fds;
}

std::uint64_t take_ring_drops(int packet_socket_fd) {
  tpacket_stats stats{};
  socklen_t len = sizeof stats;
  if (::getsockopt(packet_socket_fd, SOL_PACKET, PACKET_STATISTICS, &stats, &len) != 0) return 0;
  return stats.tp_drops;
}

WakeEvent::WakeEvent() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

void WakeEvent::signal() const {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(fd_.get(), &one, sizeof one);  // EAGAIN: already signalled
}

void WakeEvent::drain() const {
  std::uint64_t value = 0;
  [[maybe_unused]] const auto n = ::read(fd_.get(), &value, sizeof value);
}

}  // namespace vxfed::dataplane
