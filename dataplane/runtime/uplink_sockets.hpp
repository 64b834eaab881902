// The uplink as the runtime's own AF_PACKET sockets on a kernel interface (--uplink-iface;
// docs/dataplane.md: port model), instead of a DPDK port: one socket per worker bound to the
// interface, all in one PACKET_FANOUT_HASH group without PACKET_FANOUT_FLAG_DEFRAG, with vnet
// headers. So outer fragments arrive as the fragments they are (Debian's net_af_packet PMD
// hard-codes the defrag flag, and the kernel reassembled them before the pipeline could count
// them: docs/pod-ports.md), inner checksums left pending by the sender stay pending, and the
// pods' super-packets leave as segments with their checksums handed to the kernel. A real NIC
// is still given to EAL and named with --uplink.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "dataplane/core/counters.hpp"
#include "dataplane/core/wire/ethernet.hpp"

namespace vxfed::dataplane {

// The uplink's port index when it is served by these sockets: not a DPDK port id (those
// stay below RTE_MAX_ETHPORTS), below the pods' aggregate index.
constexpr std::uint16_t kUplinkSocketPort = kMaxEthdevPorts - 2;

// Whether this kernel takes UDP super-packets (GSO_UDP_L4) in a packet socket's vnet header:
// Linux 6.2 and later. `release` is uname's (e.g. "6.1.0-27-amd64"); one that cannot be read
// counts as too old.
bool kernel_takes_udp_gso(const std::string& release);

class UplinkSockets {
 public:
  // udp_gso: send a pod's super-packet as UDP super-packets (--uplink-gso), which needs the
  // qdisc path (packet_socket.hpp); turned off with a warning on a kernel too old for it.
  static Result<std::unique_ptr<UplinkSockets>> create(const std::string& iface, unsigned workers,
                                                       unsigned rcvbuf_bytes, bool udp_gso);
  ~UplinkSockets();
  UplinkSockets(const UplinkSockets&) = delete;
  UplinkSockets& operator=(const UplinkSockets&) = delete;

  int fd(unsigned worker) const { return fds_[worker]; }
  const std::vector<int>& fds() const { return fds_; }
  unsigned ifindex() const { return ifindex_; }
  const wire::MacAddress& mac() const { return mac_; }
  unsigned mtu() const { return mtu_; }
  bool udp_gso() const { return udp_gso_; }
  // Frames the kernel dropped on worker's socket (receive buffer full) since the last call.
  std::uint64_t take_drops(unsigned worker) const;

 private:
  UplinkSockets() = default;
  std::vector<int> fds_;
  unsigned ifindex_ = 0;
  unsigned mtu_ = 0;
  bool udp_gso_ = false;
  wire::MacAddress mac_{};
};

}  // namespace vxfed::dataplane
