// MetricsServer (control/metrics/metrics_server.hpp) on loopback: it answers GET /metrics and refuses
// anything else; and a port another process holds never stops it: it counts the failure,
// tries again every kRetry, and serves once the port is free.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "control/metrics/metrics_server.hpp"

namespace vxfed::control {
namespace {

namespace asio = boost::asio;

std::shared_ptr<spdlog::logger> quiet_log() { return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>()); }

// A TCP listener on 127.0.0.1 at a port the kernel picks: the squatter.
int listener(std::uint16_t* port) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(::listen(s, 4), 0);
  socklen_t len = sizeof(a);
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return s;
}

// One HTTP request to 127.0.0.1:port from a client thread while `io` runs the server; the
// whole response ("" when none came within 2 s).
std::string request(asio::io_context& io, std::uint16_t port, const std::string& head) {
  std::string response;
  std::atomic<bool> done{false};
  std::thread client([&] {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval two_seconds{2, 0};
    ::setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &two_seconds, sizeof(two_seconds));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 && ::send(s, head.data(), head.size(), 0) > 0) {
      char buf[4096];
      ssize_t n;
      while ((n = ::recv(s, buf, sizeof(buf), 0)) > 0) response.append(buf, static_cast<std::size_t>(n));
    }
    ::close(s);
    done = true;
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (!done && std::chrono::steady_clock::now() < until) {
    io.restart();
    io.run_for(std::chrono::milliseconds(20));
  }
  client.join();
  return response;
}

TEST(MetricsServer, AnswersGetMetricsAndRefusesOtherMethods) {
  asio::io_context io;
  auto server = MetricsServer::create(io, "127.0.0.1:0", [] { return std::string("vxfed_up 1\n"); }, quiet_log());
  // Port 0 is refused as an address (an operator must name a port): use a real free one.
  EXPECT_FALSE(server);
  std::uint16_t port = 0;
  ::close(listener(&port));
  server = MetricsServer::create(io, "127.0.0.1:" + std::to_string(port), [] { return std::string("vxfed_up 1\n"); }, quiet_log());
  ASSERT_TRUE(server) << server.error();
  ASSERT_TRUE((*server)->listening());
  const std::string ok = request(io, port, "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.0 200 OK", 0), 0u) << ok;
  EXPECT_NE(ok.find("vxfed_up 1"), std::string::npos) << ok;
  const std::string post = request(io, port, "POST /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(post.rfind("HTTP/1.0 405", 0), 0u) << post;
  EXPECT_EQ((*server)->stats().rejected_method, 1u);
}

TEST(MetricsServer, APortHeldByAnotherProcessIsRetriedNeverFatal) {
  asio::io_context io;
  std::uint16_t port = 0;
  const int squatter = listener(&port);
  auto server = MetricsServer::create(io, "127.0.0.1:" + std::to_string(port), [] { return std::string("vxfed_up 1\n"); }, quiet_log());
  ASSERT_TRUE(server) << "a held port must not be an error: vxfedd serves the node without metrics";
  EXPECT_FALSE((*server)->listening());
  EXPECT_EQ((*server)->port(), 0);
  EXPECT_EQ((*server)->stats().listen_failures, 1u);
  io.run_for(MetricsServer::kRetry + std::chrono::milliseconds(500));
  EXPECT_FALSE((*server)->listening()) << "still held";
  EXPECT_EQ((*server)->stats().listen_failures, 2u);
  ::close(squatter);
  io.restart();
  io.run_for(MetricsServer::kRetry + std::chrono::milliseconds(500));
  ASSERT_TRUE((*server)->listening()) << "the port is taken back within one retry of its holder leaving";
  EXPECT_EQ((*server)->port(), port);
  const std::string ok = request(io, port, "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_NE(ok.find("vxfed_up 1"), std::string::npos) << ok;
}

}  // namespace
}  // namespace vxfed::control
