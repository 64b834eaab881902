// The CNI commands (cni/commands.cpp) against fakes: tests/cni/fake_vxfedd for vxfedd and a
// shell-script IPAM plugin that logs how it was called. What needs a real pod namespace (ADD
// past the namespace check, CHECK of a live attachment) is covered by tests/integration/cni/;
// here: the order of checks and their error codes, DEL's and GC's bookkeeping, the queue of
// detaches while vxfedd is away and its replay, and STATUS.
//
// DEL and GC delete the host interface through rtnetlink even when it is already gone, which
// needs CAP_NET_ADMIN: those tests need root (skipped without, failed with VXFED_REQUIRE_ALL=1).
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cni/commands.hpp"
#include "cni/records.hpp"
#include "cni/state_store.hpp"
#include "common/read_file.hpp"
#include "tests/cni/temp_dir.hpp"

extern char** environ;

namespace vxfed::cni {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

#define VXFED_REQUIRE_ROOT()                                                              \
  do {                                                                                    \
    if (::geteuid() != 0) {                                                               \
      if (const char* all = std::getenv("VXFED_REQUIRE_ALL"); all && std::string(all) == "1") \
        FAIL() << "needs root (CAP_NET_ADMIN), and VXFED_REQUIRE_ALL=1 forbids skipping"; \
      GTEST_SKIP() << "needs root (CAP_NET_ADMIN)";                                       \
    }                                                                                     \
  } while (0)

std::string read_text(const std::string& path) {  // "" when not written (yet)
  auto text = vxfed::read_file(path);
  return text ? *text : std::string();
}

// fake_vxfedd as a child process on a socket in the test's directory.
class FakeVxfedd {
 public:
  FakeVxfedd(const std::string& dir, std::vector<std::string> extra = {})
      : socket_(dir + "/vxfedd.sock"), state_(dir + "/fake-state.json") {
    const std::string config = dir + "/networks.json";
    std::ofstream(config) << json{{"networks",
                                   {{{"name", "fed-a"}, {"subnet", "10.244.0.0/16"}, {"gateway", "10.244.0.1"},
                                     {"mtu", 8950}, {"vni", 1001}, {"remote_cidrs", {"10.245.0.0/16"}}},
                                    {{"name", "fed-blk"}, {"subnet", "10.246.0.0/16"}, {"gateway", "10.246.0.1"},
                                     {"mtu", 8950}, {"vni", 1002}, {"node_block", "10.246.3.0/24"}}}}}
                                 .dump();
    const char* binary = std::getenv("FAKE_VXFEDD");
    if (!binary) {
      ADD_FAILURE() << "FAKE_VXFEDD is not set (meson sets it to build/tests/cni/fake_vxfedd)";
      return;
    }
    std::vector<std::string> args{binary, "--socket", socket_, "--config", config, "--state", state_};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    fs::remove(socket_);
    if (::posix_spawn(&pid_, binary, nullptr, nullptr, argv.data(), environ) != 0) {
      ADD_FAILURE() << "cannot start " << binary;
      pid_ = -1;
      return;
    }
    for (int i = 0; i < 500 && !fs::exists(socket_); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!fs::exists(socket_)) ADD_FAILURE() << "fake_vxfedd did not create " << socket_;
  }
  ~FakeVxfedd() { stop(); }
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  // (container id, ifname) of every endpoint the fake holds, from its state file.
  std::set<std::pair<std::string, std::string>> endpoints() const {
    std::set<std::pair<std::string, std::string>> out;
    auto j = json::parse(read_text(state_), nullptr, false);
    if (j.is_discarded()) return out;
    for (const auto& e : j["endpoints"]) out.insert({e["container_id"].get<std::string>(), e["ifname"].get<std::string>()});
    return out;
  }
  const std::string& socket() const { return socket_; }

