// vxfedctl: vxfedd's command-line client. Readable tables by default, --json for scripts.
//
// Exit codes: 0 success; 1 vxfedd answered with an error; 2 usage error (also: a `policy` -f
// file that cannot be read, a kind `policy delete` does not know); 3 vxfedd (or the
// dataplane, for dump-dataplane) unreachable or the connection failed; 4 `status` only:
// vxfedd runs but the dataplane is not connected or has not applied the snapshot.
#include <unistd.h>

#include <cctype>
#include <ctime>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>
#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "common/cpu_baseline.h"
#include "proto/control.pb.h"
#include "proto/dataplane.pb.h"
#include "common/delimited.hpp"
#include "control/cli/policy_command.hpp"
#include "control/cli/service_command.hpp"
#include "control/cli/table_printer.hpp"

namespace v1 = vxfed::control::v1;
namespace dp = vxfed::dataplane::v1;
using vxfed::control::TablePrinter;
using json = nlohmann::json;

namespace {

enum Exit { kOk = 0, kApiError = 1, kUsage = 2, kUnreachable = 3, kNotReady = 4 };

struct Globals {
  std::string socket = "/run/vxfed/vxfedd.sock";
  bool json = false;
  int timeout_ms = 5000;
  bool check = false;  // --check: parse the command line, call nothing
};

// --check (a dry run for manifests and probes): the command line parsed, nothing called.
int check_only(const Globals& g, const std::string& command) {
  std::cout << "vxfedctl --check: valid: " << command << " on " << g.socket << (g.json ? " (json)" : "") << "\n";
  return 0;
}

json to_json(const google::protobuf::Message& message) {
  std::string text;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &text, options);
  return json::parse(text);
}

// Sends one request; prints the error and sets `exit` on failure.
bool call(const Globals& g, v1::ControlRequest& request, v1::ControlResponse& response, int& exit) {
  request.set_request_id(static_cast<std::uint64_t>(::getpid()));
  auto fd = vxfed::connect_unix(g.socket, g.timeout_ms);
  if (!fd) {
    std::cerr << "vxfedctl: " << fd.error() << " (is vxfedd running? --socket)\n";
    exit = kUnreachable;
    return false;
  }
  auto sent = vxfed::write_delimited(*fd, request, g.timeout_ms);
  auto received = sent ? vxfed::read_delimited(*fd, response, g.timeout_ms) : sent;
  ::close(*fd);
  if (!received) {
    std::cerr << "vxfedctl: talking to vxfedd at " << g.socket << ": " << received.error() << "\n";
    exit = kUnreachable;
    return false;
  }
  if (response.code() != v1::OK) {
    if (g.json) {
      std::cout << json{{"error", response.error()}, {"code", v1::ErrorCode_Name(response.code())}}.dump(2) << "\n";
    } else {
      std::cerr << "vxfedctl: " << v1::ErrorCode_Name(response.code()) << ": " << response.error() << "\n";
    }
    exit = kApiError;
    return false;
  }
  return true;
}

std::string join(const google::protobuf::RepeatedPtrField<std::string>& items, const char* sep = ",") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out.empty() ? "-" : out;
}

std::string labels(const google::protobuf::Map<std::string, std::string>& m) {
  std::map<std::string, std::string> sorted(m.begin(), m.end());
  std::string out;
  for (const auto& [k, v] : sorted) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out.empty() ? "-" : out;
}

// "enabled, BMP feed connected": which feed a vxfedd of this release says; one of the previous
// release sends no bgp_feed, and FPM was its only feed.
std::string bgp_line(const v1::DaemonStatus& s) {
  if (!s.bgp_enabled()) return "disabled";
  std::string feed = s.bgp_feed().empty() ? "fpm" : s.bgp_feed();
  for (auto& c : feed) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return "enabled, " + feed + (s.fpm_connected() ? " feed connected" : " feed NOT connected");
}

