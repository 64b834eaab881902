// The API socket under hostile input: garbage bytes, truncated frames, a 1 GiB length prefix,
// malformed and unknown messages, a caller with the wrong uid. Each bad connection is closed;
// the server keeps answering everyone else throughout.
#include <gtest/gtest.h>
#include <pwd.h>
#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "control/api/api_handler.hpp"
#include "control/api/api_server.hpp"
#include "control/node/node_state.hpp"
#include "spdlog/sinks/null_sink.h"
#include "spdlog/spdlog.h"
#include "tests/control/test_support.hpp"

namespace {

using namespace vxfed::control;
using namespace vxfed::control::testing;
namespace asio = boost::asio;

class ApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_.path + "/run/vxfedd.sock";
    auto config = test_config(dir_.path + "/state");
    NodeState::Options o;
    o.state_dir = config.daemon.state_dir;
    auto state = NodeState::open(config, o, nullptr);
    ASSERT_TRUE(state.ok()) << state.error();
    state_ = std::move(*state);
    handler_ = std::make_unique<ApiHandler>(*state_, DaemonView{});
    log_ = std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
    ApiServer::Options options;
    options.path = socket_;
    options.idle_timeout_ms = 300;
    auto server = ApiServer::create(io_, options,
                                    [this](const v1::ControlRequest& r, const PeerCredentials&) { return handler_->handle(r); },
                                    log_);
    ASSERT_TRUE(server.ok()) << server.error();
    server_ = std::move(*server);
    work_ = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(io_.get_executor());
    thread_ = std::thread([this] { io_.run(); });
  }

  void TearDown() override {
    asio::post(io_, [this] { server_->stop(); });
    work_.reset();
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  // Runs fn on the io thread (the server's) and waits for it.
  template <typename F>
  auto on_io(F fn) {
    std::packaged_task<decltype(fn())()> task(fn);
    auto future = task.get_future();
    asio::post(io_, [&task] { task(); });
    return future.get();
  }

  bool healthy() {
    v1::ControlRequest r;
    r.mutable_get_status();
    auto response = rpc(socket_, r);
    return response.ok() && response->code() == v1::OK && response->has_status();
  }

  int raw_connect() {
    auto fd = vxfed::connect_unix(socket_, 2000);
    EXPECT_TRUE(fd.ok()) << fd.error();
    return fd.ok() ? *fd : -1;
  }

  // Reads until the server closes; returns what arrived (decoded response, if any).
  std::optional<v1::ControlResponse> read_until_closed(int fd, int timeout_ms = 3000) {
    v1::ControlResponse response;
    auto ok = vxfed::read_delimited(fd, response, timeout_ms);
    std::optional<v1::ControlResponse> out;
    if (ok) out = response;
    char c;
    pollfd pfd{fd, POLLIN, 0};
    EXPECT_EQ(::poll(&pfd, 1, timeout_ms), 1) << "server did not close the connection";
    EXPECT_EQ(::recv(fd, &c, 1, 0), 0) << "server did not close the connection";
    return out;
  }

  TempDir dir_;
  std::string socket_;
  asio::io_context io_;
  std::unique_ptr<NodeState> state_;
  std::unique_ptr<ApiHandler> handler_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
};

