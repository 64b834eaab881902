#include "dataplane/runtime/ports.hpp"

#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include <rte_bus_vdev.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <spdlog/spdlog.h>

#include "dataplane/runtime/socket_wakeup.hpp"

namespace vxfed::dataplane {

namespace {

constexpr std::uint16_t kRxDescriptors = 1024;
constexpr std::uint16_t kTxDescriptors = 1024;
// TPACKET_V2 puts the frame at tp_mac = 34 bytes into each ring frame (32-byte header
// aligned, plus 16 bytes reserved for a link header, minus the 14-byte Ethernet header); on
// TX the data sits at TPACKET2_HDRLEN - sizeof(sockaddr_ll) = 32. Keep 64 bytes of margin.
constexpr unsigned kAfPacketFrameOverhead = 64;

bool is_af_packet(const rte_eth_dev_info& info) {
  return info.driver_name != nullptr && std::strcmp(info.driver_name, "net_af_packet") == 0;
}

// The af_packet sockets of a port (one per queue pair), so that idle workers can block on
// them (socket_wakeup.hpp). Empty, with a note, when they cannot be told apart.
std::vector<int> wake_fds_of(std::uint16_t port, unsigned queues, const std::string& name) {
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(port, &info) != 0 || !is_af_packet(info) || info.if_index == 0) return {};
  auto fds = packet_socket_fds(info.if_index);
  if (fds.size() != queues) {
    spdlog::warn("{}: found {} af_packet sockets for {} queue pairs: idle workers nap instead of "
                 "waiting on them", name, fds.size(), queues);
    return {};
  }
  return fds;
}

unsigned round_up(unsigned v, unsigned to) { return (v + to - 1) / to * to; }

// MTU of a kernel interface, or 0 when it cannot be read.
unsigned kernel_mtu(const std::string& iface) {
  const int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return 0;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, iface.c_str(), IFNAMSIZ - 1);
  const int rc = ::ioctl(s, SIOCGIFMTU, &ifr);
  ::close(s);
  return rc == 0 ? static_cast<unsigned>(ifr.ifr_mtu) : 0;
}

Result<std::uint16_t> find_port(const std::string& name) {
  std::uint16_t id = 0;
  if (rte_eth_dev_get_port_by_name(name.c_str(), &id) == 0) return id;
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos) {
    const unsigned long n = std::stoul(name);
    if (n < RTE_MAX_ETHPORTS && rte_eth_dev_is_valid_port(static_cast<std::uint16_t>(n)))
      return static_cast<std::uint16_t>(n);
  }
  std::string known;
  std::uint16_t p;
  RTE_ETH_FOREACH_DEV(p) {
    char pname[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(p, pname) == 0) known += (known.empty() ? "" : ", ") + std::string(pname);
  }
  return make_error("no DPDK port named '" + name + "' (ports: " + (known.empty() ? "none" : known) +
                    "); give the device with an EAL option such as --vdev or -a");
}

}  // namespace

