// Helpers shared by the bgp unit tests: a temporary directory, route updates and zebra-style
// route messages as one line, a loopback TCP client standing for zebra or bgpd.
#pragma once

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "bgp/fpm_parser.hpp"
#include "common/routes.hpp"

namespace vxfed::bgp::testing {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/vxfed-bgp-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// "delta +10.245.0.0/16@1500[198.18.0.12]198.18.0.2 -10.246.0.0/16@2000": "full" or "delta",
// then the upserts (prefix@vni[vteps]peer) and removals (prefix@vni) in sorted order.
inline std::string update_text(const RouteUpdate& u) {
  std::vector<std::string> parts;
  for (const auto& r : u.upserts) {
    std::string v = "+" + r.prefix.str() + "@" + std::to_string(r.vni) + "[";
    for (std::size_t i = 0; i < r.vteps.size(); ++i) v += (i ? "," : "") + r.vteps[i].str();
    parts.push_back(v + "]" + r.peer.str());
  }
  for (const auto& k : u.removals) parts.push_back("-" + k.prefix.str() + "@" + std::to_string(k.vni));
  std::sort(parts.begin(), parts.end());
  std::string s = u.full ? "full" : "delta";
  for (const auto& p : parts) s += " " + p;
  return s;
}

// A route message as one line: "+10.245.1.0/24 via 198.18.0.2,198.18.0.3" or "-10.245.1.0/24".
inline std::string route_line(const fpm::RouteMessage& r) {
  std::string s = (r.is_delete ? "-" : "+") + r.prefix.str();
  for (std::uint8_t i = 0; i < r.next_hop_count; ++i)
    s += (i ? "," : " via ") + net::Ipv4Addr{r.next_hops[i].gateway}.str();
  return s;
}

// A blocking TCP client to a loopback port: zebra as the FPM server sees it, bgpd as the BMP
// station does.
class LoopbackClient {
 public:
  explicit LoopbackClient(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    connect_errno_ = connected_ ? 0 : errno;
  }
  ~LoopbackClient() { close(); }
  LoopbackClient(const LoopbackClient&) = delete;
  LoopbackClient& operator=(const LoopbackClient&) = delete;

  bool connected() const { return connected_; }
  int connect_errno() const { return connect_errno_; }
  void send(const std::vector<std::uint8_t>& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // True when the other end has closed (EOF or reset) within wait_ms. 0 looks without waiting:
  // a server that runs on the test's own thread closes only while the test pumps its loop.
  bool closed_by_peer(int wait_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, wait_ms) <= 0) return false;
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  int connect_errno_ = 0;
};

}  // namespace vxfed::bgp::testing
