#include "cni/commands.hpp"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>

#include "cni/bandwidth_hook.hpp"
#include "cni/cni_result.hpp"
#include "cni/delegate.hpp"
#include "cni/netlink.hpp"
#include "cni/node_path.hpp"
#include "cni/node_block.hpp"
#include "cni/offloads.hpp"
#include "cni/pod_routes.hpp"
#include "cni/records.hpp"
#include "cni/requested.hpp"
#include "cni/rollback.hpp"
#include "cni/state_store.hpp"
#include "common/unique_fd.hpp"
#include "cni/vxfedd_client.hpp"
#include "common/net/ipv4.hpp"
#include "common/net/mac.hpp"
#include "common/net/vxlan.hpp"

namespace vxfed::cni {

namespace {

constexpr std::uint32_t kDefaultPodMtu = net::pod_mtu(9000);  // vxfedd's default underlay
constexpr std::uint32_t kMaxDetachAttempts = 20; // a detach vxfedd keeps refusing is dropped

std::uint64_t now_ms() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch()).count());
}

// An fd on the pod's namespace; code 3 when there is none at the path: nothing missing, and
// nothing else there either (a regular file, a directory, another kind of namespace), which
// would otherwise get as far as the first netlink call and fail there as 101 although no
// pod's network was ever involved (the spec's 3: no cleanup needed).
class NetnsFd {
 public:
  static Expected<NetnsFd> open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT || errno == ENOTDIR)
        return cni_error(kContainerUnknown, "the pod's network namespace " + path + " (CNI_NETNS) does not exist");
      return cni_error(kIoFailure, "cannot open the pod's network namespace " + path, std::strerror(errno));
    }
    NetnsFd ns(fd);
    // NS_GET_NSTYPE answers only on an nsfs file; anything else is ENOTTY.
    const int type = ::ioctl(fd, NS_GET_NSTYPE);
    if (type == CLONE_NEWNET) return ns;
    struct stat st {};
    const bool stated = ::fstat(fd, &st) == 0;
    const std::string what = type >= 0                        ? "a namespace of another kind"
                             : stated && S_ISREG(st.st_mode) ? "a regular file"
                             : stated && S_ISDIR(st.st_mode) ? "a directory"
                                                              : "not a namespace file";
    return cni_error(kContainerUnknown,
                     "the pod's network namespace " + path + " (CNI_NETNS) is not a network namespace: it is " + what,
                     "CNI_NETNS must name a network namespace (/var/run/netns/NAME, /proc/PID/ns/net); a netns "
                     "file left behind after its namespace was unmounted is an empty regular file");
  }
  int fd() const { return fd_.get(); }

 private:
  explicit NetnsFd(int fd) : fd_(fd) {}
  vxfed::UniqueFd fd_;
};

CniError iface_error(const std::string& msg, const std::string& details) {
  return cni_error(kInterfaceFailure, msg, details);
}

// Applies queued detaches (vxfedd was down when DEL ran). Called, under the lock, by every
// invocation that reached vxfedd, before it does anything else there.
void replay_pending(StateStore& store, VxfeddClient& client) {
  auto guard = store.lock();
  if (!guard) return;
  auto queue = store.load_queue();
  if (!queue || queue->empty()) return;
  std::vector<PendingDetach> remaining;
  bool reachable = true;
  for (auto& d : *queue) {
    if (!reachable) {
      remaining.push_back(d);
      continue;
    }
    pb::ControlRequest req;
    req.mutable_detach_endpoint()->set_container_id(d.container_id);
    req.mutable_detach_endpoint()->set_ifname(d.ifname);
    auto resp = client.call(req);
    if (!resp) {
      reachable = false;
      remaining.push_back(d);
      continue;
    }
    if (resp->code() == pb::OK || resp->code() == pb::NOT_FOUND) {
      spdlog::info("replayed queued detach of {}/{}", d.container_id, d.ifname);
      continue;
    }
    if (++d.attempts >= kMaxDetachAttempts) {
      spdlog::error("dropping queued detach of {}/{} after {} refusals: {}", d.container_id, d.ifname, d.attempts,
                    resp->error());
      continue;
    }
    remaining.push_back(d);
  }
  if (auto st = store.save_queue(remaining); !st) spdlog::error("{}: {}", st.error().msg, st.error().details);
}

// Detaches from vxfedd now if it answers, else records the detach for replay. Never fails:
// the attachment's local state is removed either way.
void detach_or_queue(StateStore& store, VxfeddClient* client, const std::string& container_id,
                     const std::string& ifname, const std::string& network) {
  if (client) {
    pb::ControlRequest req;
    req.mutable_detach_endpoint()->set_container_id(container_id);
    req.mutable_detach_endpoint()->set_ifname(ifname);
    auto resp = client->call(req);
    if (resp && (resp->code() == pb::OK || resp->code() == pb::NOT_FOUND)) return;
    if (resp) spdlog::warn("vxfedd refused to detach {}/{} ({}); queued for retry", container_id, ifname, resp->error());
  }
  auto guard = store.lock();
  auto queue = store.load_queue();
  std::vector<PendingDetach> q = queue ? *queue : std::vector<PendingDetach>{};
  enqueue(q, PendingDetach{container_id, ifname, network, now_ms(), 0});
  if (auto st = store.save_queue(q); !st)
    spdlog::error("cannot queue the detach of {}/{}: {}", container_id, ifname, st.error().msg);
  else
    spdlog::warn("vxfedd unreachable: detach of {}/{} queued in {}/pending-detach.json", container_id, ifname,
                 store.dir());
}