Result<std::unique_ptr<Ports>> Ports::create(const Options& options, unsigned workers) {
  std::unique_ptr<Ports> ports(new Ports());
  ports->options_ = options;
  ports->workers_ = workers;

  // af_packet ring geometry for jumbo frames: a frame must hold MTU + Ethernet (+ VLAN) +
  // the TPACKET header, be a multiple of 16, and blocks must be whole pages holding whole
  // frames.
  const unsigned page = static_cast<unsigned>(::getpagesize());
  ports->framesz_ = round_up(options.mtu + 18 + kAfPacketFrameOverhead, 1024);
  ports->blocksz_ = std::lcm(ports->framesz_, page);
  ports->max_frame_ = options.mtu + 18;

  // One pool for every port: each mbuf holds a whole jumbo frame (af_packet copies each
  // frame into one mbuf and its RX setup insists the ring frame fits the data room).
  // The pod sockets receive super-packets into chains of kPodFrameSegments such mbufs.
  const unsigned data_room = RTE_PKTMBUF_HEADROOM + std::max({ports->framesz_, ports->max_frame_, kPodSegmentBytes});
  unsigned n = options.mbufs;
  if (n == 0) n = 8192 + 2u * (kRxDescriptors + kTxDescriptors) * workers;
  ports->pool_ = rte_pktmbuf_pool_create("vxfed_mbufs", n, 256, 0,
                                         static_cast<std::uint16_t>(data_room), rte_socket_id());
  if (ports->pool_ == nullptr)
    return make_error("cannot create a pool of " + std::to_string(n) + " mbufs of " +
                      std::to_string(data_room) + " bytes: " + rte_strerror(rte_errno) +
                      " (give EAL more memory with -m, or lower --mbufs)");
  spdlog::info("mbuf pool: {} mbufs of {} bytes data room", n, data_room);

  if (!options.uplink_iface.empty()) {
    auto up = UplinkSockets::create(options.uplink_iface, workers, options.endpoint_frames * ports->max_frame_ * 2,
                                    options.uplink_gso);
    if (!up) return make_error(up.error());
    ports->uplink_sockets_ = std::move(*up);
    ports->uplink_ = kUplinkSocketPort;
    ports->spread_ = UplinkSpread::Hardware;  // the kernel's fanout hash
    ports->uplink_wake_fds_ = ports->uplink_sockets_->fds();
    const unsigned mtu = ports->uplink_sockets_->mtu();
    if (mtu != 0 && mtu < options.mtu)
      spdlog::warn("uplink interface {} has MTU {} below --mtu {}: jumbo frames will be dropped by the kernel",
                   options.uplink_iface, mtu, options.mtu);
    spdlog::info("uplink {} (ifindex {}): {} AF_PACKET socket(s) with vnet headers{}", options.uplink_iface,
                 ports->uplink_sockets_->ifindex(), workers, workers > 1 ? ", PACKET_FANOUT_HASH without defrag" : "");
  } else if (auto st = ports->setup_uplink(); !st) {
    return make_error(st.error());
  }
  // The pods' sockets: each holds --endpoint-frames frames of the underlay MTU in its
  // receive buffer (allocated by the kernel as frames arrive, not up front).
  auto pods = PodSockets::create(workers, options.endpoint_frames * ports->max_frame_ * 2, options.qdisc_bypass);
  if (!pods) return make_error(pods.error());
  ports->pod_sockets_ = std::move(*pods);
  return ports;
}

Ports::~Ports() { close_all(); }

wire::MacAddress Ports::uplink_mac() const {
  if (uplink_sockets_) return uplink_sockets_->mac();
  rte_ether_addr mac{};
  rte_eth_macaddr_get(uplink_, &mac);
  wire::MacAddress out{};
  std::copy(std::begin(mac.addr_bytes), std::end(mac.addr_bytes), out.begin());
  return out;
}

