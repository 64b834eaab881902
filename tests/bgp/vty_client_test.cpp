// The vty client against a fake daemon that speaks FRR's vtysh protocol (command + NUL in;
// output + three NULs + return code out). The real bgpd behind it is exercised by
// tests/integration/bgp/test_bgp_vxfedd.py (`vxfedctl peers` from this poll).
#include "bgp/vty_client.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "tests/bgp/test_support.hpp"

namespace vxfed::bgp {
namespace {

using namespace std::chrono_literals;

// Listens on `path`, accepts one client, hands each NUL-terminated command to `answer`, which
// writes what it likes to the connection (or closes it by returning false).
class FakeDaemon {
 public:
  FakeDaemon(const std::string& path, std::function<bool(int fd, const std::string& command)> answer)
      : answer_(std::move(answer)) {
    listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listen_fd_, 1), 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeDaemon() {
    thread_.join();
    ::close(listen_fd_);
  }

 private:
  void serve() {
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    std::string pending;
    char buf[64];  // small on purpose: commands arrive in pieces
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      pending.append(buf, static_cast<std::size_t>(n));
      std::size_t nul;
      bool open = true;
      while (open && (nul = pending.find('\0')) != std::string::npos) {
        const std::string command = pending.substr(0, nul);
        pending.erase(0, nul + 1);
        open = answer_(fd, command);
      }
      if (!open) break;
    }
    ::close(fd);
  }

  int listen_fd_ = -1;
  std::function<bool(int, const std::string&)> answer_;
  std::thread thread_;
};

void write_all(int fd, const std::string& bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    ASSERT_GT(n, 0);
    off += static_cast<std::size_t>(n);
  }
}

std::string trailer(char code) { return std::string("\0\0\0", 3) + code; }

TEST(VtyClient, RunsEachCommandInOrderAndJoinsTheirOutputs) {
  testing::TempDir dir;
  const std::string path = vty_socket_path(dir.path.string(), "bgpd");
  FakeDaemon daemon(path, [](int fd, const std::string& command) {
    // The output in two writes, the trailer split across them: the client must not stop early.
    const std::string out = "{\"cmd\":\"" + command + "\"}\n";
    write_all(fd, out + std::string("\0\0", 2));
    std::this_thread::sleep_for(2ms);
    write_all(fd, std::string("\0", 1) + '\0');
    return true;
  });
  auto r = run_vty_commands(path, {"show bgp neighbors json", "show bgp summary json"}, 2s);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->output, "{\"cmd\":\"show bgp neighbors json\"}\n{\"cmd\":\"show bgp summary json\"}\n");
  EXPECT_EQ(r->failed, 0);
  EXPECT_EQ(path, dir.path.string() + "/bgpd.vty");
}

TEST(VtyClient, ACommandTheDaemonRefusesIsCountedAndItsTextKept) {
  testing::TempDir dir;
  const std::string path = vty_socket_path(dir.path.string(), "bgpd");
  FakeDaemon daemon(path, [](int fd, const std::string& command) {
    if (command == "bad") write_all(fd, "% Unknown command: bad\n" + trailer(2));
    else write_all(fd, "{}\n" + trailer(0));
    return true;
  });
  auto r = run_vty_commands(path, {"good", "bad", "good"}, 2s);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->failed, 1);
  EXPECT_EQ(r->output, "{}\n% Unknown command: bad\n{}\n");
}

TEST(VtyClient, AnAnswerOfManyChunksIsReadWhole) {
  testing::TempDir dir;
  const std::string path = vty_socket_path(dir.path.string(), "bgpd");
  const std::string big(1 << 20, 'x');  // larger than any socket buffer: the daemon blocks in write
  FakeDaemon daemon(path, [&](int fd, const std::string&) {
    write_all(fd, big + trailer(0));
    return true;
  });
  auto r = run_vty_commands(path, {"show"}, 5s);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->output.size(), big.size());
}

TEST(VtyClient, NoDaemonIsAnErrorNamingTheSocket) {
  testing::TempDir dir;
  const std::string path = vty_socket_path(dir.path.string(), "bgpd");
  auto r = run_vty_commands(path, {"show"}, 1s);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find(path), std::string::npos) << r.error();
}

TEST(VtyClient, ADaemonThatClosesMidAnswerIsAnError) {
  testing::TempDir dir;
  const std::string path = vty_socket_path(dir.path.string(), "bgpd");
  FakeDaemon daemon(path, [](int fd, const std::string&) {
    write_all(fd, "{\"half\":");
    return false;
  });
  auto r = run_vty_commands(path, {"show"}, 2s);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("closed"), std::string::npos) << r.error();
}

TEST(VtyClient, ADaemonThatNeverAnswersTimesOut) {
  testing::TempDir dir;
  const std::string path = vty_socket_path(dir.path.string(), "bgpd");
  FakeDaemon daemon(path, [&](int fd, const std::string&) {
    write_all(fd, "{");           // starts, then hangs until the client gives up
    char c;
    (void)::read(fd, &c, 1);      // returns when the client closes
    return false;
  });
  const auto start = std::chrono::steady_clock::now();
  auto r = run_vty_commands(path, {"show"}, 300ms);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("within 300 ms"), std::string::npos) << r.error();
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 3s);
}

TEST(VtyClient, TheDefaultDirectoryIsFrrs) {
  EXPECT_EQ(frr_run_dir(""), "/var/run/frr");
  EXPECT_EQ(vty_socket_path("", "zebra"), "/var/run/frr/zebra.vty");
  EXPECT_EQ(frr_run_dir("/tmp/n1/frr"), "/tmp/n1/frr");
}

}  // namespace
}  // namespace vxfed::bgp
