// Parsing and validation of the `bgp:` config section. yaml-cpp throws on bad conversions;
// every access is wrapped so that the caller only ever sees a Result naming the field.
#include "bgp/config.hpp"

#include <algorithm>
#include <set>

namespace vxfed::bgp {
namespace {

// Thrown internally, turned into a Result at the top; never escapes this file.
struct ConfigError {
  std::string message;
};

[[noreturn]] void fail(const std::string& path, const std::string& reason) {
  throw ConfigError{path + ": " + reason};
}

void check_keys(const YAML::Node& node, const std::string& path,
                std::initializer_list<const char*> allowed) {
  if (!node.IsMap()) fail(path, "must be a mapping");
  for (const auto& kv : node) {
    std::string key = kv.first.Scalar();
    bool ok = std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; });
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      fail(path + "." + key, "unknown key (known: " + list + ")");
    }
  }
}

std::string scalar(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) fail(path, "must be a scalar value");
  return node.Scalar();
}

std::uint64_t integer(const YAML::Node& node, const std::string& path, std::uint64_t lo,
                      std::uint64_t hi) {
  std::string text = scalar(node, path);
  std::uint64_t v = 0;
  bool digits = !text.empty() && std::all_of(text.begin(), text.end(), ::isdigit) && text.size() <= 19;
  if (digits) v = std::stoull(text);
  if (!digits || v < lo || v > hi) {
    fail(path, "must be an integer " + std::to_string(lo) + ".." + std::to_string(hi) + " (got '" +
                   text + "')");
  }
  return v;
}

bool boolean(const YAML::Node& node, const std::string& path) {
  std::string text = scalar(node, path);
  if (text == "true" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "no" || text == "off") return false;
  fail(path, "must be true or false (got '" + text + "')");
}

net::Ipv4Addr address(const YAML::Node& node, const std::string& path) {
  auto a = net::Ipv4Addr::parse(scalar(node, path));
  if (!a) fail(path, a.error());
  return *a;
}

net::Ipv4Prefix prefix(const YAML::Node& node, const std::string& path) {
  auto p = net::Ipv4Prefix::parse(scalar(node, path));
  if (!p) fail(path, p.error());
  return *p;
}

std::vector<net::Ipv4Prefix> prefix_list(const YAML::Node& node, const std::string& path) {
  std::vector<net::Ipv4Prefix> out;
  if (!node || node.IsNull()) return out;
  if (!node.IsSequence()) fail(path, "must be a list of CIDRs");
  for (std::size_t i = 0; i < node.size(); ++i) {
    out.push_back(prefix(node[i], path + "[" + std::to_string(i) + "]"));
  }
  return out;
}

void check_bounds(PrefixMatch& m, const std::string& path) {
  // FRR's prefix-list rule: len < ge <= le <= 32.
  if (m.ge != 0 && m.ge <= m.prefix.len) fail(path, "ge must be greater than the prefix length");
  if (m.le != 0 && m.le <= m.prefix.len) fail(path, "le must be greater than the prefix length");
  if (m.ge != 0 && m.le != 0 && m.le < m.ge) fail(path, "le must be >= ge");
}

// "10.245.0.0/16", "10.245.0.0/16 le 24", or {prefix: .., ge: .., le: ..}.
PrefixMatch prefix_match(const YAML::Node& node, const std::string& path) {
  PrefixMatch m;
  if (node.IsMap()) {
    check_keys(node, path, {"prefix", "ge", "le"});
    if (!node["prefix"]) fail(path + ".prefix", "is required");
    m.prefix = prefix(node["prefix"], path + ".prefix");
    if (node["ge"]) m.ge = static_cast<std::uint8_t>(integer(node["ge"], path + ".ge", 1, 32));
    if (node["le"]) m.le = static_cast<std::uint8_t>(integer(node["le"], path + ".le", 1, 32));
  } else {
    std::string text = scalar(node, path);
    std::vector<std::string> words;
    std::size_t pos = 0;
    while (pos < text.size()) {
      auto next = text.find(' ', pos);
      if (next == std::string::npos) next = text.size();
      if (next > pos) words.push_back(text.substr(pos, next - pos));
      pos = next + 1;
    }
    if (words.empty() || words.size() % 2 == 0) {
      fail(path, "expected 'CIDR [ge N] [le N]' (got '" + text + "')");
    }
    auto p = net::Ipv4Prefix::parse(words[0]);
    if (!p) fail(path, p.error());
    m.prefix = *p;
    for (std::size_t i = 1; i + 1 < words.size(); i += 2) {
      YAML::Node n(words[i + 1]);
      auto v = static_cast<std::uint8_t>(integer(n, path + " " + words[i], 1, 32));
      if (words[i] == "ge") m.ge = v;
      else if (words[i] == "le") m.le = v;
      else fail(path, "unknown keyword '" + words[i] + "' (expected ge or le)");
    }
  }
  check_bounds(m, path);
  return m;
}

