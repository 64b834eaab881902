#include "bgp/vty_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unique_fd.hpp"

namespace vxfed::bgp {

namespace {

using Clock = std::chrono::steady_clock;

// Milliseconds left until `deadline`, rounded up (a poll never ends before it), at least 0.
int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

// Waits for `events` on fd until the deadline; false when it ran out.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, remaining_ms(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

Result<void> send_all(int fd, const std::string& bytes, Clock::time_point deadline) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd, POLLOUT, deadline)) return make_error("timed out sending");
      continue;
    }
    return make_error(std::string("send: ") + std::strerror(errno));
  }
  return {};
}

// The end of one command's answer: three NULs, then the return code byte.
constexpr std::size_t kTrailer = 4;

bool ends_answer(const std::string& buf) {
  const std::size_t n = buf.size();
  return n >= kTrailer && buf[n - 4] == '\0' && buf[n - 3] == '\0' && buf[n - 2] == '\0';
}

}  // namespace

std::string frr_run_dir(const std::string& vty_socket_dir) {
  return vty_socket_dir.empty() ? std::string("/var/run/frr") : vty_socket_dir;
}

std::string vty_socket_path(const std::string& vty_socket_dir, const std::string& daemon) {
  return frr_run_dir(vty_socket_dir) + "/" + daemon + ".vty";
}

Result<VtyReply> run_vty_commands(const std::string& socket_path, const std::vector<std::string>& commands,
                                  std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) return make_error("vty socket path too long: " + socket_path);
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return make_error(std::string("socket: ") + std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return make_error("cannot reach " + socket_path + ": " + std::strerror(errno));
  }

  VtyReply reply;
  std::string answer;
  char chunk[16384];
  for (const auto& command : commands) {
    std::string line = command;
    line.push_back('\0');
    if (auto sent = send_all(fd.get(), line, deadline); !sent) {
      return make_error(socket_path + ": '" + command + "': " + sent.error());
    }
    answer.clear();
    // Reads until the trailer; a daemon answers one command at a time, so the trailer is
    // always the last thing read for this command.
    while (!ends_answer(answer)) {
      const ssize_t n = ::recv(fd.get(), chunk, sizeof chunk, MSG_DONTWAIT);
      if (n > 0) {
        answer.append(chunk, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) return make_error(socket_path + ": closed by the daemon during '" + command + "'");
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        return make_error(socket_path + ": recv: " + std::strerror(errno));
      }
      if (!wait_for(fd.get(), POLLIN, deadline)) {
        return make_error(socket_path + ": no answer to '" + command + "' within " +
                          std::to_string(timeout.count()) + " ms");
      }
    }
    if (answer.back() != '\0') ++reply.failed;
    reply.output.append(answer, 0, answer.size() - kTrailer);
  }
  return reply;
}

}  // namespace vxfed::bgp
