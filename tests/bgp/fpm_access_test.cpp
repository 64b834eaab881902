// Who may feed the FPM server routes (bgp/fpm_server.hpp "Who may connect"): real loopback
// TCP clients in child processes, one running as the allowed user ("nobody" stands in for
// zebra's "frr"), one as root (an attacker of another uid). Needs root to change uid; without
// it the binary exits 77 (skipped; scripts/test.sh fails on skips).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include "bgp/config.hpp"
#include "bgp/fpm_encoder.hpp"
#include "bgp/fpm_server.hpp"
#include "bgp/privileged_port.hpp"
#include "common/peer_credentials.hpp"

namespace {

namespace asio = boost::asio;
using namespace vxfed;
using namespace vxfed::bgp;
using net::Ipv4Prefix;

std::vector<std::uint8_t> route_frame(const char* prefix) {
  std::vector<std::uint8_t> nl, frame;
  fpm::append_route_message(nl, fpm::make_bgp_route(*Ipv4Prefix::parse(prefix), {0xc6120002}));
  fpm::append_frame(frame, nl);
  return frame;
}

// A client process: connects as `uid`, sends one route frame, then waits until the parent
// closes `hold` (or kills it). Returns its pid.
pid_t spawn_client(uid_t uid, std::uint16_t port, const char* prefix, int hold_read_fd) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  // Only our end of our own pipe stays open: other clients' write ends (inherited) would keep
  // their pipes from ever reporting EOF.
  for (int fd = 3; fd < 1024; ++fd)
    if (fd != hold_read_fd) ::close(fd);
  if (uid != ::geteuid() && ::setuid(uid) != 0) ::_exit(10);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) ::_exit(11);
  const auto frame = route_frame(prefix);
  if (::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(frame.size())) ::_exit(12);
  char b;
  while (::read(hold_read_fd, &b, 1) > 0) {
  }
  ::_exit(0);
}

