// The ports of vxfed-dataplane: the uplink (given on the EAL command line) and one pod port
// per local endpoint interface: the host end of the pod's veth, served by the workers' shared
// pod sockets (pod_sockets.hpp, docs/pod-ports.md), or an existing DPDK port mapped with
// --endpoint-port. Control-thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <rte_mempool.h>

#include "dataplane/runtime/options.hpp"
#include "dataplane/runtime/pod_sockets.hpp"
#include "dataplane/runtime/uplink_sockets.hpp"
#include "common/result.hpp"

namespace vxfed::dataplane {

// How the uplink's RX queues map to workers.
enum class UplinkSpread {
  Hardware,  // one RX queue per worker, the device spreads flows (RSS or af_packet fanout)
  Software,  // one RX queue read by worker 0, which hands packets to their worker by flow hash
};

struct PortInfo {
  std::uint16_t port_id = 0;  // port index: a DPDK port id, or kFirstPodPort + slot
  std::string name;         // "uplink" or the endpoint's iface
  std::string device;       // DPDK device name ("pod socket" for pod ports)
  bool hot_plugged = false; // we created it (af_packet) and detach it
  bool pod_socket = false;  // served by the workers' pod sockets (no DPDK port)
  unsigned ifindex = 0;     // pod_socket: the interface
  std::vector<int> wake_fds; // its af_packet sockets (socket_wakeup.hpp); empty: cannot wake a worker
};

class Ports {
 public:
  static Result<std::unique_ptr<Ports>> create(const Options& options, unsigned workers);
  ~Ports();
  Ports(const Ports&) = delete;
  Ports& operator=(const Ports&) = delete;

  // The uplink's port index: a DPDK port id, or kUplinkSocketPort with --uplink-iface.
  std::uint16_t uplink() const { return uplink_; }
  // The uplink's own sockets (--uplink-iface), or null when it is a DPDK port.
  const UplinkSockets* uplink_sockets() const { return uplink_sockets_.get(); }
  wire::MacAddress uplink_mac() const;
  UplinkSpread uplink_spread() const { return spread_; }
  // A TX queue of the uplink reserved for the control thread (ARP requests), or -1 when the
  // uplink has no spare TX queue: then the control thread hands frames to worker 0.
  int control_tx_queue() const { return control_txq_; }
  rte_mempool* pool() const { return pool_; }
  unsigned workers() const { return workers_; }
  std::uint32_t max_frame() const { return max_frame_; }
  // The uplink's sockets that can wake a worker: the af_packet PMD's (one per queue pair) or
  // our own (one per worker); empty when it is another kind of port.
  const std::vector<int>& uplink_wake_fds() const { return uplink_wake_fds_; }

  // The workers' pod sockets (one per worker).
  const PodSockets& pod_sockets() const { return *pod_sockets_; }
  // Ensures a port for endpoint interface `iface` and returns its port index.
  Result<std::uint16_t> attach(const std::string& iface);
  // Stops, closes and (if hot-plugged) removes the port of `iface`. Callers first make sure
  // no worker polls it any more (RCU grace period).
  // By value: callers may name the port by its key in endpoints_, which detach erases.
  void detach(std::string iface);
  // Interface -> port id of every attached endpoint port.
  const std::map<std::string, PortInfo>& endpoint_ports() const { return endpoints_; }
  // Frames the kernel dropped on a full af_packet RX ring of this port's queue, since start
  // (0 for other ports, or when the sockets were not identified). Control thread.
  std::uint64_t ring_drops(std::uint16_t port_id, unsigned queue);
  // Reads and frees every frame queued on the uplink's receive queues (a dataplane taking
  // over from another: copies of frames the other one forwarded). Before the workers start.
  std::uint64_t discard_queued_uplink_frames();
  // Name for counters: "uplink" or the iface.
  std::string name_of(std::uint16_t port_id) const;

  void close_all();

 private:
  Ports() = default;
  Status setup_uplink();
  Status start_port(std::uint16_t port, unsigned rx_queues, unsigned tx_queues, bool rss);

  Options options_;
  unsigned workers_ = 1;
  std::uint16_t uplink_ = 0;
  UplinkSpread spread_ = UplinkSpread::Hardware;
  int control_txq_ = -1;
  rte_mempool* pool_ = nullptr;
  std::uint32_t max_frame_ = 0;
  unsigned framesz_ = 0, blocksz_ = 0;
  unsigned next_vdev_ = 0;
  bool uplink_started_ = false;
  std::vector<int> uplink_wake_fds_;
  std::map<std::pair<std::uint16_t, unsigned>, std::uint64_t> ring_drops_;  // accumulated
  std::map<std::string, PortInfo> endpoints_;
  std::unique_ptr<PodSockets> pod_sockets_;
  std::unique_ptr<UplinkSockets> uplink_sockets_;
  std::vector<bool> pod_slot_used_ = std::vector<bool>(kMaxPodPorts, false);
  Status update_pod_filter();
};

}  // namespace vxfed::dataplane