// Prefix lengths a match admits.
std::pair<int, int> length_range(const PrefixMatch& m) {
  if (m.ge == 0 && m.le == 0) return {m.prefix.len, m.prefix.len};
  int lo = m.ge ? m.ge : m.prefix.len;
  int hi = m.le ? m.le : 32;
  return {lo, hi};
}

bool overlap(const PrefixMatch& a, const PrefixMatch& b) {
  if (!a.prefix.contains(b.prefix) && !b.prefix.contains(a.prefix)) return false;
  auto [alo, ahi] = length_range(a);
  auto [blo, bhi] = length_range(b);
  int lo = std::max({alo, blo, int(a.prefix.len), int(b.prefix.len)});
  int hi = std::min(ahi, bhi);
  return lo <= hi;
}

PeerConfig parse_peer(const YAML::Node& node, const std::string& path, const BgpConfig& cfg) {
  check_keys(node, path,
             {"address", "remote_asn", "cluster", "network", "vni", "password", "keepalive", "hold",
              "connect_retry", "bfd", "graceful_restart", "ebgp_multihop", "update_source",
              "max_prefix", "accept"});
  PeerConfig p;
  p.graceful_restart = cfg.graceful_restart;
  if (!node["address"]) fail(path + ".address", "is required");
  p.address = address(node["address"], path + ".address");
  if (!node["remote_asn"]) fail(path + ".remote_asn", "is required");
  p.remote_asn = static_cast<std::uint32_t>(integer(node["remote_asn"], path + ".remote_asn", 1, 4294967295u));
  if (p.remote_asn == cfg.asn) {
    fail(path + ".remote_asn", "equals the local asn: vxfed peers between clusters over eBGP");
  }
  if (!node["cluster"]) fail(path + ".cluster", "is required");
  p.cluster = scalar(node["cluster"], path + ".cluster");
  auto cluster = cfg.clusters.find(p.cluster);
  if (cluster == cfg.clusters.end()) {
    fail(path + ".cluster", "'" + p.cluster + "' is not declared under bgp.clusters");
  }
  if (node["network"]) p.network = scalar(node["network"], path + ".network");
  if (node["vni"]) p.vni = static_cast<std::uint32_t>(integer(node["vni"], path + ".vni", 1, 16777214));
  if (p.network.empty() == (p.vni == 0)) {
    fail(path, "exactly one of 'network' (the vxfed network of its routes) or 'vni' is required");
  }
  if (node["password"]) {
    std::string pw = scalar(node["password"], path + ".password");
    // FRR stores it on one config line; TCP MD5 keys are at most 80 bytes (TCP_MD5SIG_MAXKEYLEN).
    if (pw.empty() || pw.size() > 80) fail(path + ".password", "must be 1..80 characters");
    if (pw.find_first_of(" \t\r\n!#") != std::string::npos) {
      fail(path + ".password", "must not contain whitespace, '!' or '#' (FRR config syntax)");
    }
    p.password = Secret(pw);
  }
  if (node["keepalive"]) p.keepalive_s = static_cast<std::uint32_t>(integer(node["keepalive"], path + ".keepalive", 0, 65535));
  if (node["hold"]) p.hold_s = static_cast<std::uint32_t>(integer(node["hold"], path + ".hold", 0, 65535));
  if (p.hold_s != 0 && p.hold_s < 3) fail(path + ".hold", "must be 0 or 3..65535 (got " + std::to_string(p.hold_s) + ")");
  if (p.hold_s != 0 && p.keepalive_s >= p.hold_s) fail(path + ".keepalive", "must be less than hold");
  if (node["connect_retry"]) p.connect_retry_s = static_cast<std::uint32_t>(integer(node["connect_retry"], path + ".connect_retry", 1, 65535));
  if (node["bfd"]) p.bfd = boolean(node["bfd"], path + ".bfd");
  if (node["graceful_restart"]) p.graceful_restart = boolean(node["graceful_restart"], path + ".graceful_restart");
  if (node["ebgp_multihop"]) p.ebgp_multihop = static_cast<std::uint32_t>(integer(node["ebgp_multihop"], path + ".ebgp_multihop", 0, 255));
  if (node["update_source"]) {
    p.update_source = scalar(node["update_source"], path + ".update_source");
    if (p.update_source.empty() || p.update_source.find_first_of(" \t!#") != std::string::npos) {
      fail(path + ".update_source", "must be an IPv4 address or an interface name");
    }
  }
  if (node["max_prefix"]) p.max_prefix = static_cast<std::uint32_t>(integer(node["max_prefix"], path + ".max_prefix", 1, 4294967295u));
  if (node["accept"]) {
    const auto& acc = node["accept"];
    if (!acc.IsSequence() || acc.size() == 0) fail(path + ".accept", "must be a non-empty list");
    for (std::size_t i = 0; i < acc.size(); ++i) {
      p.accept.push_back(prefix_match(acc[i], path + ".accept[" + std::to_string(i) + "]"));
    }
  } else {
    if (cluster->second.empty()) {
      fail(path + ".accept", "is required: cluster '" + p.cluster + "' declares no CIDRs");
    }
    for (const auto& c : cluster->second) p.accept.push_back(PrefixMatch{c, 0, 0});
    p.accept_defaulted = true;
  }
  return p;
}