Status Ports::setup_uplink() {
  auto port = find_port(options_.uplink);
  if (!port) return make_error("--uplink: " + port.error());
  uplink_ = *port;
  rte_eth_dev_info info{};
  if (int rc = rte_eth_dev_info_get(uplink_, &info); rc != 0)
    return make_error("uplink: cannot read device info: " + std::string(rte_strerror(-rc)));

  unsigned rxq = workers_;
  if (is_af_packet(info)) {
    // Every af_packet queue is a socket in one PACKET_FANOUT_HASH group: the kernel spreads
    // flows over all of them, so each must be polled.
    if (info.max_rx_queues != workers_)
      return make_error("uplink " + options_.uplink + " is an af_packet port with qpairs=" +
                        std::to_string(info.max_rx_queues) + " but --queues is " +
                        std::to_string(workers_) + ": give qpairs=" + std::to_string(workers_) +
                        " in its --vdev");
    spread_ = UplinkSpread::Hardware;
  } else if (info.max_rx_queues >= workers_) {
    spread_ = UplinkSpread::Hardware;
  } else {
    spread_ = UplinkSpread::Software;
    rxq = 1;
  }
  if (info.max_tx_queues < workers_)
    return make_error("uplink " + options_.uplink + " has only " + std::to_string(info.max_tx_queues) +
                      " TX queues; each of the " + std::to_string(workers_) + " workers needs one");
  // Preferred: a TX queue of its own for the control thread, and RSS where the device has it.
  // Some PMDs refuse either (tap wants as many TX as RX queues; RSS may need flow rules), so
  // fall back step by step; without a control queue, worker 0 sends the control frames.
  const bool can_rss = spread_ == UplinkSpread::Hardware && rxq > 1 && info.flow_type_rss_offloads != 0;
  struct Attempt {
    bool control_queue;
    bool rss;
  };
  std::vector<Attempt> attempts;
  if (info.max_tx_queues > workers_) attempts.push_back({true, can_rss});
  attempts.push_back({false, can_rss});
  if (can_rss) attempts.push_back({false, false});
  Status started = make_error("not attempted");
  bool rss = false;
  for (const Attempt& a : attempts) {
    const unsigned txq = workers_ + (a.control_queue ? 1 : 0);
    started = start_port(uplink_, rxq, txq, a.rss);
    if (started) {
      control_txq_ = a.control_queue ? static_cast<int>(workers_) : -1;
      rss = a.rss;
      break;
    }
    spdlog::debug("uplink: {} RX / {} TX queues{}: {}", rxq, txq, a.rss ? " with RSS" : "", started.error());
  }
  if (!started) return make_error("uplink: " + started.error());
  uplink_wake_fds_ = wake_fds_of(uplink_, rxq, "uplink");
  const unsigned txq = workers_ + (control_txq_ >= 0 ? 1 : 0);
  uplink_started_ = true;
  spdlog::info("uplink {} ({}): {} RX queue(s), {} TX queue(s), spread: {}", options_.uplink,
               info.driver_name ? info.driver_name : "?", rxq, txq,
               spread_ == UplinkSpread::Software ? "software flow hash (worker 0 distributes)"
               : is_af_packet(info)              ? "af_packet PACKET_FANOUT_HASH"
               : rss                             ? "hardware RSS"
               : rxq > 1                         ? "the device's own queue choice (tap: kernel flow hash)"
                                                 : "single queue");
  if (is_af_packet(info) && info.if_index != 0) {
    char ifname[IF_NAMESIZE] = {};
    if (::if_indextoname(info.if_index, ifname) != nullptr) {
      const unsigned mtu = kernel_mtu(ifname);
      if (mtu != 0 && mtu < options_.mtu)
        spdlog::warn("uplink interface {} has MTU {} below --mtu {}: jumbo frames will be dropped "
                     "by the kernel", ifname, mtu, options_.mtu);
    }
  }
  return {};
}

Status Ports::start_port(std::uint16_t port, unsigned rx_queues, unsigned tx_queues, bool rss) {
  rte_eth_dev_info info{};
  if (int rc = rte_eth_dev_info_get(port, &info); rc != 0)
    return make_error(std::string("device info: ") + rte_strerror(-rc));
  rte_eth_conf conf{};
  if (rss) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf =
        (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_TCP) & info.flow_type_rss_offloads;
  }
  // MTU: devices that announce jumbo support get the underlay MTU. af_packet announces a
  // 1518-byte maximum yet carries whatever its ring frames and the kernel interface's MTU
  // allow, so its ethdev MTU stays at the default and the ring geometry does the job.
  const std::uint32_t overhead = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
  if (!is_af_packet(info) && options_.mtu + overhead <= info.max_rx_pktlen)
    conf.rxmode.mtu = options_.mtu;
  if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
  if (port == uplink_) {
    // 802.1Q on the underlay: received tags are taken off (the pipeline parses untagged
    // frames; af_packet would otherwise put the kernel's stripped tag back into the data), and
    // with --underlay-vlan every frame sent gets one (underlay_tag.hpp).
    if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_VLAN_STRIP) conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_VLAN_STRIP;
    if (options_.parsed.underlay_tag.tx_flags != 0) {
      if (!(info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_VLAN_INSERT))
        return make_error(std::string("--underlay-vlan: the uplink's driver (") +
                          (info.driver_name ? info.driver_name : "?") + ") cannot insert VLAN tags");
      conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_VLAN_INSERT;
    }
  }
  if (int rc = rte_eth_dev_configure(port, static_cast<std::uint16_t>(rx_queues),
                                     static_cast<std::uint16_t>(tx_queues), &conf);
      rc != 0)
    return make_error(std::string("configure: ") + rte_strerror(-rc));
  std::uint16_t nrx = kRxDescriptors, ntx = kTxDescriptors;
  rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx);
  const int socket = rte_eth_dev_socket_id(port) < 0 ? static_cast<int>(rte_socket_id())
                                                     : rte_eth_dev_socket_id(port);
  for (unsigned q = 0; q < rx_queues; ++q) {
    if (int rc = rte_eth_rx_queue_setup(port, static_cast<std::uint16_t>(q), nrx,
                                        static_cast<unsigned>(socket), nullptr, pool_);
        rc != 0)
      return make_error("RX queue " + std::to_string(q) + ": " + rte_strerror(-rc));
  }
  for (unsigned q = 0; q < tx_queues; ++q) {
    if (int rc = rte_eth_tx_queue_setup(port, static_cast<std::uint16_t>(q), ntx,
                                        static_cast<unsigned>(socket), nullptr);
        rc != 0)
      return make_error("TX queue " + std::to_string(q) + ": " + rte_strerror(-rc));
  }
  if (int rc = rte_eth_dev_start(port); rc != 0)
    return make_error(std::string("start: ") + rte_strerror(-rc));
  if (!is_af_packet(info) && conf.rxmode.mtu == 0 && options_.mtu > RTE_ETHER_MTU) {
    std::uint16_t mtu = 0;
    rte_eth_dev_get_mtu(port, &mtu);
    spdlog::warn("port {}: the driver ({}) does not announce jumbo frames (max frame {}); ethdev "
                 "MTU stays {}", port, info.driver_name ? info.driver_name : "?",
                 info.max_rx_pktlen, mtu);
  }
  return {};
}