 private:
  std::string socket_, state_;
  pid_t pid_ = -1;
};

// Endpoints a fake_vxfedd started later begins with (it reloads its state file).
void preload_endpoints(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& eps) {
  json list = json::array();
  int n = 10;
  for (const auto& [id, ifname] : eps)
    list.push_back({{"container_id", id}, {"ifname", ifname}, {"network", "fed-a"},
                    {"ip", "10.244.1." + std::to_string(n++)}, {"mac", "0a:58:0a:f4:01:05"},
                    {"host_iface", host_iface_name(id, ifname)}, {"netns", "/var/run/netns/x"},
                    {"pod", json::object()}});
  std::ofstream(dir + "/fake-state.json") << json{{"requests", 0}, {"endpoints", list}}.dump();
}

class Commands : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);  // a plugin that exits before reading its stdin
    plugins_ = tmp_ / "plugins";
    fs::create_directories(plugins_);
    ipam_log_ = tmp_ / "ipam.log";
    const std::string script = plugins_ + "/fake-ipam";
    std::ofstream(script) << "#!/bin/sh\n"
                             "cat > /dev/null\n"
                             "echo \"$CNI_COMMAND $CNI_CONTAINERID $CNI_IFNAME\" >> '" << ipam_log_ << "'\n"
                             "exit 0\n";
    ::chmod(script.c_str(), 0755);
    // Pins of the bandwidth hook (DEL and GC remove a pod's, if any) stay in the test's dir.
    ::setenv("VXFED_BPF_PIN_ROOT", (tmp_ / "bpf").c_str(), 1);
  }

  NetConf conf(const std::string& version = "1.1.0", json more = json::object()) {
    json j = {{"cniVersion", version}, {"name", "fed-a-conf"}, {"type", "vxfed"}, {"network", "fed-a"},
              {"ipam", {{"type", "fake-ipam"}}}, {"socket", tmp_ / "vxfedd.sock"},
              {"stateDir", tmp_ / "state"}, {"timeoutMs", 2000}};
    for (auto& [k, v] : more.items()) j[k] = v;
    for (auto it = j.begin(); it != j.end();) it = it->is_null() ? j.erase(it) : std::next(it);
    auto c = parse_netconf(j.dump());
    if (!c) ADD_FAILURE() << "test config refused: " << c.error().msg;
    return c ? *c : NetConf{};
  }

  CniEnv env(Command command, const std::string& container_id = "c0ffee01", const std::string& ifname = "net1") {
    CniEnv e;
    e.command = command;
    e.container_id = container_id;
    e.ifname = ifname;
    e.netns = tmp_ / "no-such-netns";
    e.path = {plugins_};
    return e;
  }

  std::vector<std::string> ipam_calls() {
    std::vector<std::string> out;
    std::istringstream in(read_text(ipam_log_));
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

  StateStore store() {
    auto s = StateStore::open(tmp_ / "state");
    if (!s) ADD_FAILURE() << s.error().msg;
    return std::move(*s);
  }

  AttachmentRecord record(const std::string& id, const std::string& ifname, const std::string& config_name) {
    return AttachmentRecord{id, ifname, config_name, "fed-a", "/var/run/netns/x",
                            host_iface_name(id, ifname), "10.244.1.10/16", "0a:58:0a:f4:01:05", "fake-ipam", 1};
  }

  test::TempDir tmp_;
  std::string plugins_, ipam_log_;
};

void expect_error(const Expected<json>& r, int code, const std::string& text) {
  ASSERT_FALSE(r.ok()) << "succeeded: " << r->dump();
  EXPECT_EQ(r.error().code, code) << r.error().msg;
  EXPECT_NE(r.error().msg.find(text), std::string::npos) << r.error().msg << " / " << r.error().details;
}

// ---------------------------------------------------------------------------------------- ADD

