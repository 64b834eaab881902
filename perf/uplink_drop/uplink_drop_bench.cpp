// What the uplink's tc drop (dataplane/runtime/uplink_kernel_drop.hpp) costs the kernel per
// frame: the program run with BPF_PROG_TEST_RUN on frames of each kind, many times, in a network
// namespace of its own (a veth to attach to). Prints one JSON object: ns per run for
//   vxlan_scope_all     a VXLAN datagram to the VTEP, scope `all` (one map lookup, dropped)
//   vxlan_our_vni       the same, scope `our_vnis`, its VNI ours (two lookups, dropped)
//   vxlan_other_vni     scope `our_vnis`, a VNI not ours (two lookups, passed)
//   udp_other_port      UDP to another port (every header check, no lookup, passed): the cost
//                       of the program before it had a map, which checked the same headers
// Needs root. Usage: vxfed-uplink-drop-bench [--repeat N]
#include <arpa/inet.h>
#include <linux/bpf.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dataplane/runtime/uplink_kernel_drop.hpp"

namespace {

using vxfed::dataplane::UplinkKernelDrop;

constexpr std::uint32_t kVtep = 0xc0000201;  // 192.0.2.1

std::vector<std::uint8_t> frame(std::uint16_t port, std::uint32_t vni) {
  std::vector<std::uint8_t> f(14 + 20 + 8 + 8 + 64, 0);
  f[12] = 0x08;
  std::uint8_t* ip = f.data() + 14;
  ip[0] = 0x45;
  const std::uint16_t total = static_cast<std::uint16_t>(f.size() - 14);
  ip[2] = total >> 8;
  ip[3] = total & 0xff;
  ip[8] = 64;
  ip[9] = 17;
  const std::uint32_t src = htonl(0xc0000209), dst = htonl(kVtep);
  std::memcpy(ip + 12, &src, 4);
  std::memcpy(ip + 16, &dst, 4);
  std::uint8_t* udp = ip + 20;
  udp[0] = 0xc0;
  udp[2] = port >> 8;
  udp[3] = port & 0xff;
  std::uint8_t* vxlan = udp + 8;
  vxlan[0] = 0x08;
  vxlan[4] = static_cast<std::uint8_t>(vni >> 16);
  vxlan[5] = static_cast<std::uint8_t>(vni >> 8);
  vxlan[6] = static_cast<std::uint8_t>(vni);
  return f;
}

// Average ns per run and the verdict of the last.
std::pair<double, int> run(int prog, std::vector<std::uint8_t> data, unsigned repeat) {
  bpf_attr a{};
  a.test.prog_fd = static_cast<std::uint32_t>(prog);
  a.test.data_in = reinterpret_cast<std::uintptr_t>(data.data());
  a.test.data_size_in = static_cast<std::uint32_t>(data.size());
  a.test.repeat = repeat;
  if (::syscall(SYS_bpf, BPF_PROG_TEST_RUN, &a, sizeof(a)) != 0) {
    std::perror("BPF_PROG_TEST_RUN");
    std::exit(1);
  }
  return {static_cast<double>(a.test.duration), static_cast<int>(a.test.retval)};
}

}  // namespace

int main(int argc, char** argv) {
  unsigned repeat = 2'000'000;
  if (argc == 3 && std::string(argv[1]) == "--repeat") repeat = static_cast<unsigned>(std::stoul(argv[2]));
  if (::unshare(CLONE_NEWNET) != 0 ||
      std::system("ip link add u0 type veth peer name u1 && ip link set u0 up && ip link set u1 up && "
                  "ip addr add 192.0.2.1/24 dev u0") != 0) {
    std::fprintf(stderr, "needs root (a network namespace and a veth)\n");
    return 1;
  }
  UplinkKernelDrop drop("u0", vxfed::net::Ipv4Addr{kVtep}, 4789);
  if (drop.state() != UplinkKernelDrop::State::attached) {
    std::fprintf(stderr, "%s\n", drop.describe().c_str());
    return 1;
  }
  if (!drop.set_vnis({1001, 1002, 1003})) return 1;
  const int prog = drop.program_fd();
  const auto all = run(prog, frame(4789, 1001), repeat);
  const auto other_port = run(prog, frame(4790, 1001), repeat);
  if (!drop.set_scope(UplinkKernelDrop::Scope::our_vnis)) return 1;
  const auto ours = run(prog, frame(4789, 1002), repeat);
  const auto not_ours = run(prog, frame(4789, 7), repeat);
  std::printf("{\"repeat\": %u, \"ns_per_run\": {\"vxlan_scope_all\": %.1f, \"vxlan_our_vni\": %.1f, "
              "\"vxlan_other_vni\": %.1f, \"udp_other_port\": %.1f}, \"verdicts\": {\"vxlan_scope_all\": %d, "
              "\"vxlan_our_vni\": %d, \"vxlan_other_vni\": %d, \"udp_other_port\": %d}}\n",
              repeat, all.first, ours.first, not_ours.first, other_port.first, all.second, ours.second,
              not_ours.second, other_port.second);
  return 0;
}
