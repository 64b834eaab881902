#include "control/daemon_config.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include "common/net/ipv4.hpp"
#include "common/net/vxlan.hpp"
#include "control/names.hpp"
#include "bgp/config.hpp"

namespace vxfed::control {

namespace {

// Carries the dotted path of the node being read so every error names its field.
struct ConfigError {
  std::string field;
  std::string reason;
};

class Reader {
 public:
  Reader(const YAML::Node& node, std::string path) : node_(node), path_(std::move(path)) {}

  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const std::string& path() const { return path_; }
  const YAML::Node& node() const { return node_; }

  // Every key must be one we know: a typo must not silently fall back to a default.
  void allow(std::initializer_list<const char*> keys) const {
    if (!node_ || node_.IsNull()) return;
    if (!node_.IsMap()) throw ConfigError{path_.empty() ? "(top level)" : path_, "must be a mapping"};
    std::set<std::string> known(keys.begin(), keys.end());
    for (const auto& kv : node_) {
      const auto key = kv.first.as<std::string>();
      if (!known.count(key)) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        throw ConfigError{field(key), "unknown key (expected one of: " + list + ")"};
      }
    }
  }

  bool has(const char* key) const { return node_ && node_.IsMap() && node_[key] && !node_[key].IsNull(); }

  Reader child(const char* key) const { return Reader(node_ && node_.IsMap() ? node_[key] : YAML::Node(), field(key)); }

  std::string str(const char* key, const std::string& fallback, bool required = false) const {
    if (!has(key)) {
      if (required) throw ConfigError{field(key), "is required"};
      return fallback;
    }
    const auto& v = node_[key];
    if (!v.IsScalar()) throw ConfigError{field(key), "must be a string"};
    return v.as<std::string>();
  }

  std::uint64_t num(const char* key, std::uint64_t fallback, std::uint64_t min, std::uint64_t max,
                    bool required = false) const {
    if (!has(key)) {
      if (required) throw ConfigError{field(key), "is required"};
      return fallback;
    }
    const auto& v = node_[key];
    std::uint64_t value = 0;
    if (!v.IsScalar() || !YAML::convert<std::uint64_t>::decode(v, value) || v.Scalar().find('-') == 0)
      throw ConfigError{field(key), "'" + (v.IsScalar() ? v.Scalar() : std::string("<non-scalar>")) +
                                        "' is not a non-negative integer"};
    if (value < min || value > max)
      throw ConfigError{field(key), std::to_string(value) + " is outside " + std::to_string(min) + ".." +
                                        std::to_string(max)};
    return value;
  }

  std::map<std::string, std::string> string_map(const char* key) const {
    std::map<std::string, std::string> out;
    if (!has(key)) return out;
    const auto& v = node_[key];
    if (!v.IsMap()) throw ConfigError{field(key), "must be a mapping of strings"};
    for (const auto& kv : v) {
      if (!kv.second.IsScalar()) throw ConfigError{field(key) + "." + kv.first.as<std::string>(), "must be a string"};
      out[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
    return out;
  }

  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const auto& v = node_[key];
    bool value = false;
    if (!v.IsScalar() || !YAML::convert<bool>::decode(v, value))
      throw ConfigError{field(key), "'" + (v.IsScalar() ? v.Scalar() : std::string("<non-scalar>")) +
                                        "' is not true or false"};
    return value;
  }

  std::vector<YAML::Node> list(const char* key) const {
    std::vector<YAML::Node> out;
    if (!has(key)) return out;
    const auto& v = node_[key];
    if (!v.IsSequence()) throw ConfigError{field(key), "must be a list"};
    for (const auto& item : v) out.push_back(item);
    return out;
  }

 private:
  YAML::Node node_;
  std::string path_;
};

std::vector<std::string> string_list(const Reader& r, const char* key) {
  std::vector<std::string> out;
  auto items = r.list(key);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!items[i].IsScalar()) throw ConfigError{r.field(key) + "[" + std::to_string(i) + "]", "must be a string"};
    out.push_back(items[i].as<std::string>());
  }
  return out;
}

std::string index_field(const std::string& base, std::size_t i) { return base + "[" + std::to_string(i) + "]"; }

NetworkConfig read_network(const Reader& r) {
  r.allow({"name", "labels", "vni", "subnet", "gateway", "mtu", "static_routes"});
  NetworkConfig n;
  n.name = r.str("name", "", true);
  n.labels = r.string_map("labels");
  n.pinned_vni = static_cast<std::uint32_t>(r.num("vni", 0, 0, 0xffffffffu));
  n.subnet = r.str("subnet", "", true);
  n.gateway = r.str("gateway", "");
  n.mtu = static_cast<std::uint32_t>(r.num("mtu", 0, 0, 65535));
  auto routes = r.list("static_routes");
  for (std::size_t i = 0; i < routes.size(); ++i) {
    Reader rr(routes[i], index_field(r.field("static_routes"), i));
    rr.allow({"prefix", "vteps"});
    StaticRoute route{rr.str("prefix", "", true), string_list(rr, "vteps")};
    n.static_routes.push_back(std::move(route));
  }
  return n;
}

