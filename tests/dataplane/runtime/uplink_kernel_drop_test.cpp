// UplinkKernelDrop (dataplane/runtime/uplink_kernel_drop.hpp) on a real veth in a network
// namespace of the test's own: frames injected on the peer end reach an AF_PACKET socket on the
// uplink end whether or not the program is attached (the taps run before tc ingress); while it
// is attached, VXLAN datagrams to the VTEP never reach the node's UDP sockets, and everything
// else (another port, another local address) still does; once it is gone, they do again.
// Needs root (a network namespace): skipped without, failed when VXFED_REQUIRE_ALL=1 (CI).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/runtime/uplink_kernel_drop.hpp"
#include "tests/dataplane/runtime/own_netns.hpp"

namespace vxfed::dataplane {
namespace {

constexpr std::uint32_t kVtep = 0xc0000201;   // 192.0.2.1: the uplink's (and the node's) address
constexpr std::uint32_t kOther = 0xc0000202;  // 192.0.2.2: another address of the node
constexpr std::uint32_t kPeer = 0xc0000209;   // the sending VTEP

std::uint16_t ip_checksum(const std::uint8_t* h) {
  std::uint32_t s = 0;
  for (int i = 0; i < 20; i += 2) s += (h[i] << 8) | h[i + 1];
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<std::uint16_t>(~s);
}

// An Ethernet + IPv4 + UDP frame (UDP checksum 0: none, as VXLAN senders do) to dst:port.
std::vector<std::uint8_t> udp_frame(const std::array<std::uint8_t, 6>& dst_mac, std::uint32_t dst, std::uint16_t port,
                                    std::uint16_t frag = 0) {
  std::vector<std::uint8_t> f(14 + 20 + 8 + 16, 0);
  std::memcpy(f.data(), dst_mac.data(), 6);
  f[6] = 0x02;  // a locally administered source
  f[12] = 0x08;
  std::uint8_t* ip = f.data() + 14;
  ip[0] = 0x45;
  const std::uint16_t total = 20 + 8 + 16;
  ip[2] = total >> 8;
  ip[3] = total & 0xff;
  ip[6] = frag >> 8;
  ip[7] = frag & 0xff;
  ip[8] = 64;
  ip[9] = IPPROTO_UDP;
  const std::uint32_t src_be = htonl(kPeer), dst_be = htonl(dst);
  std::memcpy(ip + 12, &src_be, 4);
  std::memcpy(ip + 16, &dst_be, 4);
  const std::uint16_t sum = ip_checksum(ip);
  ip[10] = sum >> 8;
  ip[11] = sum & 0xff;
  std::uint8_t* udp = ip + 20;
  udp[0] = 0xc0;  // source port 49152
  udp[2] = port >> 8;
  udp[3] = port & 0xff;
  udp[5] = 8 + 16;
  return f;
}

int udp_socket(std::uint32_t addr, std::uint16_t port) {
  const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(addr);
  EXPECT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0) << std::strerror(errno);
  return s;
}

// Datagrams (or frames) waiting on fd within 200 ms, all read.
int drain(int fd) {
  int n = 0;
  char buf[2048];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, n == 0 ? 200 : 20) > 0) {
    if (::recv(fd, buf, sizeof(buf), MSG_DONTWAIT) < 0) break;
    ++n;
  }
  return n;
}

// IPv4 frames the uplink's AF_PACKET socket received within 200 ms (not its own outgoing ones,
// nor the IPv6 the links send when they come up), all read.
int drain_ipv4_frames(int fd) {
  int n = 0;
  std::uint8_t buf[2048];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, 200) > 0) {
    sockaddr_ll from{};
    socklen_t len = sizeof(from);
    const ssize_t got = ::recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &len);
    if (got < 0) break;
    if (from.sll_pkttype != PACKET_OUTGOING && got >= 14 && buf[12] == 0x08 && buf[13] == 0x00) ++n;
  }
  return n;
}

struct Veth {
  int inject = -1;   // AF_PACKET on the peer end "u1": frames sent here arrive on "u0"
  int tap = -1;      // AF_PACKET on the uplink end "u0", as the dataplane's uplink socket
  int ifindex_u1 = 0;
  std::array<std::uint8_t, 6> mac_u0{};