struct Network {
  pb::NetworkInfo info;
  net::Ipv4Prefix subnet;
  net::Ipv4Addr gateway;
  std::uint32_t mtu = 0;
  std::vector<net::Ipv4Prefix> remote;
  std::vector<net::Ipv4Prefix> services;  // the VIP range vxfedd hands over (service_cidrs)
  std::optional<net::Ipv4Prefix> block;  // this node's block of the subnet; none: the whole subnet
  std::vector<net::Ipv4Prefix> blocks;    // every block it owns (node_blocks), the first one first
};

// The config the IPAM plugin sees for ADD: this node's range filled in when it takes one.
NetConf ipam_conf_for_add(const NetConf& conf, const Network& n) {
  NetConf out = conf;
  if (ipam_takes_node_range(conf.raw))
    out.raw = with_node_ranges(conf.raw, n.subnet, n.blocks.empty() ? std::vector{n.subnet} : n.blocks, n.gateway);
  return out;
}

// The same for DEL, CHECK and GC: host-local wants valid ranges for them too, but then finds
// the attachment's address by container id and ifname alone, so the attachment's own subnet
// serves, or (nothing known about it) any subnet.
NetConf ipam_conf_for_release(const NetConf& conf, const std::string& address) {
  NetConf out = conf;
  if (!ipam_takes_node_range(conf.raw)) return out;
  const auto a = net::Ipv4Interface::parse(address);
  const auto subnet = a ? a->prefix() : net::Ipv4Prefix::make(0, 0);
  out.raw["ipam"]["ranges"] = nlohmann::json::array({nlohmann::json::array({{{"subnet", subnet.str()}}})});
  return out;
}

// A route destination another plugin (IPAM) wrote: taken as the prefix it lies in, host bits
// dropped, as the reference plugins do (Go's net.ParseCIDR masks them).
std::optional<net::Ipv4Prefix> route_destination(const std::string& text) {
  auto i = net::Ipv4Interface::parse(text);
  if (!i) return std::nullopt;
  return i->prefix();
}

Expected<Network> get_network(VxfeddClient& client, const NetConf& conf) {
  pb::ControlRequest req;
  req.mutable_get_network()->set_name(conf.network);
  auto resp = client.call(req);
  if (!resp) return resp.error();
  if (resp->code() == pb::NOT_FOUND)
    return cni_error(kInvalidConfig, "vxfed network \"" + conf.network + "\" does not exist on this node",
                     "create it with vxfedctl, or set \"network\" in the CNI config to an existing one; vxfedd: " +
                         resp->error());
  if (resp->code() != pb::OK) return from_vxfedd(*resp, "cannot get vxfed network \"" + conf.network + "\"");
  Network n;
  n.info = resp->network();
  auto subnet = net::Ipv4Prefix::parse(n.info.spec().subnet());
  if (!subnet)
    return cni_error(kVxfeddRefused, "vxfedd describes network \"" + conf.network + "\" without a valid subnet",
                     "subnet: " + subnet.error());
  n.subnet = *subnet;
  if (!n.info.spec().gateway().empty()) {
    auto gw = net::Ipv4Addr::parse(n.info.spec().gateway());
    if (!gw) return cni_error(kVxfeddRefused, "vxfedd gives network \"" + conf.network + "\" an invalid gateway",
                              gw.error());
    n.gateway = *gw;
  } else {
    n.gateway = net::Ipv4Addr{n.subnet.addr + 1};
  }
  for (const auto& cidr : n.info.remote_cidrs()) {
    auto p = net::Ipv4Prefix::parse(cidr);
    if (!p) {
      spdlog::warn("ignoring remote CIDR of network {}: {}", conf.network, p.error());
      continue;
    }
    n.remote.push_back(*p);
  }
  for (const auto& cidr : n.info.service_cidrs()) {
    auto p = net::Ipv4Prefix::parse(cidr);
    if (!p)
      return cni_error(kVxfeddRefused, "vxfedd gives network \"" + conf.network + "\" an invalid service range",
                       "service_cidrs \"" + cidr + "\": " + p.error());
    n.services.push_back(*p);
  }
  if (!n.info.node_block().empty()) {
    auto block = net::Ipv4Prefix::parse(n.info.node_block());
    if (!block || !n.subnet.contains(*block))
      return cni_error(kVxfeddRefused, "vxfedd gives network \"" + conf.network + "\" an invalid block for this node",
                       "node_block \"" + n.info.node_block() + "\", subnet " + n.subnet.str());
    n.block = *block;
    n.blocks.push_back(*block);
  }
  for (const auto& text : n.info.node_blocks()) {  // the first one is node_block (an older vxfedd: none)
    auto block = net::Ipv4Prefix::parse(text);
    if (!block || !n.subnet.contains(*block))
      return cni_error(kVxfeddRefused, "vxfedd gives network \"" + conf.network + "\" an invalid block for this node",
                       "node_blocks \"" + text + "\", subnet " + n.subnet.str());
    if (std::find(n.blocks.begin(), n.blocks.end(), *block) == n.blocks.end()) n.blocks.push_back(*block);
  }
  const std::uint32_t net_mtu = n.info.mtu() ? n.info.mtu() : kDefaultPodMtu;
  if (conf.mtu > net_mtu)
    return cni_error(kInvalidConfig, "\"mtu\": " + std::to_string(conf.mtu) + " exceeds network \"" + conf.network +
                                         "\"'s MTU " + std::to_string(net_mtu) + " (underlay MTU - " +
                                         std::to_string(net::kVxlanOverhead) + ")");
  n.mtu = conf.mtu ? conf.mtu : net_mtu;
  return n;
}

