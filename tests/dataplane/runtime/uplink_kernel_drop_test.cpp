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
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/runtime/kernel_vxlan_devices.hpp"
#include "dataplane/runtime/uplink_kernel_drop.hpp"
#include "dataplane/runtime/vxlan_port_guard.hpp"
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

// An Ethernet + IPv4 + UDP frame (UDP checksum 0: none, as VXLAN senders do) to dst:port,
// whose payload starts with a VXLAN header of `vni`.
std::vector<std::uint8_t> udp_frame(const std::array<std::uint8_t, 6>& dst_mac, std::uint32_t dst, std::uint16_t port,
                                    std::uint16_t frag = 0, std::uint32_t vni = 1001) {
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
  std::uint8_t* vxlan = udp + 8;
  vxlan[0] = 0x08;  // the I flag
  vxlan[4] = static_cast<std::uint8_t>(vni >> 16);
  vxlan[5] = static_cast<std::uint8_t>(vni >> 8);
  vxlan[6] = static_cast<std::uint8_t>(vni);
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

// The squatter of docs/security.md: a process that holds VTEP:4789 before the dataplane (no
// SO_REUSEPORT, so the claim fails). With the drop attached it reads none of our datagrams.
TEST(UplinkKernelDrop, ASocketHoldingTheVxlanPortReadsNoneOfOurDatagrams) {
  const bool created = vxfed::test::run_in_own_netns([&] {
    std::optional<Veth> v = make_veth();
    ASSERT_TRUE(v) << "veth set-up failed";
    const int squatter = udp_socket(kVtep, 4789);
    drain_ipv4_frames(v->tap);
    v->send(udp_frame(v->mac_u0, kVtep, 4789));
    ASSERT_EQ(drain(squatter), 1) << "the premise: without the drop the port's holder reads VXLAN";
    drain_ipv4_frames(v->tap);
    {
      VxlanPortClaim claim(net::Ipv4Addr{kVtep}, 4789);
      EXPECT_EQ(claim.state(), VxlanPortClaim::State::taken);
      UplinkKernelDrop drop("u0", net::Ipv4Addr{kVtep}, 4789);
      ASSERT_EQ(drop.state(), UplinkKernelDrop::State::attached) << drop.describe();
      EXPECT_EQ(drop.scope(), UplinkKernelDrop::Scope::all);
      for (std::uint32_t vni : {1001u, 1002u, 7u}) v->send(udp_frame(v->mac_u0, kVtep, 4789, 0, vni));
      EXPECT_EQ(drain_ipv4_frames(v->tap), 3) << "the uplink's AF_PACKET socket has every frame";
      EXPECT_EQ(drain(squatter), 0) << "the port's holder must read none of them";
    }
    ::close(squatter);
    for (int fd : {v->tap, v->inject}) ::close(fd);
  });
  VXFED_SKIP_WITHOUT_OWN_NETNS(created);
}

// A kernel VXLAN device of another CNI shares the port: only our networks' VNIs are dropped,
// the others reach the port's holder (a plain socket stands in for the device's).
TEST(UplinkKernelDrop, OurVnisScopeDropsOnlyTheVnisOfOurNetworks) {
  const bool created = vxfed::test::run_in_own_netns([&] {
    std::optional<Veth> v = make_veth();
    ASSERT_TRUE(v) << "veth set-up failed";
    const int holder = udp_socket(kVtep, 4789);
    drain_ipv4_frames(v->tap);
    UplinkKernelDrop drop("u0", net::Ipv4Addr{kVtep}, 4789);
    ASSERT_EQ(drop.state(), UplinkKernelDrop::State::attached) << drop.describe();
    ASSERT_TRUE(drop.set_vnis({1001, 1002}));
    ASSERT_TRUE(drop.set_scope(UplinkKernelDrop::Scope::our_vnis));
    for (std::uint32_t vni : {1001u, 1002u}) v->send(udp_frame(v->mac_u0, kVtep, 4789, 0, vni));
    EXPECT_EQ(drain(holder), 0) << "our VNIs are dropped";
    v->send(udp_frame(v->mac_u0, kVtep, 4789, 0, 5000));
    EXPECT_EQ(drain(holder), 1) << "another VNI is the device's";
    ASSERT_TRUE(drop.set_vnis({1002}));  // network 1001 removed from the tables
    v->send(udp_frame(v->mac_u0, kVtep, 4789, 0, 1001));
    v->send(udp_frame(v->mac_u0, kVtep, 4789, 0, 1002));
    EXPECT_EQ(drain(holder), 1) << "only 1001 passes once it is no longer ours";
    ASSERT_TRUE(drop.set_scope(UplinkKernelDrop::Scope::all));
    v->send(udp_frame(v->mac_u0, kVtep, 4789, 0, 5000));
    EXPECT_EQ(drain(holder), 0) << "scope all: every VNI";
    EXPECT_EQ(drain_ipv4_frames(v->tap), 6) << "the uplink's AF_PACKET socket has every frame";
    for (int fd : {holder, v->tap, v->inject}) ::close(fd);
  });
  VXFED_SKIP_WITHOUT_OWN_NETNS(created);
}

// A bpffs of the test's own, mounted on a temporary directory, removed at the end.
struct TempBpffs {
  std::string dir;
  TempBpffs() {
    char tmpl[] = "/tmp/vxfed-bpffs-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return;
    if (std::system(("mount -t bpf bpf " + std::string(tmpl)).c_str()) == 0) dir = tmpl;
  }
  ~TempBpffs() {
    if (dir.empty()) return;
    [[maybe_unused]] int rc = std::system(("umount " + dir + " && rmdir " + dir).c_str());
  }
};

// Fail closed across a crash: the pinned link stays in force with no dataplane, the next one
// takes it over (one link, not two), and removing the pins detaches it.
TEST(UplinkKernelDrop, PinnedDropOutlivesItsOwnerAndTheNextOneTakesItOver) {
  TempBpffs bpffs;
  ASSERT_FALSE(bpffs.dir.empty()) << "cannot mount a bpffs (root needed)";
  const bool created = vxfed::test::run_in_own_netns([&] {
    std::optional<Veth> v = make_veth();
    ASSERT_TRUE(v) << "veth set-up failed";
    const int squatter = udp_socket(kVtep, 4789);
    drain_ipv4_frames(v->tap);
    const std::string pins = uplink_drop_pin_dir(bpffs.dir, "u0");
    {
      UplinkKernelDrop first("u0", net::Ipv4Addr{kVtep}, 4789, pins);
      ASSERT_EQ(first.state(), UplinkKernelDrop::State::attached) << first.describe();
      EXPECT_TRUE(first.pinned()) << first.describe();
      EXPECT_FALSE(first.took_over());
      ASSERT_TRUE(first.set_vnis({1001}));
    }  // the dataplane is gone (a crash closes its descriptors alike)
    v->send(udp_frame(v->mac_u0, kVtep, 4789));
    EXPECT_EQ(drain(squatter), 0) << "with no dataplane the pinned drop still keeps our datagrams from the port's holder";
    {
      UplinkKernelDrop next("u0", net::Ipv4Addr{kVtep}, 4789, pins);
      ASSERT_EQ(next.state(), UplinkKernelDrop::State::attached) << next.describe();
      EXPECT_TRUE(next.took_over()) << next.describe();
      ASSERT_TRUE(next.set_scope(UplinkKernelDrop::Scope::our_vnis));
      v->send(udp_frame(v->mac_u0, kVtep, 4789, 0, 1001));
      EXPECT_EQ(drain(squatter), 0) << "the map came along: 1001 is still ours";
      v->send(udp_frame(v->mac_u0, kVtep, 4789, 0, 5000));
      EXPECT_EQ(drain(squatter), 1) << "one program runs (the taken-over link), not the old one beside it";
      ASSERT_TRUE(next.set_scope(UplinkKernelDrop::Scope::all));
      ASSERT_EQ(::unlink((pins + "/link").c_str()), 0);
      ASSERT_EQ(::unlink((pins + "/vnis").c_str()), 0);
    }
    v->send(udp_frame(v->mac_u0, kVtep, 4789));
    EXPECT_EQ(drain(squatter), 1) << "unpinned and closed: detached";
    for (int fd : {squatter, v->tap, v->inject}) ::close(fd);
  });
  VXFED_SKIP_WITHOUT_OWN_NETNS(created);
}

TEST(KernelVxlanDevices, AnUpDeviceOnThePortIsFound) {
  const bool created = vxfed::test::run_in_own_netns([&] {
    auto none = kernel_vxlan_device_on_port(4789);
    ASSERT_TRUE(none) << none.error();
    EXPECT_FALSE(*none);
    ASSERT_EQ(std::system("ip link add vx0 type vxlan id 42 dstport 4789 && ip link add vx1 type vxlan id 43 dstport 4790 "
                          "&& ip link set vx1 up"),
              0);
    auto down = kernel_vxlan_device_on_port(4789);
    ASSERT_TRUE(down) << down.error();
    EXPECT_FALSE(*down) << "a device that is down holds no port";
    ASSERT_EQ(std::system("ip link set vx0 up"), 0);
    auto up = kernel_vxlan_device_on_port(4789);
    ASSERT_TRUE(up) << up.error();
    EXPECT_TRUE(*up);
    auto other = kernel_vxlan_device_on_port(4791);
    ASSERT_TRUE(other) << other.error();
    EXPECT_FALSE(*other);
  });
  VXFED_SKIP_WITHOUT_OWN_NETNS(created);
}

// A squatter holds the port when the dataplane starts: the drop is attached all the same, and
// the guard takes the port back within one recheck of the squatter leaving.
TEST(VxlanPortGuard, TakesThePortBackWithinOneRecheckOfItsHolderLeaving) {
  const bool created = vxfed::test::run_in_own_netns([&] {
    std::optional<Veth> v = make_veth();
    ASSERT_TRUE(v) << "veth set-up failed";
    int squatter = udp_socket(kVtep, 4789);
    VxlanPortGuard guard({net::Ipv4Addr{kVtep}, 4789, "u0", true, ""});
    EXPECT_EQ(guard.claim().state(), VxlanPortClaim::State::taken);
    ASSERT_NE(guard.drop(), nullptr);
    ASSERT_EQ(guard.drop()->state(), UplinkKernelDrop::State::attached) << guard.drop()->describe();
    guard.set_vnis({1001});
    auto t = std::chrono::steady_clock::now();
    guard.tick(t += VxlanPortGuard::kRecheck);
    EXPECT_EQ(guard.claim().state(), VxlanPortClaim::State::taken) << "still held";
    ::close(squatter);
    guard.tick(t += VxlanPortGuard::kRecheck);
    EXPECT_EQ(guard.claim().state(), VxlanPortClaim::State::claimed) << "one recheck after the holder left";
    EXPECT_EQ(guard.drop()->scope(), UplinkKernelDrop::Scope::all);
  });
  VXFED_SKIP_WITHOUT_OWN_NETNS(created);
}

// Another CNI's kernel VXLAN device holds the port (it binds the wildcard address) before the
// dataplane starts: the drop narrows to our VNIs at once, and widens when the device goes.
TEST(VxlanPortGuard, AKernelVxlanDeviceOnThePortNarrowsTheDropToOurVnis) {
  const bool created = vxfed::test::run_in_own_netns([&] {
    std::optional<Veth> v = make_veth();
    ASSERT_TRUE(v) << "veth set-up failed";
    ASSERT_EQ(std::system("ip link add vx0 type vxlan id 42 dstport 4789 dev u0 && ip link set vx0 up"), 0);
    VxlanPortGuard guard({net::Ipv4Addr{kVtep}, 4789, "u0", true, ""});
    EXPECT_EQ(guard.claim().state(), VxlanPortClaim::State::taken);
    ASSERT_NE(guard.drop(), nullptr);
    ASSERT_EQ(guard.drop()->state(), UplinkKernelDrop::State::attached) << guard.drop()->describe();
    EXPECT_EQ(guard.drop()->scope(), UplinkKernelDrop::Scope::our_vnis);
    ASSERT_EQ(std::system("ip link del vx0"), 0);
    guard.tick(std::chrono::steady_clock::now() + VxlanPortGuard::kRecheck);
    EXPECT_EQ(guard.drop()->scope(), UplinkKernelDrop::Scope::all);
    EXPECT_EQ(guard.claim().state(), VxlanPortClaim::State::claimed);
    for (int fd : {v->tap, v->inject}) ::close(fd);
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
