// Tests that build veths and sockets in a network namespace of their own: the body runs on a
// thread that leaves the test's namespace for a new one (unshare affects the calling thread
// only; the `ip` and `ethtool` it runs inherit it), so nothing it makes is seen outside or
// outlives it. Creating one needs root: without, the test skips, or fails when
// VXFED_REQUIRE_ALL=1 (CI).
#pragma once

#include <gtest/gtest.h>
#include <sched.h>

#include <cstdlib>
#include <string>
#include <thread>

namespace vxfed::test {

// Runs body in a new network namespace; false when this process may not create one.
template <typename Body>
bool run_in_own_netns(Body&& body) {
  bool created = true;
  std::thread t([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      created = false;
      return;
    }
    body();
  });
  t.join();
  return created;
}

// In the test body, after run_in_own_netns returned `created`.
#define VXFED_SKIP_WITHOUT_OWN_NETNS(created)                                                             \
  do {                                                                                                    \
    if (!(created)) {                                                                                     \
      if (const char* all = std::getenv("VXFED_REQUIRE_ALL"); all && std::string(all) == "1")            \
        FAIL() << "cannot create a network namespace (not root?), and VXFED_REQUIRE_ALL=1 forbids skipping"; \
      GTEST_SKIP() << "needs a network namespace of its own (root)";                                      \
    }                                                                                                     \
  } while (0)

}  // namespace vxfed::test