TEST_F(Commands, AddWithoutIpamIsAnInvalidConfig) {
  FakeVxfedd fake(tmp_.path);
  expect_error(cmd_add(conf("1.1.0", {{"ipam", nullptr}}), env(Command::kAdd)), kInvalidConfig, "no \"ipam\"");
  EXPECT_TRUE(ipam_calls().empty());
}

TEST_F(Commands, AddWithVxfeddAwayAsksToTryAgainLater) {
  expect_error(cmd_add(conf(), env(Command::kAdd)), kTryAgainLater, "vxfedd is not reachable");
  EXPECT_TRUE(ipam_calls().empty());
}

TEST_F(Commands, AddToAnUnknownNetworkSaysHowToFixIt) {
  FakeVxfedd fake(tmp_.path);
  expect_error(cmd_add(conf("1.1.0", {{"network", "fed-z"}}), env(Command::kAdd)), kInvalidConfig,
               "vxfed network \"fed-z\" does not exist on this node");
  EXPECT_TRUE(ipam_calls().empty());
}

TEST_F(Commands, AddWithAnMtuAboveTheNetworksIsRefused) {
  FakeVxfedd fake(tmp_.path);
  expect_error(cmd_add(conf("1.1.0", {{"mtu", 9000}}), env(Command::kAdd)), kInvalidConfig,
               "exceeds network \"fed-a\"'s MTU 8950");
}

TEST_F(Commands, AddToAMissingNamespaceIsContainerUnknownBeforeAnyAddressIsTaken) {
  FakeVxfedd fake(tmp_.path);
  expect_error(cmd_add(conf(), env(Command::kAdd)), kContainerUnknown, "does not exist");
  EXPECT_TRUE(ipam_calls().empty());  // IPAM comes after every check that can fail cheaply
  EXPECT_TRUE(fake.endpoints().empty());
}

TEST_F(Commands, AddReplaysQueuedDetachesFirst) {
  preload_endpoints(tmp_.path, {{"old1", "net1"}, {"keep", "net1"}});
  {
    auto s = store();
    ASSERT_TRUE(s.save_queue({{"old1", "net1", "fed-a", 1, 0}}).ok());
  }
  FakeVxfedd fake(tmp_.path);
  (void)cmd_add(conf(), env(Command::kAdd));  // fails later, at the namespace
  EXPECT_EQ(fake.endpoints(), (std::set<std::pair<std::string, std::string>>{{"keep", "net1"}}));
  EXPECT_FALSE(fs::exists(tmp_ / "state/pending-detach.json"));
}

TEST_F(Commands, AnAddressRequestedOutsideTheNodesBlockIsRefusedBeforeIpam) {
  FakeVxfedd fake(tmp_.path);
  const json blk = {{"network", "fed-blk"}};
  json rc = blk;
  rc["runtimeConfig"] = {{"ips", {"10.246.4.7/16"}}};
  expect_error(cmd_add(conf("1.1.0", rc), env(Command::kAdd)), kInvalidConfig,
               "10.246.4.7 requested in runtimeConfig.ips is outside this node's block 10.246.3.0/24 of vxfed network \"fed-blk\"");
  json args = blk;
  args["args"] = {{"cni", {{"ips", {"10.246.9.9"}}}}};
  expect_error(cmd_add(conf("1.1.0", args), env(Command::kAdd)), kInvalidConfig, "10.246.9.9 requested in args.cni.ips is outside");
  json stat = blk;
  stat["ipam"] = {{"type", "fake-ipam"}, {"addresses", {{{"address", "10.246.0.9/16"}}}}};
  expect_error(cmd_add(conf("1.1.0", stat), env(Command::kAdd)), kInvalidConfig, "10.246.0.9 requested in ipam.addresses is outside");
  auto e = env(Command::kAdd);
  e.arg_map["IP"] = "10.246.3.8,10.246.200.1";
  expect_error(cmd_add(conf("1.1.0", blk), e), kInvalidConfig, "10.246.200.1 requested in CNI_ARGS IP is outside");
  EXPECT_TRUE(ipam_calls().empty());
  // Inside the block the request passes (and the ADD goes on, to fail at the missing namespace).
  json inside = blk;
  inside["runtimeConfig"] = {{"ips", {"10.246.3.7/16"}}};
  expect_error(cmd_add(conf("1.1.0", inside), env(Command::kAdd)), kContainerUnknown, "does not exist");
  // A network without a block (the whole subnet is the node's) takes any address of it.
  json whole = {{"runtimeConfig", {{"ips", {"10.244.200.7/16"}}}}};
  expect_error(cmd_add(conf("1.1.0", whole), env(Command::kAdd)), kContainerUnknown, "does not exist");
}

