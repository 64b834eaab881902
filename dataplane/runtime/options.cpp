#include "dataplane/runtime/options.hpp"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

namespace vxfed::dataplane {

std::string default_bpf_pin_root() {
  const char* root = std::getenv("VXFED_BPF_PIN_ROOT");
  return root != nullptr && *root != '\0' ? root : "/sys/fs/bpf/vxfed";
}

namespace {

constexpr const char* kDescription =
    "vxfed-dataplane: the DPDK VXLAN forwarder of vxfed.\n"
    "\n"
    "usage: vxfed-dataplane [EAL options] -- (--uplink PORT | --uplink-iface IFACE) --vtep-ip IP [options]\n"
    "\n"
    "EAL options are DPDK's own (see `dpdk-testpmd --help` or the DPDK docs), e.g.\n"
    "  -l 0,1                   lcores: the first is the control thread (API, ARP),\n"
    "                           the next --queues lcores are the workers\n"
    "  --no-huge -m 1024        run without hugepages (or reserve them and drop these)\n"
    "  --no-pci                 no PCI scan (vdev-only test setups)\n"
    "  --file-prefix NAME       unique per instance when several run on one machine\n"
    "  --in-memory              no shared files (hugepage mode only)\n"
    "  --vdev net_af_packet0,iface=eth1,qpairs=N,framesz=9216,blocksz=36864,framecnt=512\n"
    "                           an af_packet uplink; qpairs must equal --queues\n"
    "  --vdev net_pcap0,... / net_tap0,... / net_null0 / net_af_xdp0,...   other ports\n"
    "\n"
    "Endpoint ports are not given here: for every Endpoint.iface in the tables the dataplane\n"
    "hot-plugs an af_packet port on that interface (see --endpoint-port to use a DPDK port\n"
    "instead), and detaches it when the last endpoint on it disappears.\n"
    "\n"
    "Our options";

void add_options(CLI::App& app, Options& o) {
  auto* uplink = app.add_option("--uplink", o.uplink,
                                "uplink port: a DPDK port name (0000:03:00.0, net_pcap0, net_af_packet0) "
                                "or a port index, given to EAL with -a or --vdev");
  auto* uplink_iface = app.add_option("--uplink-iface", o.uplink_iface,
                 "uplink on a kernel interface (a veth, a NIC the kernel drives), served by the "
                 "dataplane's own AF_PACKET sockets, one per worker: frames as on the wire (outer "
                 "fragments stay fragments), checksum state and segmentation handed to the kernel "
                 "with vnet headers; instead of --uplink");
  uplink->excludes(uplink_iface);
  uplink_iface->excludes(uplink);
  app.add_option("--uplink-kernel-drop", o.uplink_kernel_drop,
                 "with --uplink-iface or an af_packet PMD uplink: 1 drops the VXLAN datagrams to the VTEP "
                 "at the interface's tc ingress (a BPF program on a TCX link, kernel 6.6+), after our "
                 "AF_PACKET sockets took their copy, so the node's IP and UDP input never process them "
                 "and no other socket on VTEP:4789 can read them; while a kernel VXLAN device of the node "
                 "shares the port only our networks' VNIs are dropped. 0: the node's stack sees them and "
                 "the VTEP:4789 claim drops them there (a process that takes the port first reads them)")
      ->capture_default_str();
  app.add_option("--uplink-drop-pin-root", o.uplink_drop_pin_root,
                 "bpffs directory under which the tc drop's link and VNI map are pinned "
                 "(uplink-drop/<netns>-<iface>/), so the drop stays in force while the dataplane is down "
                 "and the next one takes it over; \"\": not pinned (a crash leaves VXLAN to the node's "
                 "sockets until the restart). Default: $VXFED_BPF_PIN_ROOT, else /sys/fs/bpf/vxfed")
      ->capture_default_str();
  app.add_option("--uplink-gso", o.uplink_gso,
                 "with --uplink-iface: 1 hands a pod's super-packet to the kernel as one UDP "
                 "super-packet of VXLAN datagrams (GSO_UDP_L4; inner checksums completed by us), which "
                 "the kernel or a NIC with UDP segmentation offload cuts into frames, and sends through "
                 "the qdisc layer; before kernel 6.2 a warning and frame by frame; 0: one message per "
                 "frame with the inner checksum left pending. Received UDP super-packets are taken "
                 "either way")
      ->capture_default_str();
  app.add_option("--vtep-ip", o.vtep_ip,
                 "this node's VTEP IPv4 address: outer source of encapsulated frames; "
                 "the dataplane answers ARP for it on the uplink")
      ->required();
  app.add_option("--queues", o.queues,
                 "RX queues on the uplink = worker lcores (needs --queues + 1 EAL lcores). "
                 "Hardware RSS where the port has it; af_packet spreads by the kernel's flow "
                 "hash (PACKET_FANOUT_HASH); other ports with fewer queues are spread in "
                 "software by the outer flow hash")
      ->check(CLI::Range(1u, 16u))
      ->capture_default_str();
  app.add_option("--conntrack-flows", o.conntrack_flows,
                 "connection-tracking entries per worker for global services' translation and "
                 "network policy's verdicts (docs/conntrack.md: 64 B each plus its key buckets; a "
                 "full table drops new flows, service_conntrack_full / policy_conntrack_full); 0: "
                 "VIPs are not translated and policy decides every packet alone (replies need rules)")
      ->check(CLI::Range(0u, 1u << 26))
      ->capture_default_str();
  app.add_option("--mtu", o.mtu, "underlay MTU; the pods' MTU is this minus 50 (VXLAN overhead)")
      ->check(CLI::Range(1280u, 9600u))
      ->capture_default_str();
  app.add_option("--api-socket", o.api_socket,
                 "unix socket (mode 0600) serving the table API of proto/dataplane.proto, "
                 "length-delimited DataplaneRequest/DataplaneResponse");
  app.add_option("--tables-file", o.tables_file,
                 "JSON file applied at start-up for stand-alone use: a Snapshot "
                 "({\"generation\":1,\"tables\":{...}}) or a bare Tables object, protobuf JSON "
                 "mapping of proto/dataplane.proto");
  app.add_option("--underlay-gateway", o.underlay_gateway,
                 "underlay router (IPv4, on-link) for remote VTEPs outside --underlay-subnet: "
                 "their frames go to its MAC, resolved by ARP (or given with --static-neighbor "
                 "GATEWAY=MAC)");
  app.add_option("--underlay-subnet", o.underlay_subnet,
                 "CIDR of VTEPs reachable on-link (ARP for the VTEP itself); default: all "
                 "VTEPs are on-link unless --underlay-gateway is set");
  app.add_option("--underlay-route", o.underlay_routes,
                 "VTEP=NEXTHOP or PREFIX=NEXTHOP (repeatable): the VTEP, or the VTEPs in PREFIX, "
                 "are reached through the on-link router NEXTHOP, or on-link with NEXTHOP "
                 "'direct'; overrides --underlay-subnet/--underlay-gateway, longest prefix first");
  app.add_option("--underlay-vlan", o.underlay_vlan,
                 "802.1Q VLAN ID (0..4094; 0: a priority tag only) of every frame sent on the uplink, "
                 "with the priority bits (PCP) from the inner packet's DSCP, so a PFC fabric sees the "
                 "pod's traffic class (default: untagged)")
      ->check(CLI::Range(0, 4094));
  app.add_option("--dscp-pcp", o.dscp_pcp,
                 "DSCP=PCP (repeatable): the PCP for inner packets of this DSCP, instead of its class "
                 "selector (DSCP / 8; RoCEv2's DSCP 26 -> PCP 3)");
  app.add_option("--static-neighbor", o.static_neighbors,
                 "IP=MAC static underlay neighbour (repeatable); merged with the tables' "
                 "neighbors, which win on conflict");
  app.add_option("--endpoint-port", o.endpoint_port_args,
                 "IFACE=PORTNAME: endpoints whose iface is IFACE use the existing DPDK port "
                 "PORTNAME (e.g. a --vdev net_null1 or net_tap) instead of a hot-plugged "
                 "af_packet port (repeatable)");
  app.add_option("--max-pod-ports", o.max_pod_ports,
                 "serve at most this many pod interfaces (0: the build's limit, 1024); an endpoint "
                 "beyond it is refused alone (its id in the response's refused_endpoint). For "
                 "tests of that refusal without hundreds of pods")
      ->check(CLI::Range(0u, 1024u))
      ->capture_default_str();
  app.add_option("--endpoint-frames", o.endpoint_frames,
                 "af_packet ring frames per queue and direction of each hot-plugged endpoint port")
      ->check(CLI::Range(16u, 65536u))
      ->capture_default_str();
  app.add_option("--qdisc-bypass", o.qdisc_bypass,
                 "1: endpoint af_packet ports transmit with PACKET_QDISC_BYPASS (skips the "
                 "host veth's qdisc and tc egress hooks, faster); 0: through the qdisc, so tc "
                 "programs on the host end of the pod veth see the frames")
      ->capture_default_str();
  app.add_option("--mbufs", o.mbufs, "mbuf pool size (0: computed from ports and queues)")
      ->capture_default_str();
  app.add_option("--idle-sleep-us", o.idle_sleep_us,
                 "idle worker, first stage: after 256 empty polls (rte_pause) it sleeps 1 us, "
                 "doubling up to this many microseconds; any packet resets it")
      ->check(CLI::Range(1u, 10000u))
      ->capture_default_str();
  app.add_option("--deep-idle-sleep-us", o.deep_idle_sleep_us,
                 "idle worker, second stage: sleeps this long per poll once idle for "
                 "--deep-idle-after-ms (keeps an idle forwarder at a few percent of a core; "
                 "bounds the extra latency of the first packet after a quiet period)")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  app.add_option("--deep-idle-after-ms", o.deep_idle_after_ms,
                 "milliseconds without packets before the second idle stage")
      ->check(CLI::Range(0u, 100000u))
      ->capture_default_str();
  app.add_option("--idle-spin-us", o.idle_spin_us,
                 "an idle worker keeps polling this many microseconds after its last packet before "
                 "it sleeps or blocks (at least 256 polls): request/response traffic then finds it "
                 "awake; costs CPU only while traffic flows")
      ->check(CLI::Range(0u, 100000u))
      ->capture_default_str();
  app.add_option("--idle-spin-yield", o.idle_spin_yield,
                 "1: a spinning idle worker yields its CPU between polls (sched_yield), so a pod "
                 "or another worker woken on that CPU runs at once; 0: rte_pause only (dedicated, "
                 "isolated cores)")
      ->capture_default_str();
  app.add_option("--idle-wait", o.idle_wait,
                 "auto: an idle worker whose ports are all af_packet sockets blocks in poll() until "
                 "a frame arrives (no CPU while idle, no nap latency; the first packet after a "
                 "quiet spell pays one thread wake-up); sleep: always the timed naps above")
      ->check(CLI::IsMember({"auto", "sleep"}))
      ->capture_default_str();
  app.add_flag("--busy-poll", o.busy_poll, "never sleep when idle (benchmarks; burns the cores)");
  app.add_option("--worker-rt-priority", o.worker_rt_priority,
                 "run the workers SCHED_FIFO at this priority (1-99), so that a packet wakes them ahead "
                 "of the node's ordinary processes, as the kernel's softirq runs; 0: ordinary threads. "
                 "Needs CAP_SYS_NICE; without it a warning and ordinary threads. Not with --busy-poll "
                 "(a real-time thread that never sleeps starves its CPU)")
      ->check(CLI::Range(0u, 99u))
      ->capture_default_str();
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  app.add_flag("--check", o.check,
               "dry run: check the EAL arguments and these options as a start would (lcores for "
               "--queues, the uplink's device, addresses, next hops, --tables-file), print what "
               "would run and exit: 0 valid, 2 not; touches nothing (no EAL, no ports, no socket)");
}

// "DSCP=PCP" of --dscp-pcp, both plain decimal; nullopt when malformed or out of range.
std::optional<std::pair<unsigned, std::uint8_t>> parse_dscp_pcp(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) return std::nullopt;
  auto number = [](std::string_view v, unsigned max) -> std::optional<unsigned> {
    unsigned n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n > max) return std::nullopt;
    return n;
  };
  const std::string_view all(text);
  const auto dscp = number(all.substr(0, eq), 63);
  const auto pcp = number(all.substr(eq + 1), 7);
  if (!dscp || !pcp) return std::nullopt;
  return std::pair{*dscp, static_cast<std::uint8_t>(*pcp)};
}