// host-local's answer when every address of its ranges is taken.
bool ipam_exhausted(const CniError& e) {
  return e.code == kIpamFailure && (e.msg.find("no IP addresses available") != std::string::npos ||
                                    e.details.find("no IP addresses available") != std::string::npos);
}

// Every block this node has is full (host-local said so): vxfedd claims one more from the
// federation store (nothing when another ADD's claim already gave the node one) and the
// network comes back with it. When none can be had, code 106 names the limit met.
Expected<Network> claim_block(VxfeddClient& client, const NetConf& conf, const Network& n, const CniError& full) {
  pb::ControlRequest req;
  req.mutable_claim_block()->set_network(conf.network);
  for (const auto& b : n.blocks) req.mutable_claim_block()->add_seen(b.str());
  auto resp = client.call(req);
  if (!resp) return resp.error();
  const std::string owned = n.blocks.empty() ? "subnet " + n.subnet.str() : "its " + blocks_text(n.blocks);
  if (resp->code() == pb::EXHAUSTED)
    return cni_error(kNoAddressLeft, "no address left for the pod in vxfed network \"" + conf.network +
                                         "\" on this node: " + resp->error(),
                     "IPAM found every address of this node's " + owned + " in use: " + full.msg);
  if (resp->code() != pb::OK)
    return from_vxfedd(*resp, "this node's " + owned + " of vxfed network \"" + conf.network +
                                  "\" are full and vxfedd could not claim another block");
  return get_network(client, conf);
}

// What the endpoint's dataplane state means for a runtime: nothing (the dataplane forwards for
// the pod), 11 (not yet, or no dataplane: try again later), 105 (refused, with the reason).
std::optional<CniError> dataplane_problem(const pb::EndpointInfo& ep, const std::string& who) {
  switch (ep.dataplane()) {
    case pb::DP_CARRIED:
      return std::nullopt;
    case pb::DP_REFUSED:
      return cni_error(kDataplaneRefused, "the dataplane refused " + who + ": " + ep.dataplane_error(), "DP_REFUSED");
    case pb::DP_NOT_CONNECTED:
      return cni_error(kTryAgainLater, "the dataplane does not forward for " + who + " yet: " + ep.dataplane_error() +
                                           "; try again once vxfed-dataplane runs (vxfedctl status)");
    case pb::DP_PENDING:
      return cni_error(kTryAgainLater, "the dataplane has not acknowledged " + who + " yet; try again");
    default:  // a vxfedd from before the dataplane state: its flag alone
      if (ep.in_dataplane()) return std::nullopt;
      return cni_error(kTryAgainLater, "vxfedd has " + who + " but the dataplane does not (yet); try again");
  }
}

// After an attach that waited: an older vxfedd answers at once, so look until the wait is over.
Done dataplane_carries(VxfeddClient& client, const NetConf& conf, const CniEnv& env, pb::EndpointInfo ep) {
  const std::string who = "endpoint " + env.container_id + "/" + env.ifname;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(conf.dataplane_timeout_ms);
  for (;;) {
    auto problem = dataplane_problem(ep, who);
    if (!problem) return done();
    if (problem->code != kTryAgainLater || std::chrono::steady_clock::now() >= deadline) return *problem;
    ::usleep(20000);
    pb::ControlRequest req;
    req.mutable_check_endpoint()->set_container_id(env.container_id);
    req.mutable_check_endpoint()->set_ifname(env.ifname);
    auto resp = client.call(req);
    if (!resp) return resp.error();
    if (resp->code() != pb::OK) return from_vxfedd(*resp, "vxfedd lost " + who);
    ep = resp->endpoint();
  }
}

// The gateway ADD reported for the pod's interface (its routes go via it); "" when none.
std::string prev_gateway(const CniResult& prev, int iface_index) {
  for (const auto& ip : prev.ips)
    if ((!ip.interface || *ip.interface == iface_index) && !ip.gateway.empty()) return ip.gateway;
  return "";
}