TEST_F(Commands, AServiceRangeHoldingPodAddressesIsRefusedBeforeIpam) {
  FakeVxfedd fake(tmp_.path);
  expect_error(cmd_add(conf("1.1.0", {{"serviceCidrs", {"10.96.0.0/24", "10.244.64.0/18"}}}), env(Command::kAdd)),
               kInvalidConfig, "serviceCidrs[1]: 10.244.64.0/18 overlaps vxfed network \"fed-a\"'s subnet 10.244.0.0/16");
  // The remote cluster CIDRs come from vxfedd (fed-a: 10.245.0.0/16).
  expect_error(cmd_add(conf("1.1.0", {{"serviceCidrs", {"10.245.7.0/24"}}}), env(Command::kAdd)), kInvalidConfig,
               "serviceCidrs[0]: 10.245.7.0/24 overlaps 10.245.0.0/16, another cluster's CIDR");
  EXPECT_TRUE(ipam_calls().empty());
  EXPECT_TRUE(fake.endpoints().empty());
  // A range apart from every pod address passes (and the ADD goes on, to fail at the missing namespace).
  expect_error(cmd_add(conf("1.1.0", {{"serviceCidrs", {"10.96.0.0/24"}}}), env(Command::kAdd)), kContainerUnknown,
               "does not exist");
}

// ---------------------------------------------------------------------------------------- DEL

TEST_F(Commands, DelDetachesReleasesTheAddressAndForgetsTheRecord) {
  VXFED_REQUIRE_ROOT();
  preload_endpoints(tmp_.path, {{"c0ffee01", "net1"}, {"other", "net1"}});
  {
    auto s = store();
    ASSERT_TRUE(s.save_record(record("c0ffee01", "net1", "fed-a-conf")).ok());
  }
  FakeVxfedd fake(tmp_.path);
  auto r = cmd_del(conf(), env(Command::kDel));
  ASSERT_TRUE(r.ok()) << r.error().msg << " / " << r.error().details;
  EXPECT_TRUE(r->is_null());  // DEL prints nothing
  EXPECT_EQ(fake.endpoints(), (std::set<std::pair<std::string, std::string>>{{"other", "net1"}}));
  EXPECT_EQ(ipam_calls(), std::vector<std::string>{"DEL c0ffee01 net1"});
  EXPECT_FALSE(store().load_record(host_iface_name("c0ffee01", "net1")).has_value());
  EXPECT_FALSE(fs::exists(tmp_ / "state/pending-detach.json"));
}

TEST_F(Commands, DelTwiceAndDelOfSomethingNeverAddedSucceed) {
  VXFED_REQUIRE_ROOT();
  FakeVxfedd fake(tmp_.path);
  for (int i = 0; i < 2; ++i) {
    auto r = cmd_del(conf(), env(Command::kDel, "never-added"));
    ASSERT_TRUE(r.ok()) << "DEL " << i << ": " << r.error().msg << " / " << r.error().details;
  }
  EXPECT_EQ(ipam_calls(), (std::vector<std::string>{"DEL never-added net1", "DEL never-added net1"}));
}