std::string duration(std::uint64_t s) {
  char buf[64];
  if (s >= 86400) std::snprintf(buf, sizeof buf, "%lud%luh", s / 86400, (s % 86400) / 3600);
  else if (s >= 3600) std::snprintf(buf, sizeof buf, "%luh%lum", s / 3600, (s % 3600) / 60);
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%lum%lus", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%lus", s);
  return buf;
}

int cmd_status(const Globals& g) {
  v1::ControlRequest req;
  req.mutable_get_status();
  v1::ControlResponse res;
  int exit = kOk;
  if (!call(g, req, res, exit)) return exit;
  const auto& s = res.status();
  const bool healthy = s.dataplane_connected() && s.dataplane_ready();
  if (g.json) {
    std::cout << to_json(s).dump(2) << "\n";
  } else {
    std::cout << "node:       " << s.node() << " (cluster " << s.cluster() << ", VTEP " << s.vtep_ip() << ")\n"
              << "version:    " << s.version() << ", up " << duration(s.uptime_s()) << "\n"
              << "dataplane:  " << (s.dataplane_connected() ? "connected" : "NOT CONNECTED") << ", "
              << (s.dataplane_ready() ? "ready" : "NOT READY") << ", generation " << s.dataplane_generation() << "\n"
              << "bgp:        " << bgp_line(s) << "\n"
              << "federation: " << (s.federation().empty() ? std::string("none (VNIs from this node's pools)")
                                                               : s.federation() + (s.federation_available() ? ", available" : ", UNAVAILABLE"))
              << "\n"
              << "networks:   " << s.networks() << "\nendpoints:  " << s.endpoints() << "\nroutes:     " << s.routes() << "\n";
  }
  return healthy ? kOk : kNotReady;
}

int cmd_networks(const Globals& g, const std::string& name) {
  v1::ControlRequest req;
  if (name.empty()) req.mutable_list_networks();
  else req.mutable_get_network()->set_name(name);
  v1::ControlResponse res;
  int exit = kOk;
  if (!call(g, req, res, exit)) return exit;
  std::vector<v1::NetworkInfo> list;
  if (name.empty()) list.assign(res.networks().networks().begin(), res.networks().networks().end());
  else list.push_back(res.network());
  if (g.json) {
    json out = json::array();
    for (const auto& n : list) out.push_back(to_json(n));
    std::cout << (name.empty() ? json{{"networks", out}} : out[0]).dump(2) << "\n";
    return kOk;
  }
  TablePrinter t({"NAME", "VNI", "POOL", "SUBNET", "NODE-BLOCK", "GATEWAY", "GATEWAY-MAC", "MTU", "ENDPOINTS", "REMOTE-CIDRS", "LABELS"});
  for (const auto& n : list)
    t.row({n.spec().name(), std::to_string(n.vni()), n.pool().empty() ? "(pinned)" : n.pool(), n.spec().subnet(),
           n.node_block().empty() ? "-" : n.node_block(), n.spec().gateway(), n.gateway_mac(), std::to_string(n.mtu()), std::to_string(n.endpoints()),
           join(n.remote_cidrs()), labels(n.spec().labels())});
  t.print(std::cout);
  return kOk;
}

int cmd_vnis(const Globals& g) {
  v1::ControlRequest req;
  req.mutable_list_vnis();
  v1::ControlResponse res;
  int exit = kOk;
  if (!call(g, req, res, exit)) return exit;
  if (g.json) {
    std::cout << to_json(res.vnis()).dump(2) << "\n";
    return kOk;
  }
  TablePrinter t({"VNI", "STATE", "POOL", "NETWORK", "HELD-UNTIL"});
  for (const auto& v : res.vnis().vnis()) {
    std::string until = "-";
    if (v.held_until_unix_ms() != 0) {
      const std::time_t secs = static_cast<std::time_t>(v.held_until_unix_ms() / 1000);
      char buf[32];
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&secs));
      until = buf;
    }
    t.row({std::to_string(v.vni()), v.state(), v.pool().empty() ? "-" : v.pool(), v.network().empty() ? "-" : v.network(), until});
  }
  t.print(std::cout);
  return kOk;
}