std::map<std::string, std::string> pod_args(const CniEnv& env) {
  std::map<std::string, std::string> out;
  for (const auto& key : pod_arg_keys())
    if (auto it = env.arg_map.find(key); it != env.arg_map.end()) out[key] = it->second;
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------- ADD

Expected<nlohmann::json> cmd_add(const NetConf& conf, const CniEnv& env) {
  if (conf.ipam_type.empty())
    return cni_error(kInvalidConfig, "the vxfed config has no \"ipam\" section; vxfed delegates addresses to an IPAM plugin such as host-local");
  if (auto v = bandwidth_validate(conf); !v) return v.error();
  auto wanted = requested(conf, env);
  if (!wanted) return wanted.error();
  auto store = StateStore::open(conf.state_dir);
  if (!store) return store.error();
  auto client = VxfeddClient::connect(conf.socket, static_cast<int>(conf.timeout_ms));
  if (!client) return client.error();
  replay_pending(*store, *client);

  auto network = get_network(*client, conf);
  if (!network) return network.error();
  if (network->block)
    if (auto r = check_requested_in_blocks(*wanted, static_addresses(conf.raw), network->blocks, conf.network); !r)
      return r.error();
  const auto service_cidrs = merge_service_cidrs(conf.service_cidrs, network->services);
  if (auto bad = service_cidrs_problem(service_cidrs, network->subnet, network->remote, conf.network))
    return cni_error(kInvalidConfig, *bad);
  auto nsfd = NetnsFd::open(env.netns);
  if (!nsfd) return nsfd.error();
  auto host_nl = Netlink::open();
  if (!host_nl) return iface_error("cannot talk to the kernel (rtnetlink)", host_nl.error());
  auto pod_nl = Netlink::open_in(nsfd->fd());
  if (!pod_nl) return iface_error("cannot talk to the kernel in the pod's namespace " + env.netns, pod_nl.error());

  const std::string host = host_iface_name(env.container_id, env.ifname);
  {
    auto existing = host_nl->get_link(host);
    if (!existing) return iface_error("cannot look up " + host, existing.error());
    if (existing->has_value())
      return iface_error("the host interface " + host + " for " + env.container_id + "/" + env.ifname +
                             " already exists: this attachment was added before; DEL it first", "");
    auto in_pod = pod_nl->get_link(env.ifname);
    if (!in_pod) return iface_error("cannot look up " + env.ifname + " in the pod", in_pod.error());
    if (in_pod->has_value())
      return iface_error("the pod's namespace already has an interface named " + env.ifname +
                             "; choose another CNI_IFNAME", "");
  }

  NetConf ipam_conf = ipam_conf_for_add(conf, *network);
  IpamDelegate ipam(ipam_conf, env);  // holds ipam_conf by reference: a new block changes it
  Rollback rollback;  // declared after everything its steps use, so it runs before they go
  auto ip_result = ipam.add();
  if (!ip_result && ipam_exhausted(ip_result.error()) && ipam_takes_node_range(conf.raw)) {
    // Calico's block affinity: the node's blocks are full, one more and one more try.
    auto more = claim_block(*client, conf, *network, ip_result.error());
    if (!more) return more.error();
    *network = std::move(*more);
    ipam_conf = ipam_conf_for_add(conf, *network);
    ip_result = ipam.add();
    if (!ip_result && ipam_exhausted(ip_result.error()))
      return cni_error(kTryAgainLater, "this node's " + blocks_text(network->blocks) + " of vxfed network \"" +
                                           conf.network + "\" were taken by other pods' ADDs at the same time; try again",
                       ip_result.error().msg);
  }
  if (!ip_result) return ip_result.error();
  rollback.push("IPAM DEL", [&] {
    if (auto r = ipam.del(); !r) spdlog::error("rollback: {} ({})", r.error().msg, r.error().details);
  });

  std::optional<net::Ipv4Interface> address;
  for (const auto& ip : ip_result->ips) {
    if (ip.address.find(':') != std::string::npos)
      return cni_error(kUnsupportedField, "IPAM plugin \"" + conf.ipam_type + "\" returned the IPv6 address " + ip.address +
                                              "; vxfed networks are IPv4 only: remove IPv6 ranges from \"ipam\"");
    auto p = net::Ipv4Interface::parse(ip.address);
    if (!p) return cni_error(kDecodeFailure, "IPAM returned an invalid address", p.error());
    if (!address) address = *p;
  }
  if (!address)
    return cni_error(kIpamFailure, "IPAM plugin \"" + conf.ipam_type + "\" returned no IPv4 address");
  if (!network->subnet.contains(address->addr))
    return cni_error(kInvalidConfig, "IPAM assigned " + address->str() + ", outside network \"" + conf.network +
                                         "\"'s subnet " + network->subnet.str() + "; fix the IPAM range");
  if (!wanted->ips.empty() &&
      std::find(wanted->ips.begin(), wanted->ips.end(), address->addr) == wanted->ips.end())
    return cni_error(kUnsupportedField, "IPAM plugin \"" + conf.ipam_type + "\" assigned " + address->str() +
                                            ", not the address requested in " + wanted->ips_source +
                                            "; use an IPAM plugin that honours requested addresses (host-local, static)");
  if (network->block && std::none_of(network->blocks.begin(), network->blocks.end(),
                                     [&](const net::Ipv4Prefix& b) { return b.contains(address->addr); }))
    return cni_error(kInvalidConfig, "IPAM assigned " + address->str() + ", outside this node's " +
                                         blocks_text(network->blocks) + " of network \"" + conf.network + "\"",
                     "other nodes route only the block to this node; leave \"ranges\" out of a host-local "
                     "\"ipam\" section (vxfed fills in the node's block) or give ranges inside the block");

  // The veth pair: host end for the dataplane, pod end created directly in the pod's namespace.
  if (auto st = host_nl->create_veth(host, network->mtu + net::kVxlanOverhead, env.ifname, network->mtu, nsfd->fd()); !st)
    return iface_error("cannot create the pod's interface", st.error());
  rollback.push("delete veth", [&] {
    if (auto r = host_nl->delete_link(host); !r) spdlog::error("rollback: {}", r.error());
  });
  disable_ipv6(host);

  auto pod_link = pod_nl->get_link(env.ifname);
  if (!pod_link || !pod_link->has_value())
    return iface_error("the new interface " + env.ifname + " is not in the pod's namespace", pod_link ? "" : pod_link.error());
  const int pod_index = (*pod_link)->index;
  if (wanted->mac) {
    // Before the interface is up and before vxfedd hears of it: the dataplane delivers to
    // the MAC the pod will keep.
    if (auto st = pod_nl->set_mac(pod_index, *wanted->mac); !st)
      return iface_error("cannot set the pod's MAC " + net::format_mac(*wanted->mac) + " (" + wanted->mac_source + ")",
                         st.error());
  }
  if (auto st = pod_nl->set_up(pod_index); !st) return iface_error("cannot bring " + env.ifname + " up", st.error());
  if (auto st = pod_nl->add_address(pod_index, *address); !st)
    return iface_error("cannot assign the IPAM address", st.error());

  // ptp-style routing: no on-link subnet, everything goes to the gateway (the dataplane
  // answers ARP for it), so pods on the same node also meet in the dataplane.
  const net::Ipv4Prefix connected = address->prefix();
  if (auto r = pod_nl->delete_route(pod_index, connected, net::Ipv4Addr{}); !r)
    return iface_error("cannot remove the on-link route " + connected.str(), r.error());
  if (auto st = pod_nl->add_route(pod_index, net::Ipv4Prefix::make(network->gateway, 32), net::Ipv4Addr{}, true); !st)
    return iface_error("cannot add the gateway route", st.error());
  // The node's kernel beside the dataplane (cni/node_path.hpp): before any route via it.
  {
    auto host_end = host_nl->get_link(host);
    if (!host_end || !host_end->has_value()) return iface_error("the host end " + host + " vanished", "");
    if (auto st = add_pod_side(*pod_nl, pod_index, (*host_end)->mac); !st)
      return iface_error("cannot route the pod to the node", st.error());
  }
  CniResult result;
  result.routes.push_back({net::Ipv4Prefix::make(kNodeHop, 32).str(), ""});
  PodRouteSources sources{network->subnet, network->gateway, network->remote, prefixes_of(service_cidrs), {}};
  for (const auto& rt : ip_result->routes) {
    auto dst = route_destination(rt.dst);
    if (!dst) continue;  // IPv6 or not an address: not ours to install
    net::Ipv4Addr gw = network->gateway;
    if (!rt.gw.empty())
      if (auto g = net::Ipv4Addr::parse(rt.gw)) gw = *g;
    sources.ipam.push_back({*dst, gw});
  }
  for (const auto& route : plan_pod_routes(sources)) {
    if (auto st = pod_nl->add_route(pod_index, route.dst, route.gw, false); !st)
      return iface_error("cannot add the route " + route.dst.str() + " via " + route.gw.str() + " in the pod", st.error());
    result.routes.push_back({route.dst.str(), route.gw.str()});
  }

  auto host_link = host_nl->get_link(host);
  if (!host_link || !host_link->has_value()) return iface_error("the host end " + host + " vanished", "");
  if (auto st = host_nl->set_up((*host_link)->index); !st) return iface_error("cannot bring " + host + " up", st.error());
  pod_link = pod_nl->get_link(env.ifname);
  if (!pod_link || !pod_link->has_value()) return iface_error("the pod end " + env.ifname + " vanished", "");
  if (auto st = add_node_side(*host_nl, (*host_link)->index, address->addr, (*pod_link)->mac); !st)
    return iface_error("cannot route the node to the pod", st.error());
  const std::string pod_mac = net::format_mac((*pod_link)->mac);

  if (auto r = bandwidth_attach(conf, env.container_id, env.ifname, env.netns); !r) return r.error();
  rollback.push("bandwidth detach", [&] { (void)bandwidth_detach(env.container_id, env.ifname); });

  pb::ControlRequest req;
  auto* ep = req.mutable_attach_endpoint()->mutable_endpoint();
  ep->set_container_id(env.container_id);
  ep->set_ifname(env.ifname);
  ep->set_network(conf.network);
  ep->set_ip(address->addr.str());
  ep->set_mac(pod_mac);
  ep->set_host_iface(host);
  ep->set_netns(env.netns);
  for (const auto& [k, v] : pod_args(env)) (*ep->mutable_pod())[k] = v;
  // vxfedd answers once the dataplane forwards for the pod (or refused it, or did not within
  // the wait); a refused or timed-out endpoint it has already forgotten. The detach is queued
  // for rollback first: an answer lost on the way leaves nothing registered either.
  req.mutable_attach_endpoint()->set_wait_ms(conf.dataplane_timeout_ms);
  rollback.push("vxfedd detach", [&] { detach_or_queue(*store, &*client, env.container_id, env.ifname, conf.network); });
  auto resp = client->call(req, static_cast<int>(conf.dataplane_timeout_ms));
  if (!resp) return resp.error();
  if (resp->code() != pb::OK)
    return from_vxfedd(*resp, "vxfedd did not register the endpoint " + env.container_id + "/" + env.ifname);
  if (auto st = dataplane_carries(*client, conf, env, resp->endpoint()); !st) return st.error();

  {
    auto guard = store->lock();
    if (!guard) return guard.error();
    AttachmentRecord rec{env.container_id, env.ifname, conf.name, conf.network, env.netns, host,
                         address->str(), pod_mac, conf.ipam_type, now_ms()};
    if (auto st = store->save_record(rec); !st) return st.error();
    // A detach queued for an earlier attachment with the same key is superseded by this one.
    auto queue = store->load_queue();
    if (queue && drop_queued(*queue, env.container_id, env.ifname)) (void)store->save_queue(*queue);
  }

  result.cni_version = conf.cni_version;
  result.interfaces.push_back({host, net::format_mac((*host_link)->mac), "", network->mtu + net::kVxlanOverhead});
  result.interfaces.push_back({env.ifname, pod_mac, env.netns, network->mtu});
  result.ips.push_back({address->str(), network->gateway.str(), 1});
  result.dns = ip_result->dns;
  rollback.dismiss();
  spdlog::info("ADD {}/{}: {} {} on {} (host {}, network {}, vni {})", env.container_id, env.ifname, address->str(),
               pod_mac, env.netns, host, conf.network, network->info.vni());
  return write_result(result, conf.cni_version);
}

// ---------------------------------------------------------------------------------------- DEL

Expected<nlohmann::json> cmd_del(const NetConf& conf, const CniEnv& env) {
  auto store = StateStore::open(conf.state_dir);
  if (!store) return store.error();
  auto client = VxfeddClient::connect(conf.socket, static_cast<int>(conf.timeout_ms));
  if (client) replay_pending(*store, *client);

  const std::string host = host_iface_name(env.container_id, env.ifname);
  const auto record = store->load_record(host);
  const std::string network = record ? record->network : conf.network;
  detach_or_queue(*store, client ? &*client : nullptr, env.container_id, env.ifname, network);

  if (auto r = bandwidth_detach(env.container_id, env.ifname); !r)
    spdlog::warn("DEL {}/{}: {} ({})", env.container_id, env.ifname, r.error().msg, r.error().details);

  auto host_nl = Netlink::open();
  if (!host_nl) return iface_error("cannot talk to the kernel (rtnetlink)", host_nl.error());
  auto deleted = host_nl->delete_link(host);
  if (!deleted) return iface_error("cannot delete the host interface " + host, deleted.error());

  if (!conf.ipam_type.empty()) {
    const NetConf ipam_conf = ipam_conf_for_release(conf, record ? record->address : std::string{});
    IpamDelegate ipam(ipam_conf, env);
    if (auto r = ipam.del(); !r) return r.error();
  }
  if (auto r = store->remove_record(host); !r) return r.error();
  spdlog::info("DEL {}/{}: host interface {} {}", env.container_id, env.ifname, host,
               *deleted ? "deleted" : "was already gone");
  return nlohmann::json();
}

// -------------------------------------------------------------------------------------- CHECK

Expected<nlohmann::json> cmd_check(const NetConf& conf, const CniEnv& env) {
  if (!supports_check(conf.version))
    return cni_error(kIncompatibleVersion, "CHECK needs cniVersion 0.4.0 or later; the config says " + conf.cni_version);
  if (!conf.prev_result)
    return cni_error(kInvalidConfig, "CHECK needs prevResult: the runtime passes the cached ADD result");
  if (conf.ipam_type.empty()) return cni_error(kInvalidConfig, "the vxfed config has no \"ipam\" section");
  const CniResult& prev = *conf.prev_result;
  auto fail = [&](const std::string& what) {
    return cni_error(kCheckFailed, "CHECK " + env.container_id + "/" + env.ifname + ": " + what);
  };

  int prev_index = -1;
  for (std::size_t i = 0; i < prev.interfaces.size(); ++i)
    if (prev.interfaces[i].name == env.ifname && !prev.interfaces[i].sandbox.empty()) prev_index = static_cast<int>(i);
  if (prev_index < 0) return fail("prevResult has no interface " + env.ifname + " with a sandbox");
  const auto& prev_iface = prev.interfaces[static_cast<std::size_t>(prev_index)];

  auto client = VxfeddClient::connect(conf.socket, static_cast<int>(conf.timeout_ms));
  if (!client) return client.error();
  auto nsfd = NetnsFd::open(env.netns);
  if (!nsfd) return nsfd.error();
  auto pod_nl = Netlink::open_in(nsfd->fd());
  if (!pod_nl) return iface_error("cannot talk to the kernel in the pod's namespace", pod_nl.error());
  auto link = pod_nl->get_link(env.ifname);
  if (!link) return iface_error("cannot look up " + env.ifname, link.error());
  if (!link->has_value()) return fail("the pod has no interface " + env.ifname);
  const LinkInfo& l = **link;
  if (l.kind != "veth") return fail(env.ifname + " is a " + (l.kind.empty() ? std::string("non-veth") : l.kind) + " link, not a veth");
  if (!l.up) return fail(env.ifname + " is down");
  if (auto prev_mac = net::parse_mac(prev_iface.mac); !prev_iface.mac.empty() && prev_mac && *prev_mac != l.mac)
    return fail(env.ifname + " has MAC " + net::format_mac(l.mac) + ", prevResult says " + prev_iface.mac);
  if (prev_iface.mtu && *prev_iface.mtu != l.mtu)
    return fail(env.ifname + " has MTU " + std::to_string(l.mtu) + ", prevResult says " + std::to_string(*prev_iface.mtu));

  auto offloads = read_offloads(nsfd->fd(), env.ifname);
  if (!offloads) return iface_error("cannot read offloads of " + env.ifname, offloads.error());
  // ADD leaves the veth's offloads on: the dataplane takes super-packets and pending
  // checksums (docs/pod-ports.md). Off means something else changed the pod's interface.
  if (!offloads->tx_checksum || !offloads->tso || !offloads->gso)
    return fail(env.ifname + " has TX checksum/TSO/GSO offload off; ADD left them on (the dataplane takes the pod's "
                "super-packets): something changed the interface");

  auto addrs = pod_nl->addresses(l.index);
  if (!addrs) return iface_error("cannot list addresses", addrs.error());
  std::string our_ip;
  for (const auto& ip : prev.ips) {
    if (ip.interface && *ip.interface != prev_index) continue;
    auto p = net::Ipv4Interface::parse(ip.address);
    if (!p) return fail("prevResult has an invalid address: " + p.error());
    if (std::find(addrs->begin(), addrs->end(), *p) == addrs->end()) return fail(env.ifname + " lacks address " + ip.address);
    if (our_ip.empty()) our_ip = p->addr.str();
  }
  auto routes = pod_nl->routes(l.index);
  if (!routes) return iface_error("cannot list routes", routes.error());
  for (const auto& rt : prev.routes) {
    auto dst = route_destination(rt.dst);
    if (!dst) continue;
    net::Ipv4Addr gw;
    if (!rt.gw.empty())
      if (auto g = net::Ipv4Addr::parse(rt.gw)) gw = *g;
    const bool present = std::any_of(routes->begin(), routes->end(), [&](const RouteEntry& e) {
      return e.dst == *dst && (gw.value == 0 || e.gateway == gw);
    });
    if (!present) return fail("the route " + rt.dst + (rt.gw.empty() ? "" : " via " + rt.gw) + " is missing");
  }
  // The service range too (the config's and the one vxfedd hands over), whatever prevResult
  // says: a pod attached before the range was configured lacks it, and reaches no VIP until it
  // is re-created.
  auto network = get_network(*client, conf);
  if (!network) return network.error();
  const auto service_cidrs = merge_service_cidrs(conf.service_cidrs, network->services);
  if (auto gw = net::Ipv4Addr::parse(prev_gateway(prev, prev_index)); gw) {
    for (const auto& cidr : service_cidrs) {
      const bool present = std::any_of(routes->begin(), routes->end(),
                                       [&](const RouteEntry& e) { return e.dst == cidr.prefix && e.gateway == *gw; });
      if (!present)
        return fail("the route " + cidr.prefix.str() + " via " + gw->str() + " (" + cidr.field +
                    ") is missing: it was deleted, or the pod was attached before the service range was configured "
                    "(re-create the pod)");
    }
  } else if (!service_cidrs.empty()) {
    return fail("prevResult has no gateway for " + env.ifname + " to check the service range's routes against");
  }
  auto host_nl = Netlink::open();
  if (!host_nl) return iface_error("cannot talk to the kernel (rtnetlink)", host_nl.error());
  const std::string host = host_iface_name(env.container_id, env.ifname);
  auto host_link = host_nl->get_link(host);
  if (!host_link) return iface_error("cannot look up " + host, host_link.error());
  if (!host_link->has_value()) return fail("the host end " + host + " is missing");
  if (!(*host_link)->up) return fail("the host end " + host + " is down");
  if (auto ip = net::Ipv4Addr::parse(our_ip)) {
    auto problem = node_path_problem(*host_nl, (*host_link)->index, *pod_nl, l.index, *ip);
    if (!problem) return iface_error("cannot read the node's path to the pod", problem.error());
    if (!problem->empty()) return fail(*problem);
  }

  pb::ControlRequest req;
  req.mutable_check_endpoint()->set_container_id(env.container_id);
  req.mutable_check_endpoint()->set_ifname(env.ifname);
  auto resp = client->call(req);
  if (!resp) return resp.error();
  if (resp->code() == pb::NOT_FOUND) return fail("vxfedd has no endpoint for it");
  if (resp->code() != pb::OK) return from_vxfedd(*resp, "vxfedd could not check the endpoint");
  const auto& ep = resp->endpoint();
  if (!our_ip.empty() && ep.spec().ip() != our_ip)
    return fail("vxfedd has IP " + ep.spec().ip() + " for it, the pod has " + our_ip);
  if (ep.spec().host_iface() != host) return fail("vxfedd attaches host interface " + ep.spec().host_iface() + ", expected " + host);
  if (auto mac = net::parse_mac(ep.spec().mac()); !mac || *mac != l.mac)
    return fail(env.ifname + " has MAC " + net::format_mac(l.mac) + " but the dataplane delivers its traffic to " +
                ep.spec().mac() + " (registered at ADD): a plugin after vxfed changed the MAC; request the MAC "
                "from vxfed (CNI_ARGS MAC, runtimeConfig.mac or args.cni.mac) instead");
  // Last of vxfedd's checks: a transient state is 11 (try again), not "different from prevResult".
  if (auto problem = dataplane_problem(ep, "endpoint " + env.container_id + "/" + env.ifname)) return *problem;

  if (auto r = bandwidth_check(conf, env.container_id, env.ifname, env.netns); !r) return r.error();
  const NetConf ipam_conf = ipam_conf_for_release(conf, prev.ips.empty() ? std::string{} : prev.ips.front().address);
  IpamDelegate ipam(ipam_conf, env);
  if (auto r = ipam.check(); !r) return r.error();
  return nlohmann::json();
}

// ----------------------------------------------------------------------------------------- GC

Expected<nlohmann::json> cmd_gc(const NetConf& conf, const CniEnv& env) {
  if (!supports_gc_and_status(conf.version))
    return cni_error(kIncompatibleVersion, "GC needs cniVersion 1.1.0; the config says " + conf.cni_version);
  auto store = StateStore::open(conf.state_dir);
  if (!store) return store.error();
  auto client = VxfeddClient::connect(conf.socket, static_cast<int>(conf.timeout_ms));
  if (client) replay_pending(*store, *client);
  const std::set<Attachment> valid(conf.valid_attachments.begin(), conf.valid_attachments.end());
  auto host_nl = Netlink::open();
  if (!host_nl) return iface_error("cannot talk to the kernel (rtnetlink)", host_nl.error());

  std::optional<CniError> first_error;
  std::vector<Attachment> keep_in_vxfedd(valid.begin(), valid.end());
  int removed = 0;
  for (const auto& rec : store->list_records()) {
    if (rec.config_name != conf.name) {
      // Another config on the same vxfed network: vxfedd's GC below must not touch it.
      if (rec.network == conf.network) keep_in_vxfedd.push_back({rec.container_id, rec.ifname});
      continue;
    }
    if (valid.count({rec.container_id, rec.ifname})) continue;
    spdlog::info("GC: removing stale attachment {}/{} ({})", rec.container_id, rec.ifname, rec.host_iface);
    detach_or_queue(*store, client ? &*client : nullptr, rec.container_id, rec.ifname, rec.network);
    (void)bandwidth_detach(rec.container_id, rec.ifname);
    if (auto d = host_nl->delete_link(rec.host_iface); !d) {
      if (!first_error) first_error = iface_error("GC: cannot delete " + rec.host_iface, d.error());
      continue;
    }
    if (!conf.ipam_type.empty()) {
      const NetConf ipam_conf = ipam_conf_for_release(conf, rec.address);
      IpamDelegate ipam(ipam_conf, env);
      if (auto r = ipam.del(rec.container_id, rec.ifname, rec.netns); !r) {
        if (!first_error) first_error = r.error();
        continue;
      }
    }
    (void)store->remove_record(rec.host_iface);
    ++removed;
  }
  if (client) {
    pb::ControlRequest req;
    auto* gc = req.mutable_garbage_collect();
    for (const auto& a : keep_in_vxfedd) {
      auto* v = gc->add_valid();
      v->set_container_id(a.container_id);
      v->set_ifname(a.ifname);
    }
    gc->add_networks(conf.network);
    auto resp = client->call(req);
    if (resp && resp->code() == pb::OK) {
      for (const auto& spec : resp->gc().removed())
        spdlog::info("GC: vxfedd removed endpoint {}/{}", spec.container_id(), spec.ifname());
    } else if (resp) {
      spdlog::warn("GC: vxfedd refused garbage collection: {}", resp->error());
    }
  }
  spdlog::info("GC {}: removed {} stale attachments", conf.name, removed);
  if (first_error) return *first_error;
  return nlohmann::json();
}

// ------------------------------------------------------------------------------------- STATUS

Expected<nlohmann::json> cmd_status(const NetConf& conf, const CniEnv& env) {
  if (!supports_gc_and_status(conf.version))
    return cni_error(kIncompatibleVersion, "STATUS needs cniVersion 1.1.0; the config says " + conf.cni_version);
  auto client = VxfeddClient::connect(conf.socket, static_cast<int>(conf.timeout_ms));
  if (!client) return cni_error(kNotAvailable, client.error().msg, client.error().details);
  if (auto store = StateStore::open(conf.state_dir)) replay_pending(*store, *client);
  pb::ControlRequest req;
  req.mutable_get_status();
  auto resp = client->call(req);
  if (!resp) return cni_error(kNotAvailable, resp.error().msg, resp.error().details);
  if (resp->code() != pb::OK) return cni_error(kNotAvailable, "vxfedd is not ready: " + resp->error());
  const auto& st = resp->status();
  if (!st.dataplane_connected()) return cni_error(kNotAvailable, "vxfedd is up but the dataplane is not connected to it");
  if (!st.dataplane_ready()) return cni_error(kNotAvailable, "the dataplane has not applied vxfedd's tables yet");
  if (!conf.ipam_type.empty()) {
    if (auto found = find_plugin(conf.ipam_type, env.path); !found)
      return cni_error(kNotAvailable, found.error().msg, found.error().details);
  }
  if (st.bgp_enabled() && !st.fpm_connected())
    return cni_error(kLimitedConnectivity, "pods on this node can attach, but routes from other clusters are not "
                                           "arriving (FRR's route feed, bgpd's BMP session or zebra's FPM "
                                           "stream, is not connected to vxfedd)");
  return nlohmann::json();
}

}  // namespace vxfed::cni