TEST_F(Commands, DelWithVxfeddAwayQueuesTheDetachAndTheNextCallReplaysIt) {
  VXFED_REQUIRE_ROOT();
  preload_endpoints(tmp_.path, {{"c0ffee01", "net1"}});
  {
    auto s = store();
    ASSERT_TRUE(s.save_record(record("c0ffee01", "net1", "fed-a-conf")).ok());
  }
  auto r = cmd_del(conf(), env(Command::kDel));  // no vxfedd running
  ASSERT_TRUE(r.ok()) << r.error().msg;
  EXPECT_EQ(ipam_calls(), std::vector<std::string>{"DEL c0ffee01 net1"});  // local state goes anyway
  EXPECT_FALSE(store().load_record(host_iface_name("c0ffee01", "net1")).has_value());
  auto q = store().load_queue();
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 1u);
  EXPECT_EQ((*q)[0].container_id, "c0ffee01");
  EXPECT_EQ((*q)[0].ifname, "net1");
  EXPECT_EQ((*q)[0].network, "fed-a");  // from the record

  FakeVxfedd fake(tmp_.path);  // vxfedd is back, still holding the endpoint
  ASSERT_EQ(fake.endpoints().size(), 1u);
  ASSERT_TRUE(cmd_status(conf(), env(Command::kStatus)).ok());
  EXPECT_TRUE(fake.endpoints().empty());
  EXPECT_FALSE(fs::exists(tmp_ / "state/pending-detach.json"));
}

TEST_F(Commands, AQueuedDetachVxfeddKeepsRefusingIsRetriedThenDropped) {
  {
    auto s = store();
    ASSERT_TRUE(s.save_queue({{"stuck1", "net1", "fed-a", 1, 18}, {"fine", "net1", "fed-a", 1, 0}}).ok());
  }
  preload_endpoints(tmp_.path, {{"stuck1", "net1"}, {"fine", "net1"}});
  FakeVxfedd fake(tmp_.path, {"--refuse-detach-prefix", "stuck"});
  ASSERT_TRUE(cmd_status(conf(), env(Command::kStatus)).ok());
  auto q = store().load_queue();
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->size(), 1u);  // "fine" replayed, "stuck1" refused once more
  EXPECT_EQ((*q)[0].container_id, "stuck1");
  EXPECT_EQ((*q)[0].attempts, 19u);
  EXPECT_EQ(fake.endpoints(), (std::set<std::pair<std::string, std::string>>{{"stuck1", "net1"}}));
  ASSERT_TRUE(cmd_status(conf(), env(Command::kStatus)).ok());
  EXPECT_FALSE(fs::exists(tmp_ / "state/pending-detach.json"));  // the 20th refusal drops it
}

// -------------------------------------------------------------------------------------- CHECK

TEST_F(Commands, CheckRefusesWhatItCannotVerify) {
  expect_error(cmd_check(conf("0.3.1"), env(Command::kCheck)), kIncompatibleVersion, "0.4.0 or later");
  expect_error(cmd_check(conf(), env(Command::kCheck)), kInvalidConfig, "needs prevResult");
  const json prev = {{"cniVersion", "1.1.0"},
                     {"interfaces", {{{"name", "vxf0"}}, {{"name", "net1"}, {"sandbox", ""}}}},
                     {"ips", json::array()}};
  expect_error(cmd_check(conf("1.1.0", {{"prevResult", prev}, {"ipam", nullptr}}), env(Command::kCheck)),
               kInvalidConfig, "no \"ipam\"");
  expect_error(cmd_check(conf("1.1.0", {{"prevResult", prev}}), env(Command::kCheck)), kCheckFailed,
               "prevResult has no interface net1 with a sandbox");
}