// The values behind the texts; every error names its option.
Status parse_values(Options& o) {
  if (o.worker_rt_priority != 0 && o.busy_poll)
    return make_error("--worker-rt-priority " + std::to_string(o.worker_rt_priority) +
                      " with --busy-poll: a real-time worker that never sleeps starves its CPU; drop one");
  auto vtep = net::Ipv4Addr::parse(o.vtep_ip);
  if (!vtep) return make_error("--vtep-ip: " + vtep.error());
  o.parsed.vtep = *vtep;
  auto underlay = Underlay::parse(o.underlay_subnet, o.underlay_gateway, o.underlay_routes);
  if (!underlay) return make_error(underlay.error());
  o.parsed.underlay = std::move(*underlay);
  for (const auto& n : o.static_neighbors) {
    const auto eq = n.find('=');
    if (eq == std::string::npos) return make_error("--static-neighbor '" + n + "': expected IP=MAC");
    auto ip = net::Ipv4Addr::parse(n.substr(0, eq));
    if (!ip) return make_error("--static-neighbor '" + n + "': " + ip.error());
    auto mac = net::parse_mac(n.substr(eq + 1));
    if (!mac) return make_error("--static-neighbor '" + n + "': " + mac.error());
    if (!net::is_unicast(*mac)) return make_error("--static-neighbor '" + n + "': the MAC must be unicast");
    o.parsed.static_neighbors.emplace_back(*ip, *mac);
  }
  auto pcp = UnderlayTag::class_selector_pcp();
  for (const auto& m : o.dscp_pcp) {
    auto entry = parse_dscp_pcp(m);
    if (!entry) return make_error("--dscp-pcp '" + m + "': expected DSCP=PCP, DSCP 0..63, PCP 0..7");
    pcp[entry->first] = entry->second;
  }
  if (!o.dscp_pcp.empty() && o.underlay_vlan < 0)
    return make_error("--dscp-pcp needs --underlay-vlan (untagged frames carry no PCP)");
  o.parsed.underlay_tag =
      UnderlayTag::make(o.underlay_vlan < 0 ? std::nullopt
                                            : std::optional<std::uint16_t>(static_cast<std::uint16_t>(o.underlay_vlan)),
                        pcp);
  for (const auto& a : o.endpoint_port_args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size())
      return make_error("--endpoint-port '" + a + "': expected IFACE=PORTNAME");
    o.endpoint_ports[a.substr(0, eq)] = a.substr(eq + 1);
  }
  return {};
}

}  // namespace

std::string usage_text(const std::string& argv0) {
  CLI::App app(kDescription, argv0);
  Options o;
  add_options(app, o);
  std::ostringstream out;
  out << app.help();
  out << "\nSignals: SIGTERM/SIGINT stop the workers, print the final counters, release the\n"
         "ports and exit 0.\n";
  return out.str();
}

Result<ParseOutcome> parse_options(const std::string& argv0, const std::vector<std::string>& args) {
  ParseOutcome outcome;
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      outcome.help = true;
      outcome.help_text = usage_text(argv0);
      return outcome;
    }
  }
  CLI::App app(kDescription, argv0);
  add_options(app, outcome.options);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return make_error(std::string(e.what()) + " (see --help)");
  }
  if (outcome.options.uplink.empty() && outcome.options.uplink_iface.empty())
    return make_error("--uplink or --uplink-iface is required (see --help)");
  if (auto st = parse_values(outcome.options); !st) return make_error(st.error());
  return outcome;
}

}  // namespace vxfed::dataplane