  void send(const std::vector<std::uint8_t>& frame) const {
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_ifindex = ifindex_u1;
    to.sll_halen = 6;
    ASSERT_EQ(::sendto(inject, frame.data(), frame.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof(to)),
              static_cast<ssize_t>(frame.size()))
        << std::strerror(errno);
  }
};

std::optional<Veth> make_veth() {
  if (std::system("ip link add u0 type veth peer name u1 && ip link set u0 up && ip link set u1 up && "
                  "ip addr add 192.0.2.1/24 dev u0 && ip addr add 192.0.2.2/24 dev u0 && "
                  "ip link set lo up") != 0)
    return std::nullopt;
  Veth v;
  v.ifindex_u1 = static_cast<int>(::if_nametoindex("u1"));
  v.inject = ::socket(AF_PACKET, SOCK_RAW, 0);  // protocol 0: sends only
  v.tap = ::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
  sockaddr_ll at{};
  at.sll_family = AF_PACKET;
  at.sll_protocol = htons(ETH_P_ALL);
  at.sll_ifindex = static_cast<int>(::if_nametoindex("u0"));
  if (::bind(v.tap, reinterpret_cast<sockaddr*>(&at), sizeof(at)) != 0) return std::nullopt;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, "u0", IFNAMSIZ - 1);
  if (::ioctl(v.tap, SIOCGIFHWADDR, &ifr) != 0) return std::nullopt;
  std::memcpy(v.mac_u0.data(), ifr.ifr_hwaddr.sa_data, 6);
  return v;
}

TEST(UplinkKernelDrop, VxlanToTheVtepStopsAtTcIngressAfterTheTapsEverythingElsePasses) {
  const bool created = vxfed::test::run_in_own_netns([&] {
    std::optional<Veth> v = make_veth();
    ASSERT_TRUE(v) << "veth set-up failed";
    const int vxlan = udp_socket(kVtep, 4789), other_port = udp_socket(kVtep, 4790),
              other_addr = udp_socket(kOther, 4789);
    drain_ipv4_frames(v->tap);  // what the links coming up sent

    // Without the program: the node's UDP sockets get every datagram (the premise).
    v->send(udp_frame(v->mac_u0, kVtep, 4789));
    EXPECT_EQ(drain(vxlan), 1) << "without the drop the node's stack delivers VXLAN to the VTEP's port";
    EXPECT_EQ(drain_ipv4_frames(v->tap), 1);
    {
      UplinkKernelDrop drop("u0", net::Ipv4Addr{kVtep}, 4789);
      ASSERT_EQ(drop.state(), UplinkKernelDrop::State::attached) << drop.describe();
      for (int i = 0; i < 5; ++i) v->send(udp_frame(v->mac_u0, kVtep, 4789));
      EXPECT_EQ(drain_ipv4_frames(v->tap), 5) << "the uplink's AF_PACKET socket still has every frame";
      EXPECT_EQ(drain(vxlan), 0) << "VXLAN to the VTEP must stop before the node's IP input";
      v->send(udp_frame(v->mac_u0, kVtep, 4790));
      EXPECT_EQ(drain(other_port), 1) << "another UDP port of the VTEP's address passes";
      v->send(udp_frame(v->mac_u0, kOther, 4789));
      EXPECT_EQ(drain(other_addr), 1) << "port 4789 of another address passes";
      EXPECT_EQ(drain_ipv4_frames(v->tap), 2);
    }
    v->send(udp_frame(v->mac_u0, kVtep, 4789));
    EXPECT_EQ(drain(vxlan), 1) << "the drop ends with the object (the link closed): the node's stack sees VXLAN again";
    for (int fd : {vxlan, other_port, other_addr, v->tap, v->inject}) ::close(fd);
  });
  VXFED_SKIP_WITHOUT_OWN_NETNS(created);
}

TEST(UplinkKernelDrop, AnUplinkThatDoesNotExistIsReportedFailed) {
  UplinkKernelDrop drop("vxfed-no-such0", net::Ipv4Addr{kVtep}, 4789);
  EXPECT_EQ(drop.state(), UplinkKernelDrop::State::failed);
  EXPECT_NE(drop.describe().find("vxfed-no-such0"), std::string::npos) << drop.describe();
}

}  // namespace
}  // namespace vxfed::dataplane