BgpConfig parse(const YAML::Node& node) {
  BgpConfig cfg;
  if (!node || node.IsNull()) return cfg;
  const std::string root = "bgp";
  check_keys(node, root,
             {"enabled", "asn", "router_id", "graceful_restart", "restart_time", "advertise",
              "clusters", "peers", "frr", "fpm"});
  cfg.enabled = node["enabled"] ? boolean(node["enabled"], root + ".enabled") : true;
  if (!cfg.enabled) return cfg;
  if (!node["asn"]) fail(root + ".asn", "is required");
  cfg.asn = static_cast<std::uint32_t>(integer(node["asn"], root + ".asn", 1, 4294967295u));
  if (!node["router_id"]) fail(root + ".router_id", "is required");
  cfg.router_id = address(node["router_id"], root + ".router_id");
  if (node["graceful_restart"]) cfg.graceful_restart = boolean(node["graceful_restart"], root + ".graceful_restart");
  if (node["restart_time"]) cfg.restart_time_s = static_cast<std::uint32_t>(integer(node["restart_time"], root + ".restart_time", 1, 4095));
  cfg.advertise = prefix_list(node["advertise"], root + ".advertise");
  if (node["clusters"]) {
    const auto& cl = node["clusters"];
    if (!cl.IsMap()) fail(root + ".clusters", "must map cluster names to lists of CIDRs");
    for (const auto& kv : cl) {
      std::string name = kv.first.Scalar();
      if (name.empty()) fail(root + ".clusters", "cluster names must not be empty");
      cfg.clusters[name] = prefix_list(kv.second, root + ".clusters." + name);
    }
  }
  if (node["peers"]) {
    const auto& peers = node["peers"];
    if (!peers.IsSequence()) fail(root + ".peers", "must be a list");
    std::set<std::uint32_t> seen;
    for (std::size_t i = 0; i < peers.size(); ++i) {
      std::string path = root + ".peers[" + std::to_string(i) + "]";
      PeerConfig p = parse_peer(peers[i], path, cfg);
      if (!seen.insert(p.address.value).second) {
        fail(path + ".address", p.address.str() + " is listed twice");
      }
      cfg.peers.push_back(std::move(p));
    }
  }
  // FPM carries no peer identity: a route's VNI comes from the accept lists, so peers of
  // different networks must not accept the same prefix.
  for (std::size_t i = 0; i < cfg.peers.size(); ++i) {
    for (std::size_t j = i + 1; j < cfg.peers.size(); ++j) {
      const auto& a = cfg.peers[i];
      const auto& b = cfg.peers[j];
      if (a.network == b.network && a.vni == b.vni) continue;
      for (const auto& ma : a.accept) {
        for (const auto& mb : b.accept) {
          if (overlap(ma, mb)) {
            fail(root + ".peers[" + std::to_string(j) + "].accept",
                 "'" + mb.str() + "' overlaps '" + ma.str() + "' of peers[" + std::to_string(i) +
                     "], which belongs to another network/VNI; a route's VNI would be ambiguous");
          }
        }
      }
    }
  }
  if (node["frr"]) {
    const auto& f = node["frr"];
    const std::string path = root + ".frr";
    check_keys(f, path, {"apply", "config_path", "vtysh", "reload_script", "vty_socket_dir", "status_interval_ms"});
    if (f["apply"]) {
      std::string mode = scalar(f["apply"], path + ".apply");
      if (mode == "reload") cfg.frr.apply = ApplyMode::kReload;
      else if (mode == "vtysh") cfg.frr.apply = ApplyMode::kVtysh;
      else if (mode == "none") cfg.frr.apply = ApplyMode::kNone;
      else fail(path + ".apply", "must be reload, vtysh or none (got '" + mode + "')");
    }
    if (f["config_path"]) cfg.frr.config_path = scalar(f["config_path"], path + ".config_path");
    if (f["vtysh"]) cfg.frr.vtysh = scalar(f["vtysh"], path + ".vtysh");
    if (f["reload_script"]) cfg.frr.reload_script = scalar(f["reload_script"], path + ".reload_script");
    if (f["vty_socket_dir"]) cfg.frr.vty_socket_dir = scalar(f["vty_socket_dir"], path + ".vty_socket_dir");
    if (f["status_interval_ms"]) cfg.frr.status_interval_ms = static_cast<std::uint32_t>(integer(f["status_interval_ms"], path + ".status_interval_ms", 100, 3600000));
    if (cfg.frr.config_path.empty()) fail(path + ".config_path", "must not be empty");
  }
  if (node["fpm"]) {
    const auto& f = node["fpm"];
    const std::string path = root + ".fpm";
    check_keys(f, path, {"listen", "port", "resync_settle_ms", "resync_min_ms"});
    if (f["listen"]) cfg.fpm.listen = address(f["listen"], path + ".listen");
    if (f["port"]) cfg.fpm.port = static_cast<std::uint16_t>(integer(f["port"], path + ".port", 1, 65535));
    if (f["resync_min_ms"]) cfg.fpm.resync_min_ms = static_cast<std::uint32_t>(integer(f["resync_min_ms"], path + ".resync_min_ms", 0, 3600000));
    if (f["resync_settle_ms"]) cfg.fpm.resync_settle_ms = static_cast<std::uint32_t>(integer(f["resync_settle_ms"], path + ".resync_settle_ms", 0, 600000));
  }
  return cfg;
}

}  // namespace

bool PrefixMatch::matches(const net::Ipv4Prefix& p) const {
  if (!prefix.contains(p)) return false;
  auto [lo, hi] = length_range(*this);
  return p.len >= lo && p.len <= hi;
}

std::string PrefixMatch::str() const {
  std::string s = prefix.str();
  if (ge) s += " ge " + std::to_string(ge);
  if (le) s += " le " + std::to_string(le);
  return s;
}

bool PeerConfig::accepts(const net::Ipv4Prefix& p) const {
  return std::any_of(accept.begin(), accept.end(), [&](const PrefixMatch& m) { return m.matches(p); });
}

Result<BgpConfig> parse_config(const YAML::Node& bgp) {
  try {
    return parse(bgp);
  } catch (const ConfigError& e) {
    return make_error(e.message);
  } catch (const YAML::Exception& e) {
    return make_error(std::string("bgp: invalid YAML: ") + e.what());
  }
}

const char* to_string(ApplyMode mode) {
  switch (mode) {
    case ApplyMode::kReload: return "reload";
    case ApplyMode::kVtysh: return "vtysh";
    case ApplyMode::kNone: return "none";
  }
  return "?";
}

}  // namespace vxfed::bgp
