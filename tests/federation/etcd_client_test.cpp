// EtcdClient against members that accept connections and never answer (a member cut off
// from its quorum, seen from the client): a CallDeadline caps a call, whatever the per-member
// timeout and the election retries would allow; the error names the store; once a call has
// found the store unavailable, known_down() says so. No etcd needed.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "federation/etcd_client.hpp"

namespace {

using namespace std::chrono_literals;
namespace fed = vxfed::federation;

// A listening socket nobody reads: connections complete (the kernel's backlog), HTTP/2
// never starts.
class SilentMember {
 public:
  SilentMember() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 64), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~SilentMember() { ::close(fd_); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(EtcdClientDeadline, ACallDeadlineCapsACallOnSilentMembers) {
  SilentMember m1, m2, m3;
  fed::EtcdOptions options;
  options.endpoints = {m1.endpoint(), m2.endpoint(), m3.endpoint()};
  options.request_timeout_ms = 2000;  // without the cap: up to 6 s
  auto client = fed::EtcdClient::create(options);
  ASSERT_TRUE(client) << client.error();
  EXPECT_FALSE((*client)->known_down());
  const auto started = std::chrono::steady_clock::now();
  {
    fed::CallDeadline deadline(started + 400ms);
    auto r = (*client)->get("v1/pools");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), fed::Code::unavailable);
    EXPECT_NE(r.error().find("federation store etcd at " + m1.endpoint()), std::string::npos) << r.error();
  }
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_LT(took, 1500ms) << std::chrono::duration<double>(took).count() << " s";
  EXPECT_TRUE((*client)->known_down());
}

TEST(EtcdClientDeadline, NestedDeadlinesKeepTheEarlierEnd) {
  const auto now = std::chrono::steady_clock::now();
  EXPECT_FALSE(fed::CallDeadline::current());
  {
    fed::CallDeadline outer(now + 1s);
    {
      fed::CallDeadline inner(now + 5s);
      EXPECT_EQ(*fed::CallDeadline::current(), now + 1s);
    }
    {
      fed::CallDeadline inner(now + 100ms);
      EXPECT_EQ(*fed::CallDeadline::current(), now + 100ms);
    }
    EXPECT_EQ(*fed::CallDeadline::current(), now + 1s);
  }
  EXPECT_FALSE(fed::CallDeadline::current());
}

}  // namespace