// Where an endpoint stands with the dataplane (EndpointInfo.dataplane), as vxfedctl prints it.
const char* dataplane_state_name(v1::DataplaneState state) {
  switch (state) {
    case v1::DP_CARRIED: return "yes";
    case v1::DP_PENDING: return "pending";
    case v1::DP_REFUSED: return "refused";
    case v1::DP_NOT_CONNECTED: return "not-connected";
    default: return "unknown";
  }
}

int cmd_endpoints(const Globals& g) {
  v1::ControlRequest req;
  req.mutable_list_endpoints();
  v1::ControlResponse res;
  int exit = kOk;
  if (!call(g, req, res, exit)) return exit;
  if (g.json) {
    json list = json::array();
    for (const auto& e : res.endpoints().endpoints()) {
      json j = to_json(e.spec());
      j["vni"] = e.vni();
      j["in_dataplane"] = e.in_dataplane();
      j["dataplane"] = dataplane_state_name(e.dataplane());
      if (!e.dataplane_error().empty()) j["dataplane_error"] = e.dataplane_error();
      j["created_unix_ms"] = e.created_unix_ms();
      list.push_back(std::move(j));
    }
    std::cout << json{{"endpoints", list}}.dump(2) << "\n";
    return kOk;
  }
  TablePrinter t({"CONTAINER", "IFNAME", "NETWORK", "VNI", "IP", "MAC", "HOST-IFACE", "DATAPLANE"});
  for (const auto& e : res.endpoints().endpoints()) {
    const auto& s = e.spec();
    t.row({s.container_id().substr(0, 12), s.ifname(), s.network(), std::to_string(e.vni()), s.ip(), s.mac(), s.host_iface(),
           dataplane_state_name(e.dataplane())});
  }
  t.print(std::cout);
  return kOk;
}

int cmd_routes(const Globals& g) {
  v1::ControlRequest req;
  req.mutable_list_routes();
  v1::ControlResponse res;
  int exit = kOk;
  if (!call(g, req, res, exit)) return exit;
  if (g.json) {
    std::cout << to_json(res.routes()).dump(2) << "\n";
    return kOk;
  }
  TablePrinter t({"NETWORK", "VNI", "PREFIX", "VTEPS", "SOURCE", "PEER"});
  for (const auto& r : res.routes().routes())
    t.row({r.network().empty() ? "-" : r.network(), std::to_string(r.vni()), r.prefix(), join(r.vteps()), r.source(),
           r.peer().empty() ? "-" : r.peer()});
  t.print(std::cout);
  return kOk;
}

int cmd_peers(const Globals& g) {
  v1::ControlRequest req;
  req.mutable_list_peers();
  v1::ControlResponse res;
  int exit = kOk;
  if (!call(g, req, res, exit)) return exit;
  if (g.json) {
    std::cout << to_json(res.peers()).dump(2) << "\n";
    return kOk;
  }
  TablePrinter t({"PEER", "ASN", "CLUSTER", "STATE", "UP", "RECEIVED", "ACCEPTED", "ADVERTISED"});
  for (const auto& p : res.peers().peers())
    t.row({p.address(), std::to_string(p.remote_asn()), p.cluster(), p.state(), duration(p.uptime_s()),
           std::to_string(p.prefixes_received()), std::to_string(p.prefixes_accepted()), std::to_string(p.prefixes_advertised())});
  t.print(std::cout);
  return kOk;
}