Result<std::uint16_t> Ports::attach(const std::string& iface) {
  if (auto it = endpoints_.find(iface); it != endpoints_.end()) return it->second.port_id;
  PortInfo info;
  info.name = iface;
  if (auto mapped = options_.endpoint_ports.find(iface); mapped != options_.endpoint_ports.end()) {
    auto port = find_port(mapped->second);
    if (!port) return make_error("--endpoint-port " + iface + ": " + port.error());
    info.port_id = *port;
    info.device = mapped->second;
    rte_eth_dev_info dinfo{};
    rte_eth_dev_info_get(info.port_id, &dinfo);
    if (dinfo.max_rx_queues < workers_ || dinfo.max_tx_queues < workers_)
      return make_error("--endpoint-port " + iface + ": port " + mapped->second + " has " +
                        std::to_string(dinfo.max_rx_queues) + " RX / " +
                        std::to_string(dinfo.max_tx_queues) + " TX queues; it needs " +
                        std::to_string(workers_) + " of each (one per worker)");
  } else {
    if (iface.empty() || iface.size() >= IF_NAMESIZE || iface.find_first_of(",= ") != std::string::npos)
      return make_error("interface name '" + iface + "' is not a valid Linux interface name");
    const unsigned ifindex = ::if_nametoindex(iface.c_str());
    if (ifindex == 0)
      return make_error("interface " + iface + " does not exist in the dataplane's network namespace");
    const unsigned mtu = kernel_mtu(iface);
    if (mtu != 0 && mtu + 18 > max_frame_)
      spdlog::warn("endpoint interface {} has MTU {} above the underlay MTU {}: frames over {} "
                   "bytes will be dropped (pod_frame_too_big)", iface, mtu, options_.mtu, max_frame_);
    const unsigned limit = options_.max_pod_ports ? std::min<unsigned>(options_.max_pod_ports, kMaxPodPorts) : kMaxPodPorts;
    unsigned slot = 0;
    while (slot < limit && pod_slot_used_[slot]) ++slot;
    if (slot == limit)
      return make_error("cannot serve interface " + iface + ": all " + std::to_string(limit) +
                        " pod ports of this dataplane are in use");
    info.port_id = static_cast<std::uint16_t>(kFirstPodPort + slot);
    info.device = "pod socket";
    info.pod_socket = true;
    info.ifindex = ifindex;
    pod_slot_used_[slot] = true;
    endpoints_[iface] = info;
    if (auto st = update_pod_filter(); !st) {
      endpoints_.erase(iface);
      pod_slot_used_[slot] = false;
      static_cast<void>(update_pod_filter());  // back to the filter without it
      return make_error("cannot serve interface " + iface + ": " + st.error());
    }
    spdlog::info("pod port {} on {} (ifindex {})", info.port_id, iface, ifindex);
    return info.port_id;
  }
  if (auto st = start_port(info.port_id, workers_, workers_, false); !st)
    return make_error("endpoint port on " + iface + ": " + st.error());
  endpoints_[iface] = info;
  return info.port_id;
}