class FpmAccess : public ::testing::Test {
 protected:
  void SetUp() override {
    auto nobody = uid_of_user("nobody");
    ASSERT_TRUE(nobody) << nobody.error();
    zebra_uid_ = *nobody;
    FpmServer::Handlers h;
    h.on_route = [this](const fpm::RouteMessage& m) { routes_.push_back(m.prefix.str()); };
    auto s = FpmServer::create(io_, asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), 0), h,
                               FpmAcceptPolicy{zebra_uid_});
    ASSERT_TRUE(s) << s.error();
    server_ = std::move(*s);
  }

  // Runs the server until `done` or 5 s.
  void run_until(const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < until) {
      io_.poll();
      io_.restart();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  // Runs the server for `ms` (to show that something does NOT happen).
  void run_for(int ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    run_until([&] { return std::chrono::steady_clock::now() >= until; });
  }

  struct Client {
    pid_t pid;
    int hold;  // write end: closing it lets the client exit
  };
  Client client(uid_t uid, const char* prefix) {
    int p[2];
    EXPECT_EQ(::pipe(p), 0);
    const pid_t pid = spawn_client(uid, server_->port(), prefix, p[0]);
    ::close(p[0]);
    return {pid, p[1]};
  }
  static int finish(Client c) {
    ::close(c.hold);
    int status = 0;
    ::waitpid(c.pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  asio::io_context io_;
  uid_t zebra_uid_ = 0;
  std::unique_ptr<FpmServer> server_;
  std::vector<std::string> routes_;
};

TEST_F(FpmAccess, ListenAddressMustBeLoopback) {
  auto s = FpmServer::create(io_, asio::ip::tcp::endpoint(asio::ip::address_v4::any(), 0), {});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("not a loopback address"), std::string::npos) << s.error();
}

TEST_F(FpmAccess, ClientOfAnotherUserIsRefusedAndCounted) {
  auto attacker = client(0, "10.245.0.0/16");  // root, not zebra's user
  run_until([&] { return server_->stats().refused_wrong_user == 1; });
  run_for(200);
  EXPECT_EQ(server_->stats().refused_wrong_user, 1u);
  EXPECT_EQ(server_->stats().connections, 0u);
  EXPECT_TRUE(routes_.empty()) << "an attacker's route was accepted: " << routes_.front();
  EXPECT_EQ(finish(attacker), 0);
}

TEST_F(FpmAccess, SecondClientNeverReplacesAHealthyZebra) {
  auto zebra = client(zebra_uid_, "10.245.0.0/16");
  run_until([&] { return routes_.size() == 1; });
  ASSERT_EQ(routes_, std::vector<std::string>{"10.245.0.0/16"});

  // Same user, second connection while the first is up: refused, its route never used.
  auto intruder = client(zebra_uid_, "10.99.0.0/16");
  run_until([&] { return server_->stats().refused_busy == 1; });
  run_for(200);
  EXPECT_EQ(server_->stats().refused_busy, 1u);
  EXPECT_TRUE(server_->stats().connected);
  EXPECT_EQ(routes_.size(), 1u);
  EXPECT_EQ(finish(intruder), 0);

  // zebra goes away; its reconnect (a new connection of the same user) is accepted.
  EXPECT_EQ(finish(zebra), 0);
  run_until([&] { return !server_->stats().connected; });
  auto restarted = client(zebra_uid_, "10.246.0.0/16");
  run_until([&] { return routes_.size() == 2; });
  ASSERT_EQ(routes_.size(), 2u);
  EXPECT_EQ(routes_[1], "10.246.0.0/16");
  EXPECT_EQ(server_->stats().connections, 2u);
  EXPECT_EQ(finish(restarted), 0);
}

TEST_F(FpmAccess, ReconnectBeforeTheOldEofIsReadIsAccepted) {
  // zebra restarted so fast that its new connection is accepted before the old one's EOF was
  // read: the peek at the old socket tells it is dead, so the new one takes over.
  auto zebra = client(zebra_uid_, "10.245.0.0/16");
  run_until([&] { return routes_.size() == 1; });
  EXPECT_EQ(finish(zebra), 0);  // closed, but we do not poll the io_context yet
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto again = client(zebra_uid_, "10.246.0.0/16");
  run_until([&] { return routes_.size() == 2; });
  EXPECT_EQ(routes_.size(), 2u);
  EXPECT_EQ(server_->stats().refused_busy, 0u);
  EXPECT_EQ(finish(again), 0);
}

// The attack of docs/security.md: an unprivileged process that binds the FPM port before vxfedd
// gets zebra's table. On the default port it cannot: bind() is refused (EACCES) for uid 65534,
// while it could bind zebra's own default, 2620.
TEST(FpmPort, AnUnprivilegedProcessCannotTakeTheDefaultPort) {
  auto bind_as_nobody = [](std::uint16_t port) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(10);
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(port);
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) ::_exit(0);
      ::_exit(errno == EACCES ? 13 : 14);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  auto unprivileged = unprivileged_port_start();
  ASSERT_TRUE(unprivileged) << unprivileged.error();
  ASSERT_LT(kDefaultFpmPort, *unprivileged);
  EXPECT_EQ(bind_as_nobody(kDefaultFpmPort), 13) << "uid 65534 must get EACCES on port " << kDefaultFpmPort;
  EXPECT_EQ(bind_as_nobody(kZebraDefaultFpmPort), 0) << "the premise: zebra's own default is any user's";
  EXPECT_TRUE(require_privileged_port("bgp.fpm.port", kDefaultFpmPort, *unprivileged));
  auto refused = require_privileged_port("bgp.fpm.port", kZebraDefaultFpmPort, *unprivileged);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("bgp.fpm.port: port 2620"), std::string::npos) << refused.error();
}

TEST(FpmPort, TheSysctlIsReadStrictly) {
  EXPECT_EQ(*parse_unprivileged_port_start("1024\n"), 1024u);
  EXPECT_EQ(*parse_unprivileged_port_start("0\n"), 0u);
  EXPECT_FALSE(parse_unprivileged_port_start("lots\n"));
  EXPECT_FALSE(require_privileged_port("bgp.fpm.port", 620, 0)) << "a namespace where every port is any user's";
}

TEST(TcpSocketUid, FindsThePeersRowInProcNetTcp) {
  // Two rows of one loopback connection (127.0.0.1:2620 <- 127.0.0.1:40000) as the kernel
  // prints them: our accepted socket (uid 0) and the peer's own socket (uid 103).
  const char* table =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0100007F:0A3C 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n"
      "   1: 0100007F:0A3C 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1\n"
      "   2: 0100007F:9C40 0100007F:0A3C 01 00000000:00000000 00:00000000 00000000   103        0 3 1\n";
  const std::uint32_t lo = 0x7f000001;
  EXPECT_EQ(tcp_socket_uid(table, lo, 40000, lo, 2620), std::optional<uid_t>(103));
  EXPECT_EQ(tcp_socket_uid(table, lo, 2620, lo, 40000), std::optional<uid_t>(0));
  EXPECT_EQ(tcp_socket_uid(table, lo, 40001, lo, 2620), std::nullopt);
  EXPECT_EQ(tcp_socket_uid("", lo, 40000, lo, 2620), std::nullopt);
  EXPECT_EQ(tcp_socket_uid("header\n   0: garbage\n", lo, 40000, lo, 2620), std::nullopt);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (::geteuid() != 0) {
    std::fprintf(stderr, "bgp_fpm_access: needs root (changes the uid of its client processes)\n");
    return 77;
  }
  return RUN_ALL_TESTS();
}