TEST_F(ApiServerTest, SocketIs0600InA0700Directory) {
  struct stat st{};
  ASSERT_EQ(::stat(socket_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir_.path + "/run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(ApiServerTest, AnswersRequestsInOrderOnOneConnection) {
  int fd = raw_connect();
  std::string bytes;
  for (int i = 1; i <= 3; ++i) {
    v1::ControlRequest r;
    r.set_request_id(i);
    r.mutable_get_network()->set_name(i == 2 ? "nope" : "red");
    vxfed::append_delimited(r, bytes);
  }
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  for (int i = 1; i <= 3; ++i) {
    v1::ControlResponse response;
    ASSERT_TRUE(vxfed::read_delimited(fd, response, 2000).ok());
    EXPECT_EQ(response.request_id(), static_cast<std::uint64_t>(i));
    EXPECT_EQ(response.code(), i == 2 ? v1::NOT_FOUND : v1::OK);
  }
  ::close(fd);
}

TEST_F(ApiServerTest, GarbageBytesCloseOnlyThatConnection) {
  int idle = raw_connect();  // a well-behaved client connected throughout
  int fd = raw_connect();
  const std::string garbage(64, '\xff');  // an over-long varint
  ASSERT_GT(::send(fd, garbage.data(), garbage.size(), 0), 0);
  auto response = read_until_closed(fd);
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(response->code(), v1::INVALID_ARGUMENT);
  ::close(fd);
  EXPECT_TRUE(healthy());
  v1::ControlRequest r;
  r.set_request_id(9);
  r.mutable_list_networks();
  ASSERT_TRUE(vxfed::write_delimited(idle, r, 1000).ok());
  v1::ControlResponse ok;
  ASSERT_TRUE(vxfed::read_delimited(idle, ok, 2000).ok());
  EXPECT_EQ(ok.networks().networks_size(), 2);
  ::close(idle);
  EXPECT_GE(server_->stats().bad_frames, 1u);
}

TEST_F(ApiServerTest, GigabyteLengthPrefixIsRefusedWithoutAllocating) {
  int fd = raw_connect();
  const unsigned char prefix[] = {0x80, 0x80, 0x80, 0x80, 0x04};  // varint 1 GiB
  ASSERT_EQ(::send(fd, prefix, sizeof prefix, 0), 5);
  auto response = read_until_closed(fd);
  ASSERT_TRUE(response.has_value());
  EXPECT_NE(response->error().find("exceeds the limit"), std::string::npos) << response->error();
  ::close(fd);
  EXPECT_TRUE(healthy());
}

TEST_F(ApiServerTest, TruncatedFrameIsDroppedAfterIdleTimeoutWhileOthersAreServed) {
  v1::ControlRequest r;
  r.set_request_id(1);
  r.mutable_get_network()->set_name("red");
  std::string bytes;
  vxfed::append_delimited(r, bytes);
  // Half a frame, then silence.
  int stuck = raw_connect();
  ASSERT_GT(::send(stuck, bytes.data(), bytes.size() / 2, 0), 0);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(healthy()) << "served while a frame hangs";
  read_until_closed(stuck, 3000);
  ::close(stuck);
  // Half a frame, then the client goes away.
  int gone = raw_connect();
  ASSERT_GT(::send(gone, bytes.data(), bytes.size() - 1, 0), 0);
  ::close(gone);
  EXPECT_TRUE(healthy());
}

TEST_F(ApiServerTest, MalformedAndUnknownMessagesCloseTheConnection) {
  {
    int fd = raw_connect();
    const std::string payload = "\x0a\xff\xff\xff\xff\xff";  // field 1, length-delimited, bad length
    std::string frame(1, static_cast<char>(payload.size()));
    frame += payload;
    ASSERT_GT(::send(fd, frame.data(), frame.size(), 0), 0);
    auto response = read_until_closed(fd);
    ASSERT_TRUE(response.has_value());
    EXPECT_NE(response->error().find("malformed"), std::string::npos) << response->error();
    ::close(fd);
  }
  {
    int fd = raw_connect();
    // request_id = 7, then field 99 (an operation from a newer client): parses, op not set.
    std::string payload = "\x08\x07";
    payload += std::string("\x9a\x06\x00", 3);  // field 99, wire type 2, length 0
    std::string frame(1, static_cast<char>(payload.size()));
    frame += payload;
    ASSERT_GT(::send(fd, frame.data(), frame.size(), 0), 0);
    auto response = read_until_closed(fd);
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(response->request_id(), 7u);
    EXPECT_EQ(response->code(), v1::INVALID_ARGUMENT);
    EXPECT_NE(response->error().find("unknown request"), std::string::npos) << response->error();
    ::close(fd);
  }
  EXPECT_TRUE(healthy());
  EXPECT_GE(server_->stats().malformed, 1u);
  EXPECT_GE(server_->stats().unknown, 1u);
}

// A child process that drops to 'nobody' and calls the API; returns its exit status:
// 0 = refused with PERMISSION_DENIED, 10 = connect refused by the filesystem (EACCES),
// other = unexpected.
int call_as_nobody(const std::string& socket) {
  const passwd* nobody = ::getpwnam("nobody");
  if (nobody == nullptr) return 100;
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(nobody->pw_gid) != 0 || ::setuid(nobody->pw_uid) != 0) _exit(20);
    auto fd = vxfed::connect_unix(socket, 1000);
    if (!fd) _exit(fd.error().find("Permission denied") != std::string::npos ? 10 : 21);
    v1::ControlRequest r;
    r.set_request_id(1);
    r.mutable_list_endpoints();
    (void)vxfed::write_delimited(*fd, r, 1000);
    v1::ControlResponse response;
    if (!vxfed::read_delimited(*fd, response, 2000)) _exit(22);
    _exit(response.code() == v1::PERMISSION_DENIED ? 0 : 23);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

TEST_F(ApiServerTest, WrongUidIsRefusedByFileModeAndByPeerCredentials) {
  if (::geteuid() != 0) {
    if (const char* all = std::getenv("VXFED_REQUIRE_ALL"); all && std::string(all) == "1")
      FAIL() << "needs root to run a client as 'nobody'";
    GTEST_SKIP() << "needs root to run a client as 'nobody'";
  }
  // 1. With the real modes (0600 socket, 0700 dir) nobody cannot even connect.
  EXPECT_EQ(call_as_nobody(socket_), 10);
  // 2. With the file modes opened up, SO_PEERCRED still refuses the caller.
  ASSERT_EQ(::chmod((dir_.path).c_str(), 0755), 0);
  ASSERT_EQ(::chmod((dir_.path + "/run").c_str(), 0755), 0);
  ASSERT_EQ(::chmod(socket_.c_str(), 0666), 0);
  EXPECT_EQ(call_as_nobody(socket_), 0);
  EXPECT_GE(server_->stats().denied, 1u);
  EXPECT_TRUE(healthy()) << "root is still served";
}

TEST_F(ApiServerTest, ManyClientsAtOnceWhileHostileOnesMisbehave) {
  std::vector<int> hostile;
  for (int i = 0; i < 20; ++i) {
    int fd = raw_connect();
    const char half = '\x20';  // a 32-byte frame that never comes
    ::send(fd, &half, 1, 0);
    hostile.push_back(fd);
  }
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t)
    clients.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        v1::ControlRequest r;
        r.mutable_attach_endpoint()->mutable_endpoint()->CopyFrom(
            endpoint("c" + std::to_string(t) + "-" + std::to_string(i), "red",
                     "10.244.1." + std::to_string(10 + t * 25 + i), "vxf" + std::to_string(t)));
        auto response = rpc(socket_, r);
        if (response.ok() && response->code() == v1::OK) ++ok;
      }
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(ok.load(), 100);
  for (int fd : hostile) ::close(fd);
  EXPECT_EQ(on_io([this] { return state_->endpoint_count(); }), 100u);
}

}  // namespace
