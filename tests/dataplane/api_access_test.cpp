// Who may use the dataplane's table API (dataplane/runtime/api_server.hpp): SO_PEERCRED
// admits root and the dataplane's own uid only, even when the socket file's mode has been
// opened up. A client of another uid (a child process running as "nobody") gets one
// "permission denied" reply and is disconnected, and is counted; root is served as before.
// Needs root to change uid; without it the binary exits 77 (scripts/test.sh fails on skips).
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include <gtest/gtest.h>

#include "common/delimited.hpp"
#include "common/peer_credentials.hpp"
#include "dataplane/runtime/api_server.hpp"

namespace {

using namespace vxfed;
namespace pb = vxfed::dataplane::v1;

// Sends GetStatus on a new connection as `uid` and returns the reply's error text ("" when ok)
// or "no reply: ..." when the server closed without one. Runs in a child process so that it
// may drop to `uid`; the text comes back through a pipe.
std::string status_as(uid_t uid, const std::string& path) {
  int p[2];
  EXPECT_EQ(::pipe(p), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    std::string out;
    if (uid != ::geteuid() && ::setuid(uid) != 0) {
      out = "setuid failed";
    } else if (auto fd = connect_unix(path, 2000); !fd) {
      out = "connect: " + fd.error();
    } else {
      pb::DataplaneRequest rq;
      rq.set_request_id(7);
      rq.mutable_get_status();
      pb::DataplaneResponse rs;
      // The server may refuse (reply and close) before our request is written: the write
      // then fails with EPIPE, but the reply is still there to read.
      auto w = write_delimited(*fd, rq, 2000);
      if (auto r = read_delimited(*fd, rs, 2000); !r) {
        out = "no reply: " + r.error() + (w ? "" : " (write: " + w.error() + ")");
      } else {
        out = rs.ok() ? "" : rs.error();
      }
    }
    [[maybe_unused]] auto n = ::write(p[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(p[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof(buf))) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(p[0]);
  ::waitpid(pid, nullptr, 0);
  return text;
}

TEST(DataplaneApiAccess, OtherUidIsRefusedEvenWithTheSocketOpenedUp) {
  char dir[] = "/tmp/vxfed-dp-api-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  ::chmod(dir, 0755);
  const std::string path = std::string(dir) + "/dp.sock";
  auto server = dataplane::ApiServer::create(path, [](const pb::DataplaneRequest&, pb::DataplaneResponse& rs) {
    rs.set_ok(true);
  });
  ASSERT_TRUE(server) << server.error();
  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);  // what a careless operator might do

  std::atomic<bool> stop{false};
  std::thread loop([&] {
    while (!stop) (*server)->poll(10);
  });
  auto nobody = uid_of_user("nobody");
  ASSERT_TRUE(nobody) << nobody.error();

  const std::string refused = status_as(*nobody, path);
  EXPECT_NE(refused.find("permission denied"), std::string::npos) << refused;
  EXPECT_EQ(status_as(0, path), "");  // the legitimate client is unaffected
  stop = true;
  loop.join();
  EXPECT_EQ((*server)->refused(), 1u);
  server->reset();
  ::rmdir(dir);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (::geteuid() != 0) {
    std::fprintf(stderr, "dataplane_api_access: needs root (changes the uid of its client process)\n");
    return 77;
  }
  return RUN_ALL_TESTS();
}
