#include "dataplane/runtime/api_server.hpp"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/peer_credentials.hpp"

namespace vxfed::dataplane {

Result<std::unique_ptr<ApiServer>> ApiServer::create(const std::string& path, Handler handler) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof(addr.sun_path))
    return make_error("--api-socket: path '" + path + "' is empty or longer than " +
                      std::to_string(sizeof(addr.sun_path) - 1) + " bytes");
  std::unique_ptr<ApiServer> s(new ApiServer(path, std::move(handler)));
  s->listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->listen_fd_ < 0) return make_error(std::string("socket: ") + std::strerror(errno));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return make_error("--api-socket: " + path + " exists and is not a socket; not replacing it");
    ::unlink(path.c_str());
  }
  // Created 0600 from the start (umask), not chmod-ed afterwards: no window where others connect.
  const mode_t old_umask = ::umask(0177);
  const int rc = ::bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::umask(old_umask);
  if (rc != 0) return make_error("cannot bind " + path + ": " + std::strerror(errno));
  if (::listen(s->listen_fd_, 16) != 0) return make_error(std::string("listen: ") + std::strerror(errno));
  s->epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (s->epoll_fd_ < 0) return make_error(std::string("epoll: ") + std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = s->listen_fd_;
  ::epoll_ctl(s->epoll_fd_, EPOLL_CTL_ADD, s->listen_fd_, &ev);
  spdlog::info("API listening on {}", path);
  return s;
}

ApiServer::~ApiServer() {
  while (!clients_.empty()) close_client(clients_.begin()->first);
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    ::unlink(path_.c_str());
  }
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

void ApiServer::poll(int timeout_ms) {
  epoll_event events[32];
  const int n = ::epoll_wait(epoll_fd_, events, 32, timeout_ms);
  for (int i = 0; i < n; ++i) {
    const int fd = events[i].data.fd;
    if (fd == listen_fd_) {
      accept_clients();
      continue;
    }
    auto it = clients_.find(fd);
    if (it == clients_.end()) continue;
    Client& c = *it->second;
    if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_from(c);
    if (clients_.count(fd) && (events[i].events & EPOLLOUT)) write_to(c);
  }
}

void ApiServer::accept_clients() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    auto peer = unix_peer_credentials(fd);
    if (!peer || !local_peer_allowed(*peer)) {
      refuse(fd, peer ? "permission denied: " + describe(*peer) + " is neither root nor the dataplane's own uid"
                      : "permission denied: " + peer.error());
      continue;
    }
    if (clients_.size() >= kMaxClients) {
      spdlog::warn("API: refusing a client: {} already connected", clients_.size());
      ::close(fd);
      continue;
    }
    auto c = std::make_unique<Client>(fd);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    clients_[fd] = std::move(c);
  }
}

void ApiServer::read_from(Client& c) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
    if (n > 0) {
      c.decoder.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      serve(c);
      if (c.closing) break;
      continue;
    }
    if (n == 0) {  // peer closed: answer what it sent, then close once written
      c.closing = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) c.closing = true;
    break;
  }
  write_to(c);
}

void ApiServer::serve(Client& c) {
  for (;;) {
    auto frame = c.decoder.next();
    if (!frame) {
      spdlog::warn("API: closing a client: {}", frame.error());
      c.closing = true;
      c.out.clear();
      return;
    }
    if (!frame->has_value()) return;
    const auto arrived = std::chrono::steady_clock::now();
    pb::DataplaneRequest request;
    pb::DataplaneResponse response;
    if (!request.ParseFromString(**frame)) {
      response.set_ok(false);
      response.set_error("malformed request: not a vxfed.dataplane.v1.DataplaneRequest (" +
                         std::to_string((*frame)->size()) + " bytes)");
      spdlog::warn("API: {}", response.error());
    } else {
      response.set_request_id(request.request_id());
      handler_(request, response);
    }
    response.set_handled_ns(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - arrived).count()));
    append_delimited(response, c.out);
  }
}

void ApiServer::write_to(Client& c) {
  while (!c.out.empty()) {
    const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    c.closing = true;
    c.out.clear();
    break;
  }
  if (c.closing && c.out.empty()) {
    close_client(c.fd);
    return;
  }
  update_interest(c);
}

void ApiServer::update_interest(Client& c) {
  epoll_event ev{};
  ev.events = c.out.empty() ? EPOLLIN : (EPOLLIN | EPOLLOUT);
  ev.data.fd = c.fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

// One error reply, best effort (the socket is non-blocking and the reply small), then close.
void ApiServer::refuse(int fd, const std::string& why) {
  ++refused_;
  spdlog::warn("API: refused a client: {}", why);
  pb::DataplaneResponse response;
  response.set_ok(false);
  response.set_error(why);
  std::string out;
  append_delimited(response, out);
  [[maybe_unused]] const ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd);
}

void ApiServer::close_client(int fd) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  clients_.erase(fd);
}

}  // namespace vxfed::dataplane
