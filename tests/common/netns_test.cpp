// common/netns: work runs inside the namespace, sockets it opens stay there, and the caller's
// thread never moves. Creating a namespace needs root (CAP_SYS_ADMIN): without it the test
// that needs one skips, or fails when VXFED_REQUIRE_ALL=1 (CI).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/sockios.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "common/netns.hpp"

namespace {

ino_t inode_of(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

ino_t thread_netns() {
  struct stat st {};
  return stat("/proc/thread-self/ns/net", &st) == 0 ? st.st_ino : 0;
}

// A fresh network namespace, open as an fd (-1 when this process may not create one).
int new_netns() {
  int fd = -1;
  std::thread([&] {
    if (unshare(CLONE_NEWNET) == 0) fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  }).join();
  return fd;
}

TEST(Netns, WorkRunsInsideAndSocketsStayThere) {
  const int ns = new_netns();
  if (ns < 0) {
    if (const char* all = std::getenv("VXFED_REQUIRE_ALL"); all && std::string(all) == "1")
      FAIL() << "cannot create a network namespace (not root?), and VXFED_REQUIRE_ALL=1 forbids skipping";
    GTEST_SKIP() << "cannot create a network namespace (not root?)";
  }
  const ino_t home = thread_netns();
  ASSERT_NE(inode_of(ns), home);
  ino_t inside = 0;
  int sock = -1;
  const auto st = vxfed::run_in_netns(ns, "the test namespace", [&]() -> vxfed::Status {
    inside = thread_netns();
    sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    return {};
  });
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_EQ(inside, inode_of(ns)) << "fn ran in the namespace";
  EXPECT_EQ(thread_netns(), home) << "the caller's thread did not move";
  ASSERT_GE(sock, 0);
  const int sock_ns = ioctl(sock, SIOCGSKNS);  // the namespace the socket belongs to
  ASSERT_GE(sock_ns, 0);
  EXPECT_EQ(inode_of(sock_ns), inode_of(ns)) << "the socket stays in the namespace it was opened in";
  close(sock_ns);
  close(sock);

  const auto failed = vxfed::run_in_netns(ns, "the test namespace", [] { return vxfed::Status(vxfed::make_error("no")); });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), "no") << "fn's own error comes back as it is";
  close(ns);
}

TEST(Netns, ErrorsNameTheNamespace) {
  const auto missing = vxfed::run_in_netns("/nonexistent/ns", [] { return vxfed::Status(); });
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().rfind("cannot open network namespace /nonexistent/ns: ", 0), 0u) << missing.error();

  const int not_ns = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(not_ns, 0);
  bool ran = false;
  const auto wrong = vxfed::run_in_netns(not_ns, "the pod's network namespace", [&] {
    ran = true;
    return vxfed::Status();
  });
  close(not_ns);
  ASSERT_FALSE(wrong.ok());
  EXPECT_FALSE(ran) << "fn does not run outside the namespace it was meant for";
  EXPECT_EQ(wrong.error().rfind("cannot enter the pod's network namespace: ", 0), 0u) << wrong.error();

  EXPECT_TRUE(vxfed::netns_identity("/proc/self/ns/net").ok());
  auto gone = vxfed::netns_identity("/nonexistent/ns");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().rfind("network namespace /nonexistent/ns is not there", 0), 0u) << gone.error();
}

}  // namespace