void parse_into(Config& c, const YAML::Node& root) {
  Reader top(root, "");
  if (!root || root.IsNull()) throw ConfigError{"(top level)", "the file is empty"};
  top.allow({"node", "cluster", "daemon", "dataplane", "vni", "networks", "bgp", "bpf"});

  Reader node = top.child("node");
  if (!top.has("node")) throw ConfigError{"node", "is required"};
  node.allow({"name", "vtep_ip", "uplink", "underlay_mtu"});
  c.node.name = node.str("name", "", true);
  c.node.vtep_ip = node.str("vtep_ip", "", true);
  if (auto vtep = net::Ipv4Addr::parse(c.node.vtep_ip); !vtep) throw ConfigError{"node.vtep_ip", vtep.error()};
  c.node.uplink = node.str("uplink", "");
  c.node.underlay_mtu = static_cast<std::uint32_t>(node.num("underlay_mtu", 9000, 1280, 9216));

  Reader cluster = top.child("cluster");
  if (!top.has("cluster")) throw ConfigError{"cluster", "is required"};
  cluster.allow({"name", "pod_cidrs", "asn"});
  c.cluster.name = cluster.str("name", "", true);
  if (!is_dns_label(c.cluster.name)) throw ConfigError{"cluster.name", "'" + c.cluster.name + "' must be a DNS label ([a-z0-9-], 1..63)"};
  c.cluster.pod_cidrs = string_list(cluster, "pod_cidrs");
  for (std::size_t i = 0; i < c.cluster.pod_cidrs.size(); ++i)
    if (auto p = net::Ipv4Prefix::parse(c.cluster.pod_cidrs[i]); !p)
      throw ConfigError{index_field("cluster.pod_cidrs", i), p.error()};
  c.cluster.asn = static_cast<std::uint32_t>(cluster.num("asn", 0, 0, 4294967295u));

  Reader daemon = top.child("daemon");
  daemon.allow({"socket", "socket_group", "state_dir", "log_level", "metrics_listen", "max_connections", "idle_timeout_ms"});
  c.daemon.socket = daemon.str("socket", c.daemon.socket);
  c.daemon.socket_group = daemon.str("socket_group", "");
  c.daemon.state_dir = daemon.str("state_dir", c.daemon.state_dir);
  c.daemon.log_level = daemon.str("log_level", c.daemon.log_level);
  static const std::set<std::string> levels{"trace", "debug", "info", "warn", "error", "critical", "off"};
  if (!levels.count(c.daemon.log_level)) throw ConfigError{"daemon.log_level", "'" + c.daemon.log_level + "' is not one of trace, debug, info, warn, error, critical, off"};
  c.daemon.metrics_listen = daemon.str("metrics_listen", c.daemon.metrics_listen);
  if (!c.daemon.metrics_listen.empty()) {
    const auto colon = c.daemon.metrics_listen.rfind(':');
    if (colon == std::string::npos || !net::Ipv4Addr::parse(c.daemon.metrics_listen.substr(0, colon)))
      throw ConfigError{"daemon.metrics_listen", "'" + c.daemon.metrics_listen + "' must be IPV4:PORT (or empty to disable)"};
    unsigned port = 0;
    try { port = static_cast<unsigned>(std::stoul(c.daemon.metrics_listen.substr(colon + 1))); } catch (...) {}
    if (port == 0 || port > 65535) throw ConfigError{"daemon.metrics_listen", "port must be 1..65535"};
  }
  c.daemon.max_connections = static_cast<std::uint32_t>(daemon.num("max_connections", 256, 1, 65536));
  c.daemon.idle_timeout_ms = static_cast<std::uint32_t>(daemon.num("idle_timeout_ms", 30000, 100, 3600000));
  if (c.daemon.socket.empty() || c.daemon.socket.front() != '/') throw ConfigError{"daemon.socket", "must be an absolute path"};
  if (c.daemon.state_dir.empty() || c.daemon.state_dir.front() != '/') throw ConfigError{"daemon.state_dir", "must be an absolute path"};

  Reader dp = top.child("dataplane");
  dp.allow({"socket", "reconnect_min_ms", "reconnect_max_ms", "counters_interval_ms", "request_timeout_ms"});
  c.dataplane.socket = dp.str("socket", c.dataplane.socket);
  c.dataplane.reconnect_min_ms = static_cast<std::uint32_t>(dp.num("reconnect_min_ms", 100, 10, 60000));
  c.dataplane.reconnect_max_ms = static_cast<std::uint32_t>(dp.num("reconnect_max_ms", 5000, 10, 600000));
  if (c.dataplane.reconnect_max_ms < c.dataplane.reconnect_min_ms)
    throw ConfigError{"dataplane.reconnect_max_ms", "must be at least dataplane.reconnect_min_ms"};
  c.dataplane.counters_interval_ms = static_cast<std::uint32_t>(dp.num("counters_interval_ms", 2000, 100, 3600000));
  c.dataplane.request_timeout_ms = static_cast<std::uint32_t>(dp.num("request_timeout_ms", 10000, 100, 600000));

  Reader bpf = top.child("bpf");
  bpf.allow({"reconcile", "pin_root", "grace_seconds"});
  c.bpf.reconcile = bpf.boolean("reconcile", c.bpf.reconcile);
  c.bpf.pin_root = bpf.str("pin_root", "");
  c.bpf.grace_ms = bpf.num("grace_seconds", c.bpf.grace_ms / 1000, 0, 3600) * 1000;
  if (!c.bpf.pin_root.empty() && c.bpf.pin_root.front() != '/') throw ConfigError{"bpf.pin_root", "must be an absolute path"};

  Reader vni = top.child("vni");
  vni.allow({"hold_down_seconds", "pools"});
  c.hold_down_ms = vni.num("hold_down_seconds", vni::kDefaultHoldDownMs / 1000, 0, 30ull * 24 * 3600) * 1000;
  if (!vni.has("pools")) {
    c.pools = {vni::PoolSpec{"federation", {vni::Range{1000, 2000}}, {}}};
  } else {
    auto pools = vni.list("pools");
    if (pools.empty()) throw ConfigError{"vni.pools", "must list at least one pool"};
    for (std::size_t i = 0; i < pools.size(); ++i) {
      Reader p(pools[i], index_field("vni.pools", i));
      p.allow({"name", "ranges", "selector"});
      vni::PoolSpec spec;
      spec.name = p.str("name", "", true);
      if (!is_dns_label(spec.name)) throw ConfigError{p.field("name"), "'" + spec.name + "' must be a DNS label ([a-z0-9-], 1..63)"};
      auto ranges = string_list(p, "ranges");
      if (ranges.empty()) throw ConfigError{p.field("ranges"), "must list at least one range like 1000-2000"};
      for (std::size_t j = 0; j < ranges.size(); ++j) {
        auto range = vni::parse_range(ranges[j]);
        if (!range) throw ConfigError{index_field(p.field("ranges"), j), range.error()};
        spec.ranges.push_back(*range);
      }
      spec.selector = p.string_map("selector");
      c.pools.push_back(std::move(spec));
    }
  }
  if (auto ok = vni::validate_pools(c.pools); !ok) throw ConfigError{"vni.pools", ok.error()};

  auto networks = top.list("networks");
  std::map<std::string, std::size_t> names;
  std::map<std::uint32_t, std::size_t> pins;
  for (std::size_t i = 0; i < networks.size(); ++i) {
    const std::string base = index_field("networks", i);
    Reader r(networks[i], base);
    NetworkConfig n = read_network(r);
    if (auto ok = normalize_network(n, c.node.underlay_mtu); !ok) throw ConfigError{base + "." + ok.error(), ""};
    if (auto [it, fresh] = names.emplace(n.name, i); !fresh)
      throw ConfigError{base + ".name", "'" + n.name + "' is already defined by networks[" + std::to_string(it->second) + "]"};
    if (n.pinned_vni != 0) {
      if (auto [it, fresh] = pins.emplace(n.pinned_vni, i); !fresh)
        throw ConfigError{base + ".vni", std::to_string(n.pinned_vni) + " is already pinned by networks[" + std::to_string(it->second) + "]"};
    } else {
      std::vector<vni::PoolSpec> pools = c.pools;
      auto a = vni::Allocator::create(pools, 0);
      if (a) {
        auto pool = a->select_pool(n.labels);
        if (!pool) throw ConfigError{base + ".labels", pool.error()};
      }
    }
    c.networks.push_back(std::move(n));
  }

  if (top.has("bgp")) {
    c.bgp = root["bgp"];
    auto bgp = vxfed::bgp::parse_config(c.bgp);
    if (!bgp) throw ConfigError{bgp.error(), ""};  // already "bgp.field: reason"
  }
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
  Config c;
  c.source = source;
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    return make_error(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": YAML syntax error: " + e.msg);
  }
  try {
    parse_into(c, root);
  } catch (const ConfigError& e) {
    // Errors carrying "field: reason" in the field (from normalize_network) have no reason.
    return make_error(source + ": " + e.field + (e.reason.empty() ? "" : ": " + e.reason));
  } catch (const YAML::Exception& e) {
    return make_error(source + ": " + e.what());
  }
  return c;
}

Result<Config> load_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(path + ": cannot open the config file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path);
}

}  // namespace vxfed::control