int cmd_stats(const Globals& g) {
  v1::ControlRequest req;
  req.mutable_get_stats();
  v1::ControlResponse res;
  int exit = kOk;
  if (!call(g, req, res, exit)) return exit;
  const auto& c = res.stats();
  if (g.json) {
    std::cout << to_json(c).dump(2) << "\n";
    return kOk;
  }
  TablePrinter ports({"PORT", "QUEUE", "RX-PKTS", "RX-BYTES", "TX-PKTS", "TX-BYTES", "DROPS"});
  for (const auto& p : c.ports())
    ports.row({p.name(), std::to_string(p.queue()), std::to_string(p.rx_packets()), std::to_string(p.rx_bytes()),
               std::to_string(p.tx_packets()), std::to_string(p.tx_bytes()), std::to_string(p.drops())});
  ports.print(std::cout);
  std::cout << "\n";
  TablePrinter vnis({"VNI", "ENCAP-PKTS", "ENCAP-BYTES", "DECAP-PKTS", "DECAP-BYTES", "LOCAL-PKTS", "LOCAL-BYTES"});
  for (const auto& v : c.vnis())
    vnis.row({std::to_string(v.vni()), std::to_string(v.encap_packets()), std::to_string(v.encap_bytes()),
              std::to_string(v.decap_packets()), std::to_string(v.decap_bytes()), std::to_string(v.local_packets()),
              std::to_string(v.local_bytes())});
  vnis.print(std::cout);
  std::cout << "\n";
  TablePrinter drops({"DROP-REASON", "PACKETS"});
  for (const auto& d : c.drops())
    if (d.packets() > 0) drops.row({d.reason(), std::to_string(d.packets())});
  if (drops.size() == 0) std::cout << "no drops\n";
  else drops.print(std::cout);
  if (c.ports_size() == 0 && c.drops_size() == 0) std::cout << "(no counters yet: is the dataplane connected? see `vxfedctl status`)\n";
  return kOk;
}

int cmd_add_network(const Globals& g, const v1::NetworkSpec& spec) {
  v1::ControlRequest req;
  *req.mutable_add_network()->mutable_spec() = spec;
  v1::ControlResponse res;
  int exit = kOk;
  if (!call(g, req, res, exit)) return exit;
  if (g.json) std::cout << to_json(res.network()).dump(2) << "\n";
  else
    std::cout << "network " << res.network().spec().name() << ": VNI " << res.network().vni()
              << (res.network().node_block().empty() ? "" : ", this node's block " + res.network().node_block()) << "\n";
  return kOk;
}

int cmd_remove_network(const Globals& g, const std::string& name) {
  v1::ControlRequest req;
  req.mutable_remove_network()->set_name(name);
  v1::ControlResponse res;
  int exit = kOk;
  if (!call(g, req, res, exit)) return exit;
  if (g.json) std::cout << json{{"removed", name}}.dump() << "\n";
  else std::cout << "network " << name << " removed (its VNI is held down before reuse)\n";
  return kOk;
}

// attach/detach by hand: what the CNI plugin does, for operators and tests.
int cmd_attach(const Globals& g, const v1::EndpointSpec& spec) {
  v1::ControlRequest req;
  *req.mutable_attach_endpoint()->mutable_endpoint() = spec;
  v1::ControlResponse res;
  int exit = kOk;
  if (!call(g, req, res, exit)) return exit;
  if (g.json) std::cout << to_json(res.endpoint()).dump(2) << "\n";
  else std::cout << "endpoint " << spec.container_id() << "/" << spec.ifname() << " attached (VNI " << res.endpoint().vni()
                 << ", in dataplane: " << (res.endpoint().in_dataplane() ? "yes" : "not yet") << ")\n";
  return kOk;
}

int cmd_detach(const Globals& g, const std::string& container_id, const std::string& ifname) {
  v1::ControlRequest req;
  req.mutable_detach_endpoint()->set_container_id(container_id);
  req.mutable_detach_endpoint()->set_ifname(ifname);
  v1::ControlResponse res;
  int exit = kOk;
  if (!call(g, req, res, exit)) return exit;
  if (g.json) std::cout << json{{"detached", container_id + "/" + ifname}}.dump() << "\n";
  else std::cout << "endpoint " << container_id << "/" << ifname << " detached\n";
  return kOk;
}

