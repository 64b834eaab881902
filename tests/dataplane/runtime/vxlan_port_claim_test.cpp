// VxlanPortClaim (dataplane/runtime/vxlan_port_claim.hpp): datagrams to a claimed port vanish
// without ICMP port unreachable (a connected sender sees no ECONNREFUSED), a second dataplane
// can claim it too, a port held by a plain socket is reported taken, a foreign address is
// reported not local. On loopback with a free port, so nothing else on the machine is touched.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "dataplane/runtime/vxlan_port_claim.hpp"

namespace vxfed::dataplane {
namespace {

const net::Ipv4Addr kLoopback{0x7f000001};

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A UDP port nobody holds now (the kernel's pick for port 0).
std::uint16_t free_port() {
  const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a = loopback(0);
  EXPECT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  EXPECT_EQ(::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(s);
  return ntohs(a.sin_port);
}

// Sends three datagrams on a connected socket to the port; true when the kernel reported the
// port unreachable (ECONNREFUSED on a later send: its ICMP came back).
bool refused(std::uint16_t port) {
  const int s = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a = loopback(port);
  EXPECT_EQ(::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  bool was_refused = false;
  for (int i = 0; i < 3 && !was_refused; ++i) {
    if (::send(s, "vxlan", 5, 0) < 0 && errno == ECONNREFUSED) was_refused = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::close(s);
  return was_refused;
}

TEST(VxlanPortClaim, ClaimedPortSwallowsDatagramsWithoutPortUnreachable) {
  const std::uint16_t port = free_port();
  ASSERT_TRUE(refused(port)) << "without a claim the kernel must answer port unreachable (the test's premise)";
  {
    VxlanPortClaim claim(kLoopback, port);
    ASSERT_EQ(claim.state(), VxlanPortClaim::State::claimed) << claim.describe();
    VxlanPortClaim second(kLoopback, port);  // a second dataplane of the node, mid-upgrade
    EXPECT_EQ(second.state(), VxlanPortClaim::State::claimed) << second.describe();
    EXPECT_FALSE(refused(port));
  }
  EXPECT_TRUE(refused(port)) << "released with the claim";
}

TEST(VxlanPortClaim, PortHeldByAnotherSocketIsReportedTaken) {
  const std::uint16_t port = free_port();
  const int holder = ::socket(AF_INET, SOCK_DGRAM, 0);  // like a kernel VXLAN device: no SO_REUSEPORT
  sockaddr_in a = loopback(port);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  VxlanPortClaim claim(kLoopback, port);
  EXPECT_EQ(claim.state(), VxlanPortClaim::State::taken);
  EXPECT_NE(claim.describe().find("kernel VXLAN device"), std::string::npos) << claim.describe();
  ::close(holder);
}

TEST(VxlanPortClaim, VtepThatIsNoLocalAddressIsNotLocal) {
  VxlanPortClaim claim(net::Ipv4Addr{0xc0000201}, free_port());  // 192.0.2.1, TEST-NET-1
  EXPECT_EQ(claim.state(), VxlanPortClaim::State::not_local) << claim.describe();
  EXPECT_STREQ(VxlanPortClaim::name(claim.state()), "not_local");
}

}  // namespace
}  // namespace vxfed::dataplane
