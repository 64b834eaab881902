// Parsing and validation of the `bgp:` config section, read with common/yaml's reader (its
// rules for booleans, integers, unknown keys and errors); the caller only ever sees a Result
// naming the field.
#include "bgp/config.hpp"

#include <algorithm>
#include <set>

#include "common/yaml/reader.hpp"

namespace vxfed::bgp {
namespace {

using yaml::Field;

// A field holding an address (net::Ipv4Addr) or a CIDR (net::Ipv4Prefix), parsed by common/net.
template <typename T>
T parsed(const Field& f) {
  auto v = T::parse(f.str());
  if (!v) f.fail(v.error());
  return *v;
}
net::Ipv4Addr address(const Field& f) { return parsed<net::Ipv4Addr>(f); }
net::Ipv4Prefix prefix(const Field& f) { return parsed<net::Ipv4Prefix>(f); }

std::vector<net::Ipv4Prefix> prefix_list(const Field& f) {
  std::vector<net::Ipv4Prefix> out;
  if (f.present() && !f.node().IsSequence()) f.fail("must be a list of CIDRs");
  for (const auto& item : f.items()) out.push_back(prefix(item));
  return out;
}

void check_bounds(PrefixMatch& m, const Field& f) {
  // FRR's prefix-list rule: len < ge <= le <= 32.
  if (m.ge != 0 && m.ge <= m.prefix.len) f.fail("ge must be greater than the prefix length");
  if (m.le != 0 && m.le <= m.prefix.len) f.fail("le must be greater than the prefix length");
  if (m.ge != 0 && m.le != 0 && m.le < m.ge) f.fail("le must be >= ge");
}

// "10.245.0.0/16", "10.245.0.0/16 le 24", or {prefix: .., ge: .., le: ..}.
PrefixMatch prefix_match(const Field& f) {
  PrefixMatch m;
  if (f.node().IsMap()) {
    f.allow({"prefix", "ge", "le"});
    m.prefix = prefix(f["prefix"]);
    m.ge = static_cast<std::uint8_t>(f.integer("ge", 0, 1, 32));
    m.le = static_cast<std::uint8_t>(f.integer("le", 0, 1, 32));
  } else {
    std::string text = f.str();
    std::vector<std::string> words;
    std::size_t pos = 0;
    while (pos < text.size()) {
      auto next = text.find(' ', pos);
      if (next == std::string::npos) next = text.size();
      if (next > pos) words.push_back(text.substr(pos, next - pos));
      pos = next + 1;
    }
    if (words.empty() || words.size() % 2 == 0) f.fail("expected 'CIDR [ge N] [le N]' (got '" + text + "')");
    auto p = net::Ipv4Prefix::parse(words[0]);
    if (!p) f.fail(p.error());
    m.prefix = *p;
    for (std::size_t i = 1; i + 1 < words.size(); i += 2) {
      if (words[i] != "ge" && words[i] != "le") f.fail("unknown keyword '" + words[i] + "' (expected ge or le)");
      const Field bound(YAML::Node(words[i + 1]), f.path() + " " + words[i]);
      (words[i] == "ge" ? m.ge : m.le) = static_cast<std::uint8_t>(bound.integer(1, 32));
    }
  }
  check_bounds(m, f);
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

std::string password(const Field& f) {
  const std::string pw = f.str();
  // FRR stores it on one config line; TCP MD5 keys are at most 80 bytes (TCP_MD5SIG_MAXKEYLEN).
  if (pw.empty() || pw.size() > 80) f.fail("must be 1..80 characters");
  if (pw.find_first_of(" \t\r\n!#") != std::string::npos) f.fail("must not contain whitespace, '!' or '#' (FRR config syntax)");
  return pw;
}

void check_timers(std::uint32_t keepalive, std::uint32_t hold, const Field& f) {
  if (hold != 0 && hold < 3) f["hold"].fail("must be 0 or 3..65535 (got " + std::to_string(hold) + ")");
  if (hold != 0 && keepalive >= hold) f["keepalive"].fail("must be less than hold");
}

PeerConfig parse_peer(const Field& f, const BgpConfig& cfg) {
  f.expect_map();
  f.allow({"address", "remote_asn", "cluster", "network", "vni", "password", "keepalive", "hold",
           "connect_retry", "bfd", "graceful_restart", "ebgp_multihop", "update_source",
           "max_prefix", "max_prefix_restart", "max_prefix_warning_only", "accept"});
  PeerConfig p;
  p.address = address(f["address"]);
  p.remote_asn = static_cast<std::uint32_t>(f.required_integer("remote_asn", 1, 4294967295u));
  p.reflector = p.remote_asn == cfg.asn;
  if (p.reflector && cfg.role == Role::kRouteReflector)
    f["remote_asn"].fail("equals the local asn: a route reflector's peers are the other clusters' reflectors "
                         "(eBGP); its own nodes are bgp.nodes");
  p.cluster = p.reflector ? f.str("cluster", "") : f.required_str("cluster");
  auto cluster = cfg.clusters.find(p.cluster);
  if (!p.cluster.empty() && cluster == cfg.clusters.end())
    f["cluster"].fail("'" + p.cluster + "' is not declared under bgp.clusters");
  p.network = f.str("network", "");
  p.vni = static_cast<std::uint32_t>(f.integer("vni", 0, 1, 16777214));
  if (cfg.role == Role::kRouteReflector) {
    if (!p.network.empty() || p.vni != 0)
      f.fail("'network' and 'vni' are for nodes: a route reflector passes routes on and installs none");
  } else if (p.network.empty() == (p.vni == 0)) {
    f.fail("exactly one of 'network' (the vxfed network of its routes) or 'vni' is required");
  }
  if (f.has("password")) p.password = Secret(password(f["password"]));
  p.keepalive_s = static_cast<std::uint32_t>(f.integer("keepalive", p.keepalive_s, 0, 65535));
  p.hold_s = static_cast<std::uint32_t>(f.integer("hold", p.hold_s, 0, 65535));
  check_timers(p.keepalive_s, p.hold_s, f);
  p.connect_retry_s = static_cast<std::uint32_t>(f.integer("connect_retry", p.connect_retry_s, 1, 65535));
  p.bfd = f.boolean("bfd", p.bfd);
  p.graceful_restart = f.boolean("graceful_restart", cfg.graceful_restart && !p.reflector);
  if (p.reflector && p.graceful_restart)
    f["graceful_restart"].fail("must be false for a route reflector: the reflector must withdraw this node's blocks "
                               "the moment its FRR goes away (the session is graceful-restart helper only, so this "
                               "node keeps the reflector's routes while the reflector restarts)");
  p.ebgp_multihop = static_cast<std::uint32_t>(f.integer("ebgp_multihop", 0, 0, 255));
  if (f.has("update_source")) {
    p.update_source = f["update_source"].str();
    if (p.update_source.empty() || p.update_source.find_first_of(" \t!#") != std::string::npos)
      f["update_source"].fail("must be an IPv4 address or an interface name");
  }
  // Through reflectors come every node's blocks (65,000 per cluster at the scale vxfed is for).
  const std::uint32_t max_prefix = p.reflector || cfg.role == Role::kRouteReflector ? 1000000 : p.max_prefix;
  p.max_prefix = static_cast<std::uint32_t>(f.integer("max_prefix", max_prefix, 1, 4294967295u));
  p.max_prefix_warning_only = f.boolean("max_prefix_warning_only", false);
  if (p.max_prefix_warning_only && f.has("max_prefix_restart"))
    f["max_prefix_restart"].fail("has no meaning with max_prefix_warning_only: true (the session is never closed)");
  p.max_prefix_restart_min =
      static_cast<std::uint32_t>(f.integer("max_prefix_restart", p.max_prefix_restart_min, 1, 65535));
  if (auto r = cfg.vtep_ranges.find(p.cluster); r != cfg.vtep_ranges.end()) p.vtep_ranges = r->second;
  if (f.has("accept")) {
    const auto accept = f["accept"].items();
    if (accept.empty()) f["accept"].fail("must be a non-empty list");
    for (const auto& item : accept) {
      p.accept.push_back(prefix_match(item));
      // 0.0.0.0/0 in any form admits a default route (every destination would go to this peer)
      // or, with le/ge, any prefix at all: the accept list would filter nothing.
      if (p.accept.back().prefix.len == 0)
        item.fail("'" + p.accept.back().str() + "' is too wide: it admits the default route or any prefix; list the "
                  "CIDRs of the peer's cluster (bgp.clusters)");
    }
  } else if (p.reflector || cfg.role == Role::kRouteReflector) {
    // Node blocks, any length: of every declared cluster through our reflector, of the peer's
    // cluster from another cluster's reflector.
    std::vector<net::Ipv4Prefix> cidrs;
    if (!p.cluster.empty()) cidrs = cluster->second;
    else
      for (const auto& [name, list] : cfg.clusters) cidrs.insert(cidrs.end(), list.begin(), list.end());
    if (cidrs.empty()) f["accept"].fail("is required: bgp.clusters declares no CIDRs for it");
    for (const auto& c : cidrs) p.accept.push_back(PrefixMatch{c, 0, c.len < 32 ? std::uint8_t{32} : std::uint8_t{0}});
    p.accept_defaulted = true;
  } else {
    if (cluster->second.empty()) f["accept"].fail("is required: cluster '" + p.cluster + "' declares no CIDRs");
    for (const auto& c : cluster->second) p.accept.push_back(PrefixMatch{c, 0, 0});
    p.accept_defaulted = true;
  }
  return p;
}

}  // namespace

std::string own_prefix_overlap(const std::vector<net::Ipv4Prefix>& ours, const BgpConfig& cfg) {
  for (const auto& peer : cfg.peers) {
    if (peer.reflector || peer.cluster.empty()) continue;  // our own cluster's reflector
    auto cluster = cfg.clusters.find(peer.cluster);
    if (cluster == cfg.clusters.end()) continue;
    for (const auto& mine : ours) {
      for (const auto& theirs : cluster->second) {
        if (mine.overlaps(theirs))
          return "'" + mine.str() + "' overlaps '" + theirs.str() + "' of cluster '" + peer.cluster +
                 "' (bgp.clusters): our own route would replace theirs";
      }
    }
  }
  return {};
}

namespace {

BgpConfig parse(const YAML::Node& node) {
  BgpConfig cfg;
  const Field root(node, "bgp");
  if (!root.present()) return cfg;
  root.allow({"enabled", "role", "asn", "router_id", "graceful_restart", "restart_time", "advertise",
              "clusters", "vtep_ranges", "peers", "nodes", "frr", "fpm", "feed", "bmp", "view"});
  cfg.enabled = root.boolean("enabled", true);
  if (!cfg.enabled) return cfg;
  if (root.has("role")) {
    const std::string role = root["role"].str();
    if (role == "node") cfg.role = Role::kNode;
    else if (role == "route-reflector") cfg.role = Role::kRouteReflector;
    else root["role"].fail("must be node or route-reflector (got '" + role + "')");
  }
  cfg.asn = static_cast<std::uint32_t>(root.required_integer("asn", 1, 4294967295u));
  cfg.router_id = address(root["router_id"]);
  cfg.graceful_restart = root.boolean("graceful_restart", cfg.graceful_restart);
  cfg.restart_time_s = static_cast<std::uint32_t>(root.integer("restart_time", cfg.restart_time_s, 1, 4095));
  cfg.advertise = prefix_list(root["advertise"]);
  if (root.has("clusters")) {
    const Field cl = root["clusters"];
    if (!cl.node().IsMap()) cl.fail("must map cluster names to lists of CIDRs");
    for (const auto& [name, cidrs] : cl.entries()) {
      if (name.empty()) cl.fail("cluster names must not be empty");
      cfg.clusters[name] = prefix_list(cidrs);
    }
  }
  if (const Field n = root["nodes"]; cfg.role == Role::kRouteReflector) {
    n.allow({"listen_range", "cidrs", "listen_limit", "password", "keepalive", "hold", "bfd", "max_prefix",
             "max_prefix_restart"});
    if (!n.present()) n.fail("is required for role route-reflector (the nodes' listen range and pod CIDRs)");
    auto& nodes = cfg.nodes;
    nodes.listen_range = prefix(n["listen_range"]);
    nodes.cidrs = prefix_list(n["cidrs"]);
    if (nodes.cidrs.empty()) n["cidrs"].fail("is required: the cluster's pod CIDRs, inside which nodes announce blocks");
    nodes.listen_limit = static_cast<std::uint32_t>(n.integer("listen_limit", nodes.listen_limit, 1, 65535));
    if (n.has("password")) nodes.password = Secret(password(n["password"]));
    nodes.keepalive_s = static_cast<std::uint32_t>(n.integer("keepalive", nodes.keepalive_s, 0, 65535));
    nodes.hold_s = static_cast<std::uint32_t>(n.integer("hold", nodes.hold_s, 0, 65535));
    check_timers(nodes.keepalive_s, nodes.hold_s, n);
    nodes.bfd = n.boolean("bfd", nodes.bfd);
    nodes.max_prefix = static_cast<std::uint32_t>(n.integer("max_prefix", nodes.max_prefix, 1, 4294967295u));
    nodes.max_prefix_restart_min =
        static_cast<std::uint32_t>(n.integer("max_prefix_restart", nodes.max_prefix_restart_min, 1, 65535));
  } else if (n.present()) {
    n.fail("is for role route-reflector only");
  }
  if (root.has("vtep_ranges")) {
    const Field vr = root["vtep_ranges"];
    if (!vr.node().IsMap()) vr.fail("must map cluster names to lists of underlay CIDRs");
    for (const auto& [name, cidrs] : vr.entries()) {
      if (!cfg.clusters.count(name)) vr.fail("'" + name + "' is not declared under bgp.clusters");
      cfg.vtep_ranges[name] = prefix_list(cidrs);
      if (cfg.vtep_ranges[name].empty()) vr.fail("'" + name + "' lists no ranges (leave the cluster out to allow any)");
    }
  }
  std::set<std::uint32_t> seen;
  for (const auto& peer : root["peers"].items()) {
    PeerConfig p = parse_peer(peer, cfg);
    if (!seen.insert(p.address.value).second) peer["address"].fail(p.address.str() + " is listed twice");
    cfg.peers.push_back(std::move(p));
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
            yaml::fail(root.path() + ".peers[" + std::to_string(j) + "].accept",
                       "'" + mb.str() + "' overlaps '" + ma.str() + "' of peers[" + std::to_string(i) +
                           "], which belongs to another network/VNI; a route's VNI would be ambiguous");
          }
        }
      }
    }
  }
  // An advertised CIDR inside (or around) a peer cluster's pods: FRR would prefer our own
  // `network` statement to the peer's route and this node would silently lose that cluster.
  for (const auto& peer : cfg.peers) {
    if (peer.cluster.empty()) continue;  // our reflector: it brings our own cluster's blocks too
    for (const auto& theirs : cfg.clusters.at(peer.cluster)) {
      for (std::size_t i = 0; i < cfg.advertise.size(); ++i) {
        const auto& ours = cfg.advertise[i];
        const unsigned len = std::min(ours.len, theirs.len);
        if (((ours.addr ^ theirs.addr) & net::prefix_mask(len)) != 0) continue;
        yaml::fail(root.path() + ".advertise[" + std::to_string(i) + "]",
                   "'" + ours.str() + "' overlaps '" + theirs.str() + "' of cluster '" + peer.cluster +
                       "' (peer " + peer.address.str() + "): advertising a peer cluster's pods would make FRR "
                       "prefer our own route to theirs");
      }
    }
  }
  if (const Field f = root["frr"]; f.present()) {
    f.allow({"apply", "config_path", "vtysh", "reload_script", "vty_socket_dir", "status_interval_ms"});
    if (f.has("apply")) {
      const std::string mode = f["apply"].str();
      if (mode == "reload") cfg.frr.apply = ApplyMode::kReload;
      else if (mode == "vtysh") cfg.frr.apply = ApplyMode::kVtysh;
      else if (mode == "none") cfg.frr.apply = ApplyMode::kNone;
      else f["apply"].fail("must be reload, vtysh or none (got '" + mode + "')");
    }
    cfg.frr.config_path = f.str("config_path", cfg.frr.config_path);
    cfg.frr.vtysh = f.str("vtysh", cfg.frr.vtysh);
    cfg.frr.reload_script = f.str("reload_script", cfg.frr.reload_script);
    cfg.frr.vty_socket_dir = f.str("vty_socket_dir", cfg.frr.vty_socket_dir);
    cfg.frr.status_interval_ms =
        static_cast<std::uint32_t>(f.integer("status_interval_ms", cfg.frr.status_interval_ms, 100, 3600000));
    if (cfg.frr.config_path.empty()) f["config_path"].fail("must not be empty");
  }
  if (const Field f = root["fpm"]; f.present()) {
    f.allow({"listen", "port", "resync_settle_ms", "resync_min_ms", "zebra_user"});
    if (f.has("listen")) cfg.fpm.listen = address(f["listen"]);
    cfg.fpm.port = static_cast<std::uint16_t>(f.integer("port", cfg.fpm.port, 1, 65535));
    cfg.fpm.resync_min_ms = static_cast<std::uint32_t>(f.integer("resync_min_ms", cfg.fpm.resync_min_ms, 0, 3600000));
    cfg.fpm.resync_settle_ms =
        static_cast<std::uint32_t>(f.integer("resync_settle_ms", cfg.fpm.resync_settle_ms, 0, 600000));
    cfg.fpm.zebra_user = f.str("zebra_user", cfg.fpm.zebra_user);
  }
  // A node learns routes over BMP unless its config says fpm (the previous release's only feed,
  // kept for one release as the way back: docs/bgp.md, "Route feeds"). A route reflector has
  // no feed of its own to choose: it installs nothing.
  cfg.feed = cfg.role == Role::kNode ? Feed::kBmp : Feed::kFpm;
  if (root.has("feed")) {
    const std::string feed = root["feed"].str();
    if (feed == "fpm") cfg.feed = Feed::kFpm;
    else if (feed == "bmp") cfg.feed = Feed::kBmp;
    else root["feed"].fail("must be fpm or bmp (got '" + feed + "')");
  }
  if (const Field f = root["bmp"]; f.present()) {
    f.allow({"listen", "port", "min_retry_ms", "max_retry_ms", "stale_time", "bgpd_user"});
    if (f.has("listen")) cfg.bmp.listen = address(f["listen"]);
    cfg.bmp.port = static_cast<std::uint16_t>(f.integer("port", cfg.bmp.port, 1, 65535));
    // FRR's bounds for `bmp connect ... min-retry/max-retry` (bgpd/bgp_bmp.c: 100..86400000).
    cfg.bmp.min_retry_ms = static_cast<std::uint32_t>(f.integer("min_retry_ms", cfg.bmp.min_retry_ms, 100, 86400000));
    cfg.bmp.max_retry_ms = static_cast<std::uint32_t>(f.integer("max_retry_ms", cfg.bmp.max_retry_ms, 100, 86400000));
    if (cfg.bmp.max_retry_ms < cfg.bmp.min_retry_ms)
      f["max_retry_ms"].fail("must be at least min_retry_ms (" + std::to_string(cfg.bmp.min_retry_ms) + ")");
    cfg.bmp.stale_time_s = static_cast<std::uint32_t>(f.integer("stale_time", cfg.bmp.stale_time_s, 0, 86400));
    cfg.bmp.bgpd_user = f.str("bgpd_user", cfg.bmp.bgpd_user);
    if (cfg.bmp.bgpd_user.empty()) f["bgpd_user"].fail("must not be empty");
  }
  if (cfg.role == Role::kRouteReflector) {
    cfg.view = root.boolean("view", true);
  } else if (root.has("view")) {
    root["view"].fail("a route reflector's setting; a node's bgpd is a view when bgp.feed is bmp");
  }
  if (root.has("feed") && cfg.feed == Feed::kBmp && cfg.role == Role::kRouteReflector)
    root["feed"].fail("bmp is a node's feed; a route reflector installs nothing (use vxfed-reflector)");
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
  // No file name here: vxfedd's config reader puts it in front ("FILE: bgp.field: reason").
  return yaml::read("", [&] { return parse(bgp); });
}

const char* to_string(Role role) { return role == Role::kNode ? "node" : "route-reflector"; }

const char* to_string(Feed feed) { return feed == Feed::kFpm ? "fpm" : "bmp"; }

const char* to_string(ApplyMode mode) {
  switch (mode) {
    case ApplyMode::kReload: return "reload";
    case ApplyMode::kVtysh: return "vtysh";
    case ApplyMode::kNone: return "none";
  }
  return "?";
}

}  // namespace vxfed::bgp
