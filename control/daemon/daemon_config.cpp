#include "control/daemon/daemon_config.hpp"

#include <set>

#include "bgp/config.hpp"
#include "common/net/ipv4.hpp"
#include "common/net/vxlan.hpp"
#include "common/read_file.hpp"
#include "common/yaml/reader.hpp"
#include "control/federation/bgp_from_config.hpp"
#include "control/node/names.hpp"
#include "federation/etcd_client.hpp"
#include "federation/federation_store.hpp"

namespace vxfed::control {

namespace {

using yaml::fail;
using yaml::Field;

constexpr const char* kDnsLabelRule = "must be a DNS label ([a-z0-9-], 1..63)";

NetworkConfig read_network(const Field& r) {
  r.allow({"name", "labels", "vni", "subnet", "gateway", "mtu", "static_routes", "block_prefix_len", "block"});
  NetworkConfig n;
  n.name = r.required_str("name");
  n.labels = r["labels"].string_map();
  n.pinned_vni = static_cast<std::uint32_t>(r.integer("vni", 0, 0, 0xffffffffu));
  n.subnet = r.required_str("subnet");
  n.gateway = r.str("gateway", "");
  n.mtu = static_cast<std::uint32_t>(r.integer("mtu", 0, 0, 65535));
  n.block_prefix_len = static_cast<std::uint32_t>(r.integer("block_prefix_len", 0, 0, 32));
  n.block = r.str("block", "");
  for (const auto& rr : r["static_routes"].items()) {
    rr.allow({"prefix", "vteps"});
    n.static_routes.push_back(StaticRoute{rr.required_str("prefix"), rr["vteps"].strings()});
  }
  return n;
}

// What the bgp: section cannot check alone, as it does not know this node's cluster.
void check_bgp_against_cluster(Config& c) {
  c.bgp.local_cluster = c.cluster.name;
  std::vector<net::Ipv4Prefix> own;
  for (const auto& cidr : c.cluster.pod_cidrs) own.push_back(*net::Ipv4Prefix::parse(cidr));  // checked above
  // An eBGP peer whose accept list admits our own pods' space could take our routes over (its
  // route would be installed for our own pods). Our reflector's may: it brings our other nodes'.
  for (std::size_t i = 0; i < c.bgp.peers.size(); ++i) {
    const auto& peer = c.bgp.peers[i];
    if (peer.reflector) continue;
    for (std::size_t j = 0; j < peer.accept.size(); ++j) {
      for (const auto& mine : own) {
        if (!peer.accept[j].prefix.overlaps(mine)) continue;
        const std::string field = "bgp.peers[" + std::to_string(i) + "].accept" +
                                  (peer.accept_defaulted ? "" : "[" + std::to_string(j) + "]");
        fail(field, "'" + peer.accept[j].str() + "' admits this cluster's own pod CIDR '" + mine.str() +
                        "' (cluster.pod_cidrs)" +
                        (peer.accept_defaulted ? " (the default: the CIDRs of cluster '" + peer.cluster + "')" : "") +
                        ": a peer could take over routes to our own pods; accept only its cluster's CIDRs");
      }
    }
  }
  // The check a start makes (bgp_from_config.cpp), on the config's networks.
  std::vector<NetworkPrefixes> networks;
  for (const auto& n : c.networks) networks.push_back({n.block, n.subnet});
  const auto ours = advertised_prefixes(c.cluster.pod_cidrs, c.federation.enabled, networks);
  if (const std::string why = vxfed::bgp::own_prefix_overlap(ours, c.bgp); !why.empty())
    fail("bgp.clusters", "this node's prefix " + why);
}

void parse_into(Config& c, const YAML::Node& root) {
  const Field top(root, "");
  if (!top.present()) fail("", "the file is empty");
  top.allow({"node", "cluster", "daemon", "dataplane", "vni", "networks", "bgp", "bpf", "federation", "services"});

  const Field node = top["node"];
  if (!node.present()) node.fail("is required");
  node.allow({"name", "vtep_ip", "uplink", "underlay_mtu", "gbp"});
  c.node.name = node.required_str("name");
  c.node.vtep_ip = node.required_str("vtep_ip");
  if (auto vtep = net::Ipv4Addr::parse(c.node.vtep_ip); !vtep) node["vtep_ip"].fail(vtep.error());
  c.node.uplink = node.str("uplink", "");
  c.node.underlay_mtu = static_cast<std::uint32_t>(node.integer("underlay_mtu", 9000, 1280, 9216));
  c.node.gbp = node.boolean("gbp", true);

  const Field cluster = top["cluster"];
  if (!cluster.present()) cluster.fail("is required");
  cluster.allow({"name", "pod_cidrs", "asn"});
  c.cluster.name = cluster.required_str("name");
  if (!is_dns_label(c.cluster.name)) cluster["name"].fail("'" + c.cluster.name + "' " + kDnsLabelRule);
  for (const auto& cidr : cluster["pod_cidrs"].items()) {
    c.cluster.pod_cidrs.push_back(cidr.str());
    if (auto p = net::Ipv4Prefix::parse(c.cluster.pod_cidrs.back()); !p) cidr.fail(p.error());
  }
  c.cluster.asn = static_cast<std::uint32_t>(cluster.integer("asn", 0, 0, 4294967295u));

  const Field daemon = top["daemon"];
  daemon.allow({"socket", "socket_group", "state_dir", "log_level", "metrics_listen", "metrics_per_vni", "max_connections", "idle_timeout_ms"});
  c.daemon.socket = daemon.str("socket", c.daemon.socket);
  c.daemon.socket_group = daemon.str("socket_group", "");
  c.daemon.state_dir = daemon.str("state_dir", c.daemon.state_dir);
  c.daemon.log_level = daemon.str("log_level", c.daemon.log_level);
  static const std::set<std::string> levels{"trace", "debug", "info", "warn", "error", "critical", "off"};
  if (!levels.count(c.daemon.log_level))
    daemon["log_level"].fail("'" + c.daemon.log_level + "' is not one of trace, debug, info, warn, error, critical, off");
  c.daemon.metrics_listen = daemon.str("metrics_listen", c.daemon.metrics_listen);
  if (!c.daemon.metrics_listen.empty()) {
    const auto colon = c.daemon.metrics_listen.rfind(':');
    if (colon == std::string::npos || !net::Ipv4Addr::parse(c.daemon.metrics_listen.substr(0, colon)))
      daemon["metrics_listen"].fail("'" + c.daemon.metrics_listen + "' must be IPV4:PORT (or empty to disable)");
    unsigned port = 0;
    try { port = static_cast<unsigned>(std::stoul(c.daemon.metrics_listen.substr(colon + 1))); } catch (...) {}
    if (port == 0 || port > 65535) daemon["metrics_listen"].fail("port must be 1..65535");
  }
  c.daemon.metrics_per_vni = daemon.boolean("metrics_per_vni", true);
  c.daemon.max_connections = static_cast<std::uint32_t>(daemon.integer("max_connections", 256, 1, 65536));
  c.daemon.idle_timeout_ms = static_cast<std::uint32_t>(daemon.integer("idle_timeout_ms", 30000, 100, 3600000));
  if (c.daemon.socket.empty() || c.daemon.socket.front() != '/') daemon["socket"].fail("must be an absolute path");
  if (c.daemon.state_dir.empty() || c.daemon.state_dir.front() != '/') daemon["state_dir"].fail("must be an absolute path");

  const Field dp = top["dataplane"];
  dp.allow({"socket", "reconnect_min_ms", "reconnect_max_ms", "counters_interval_ms", "request_timeout_ms"});
  c.dataplane.socket = dp.str("socket", c.dataplane.socket);
  c.dataplane.reconnect_min_ms = static_cast<std::uint32_t>(dp.integer("reconnect_min_ms", 100, 10, 60000));
  c.dataplane.reconnect_max_ms = static_cast<std::uint32_t>(dp.integer("reconnect_max_ms", 5000, 10, 600000));
  if (c.dataplane.reconnect_max_ms < c.dataplane.reconnect_min_ms)
    dp["reconnect_max_ms"].fail("must be at least dataplane.reconnect_min_ms");
  c.dataplane.counters_interval_ms = static_cast<std::uint32_t>(dp.integer("counters_interval_ms", 2000, 100, 3600000));
  c.dataplane.request_timeout_ms = static_cast<std::uint32_t>(dp.integer("request_timeout_ms", 10000, 100, 600000));

  const Field bpf = top["bpf"];
  bpf.allow({"reconcile", "pin_root", "grace_seconds"});
  c.bpf.reconcile = bpf.boolean("reconcile", c.bpf.reconcile);
  c.bpf.pin_root = bpf.str("pin_root", "");
  c.bpf.grace_ms = bpf.integer("grace_seconds", c.bpf.grace_ms / 1000, 0, 3600) * 1000;
  if (!c.bpf.pin_root.empty() && c.bpf.pin_root.front() != '/') bpf["pin_root"].fail("must be an absolute path");

  if (top.has("federation")) {
    const Field f = top["federation"];
    f.allow({"endpoints", "tls", "key_prefix", "request_timeout_ms", "node_ttl_seconds", "block_release_after_seconds",
             "reconcile_interval_seconds", "empty_block_release_seconds"});
    c.federation.enabled = true;
    const auto endpoints = f["endpoints"].items();
    if (endpoints.empty()) f["endpoints"].fail("must list the etcd members (host:port)");
    for (const auto& e : endpoints) {
      c.federation.endpoints.push_back(e.str());
      federation::EtcdOptions one;
      one.endpoints = {c.federation.endpoints.back()};
      if (auto ok = federation::validate(one); !ok) e.fail(ok.error());
    }
    const Field tls = f["tls"];
    tls.allow({"ca_file", "cert_file", "key_file"});
    c.federation.ca_file = tls.str("ca_file", "");
    c.federation.cert_file = tls.str("cert_file", "");
    c.federation.key_file = tls.str("key_file", "");
    c.federation.key_prefix = f.str("key_prefix", c.federation.key_prefix);
    c.federation.request_timeout_ms = static_cast<std::uint32_t>(f.integer("request_timeout_ms", 2000, 100, 60000));
    c.federation.node_ttl_seconds = static_cast<std::uint32_t>(f.integer("node_ttl_seconds", 15, 3, 3600));
    c.federation.block_release_after_seconds = f.integer("block_release_after_seconds", 86400, 0, 365ull * 86400);
    c.federation.reconcile_interval_seconds = static_cast<std::uint32_t>(f.integer("reconcile_interval_seconds", 30, 1, 3600));
    c.federation.empty_block_release_seconds = f.integer("empty_block_release_seconds", 600, 0, 7 * 86400);
    federation::EtcdOptions all;
    all.endpoints = c.federation.endpoints;
    all.ca_file = c.federation.ca_file;
    all.cert_file = c.federation.cert_file;
    all.key_file = c.federation.key_file;
    all.key_prefix = c.federation.key_prefix;
    if (auto ok = federation::validate(all); !ok)
      (ok.error().find("key prefix") != std::string::npos ? f["key_prefix"] : f["tls"]).fail(ok.error());
    if (auto ok = federation::FederationStore::validate_name("node", c.node.name); !ok)
      node["name"].fail(ok.error() + " (it is a key in the federation store)");
  }

  // Global services (docs/services.md): the VIP range; absent, the service requests are refused.
  if (top.has("services")) {
    const Field services = top["services"];
    services.allow({"range", "network"});
    c.services.network = services.str("network", "");
    const Field range = services["range"];
    if (!range.present()) range.fail("is required (the VIP range of global services, like 10.96.0.0/24)");
    auto prefix = net::Ipv4Prefix::parse(range.str());
    if (!prefix) range.fail(prefix.error());
    if (prefix->len == 0 || prefix->len > 30)
      range.fail("'" + range.str() + "' must be a prefix of length 1 to 30 (at least two VIPs besides its network and broadcast)");
    c.services.range = *prefix;
  }

  const Field vni = top["vni"];
  vni.allow({"hold_down_seconds", "pools"});
  c.hold_down_ms = vni.integer("hold_down_seconds", vni::kDefaultHoldDownMs / 1000, 0, 30ull * 24 * 3600) * 1000;
  if (!vni.has("pools")) {
    c.pools = {vni::PoolSpec{"federation", {vni::Range{1000, 2000}}, {}}};
  } else {
    const auto pools = vni["pools"].items();
    if (pools.empty()) vni["pools"].fail("must list at least one pool");
    for (const auto& p : pools) {
      p.allow({"name", "ranges", "selector"});
      vni::PoolSpec spec;
      spec.name = p.required_str("name");
      if (!is_dns_label(spec.name)) p["name"].fail("'" + spec.name + "' " + kDnsLabelRule);
      const auto ranges = p["ranges"].items();
      if (ranges.empty()) p["ranges"].fail("must list at least one range like 1000-2000");
      for (const auto& r : ranges) {
        auto range = vni::parse_range(r.str());
        if (!range) r.fail(range.error());
        spec.ranges.push_back(*range);
      }
      spec.selector = p["selector"].string_map();
      c.pools.push_back(std::move(spec));
    }
  }
  if (auto ok = vni::validate_pools(c.pools); !ok) vni["pools"].fail(ok.error());

  std::map<std::string, std::size_t> names;
  std::map<std::uint32_t, std::size_t> pins;
  const auto networks = top["networks"].items();
  for (std::size_t i = 0; i < networks.size(); ++i) {
    const Field& r = networks[i];
    NetworkConfig n = read_network(r);
    // normalize_network's errors are "field: reason" relative to the network.
    if (auto ok = normalize_network(n, c.node.underlay_mtu); !ok) fail(r.path() + "." + ok.error(), "");
    if (c.federation.enabled && !n.block.empty())
      r["block"].fail("a static block is for vxfedd without federation; with a federation section the store "
                      "allocates each node's block (block_prefix_len sets its size)");
    if (auto [it, fresh] = names.emplace(n.name, i); !fresh)
      r["name"].fail("'" + n.name + "' is already defined by networks[" + std::to_string(it->second) + "]");
    if (n.pinned_vni != 0) {
      if (auto [it, fresh] = pins.emplace(n.pinned_vni, i); !fresh)
        r["vni"].fail(std::to_string(n.pinned_vni) + " is already pinned by networks[" + std::to_string(it->second) + "]");
    } else {
      std::vector<vni::PoolSpec> pools = c.pools;
      auto a = vni::Allocator::create(pools, 0);
      if (a) {
        auto pool = a->select_pool(n.labels);
        if (!pool) r["labels"].fail(pool.error());
      }
    }
    c.networks.push_back(std::move(n));
  }

  // A VIP must never be a pod's address: the forwarder would not know whether a packet to it
  // is for the pod or for the service. The range stays clear of the pods' space.
  if (c.services.range) {
    const Field range = top["services"]["range"];
    for (const auto& cidr : c.cluster.pod_cidrs)
      if (auto p = net::Ipv4Prefix::parse(cidr); p && p->overlaps(*c.services.range))
        range.fail(c.services.range->str() + " overlaps cluster.pod_cidrs' " + p->str() + " (VIPs must not be pod addresses)");
    for (std::size_t i = 0; i < c.networks.size(); ++i)
      if (auto p = net::Ipv4Prefix::parse(c.networks[i].subnet); p && p->overlaps(*c.services.range))
        range.fail(c.services.range->str() + " overlaps networks[" + std::to_string(i) + "].subnet " + p->str() +
                   " (VIPs must not be pod addresses)");
  }

  if (top.has("bgp")) {
    auto bgp = vxfed::bgp::parse_config(root["bgp"]);
    if (!bgp) fail(bgp.error(), "");  // already "bgp.field: reason"
    else c.bgp = std::move(*bgp);
    if (c.bgp.enabled) check_bgp_against_cluster(c);
  }
  c.bgp.gbp_mark = c.node.gbp;  // the registration's word (NodeRecord.gbp), carried on our blocks
}

}  // namespace

Status normalize_network(NetworkConfig& n, std::uint32_t underlay_mtu) {
  if (!is_dns_label(n.name)) return make_error("name: '" + n.name + "' must be a DNS label ([a-z0-9-], 1..63)");
  if (n.pinned_vni != 0 && (n.pinned_vni < vni::kMinVni || n.pinned_vni > vni::kMaxVni))
    return make_error("vni: " + std::to_string(n.pinned_vni) + " is outside 1-16777214 (0 and 16777215 are reserved)");
  auto subnet = net::Ipv4Prefix::parse(n.subnet);
  if (!subnet) return make_error("subnet: " + subnet.error());
  if (subnet->len > 30) return make_error("subnet: " + n.subnet + " is too small for pods and a gateway (at most /30)");
  if (n.gateway.empty()) n.gateway = net::Ipv4Addr{subnet->addr + 1}.str();
  auto gw = net::Ipv4Addr::parse(n.gateway);
  if (!gw) return make_error("gateway: " + gw.error());
  if (!subnet->contains(*gw) || *gw == subnet->network() || *gw == subnet->last())
    return make_error("gateway: " + n.gateway + " is not a host address of subnet " + n.subnet);
  const std::uint32_t max_mtu = net::pod_mtu(underlay_mtu);
  if (n.mtu == 0) n.mtu = max_mtu;
  if (n.mtu < 576 || n.mtu > max_mtu)
    return make_error("mtu: " + std::to_string(n.mtu) + " must be 576.." + std::to_string(max_mtu) +
                      " (underlay MTU " + std::to_string(underlay_mtu) + " minus " +
                      std::to_string(net::kVxlanOverhead) + " bytes of VXLAN)");
  for (const auto& [k, v] : n.labels)
    if (k.empty()) return make_error("labels: empty label key");
  if (n.block_prefix_len != 0 && (n.block_prefix_len < subnet->len || n.block_prefix_len > 30))
    return make_error("block_prefix_len: /" + std::to_string(n.block_prefix_len) + " blocks cannot be cut from subnet " +
                      n.subnet + " (" + std::to_string(subnet->len) + "..30, or 0 for /24)");
  if (!n.block.empty()) {
    auto block = net::Ipv4Prefix::parse(n.block);
    if (!block) return make_error("block: " + block.error());
    if (!subnet->contains(*block)) return make_error("block: " + n.block + " is not inside subnet " + n.subnet);
  }
  for (std::size_t i = 0; i < n.static_routes.size(); ++i) {
    const auto& route = n.static_routes[i];
    const std::string f = "static_routes[" + std::to_string(i) + "]";
    if (auto p = net::Ipv4Prefix::parse(route.prefix); !p) return make_error(f + ".prefix: " + p.error());
    if (route.vteps.empty()) return make_error(f + ".vteps: must list at least one VTEP address");
    for (std::size_t j = 0; j < route.vteps.size(); ++j)
      if (auto vtep = net::Ipv4Addr::parse(route.vteps[j]); !vtep)
        return make_error(f + ".vteps[" + std::to_string(j) + "]: " + vtep.error());
  }
  return {};
}

Result<Config> parse_config(const std::string& yaml_text, const std::string& source) {
  auto root = yaml::parse(yaml_text, source);
  if (!root) return make_error(root.error());
  return yaml::read(source, [&] {
    Config c;
    c.source = source;
    parse_into(c, *root);
    return c;
  });
}

Result<Config> load_config(const std::string& path) {
  auto text = read_file(path);
  if (!text) return make_error(path + ": cannot open the config file (" + text.error().reason + ")");
  return parse_config(*text, path);
}

}  // namespace vxfed::control
