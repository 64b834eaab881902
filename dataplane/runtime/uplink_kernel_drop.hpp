// Stops the node kernel's IP and UDP input from processing the VXLAN frames the dataplane
// already took from an AF_PACKET uplink.
//
// An AF_PACKET socket gets a copy of each frame from the kernel's taps; the frame itself goes
// on to the node's IP stack, which (the VTEP being the node's own address) routes it locally,
// looks the UDP port up and hands it to the VXLAN port claim (vxlan_port_claim.hpp), whose
// filter drops it. That is a second trip through IP and UDP input for every frame the
// dataplane forwards: at 9000-byte MTU, seven per 64 KB a pod's TCP sends.
//
// This attaches a small BPF program at the uplink's tc ingress (a TCX link): the kernel runs
// the packet taps first (`__netif_receive_skb_core` delivers to every ptype_all entry, ours
// included, before the ingress hook), so the program drops only what we have already received:
// IPv4 without options, not a fragment, UDP to the VTEP's address and port 4789. Everything
// else (ARP, BGP, fragments, whatever the node's own sockets want) passes on untouched. The link
// belongs to this process: it is gone when the dataplane exits or crashes, and the claim
// socket's quiet drop is what remains.
//
// Kernels without TCX (before 6.6) refuse the link: then the state says so and the claim alone
// keeps the kernel quiet, at the old cost.
#pragma once

#include <cstdint>
#include <string>

#include "common/net/ipv4.hpp"

namespace vxfed::dataplane {

class UplinkKernelDrop {
 public:
  enum class State {
    attached,     // the program drops our VXLAN frames at the uplink's tc ingress
    unsupported,  // the kernel has no TCX links (or no BPF): nothing attached, see describe()
    failed,       // the program or the link could not be made: see describe()
  };

  // iface: the uplink interface the dataplane's AF_PACKET sockets serve.
  UplinkKernelDrop(const std::string& iface, net::Ipv4Addr vtep, std::uint16_t port);
  ~UplinkKernelDrop();
  UplinkKernelDrop(const UplinkKernelDrop&) = delete;
  UplinkKernelDrop& operator=(const UplinkKernelDrop&) = delete;

  State state() const { return state_; }
  static const char* name(State s);
  // One line for the log.
  std::string describe() const;

 private:
  std::string iface_;
  net::Ipv4Addr vtep_;
  std::uint16_t port_;
  State state_ = State::failed;
  std::string what_;  // the step that failed and why
  int prog_fd_ = -1;
  int link_fd_ = -1;
};

}  // namespace vxfed::dataplane
