// Command-line options of vxfed-dataplane (the part after the EAL arguments and `--`).
// Parsing is separate from main() so that --help can be produced without initialising EAL.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/net/ipv4.hpp"
#include "common/net/mac.hpp"
#include "common/result.hpp"
#include "dataplane/core/underlay_tag.hpp"
#include "dataplane/runtime/underlay.hpp"

namespace vxfed::dataplane {

// $VXFED_BPF_PIN_ROOT, else /sys/fs/bpf/vxfed: where vxfed's eBPF pins live (vxfedd's pod
// programs too), so one setting moves them all.
std::string default_bpf_pin_root();

struct Options {
  std::string uplink;                 // DPDK port name (e.g. 0000:03:00.0, net_pcap0) or index ...
  std::string uplink_iface;           // ... or a kernel interface served by our own AF_PACKET sockets
  bool uplink_kernel_drop = true;     // a kernel uplink: drop our VXLAN at its tc ingress, after our sockets' copy
  std::string uplink_drop_pin_root = default_bpf_pin_root();  // bpffs root of the drop's pins ("": not pinned)
  // The kernel interface under a DPDK af_packet uplink (its vdev's iface=), filled in by main
  // from the EAL arguments: the tc drop serves it as it serves --uplink-iface.
  std::string uplink_pmd_iface;
  bool uplink_gso = true;             // --uplink-iface: a pod's super-packet leaves as UDP super-packets (GSO_UDP_L4)
  std::string vtep_ip;                // our VTEP IPv4 on the uplink
  unsigned queues = 1;                // RX queues on the uplink = worker lcores
  std::uint32_t conntrack_flows = 65536;  // per worker, for global services and network policy (0: none)
  unsigned mtu = 9000;                // underlay MTU; pod MTU = mtu - 50
  std::string api_socket;             // unix socket of the table API (empty: none)
  std::string tables_file;            // Snapshot/Tables JSON applied at start-up (empty: none)
  std::string underlay_gateway;       // next hop for VTEPs off the underlay subnet
  std::string underlay_subnet;        // CIDR of on-link VTEPs (ARP for the VTEP itself)
  std::vector<std::string> underlay_routes;           // "VTEP=NEXTHOP", "PREFIX=NEXTHOP|direct"
  int underlay_vlan = -1;                             // 802.1Q VID of the uplink's frames; -1: untagged
  std::vector<std::string> dscp_pcp;                  // "DSCP=PCP" overrides of the class selector
  std::vector<std::string> static_neighbors;          // "IP=MAC"
  std::map<std::string, std::string> endpoint_ports;  // iface -> existing DPDK port name
  std::vector<std::string> endpoint_port_args;        // "IFACE=PORTNAME" as given
  unsigned endpoint_frames = 512;     // af_packet ring frames per queue of an endpoint port
  unsigned max_pod_ports = 0;         // pod ports this dataplane serves (0: all kMaxPodPorts; tests lower it)
  bool qdisc_bypass = true;           // af_packet PACKET_QDISC_BYPASS on endpoint ports
  unsigned mbufs = 0;                 // mbuf pool size (0: computed)
  unsigned idle_sleep_us = 20;        // longest short sleep of an idle worker
  unsigned deep_idle_sleep_us = 1000; // sleep once idle for deep_idle_after_ms
  unsigned deep_idle_after_ms = 50;
  bool busy_poll = false;             // never sleep (benchmarks)
  unsigned worker_rt_priority = 0;    // SCHED_FIFO priority of the workers (worker_scheduling.hpp); 0: ordinary
  unsigned idle_spin_us = 0;          // spin this long after the last packet before sleeping
  bool idle_spin_yield = true;        // sched_yield() between spin polls (else rte_pause)
  std::string idle_wait = "auto";     // auto: block on af_packet sockets when possible; sleep: timed naps
  std::string log_level = "info";
  bool print_counters_on_exit = true;
  bool check = false;                 // --check: validate everything, touch nothing, exit

  // What parse_options read from the texts above (checked: a start never fails on these).
  struct Parsed {
    net::Ipv4Addr vtep;
    Underlay underlay;
    std::vector<std::pair<net::Ipv4Addr, net::Mac>> static_neighbors;
    UnderlayTag underlay_tag;  // from --underlay-vlan and --dscp-pcp
  } parsed;
};

// Parses our options (argv after `--`) and checks their values (addresses, the underlay's
// next hops, static neighbours, endpoint ports), filling Options::parsed. `argv0` is the
// program name for the usage text. A parse error returns a message naming the option; --help
// returns ParseOutcome::help with the text.
struct ParseOutcome {
  Options options;
  bool help = false;
  std::string help_text;
};
Result<ParseOutcome> parse_options(const std::string& argv0, const std::vector<std::string>& args);

// The uplink's kernel interface, if it has one: --uplink-iface, or an af_packet PMD's iface.
inline const std::string& kernel_uplink_iface(const Options& o) {
  return o.uplink_iface.empty() ? o.uplink_pmd_iface : o.uplink_iface;
}

// The usage text (EAL part and our options), for --help.
std::string usage_text(const std::string& argv0);

}  // namespace vxfed::dataplane
