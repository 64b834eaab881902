// EAL for dataplane tests: initialised once per test binary, without hugepages, PCI or shared
// files (--in-memory, a pid-unique --file-prefix), so tests run side by side with anything.
// (--in-memory would conflict with --no-huge.) If the EAL cannot start, tests skip — or fail when VXFED_REQUIRE_ALL=1 (CI).
#pragma once

#include <gtest/gtest.h>

namespace vxfed::test {

// True once the EAL is up; starts it on first call.
bool eal_ready();

// Use at the top of a test: skips (or fails in CI) without an EAL.
#define VXFED_REQUIRE_EAL()                                                            \
  do {                                                                                 \
    if (!::vxfed::test::eal_ready()) {                                                 \
      if (const char* all = std::getenv("VXFED_REQUIRE_ALL"); all && std::string(all) == "1") \
        FAIL() << "DPDK EAL did not start, and VXFED_REQUIRE_ALL=1 forbids skipping";  \
      GTEST_SKIP() << "DPDK EAL did not start";                                        \
    }                                                                                  \
  } while (0)

}  // namespace vxfed::test
