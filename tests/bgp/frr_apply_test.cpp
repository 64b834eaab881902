// bgp/frr_apply.hpp: whether a new bgpd has loaded frr.conf (frr-node.sh's marker), and the
// bounded wait for it that an apply to a new bgpd makes first.
#include "bgp/frr_apply.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace vxfed::bgp {
namespace {

struct LoadCase {
  const char* description;
  std::optional<std::string> marker;
  std::string bgpd_pid;
  BgpdLoad expected;
};

TEST(BgpdLoadState, FromMarkerAndPid) {
  const LoadCase cases[] = {
      {"no marker: FRR not started by frr-node.sh", std::nullopt, "42", BgpdLoad::kNotManaged},
      {"no marker, no bgpd yet", std::nullopt, "", BgpdLoad::kNotManaged},
      {"loading", std::string("loading\n"), "42", BgpdLoad::kLoading},
      {"loading before bgpd wrote its pid file", std::string("loading\n"), "", BgpdLoad::kLoading},
      {"being written (empty)", std::string(""), "42", BgpdLoad::kLoading},
      {"loaded, this bgpd", std::string("loaded 42\n"), "42\n", BgpdLoad::kLoaded},
      {"loaded, another (earlier) bgpd: the new one's script has not written yet", std::string("loaded 41\n"), "42",
       BgpdLoad::kLoading},
      {"loaded, that bgpd gone (the old FRR killed, the new one not started)", std::string("loaded 43\n"), "43",
       BgpdLoad::kLoading},
      {"the old FRR's script stopped", std::string("stopped\n"), "42", BgpdLoad::kLoading},
      {"loaded, no pid file to compare with", std::string("loaded 42\n"), "", BgpdLoad::kLoading},
      {"loaded without a pid (no bgpd in --daemons)", std::string("loaded\n"), "42", BgpdLoad::kLoaded},
      {"not frr-node.sh's content", std::string("something else\n"), "42", BgpdLoad::kNotManaged},
  };
  const auto alive = [](const std::string& pid) { return pid == "41" || pid == "42"; };
  for (const auto& c : cases) EXPECT_EQ(bgpd_load_state(c.marker, c.bgpd_pid, alive), c.expected) << c.description;
}

class BgpdLoadWaitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("vxfed-load-wait-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(BgpdLoadWaitTest, NoMarkerReturnsAtOnce) {
  write("bgpd.pid", "42\n");
  const auto w = wait_for_bgpd_load(dir_.string(), std::chrono::seconds(30));
  EXPECT_EQ(w.state, BgpdLoad::kNotManaged);
  EXPECT_EQ(w.bgpd_pid, "42");
  EXPECT_LT(w.waited_s, 5.0);  // not the 30 s bound
}

TEST_F(BgpdLoadWaitTest, StillLoadingAtTheBound) {
  write(kFrrNodeLoadFile, "loading\n");
  const auto w = wait_for_bgpd_load(dir_.string(), std::chrono::milliseconds(150), std::chrono::milliseconds(10));
  EXPECT_EQ(w.state, BgpdLoad::kLoading);
  EXPECT_GE(w.waited_s, 0.15);
}

TEST_F(BgpdLoadWaitTest, EndsWhenTheNewBgpdIsLoaded) {
  // The earlier bgpd's marker and pid file, then the new bgpd's pid file (still loading), then
  // its script's "loaded": the wait ends at the last. This process stands for the new bgpd
  // (the wait asks /proc whether it runs).
  const std::string me = std::to_string(::getpid());
  write(kFrrNodeLoadFile, "loaded 1" + me + "\n");
  write("bgpd.pid", me + "\n");
  std::thread script([this, me] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    write(kFrrNodeLoadFile, "loaded " + me + "\n");
  });
  const auto w = wait_for_bgpd_load(dir_.string(), std::chrono::seconds(30), std::chrono::milliseconds(10));
  script.join();
  EXPECT_EQ(w.state, BgpdLoad::kLoaded);
  EXPECT_EQ(w.bgpd_pid, me);
  EXPECT_GE(w.waited_s, 0.1);
  EXPECT_LT(w.waited_s, 25.0);  // ended by the marker, not by the bound
}

}  // namespace
}  // namespace vxfed::bgp