Status Ports::update_pod_filter() {
  std::vector<unsigned> ifs;
  for (const auto& [name, info] : endpoints_)
    if (info.pod_socket) ifs.push_back(info.ifindex);
  return pod_sockets_->set_interfaces(ifs);
}

void Ports::detach(std::string iface) {
  auto it = endpoints_.find(iface);
  if (it == endpoints_.end()) return;
  const PortInfo info = it->second;
  endpoints_.erase(it);
  for (unsigned q = 0; q < workers_; ++q) ring_drops_.erase({info.port_id, q});  // the id may be reused
  if (info.pod_socket) {
    pod_slot_used_[info.port_id - kFirstPodPort] = false;
    if (auto st = update_pod_filter(); !st) spdlog::warn("detaching {}: {}", iface, st.error());
    spdlog::info("pod port {} on {} released", info.port_id, iface);
    return;
  }
  rte_eth_dev_stop(info.port_id);
  if (info.hot_plugged) {
    rte_eth_dev_close(info.port_id);
    if (int rc = rte_eal_hotplug_remove("vdev", info.device.c_str()); rc != 0)
      spdlog::warn("detaching {} ({}): {}", iface, info.device, rte_strerror(-rc));
  }
  spdlog::info("endpoint port {} on {} released", info.port_id, iface);
}

std::uint64_t Ports::ring_drops(std::uint16_t port_id, unsigned queue) {
  const std::vector<int>* fds = nullptr;
  if (port_id == kPodsPort && pod_sockets_) {
    auto& total = ring_drops_[{port_id, queue}];
    total += pod_sockets_->take_drops(queue);
    return total;
  }
  if (port_id == uplink_ && uplink_sockets_) {
    auto& total = ring_drops_[{port_id, queue}];
    total += uplink_sockets_->take_drops(queue);
    return total;
  }
  if (port_id == uplink_) {
    fds = &uplink_wake_fds_;
  } else {
    for (const auto& [iface, info] : endpoints_)
      if (info.port_id == port_id) fds = &info.wake_fds;
  }
  auto& total = ring_drops_[{port_id, queue}];
  if (fds != nullptr && queue < fds->size()) total += take_ring_drops((*fds)[queue]);
  return total;
}

std::uint64_t Ports::discard_queued_uplink_frames() {
  std::uint64_t discarded = 0;
  if (uplink_sockets_) {
    // Room for the vnet header in front of each frame (a shorter read is refused with
    // EINVAL); MSG_TRUNC: the rest of the frame is dropped with it.
    char head[64];
    for (int fd : uplink_sockets_->fds())
      while (::recv(fd, head, sizeof head, MSG_DONTWAIT | MSG_TRUNC) >= 0) ++discarded;
    return discarded;
  }
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(uplink_, &info) != 0) return 0;
  rte_mbuf* burst[32];
  for (std::uint16_t q = 0; q < info.nb_rx_queues; ++q)
    while (const std::uint16_t n = rte_eth_rx_burst(uplink_, q, burst, 32)) {
      rte_pktmbuf_free_bulk(burst, n);
      discarded += n;
    }
  return discarded;
}

std::string Ports::name_of(std::uint16_t port_id) const {
  if (port_id == uplink_) return "uplink";
  if (port_id == kPodsPort) return "pods";
  for (const auto& [iface, info] : endpoints_)
    if (info.port_id == port_id) return iface;
  return "port" + std::to_string(port_id);
}

void Ports::close_all() {
  while (!endpoints_.empty()) detach(endpoints_.begin()->first);
  pod_sockets_.reset();
  uplink_sockets_.reset();
  if (uplink_started_) {
    rte_eth_dev_stop(uplink_);
    rte_eth_dev_close(uplink_);
    uplink_started_ = false;
  }
}

}  // namespace vxfed::dataplane