TEST_F(Commands, CheckNeedsVxfeddAndThePodsNamespace) {
  const json prev = {{"cniVersion", "1.1.0"},
                     {"interfaces", {{{"name", "net1"}, {"sandbox", "/var/run/netns/x"}}}},
                     {"ips", json::array()}};
  expect_error(cmd_check(conf("1.1.0", {{"prevResult", prev}}), env(Command::kCheck)), kTryAgainLater,
               "vxfedd is not reachable");
  FakeVxfedd fake(tmp_.path);
  expect_error(cmd_check(conf("1.1.0", {{"prevResult", prev}}), env(Command::kCheck)), kContainerUnknown,
               "does not exist");
  EXPECT_TRUE(ipam_calls().empty());
}

// ----------------------------------------------------------------------------------------- GC

TEST_F(Commands, GcRemovesStaleAttachmentsOfItsConfigOnly) {
  VXFED_REQUIRE_ROOT();
  {
    auto s = store();
    ASSERT_TRUE(s.save_record(record("live", "net1", "fed-a-conf")).ok());
    ASSERT_TRUE(s.save_record(record("stale", "net1", "fed-a-conf")).ok());
    ASSERT_TRUE(s.save_record(record("theirs", "net1", "other-conf")).ok());  // same network, other config
  }
  preload_endpoints(tmp_.path, {{"live", "net1"}, {"stale", "net1"}, {"theirs", "net1"}, {"orphan", "net1"}});
  FakeVxfedd fake(tmp_.path);
  const json valid = json::array({{{"containerID", "live"}, {"ifname", "net1"}}});
  auto r = cmd_gc(conf("1.1.0", {{"cni.dev/valid-attachments", valid}}), env(Command::kGc, ""));
  ASSERT_TRUE(r.ok()) << r.error().msg << " / " << r.error().details;
  // The stale one is released from IPAM under its own container id, and its record goes.
  EXPECT_EQ(ipam_calls(), std::vector<std::string>{"DEL stale net1"});
  std::set<std::string> left;
  for (const auto& rec : store().list_records()) left.insert(rec.container_id);
  EXPECT_EQ(left, (std::set<std::string>{"live", "theirs"}));
  // vxfedd keeps the valid one and the other config's; the stale one and the one only vxfedd
  // knew (orphan) are gone.
  EXPECT_EQ(fake.endpoints(), (std::set<std::pair<std::string, std::string>>{{"live", "net1"}, {"theirs", "net1"}}));
}

TEST_F(Commands, GcNeedsCni110) {
  expect_error(cmd_gc(conf("1.0.0"), env(Command::kGc, "")), kIncompatibleVersion, "1.1.0");
}

// ------------------------------------------------------------------------------------- STATUS

TEST_F(Commands, StatusIsQuietWhenEverythingIsReady) {
  FakeVxfedd fake(tmp_.path);
  auto r = cmd_status(conf(), env(Command::kStatus, ""));
  ASSERT_TRUE(r.ok()) << r.error().msg;
  EXPECT_TRUE(r->is_null());
}

TEST_F(Commands, StatusSaysWhatIsNotReady) {
  expect_error(cmd_status(conf("1.0.0"), env(Command::kStatus, "")), kIncompatibleVersion, "1.1.0");
  expect_error(cmd_status(conf(), env(Command::kStatus, "")), kNotAvailable, "vxfedd is not reachable");
  {
    FakeVxfedd fake(tmp_.path, {"--not-ready"});
    expect_error(cmd_status(conf(), env(Command::kStatus, "")), kNotAvailable, "dataplane is not connected");
  }
  {
    FakeVxfedd fake(tmp_.path);
    expect_error(cmd_status(conf("1.1.0", {{"ipam", {{"type", "no-such-ipam"}}}}), env(Command::kStatus, "")),
                 kNotAvailable, "\"no-such-ipam\" was not found in CNI_PATH");
  }
  {
    FakeVxfedd fake(tmp_.path, {"--bgp-down"});
    expect_error(cmd_status(conf(), env(Command::kStatus, "")), kLimitedConnectivity, "FPM stream, is not connected");
  }
}

}  // namespace
}  // namespace vxfed::cni