// Asks the dataplane itself what it runs (its DumpTables), to compare with vxfedd's view.
int cmd_dump_dataplane(const Globals& g, const std::string& socket) {
  auto fd = vxfed::connect_unix(socket, g.timeout_ms);
  if (!fd) {
    std::cerr << "vxfedctl: " << fd.error() << "\n";
    return kUnreachable;
  }
  dp::DataplaneRequest req;
  req.set_request_id(1);
  req.mutable_dump_tables();
  dp::DataplaneResponse res;
  auto sent = vxfed::write_delimited(*fd, req, g.timeout_ms);
  auto got = sent ? vxfed::read_delimited(*fd, res, g.timeout_ms, 256u << 20) : sent;
  ::close(*fd);
  if (!got) {
    std::cerr << "vxfedctl: dataplane " << socket << ": " << got.error() << "\n";
    return kUnreachable;
  }
  if (!res.ok()) {
    std::cerr << "vxfedctl: dataplane refused DumpTables: " << res.error() << "\n";
    return kApiError;
  }
  const auto& t = res.tables().tables();
  if (g.json) {
    std::cout << to_json(res.tables()).dump(2) << "\n";
    return kOk;
  }
  std::cout << "generation " << res.tables().generation() << ": " << t.networks_size() << " networks, " << t.endpoints_size()
            << " endpoints, " << t.routes_size() << " routes\n";
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  vxfed_require_cpu_baseline(argv[0]);  // before anything that may use the baseline's instructions
  CLI::App app{"vxfedctl: inspect and drive vxfedd, the vxfed node daemon.\n"
               "Exit codes: 0 ok, 1 vxfedd returned an error, 2 usage (or a -f file not readable),\n"
               "3 vxfedd unreachable, "
               "4 (status) the dataplane is not connected or not ready."};
  app.require_subcommand(1);
  app.fallthrough();  // global options (--json, --socket) also after the subcommand
  Globals g;
  app.add_option("-s,--socket", g.socket, "vxfedd API socket")->capture_default_str();
  app.add_flag("-j,--json", g.json, "machine-readable JSON output");
  app.add_option("--timeout-ms", g.timeout_ms, "per-call timeout")->capture_default_str();
  app.add_flag("--check", g.check, "dry run: parse the command line and exit 0 without calling vxfedd (2: usage error)");

  int result = kOk;
  auto* status = app.add_subcommand("status", "daemon, dataplane and BGP state (exit 4 when the dataplane is not ready)");
  status->callback([&] { result = g.check ? check_only(g, "status") : cmd_status(g); });

  std::string network_name;
  auto* networks = app.add_subcommand("networks", "networks with their VNI, subnet, gateway, endpoints, remote CIDRs");
  networks->add_option("name", network_name, "show only this network");
  networks->callback([&] { result = g.check ? check_only(g, "networks") : cmd_networks(g, network_name); });

  app.add_subcommand("vnis", "VNI allocations: allocated, pinned, held down")->callback([&] { result = g.check ? check_only(g, "vnis") : cmd_vnis(g); });
  app.add_subcommand("endpoints", "pod attachments and whether the dataplane has them")->callback([&] { result = g.check ? check_only(g, "endpoints") : cmd_endpoints(g); });
  app.add_subcommand("routes", "remote routes in effect (static and BGP)")->callback([&] { result = g.check ? check_only(g, "routes") : cmd_routes(g); });
  app.add_subcommand("peers", "BGP peers and their sessions")->callback([&] { result = g.check ? check_only(g, "peers") : cmd_peers(g); });
  app.add_subcommand("stats", "dataplane counters: per port, per VNI, drops by reason")->callback([&] { result = g.check ? check_only(g, "stats") : cmd_stats(g); });

  v1::NetworkSpec spec;
  std::string name, subnet, gateway;
  std::vector<std::string> label_args;
  std::uint32_t vni = 0, mtu = 0, block_len = 0;
  auto* add = app.add_subcommand("add-network", "define a network at run time (persisted; config networks are in the YAML)");
  add->add_option("name", name, "network name (DNS label)")->required();
  add->add_option("--subnet", subnet, "this cluster's pod CIDR on the network")->required();
  add->add_option("--gateway", gateway, "gateway IPv4 (default: first address of the subnet)");
  add->add_option("--vni", vni, "pin this VNI (default: from the pool the labels select)");
  add->add_option("--mtu", mtu, "pod MTU (default: underlay MTU - 50)");
  add->add_option("--label", label_args, "KEY=VALUE, selects the VNI pool (repeatable)");
  add->add_option("--block-len", block_len, "federation: the prefix length of each node's block (default 24)");
  add->callback([&] {
    spec.set_name(name);
    spec.set_subnet(subnet);
    spec.set_gateway(gateway);
    spec.set_pinned_vni(vni);
    spec.set_mtu(mtu);
    spec.set_block_prefix_len(block_len);
    for (const auto& l : label_args) {
      const auto eq = l.find('=');
      if (eq == std::string::npos) throw CLI::ValidationError("--label", "'" + l + "' must be KEY=VALUE");
      (*spec.mutable_labels())[l.substr(0, eq)] = l.substr(eq + 1);
    }
    result = g.check ? check_only(g, "add-network") : cmd_add_network(g, spec);
  });

  std::string remove_name;
  auto* remove = app.add_subcommand("remove-network", "remove a network added at run time (it must have no endpoints)");
  remove->add_option("name", remove_name, "network name")->required();
  remove->callback([&] { result = g.check ? check_only(g, "remove-network") : cmd_remove_network(g, remove_name); });

  v1::EndpointSpec ep;
  std::string ep_cid, ep_ifname = "net1", ep_network, ep_ip, ep_mac, ep_iface;
  auto* attach = app.add_subcommand("attach", "attach an endpoint by hand (what the CNI plugin does on ADD)");
  attach->add_option("container_id", ep_cid, "container id")->required();
  attach->add_option("--ifname", ep_ifname, "interface name inside the pod")->capture_default_str();
  attach->add_option("--network", ep_network, "network name")->required();
  attach->add_option("--ip", ep_ip, "pod IPv4 (no prefix)")->required();
  attach->add_option("--mac", ep_mac, "pod MAC")->required();
  attach->add_option("--host-iface", ep_iface, "host-side interface the dataplane attaches to")->required();
  attach->callback([&] {
    ep.set_container_id(ep_cid);
    ep.set_ifname(ep_ifname);
    ep.set_network(ep_network);
    ep.set_ip(ep_ip);
    ep.set_mac(ep_mac);
    ep.set_host_iface(ep_iface);
    result = g.check ? check_only(g, "attach") : cmd_attach(g, ep);
  });
  std::string det_cid, det_ifname = "net1";
  auto* detach = app.add_subcommand("detach", "detach an endpoint (what the CNI plugin does on DEL; unknown is fine)");
  detach->add_option("container_id", det_cid, "container id")->required();
  detach->add_option("--ifname", det_ifname, "interface name inside the pod")->capture_default_str();
  detach->callback([&] { result = g.check ? check_only(g, "detach") : cmd_detach(g, det_cid, det_ifname); });

  std::string dp_socket = "/run/vxfed/dataplane.sock";
  auto* dump = app.add_subcommand("dump-dataplane", "ask vxfed-dataplane for the tables it runs (DumpTables)");
  dump->add_option("--dataplane-socket", dp_socket, "vxfed-dataplane --api-socket")->capture_default_str();
  dump->callback([&] { result = g.check ? check_only(g, "dump-dataplane") : cmd_dump_dataplane(g, dp_socket); });

  vxfed::control::add_policy_command(
      app, {[&g](v1::ControlRequest& req, v1::ControlResponse& res, int& exit) { return call(g, req, res, exit); },
            to_json, [&g](const std::string& command) { return check_only(g, command); }, &g.json, &g.check, &result,
            kUsage});
  vxfed::control::add_service_command(
      app, {[&g](v1::ControlRequest& req, v1::ControlResponse& res, int& exit) { return call(g, req, res, exit); },
            to_json, [&g](const std::string& command) { return check_only(g, command); }, &g.json, &g.check, &result,
            kUsage});

  // --check is taken out before parsing: the subcommands' callbacks run while CLI11 parses.
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) {
    if (std::string(argv[i]) == "--check") g.check = true;
    else args.emplace_back(argv[i]);
  }
  try {
    app.parse(args);  // CLI11 takes the arguments reversed
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kUsage;
  }
  return result;
}
