// Stops the node kernel's IP and UDP input from processing the VXLAN frames the dataplane
// already took from an AF_PACKET uplink, and keeps every other socket of the node from
// reading them.
//
// An AF_PACKET socket gets a copy of each frame from the kernel's taps; the frame itself goes
// on to the node's IP stack, which (the VTEP being the node's own address) routes it locally,
// looks the UDP port up and hands it to whichever socket holds VTEP:4789. That is a second trip
// through IP and UDP input for every frame the dataplane forwards (seven per 64 KB a pod's TCP
// sends at MTU 9000), and worse, a local process that binds the port before the dataplane's
// claim (vxlan_port_claim.hpp), or while the dataplane restarts, reads every tenant's traffic.
//
// This attaches a small BPF program at the uplink's tc ingress (a TCX link): the kernel runs
// the packet taps first (`__netif_receive_skb_core` delivers to every ptype_all entry, ours
// included, before the ingress hook), so the program drops only what we have already received:
// IPv4 without options, not a fragment, UDP to the VTEP's address and port 4789, and then
//   - every such datagram while the scope is `all` (no kernel VXLAN device shares the port), or
//   - only those whose VNI is one of the dataplane's networks while it is `our_vnis` (another
//     CNI's kernel VXLAN device holds the port: its own VNIs are not ours to drop).
// The scope and the VNIs live in one BPF hash map (a VNI's key; kDropAllKey for the scope),
// which the control thread keeps current; the program reads it per frame.
//
// Fail closed across crashes: the link and the map are pinned in bpffs (`pin_dir`), so they stay
// in force when the dataplane dies, and the next dataplane (or a second one, mid-upgrade) takes
// the same link over (BPF_LINK_UPDATE to its own program on the same map) instead of attaching a
// second one. Removing the pins (docs/security.md) detaches it. Without bpffs the link belongs to
// the process, as before, and a crash leaves the node's stack the frames until the next start.
//
// Kernels without TCX (before 6.6) refuse the link: then the state says so and the claim alone
// keeps the kernel quiet and the port ours, at the old cost.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"
#include "common/result.hpp"

namespace vxfed::dataplane {

class UplinkKernelDrop {
 public:
  enum class State {
    attached,     // the program drops our VXLAN frames at the uplink's tc ingress
    unsupported,  // the kernel has no TCX links (or no BPF): nothing attached, see describe()
    failed,       // the program or the link could not be made: see describe()
  };
  enum class Scope {
    all,       // every VXLAN datagram to the VTEP's port
    our_vnis,  // only our networks' VNIs: a kernel VXLAN device of the node shares the port
  };
  // The map key that stands for "drop every VNI": above the 24 bits a VNI has.
  static constexpr std::uint32_t kDropAllKey = 0xffffffffu;

  // iface: the uplink interface the dataplane's AF_PACKET sockets serve. pin_dir: a bpffs
  // directory for this uplink's link and map ("" = not pinned); created when missing.
  UplinkKernelDrop(const std::string& iface, net::Ipv4Addr vtep, std::uint16_t port, const std::string& pin_dir = "");
  ~UplinkKernelDrop();
  UplinkKernelDrop(const UplinkKernelDrop&) = delete;
  UplinkKernelDrop& operator=(const UplinkKernelDrop&) = delete;

  State state() const { return state_; }
  static const char* name(State s);
  static const char* name(Scope s);
  Scope scope() const { return scope_; }
  bool pinned() const { return pinned_; }
  // True when this object took over a link a previous dataplane had pinned.
  bool took_over() const { return took_over_; }
  // One line for the log.
  std::string describe() const;
  // The loaded program (-1 when not attached), for perf/uplink_drop's BPF_PROG_TEST_RUN.
  int program_fd() const { return prog_fd_; }

  // Both write the map the program reads; no-ops (OK) when nothing is attached.
  Status set_scope(Scope scope);
  Status set_vnis(const std::set<std::uint32_t>& vnis);

 private:
  Status write_key(std::uint32_t key, bool present);
  void attach(unsigned ifindex);

  std::string iface_;
  net::Ipv4Addr vtep_;
  std::uint16_t port_;
  std::string pin_dir_;
  State state_ = State::failed;
  Scope scope_ = Scope::all;
  bool pinned_ = false;
  bool took_over_ = false;
  std::string what_;       // the step that failed and why
  std::string pin_note_;   // why the link is not pinned, when pin_dir_ was asked for
  std::set<std::uint32_t> vnis_;  // what the map holds
  int map_fd_ = -1;
  int prog_fd_ = -1;
  int link_fd_ = -1;
};

// The bpffs directory of an uplink's pins: <root>/uplink-drop/<netns inode>-<iface>, so the
// dataplanes of several network namespaces (test beds) sharing one bpffs never meet.
std::string uplink_drop_pin_dir(const std::string& root, const std::string& iface);

}  // namespace vxfed::dataplane
