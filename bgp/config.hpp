// The `bgp:` section of vxfedd's YAML config: who we peer with, what we accept from each peer
// and how FRR is driven. Parsing validates everything up front so that a bad config is a clear
// fatal error at start-up (docs/conventions.md: results and errors). See docs/bgp.md for the YAML reference.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/net/ipv4.hpp"
#include "common/result.hpp"

namespace vxfed::bgp {

// A secret that never prints itself: log lines and error messages show "<redacted>".
// Only the FRR renderer reads `reveal()`, to put it into frr.conf.
class Secret {
 public:
  Secret() = default;
  explicit Secret(std::string value) : value_(std::move(value)) {}
  bool empty() const { return value_.empty(); }
  const std::string& reveal() const { return value_; }
  std::string redacted() const { return value_.empty() ? "" : "<redacted>"; }
  bool operator==(const Secret&) const = default;

 private:
  std::string value_;
};

// One entry of a peer's inbound filter, with FRR prefix-list semantics:
// ge == le == 0 -> exactly `prefix`; otherwise prefixes inside `prefix` whose length is in
// [ge or prefix.len, le or 32].
struct PrefixMatch {
  net::Ipv4Prefix prefix;
  std::uint8_t ge = 0;
  std::uint8_t le = 0;

  bool matches(const net::Ipv4Prefix& p) const;
  std::string str() const;  // "10.245.0.0/16 le 24", the FRR prefix-list syntax
  bool operator==(const PrefixMatch&) const = default;
};

struct PeerConfig {
  net::Ipv4Addr address;
  std::uint32_t remote_asn = 0;
  // iBGP (remote_asn == asn): a route reflector of this node's own cluster, which carries every
  // node's blocks, of this cluster and (reflected from the other clusters' reflectors) of the
  // others. Only in role node. Its session is graceful-restart helper only: when this node's
  // FRR goes away its blocks must be withdrawn at once (docs/bgp.md, "Route reflection").
  bool reflector = false;
  std::string cluster;                 // key of BgpConfig::clusters; "" for a reflector: every cluster
  std::string network;                 // vxfed network of this peer's routes (or vni below)
  std::uint32_t vni = 0;               // fixed VNI instead of network; 0: use network
  Secret password;                     // TCP MD5; empty: none
  std::uint32_t keepalive_s = 3;
  std::uint32_t hold_s = 9;
  std::uint32_t connect_retry_s = 5;
  bool bfd = false;
  bool graceful_restart = true;
  std::uint32_t ebgp_multihop = 0;     // 0: directly connected
  std::string update_source;           // IPv4 or interface name; empty: none
  std::uint32_t max_prefix = 1000;
  // Over max_prefix FRR closes the session; it opens it again after this many minutes (a peer
  // that sent a burst by mistake comes back without `clear bgp`). warning_only instead keeps the
  // session and every route, and only warns and counts.
  std::uint32_t max_prefix_restart_min = 1;
  bool max_prefix_warning_only = false;
  // Underlay ranges the peer's cluster's VTEPs live in (bgp.vtep_ranges of its cluster):
  // next hops outside them are refused. Empty: any next hop.
  std::vector<net::Ipv4Prefix> vtep_ranges;
  std::vector<PrefixMatch> accept;     // never empty after parse (defaults to cluster CIDRs)
  bool accept_defaulted = false;       // accept came from the cluster's CIDRs

  bool accepts(const net::Ipv4Prefix& p) const;
  bool operator==(const PeerConfig&) const = default;
};

enum class ApplyMode { kReload, kVtysh, kNone };

// What the FRR instance is: a vxfed node (vxfedd renders its config: its blocks out, routes in
// over FPM), or a cluster's route reflector (plain FRR, config from vxfed-reflector; no FPM).
enum class Role { kNode, kRouteReflector };

// role route-reflector: the iBGP sessions of this cluster's nodes. One peer group fed by a
// `bgp listen range`, so the reflector's config does not name nodes and nodes come and go
// without a change to it.
struct ReflectorNodes {
  net::Ipv4Prefix listen_range;        // nodes connect from here (their underlay addresses)
  std::vector<net::Ipv4Prefix> cidrs;  // this cluster's pod CIDRs: nodes announce blocks inside them
  std::uint32_t listen_limit = 5000;   // most nodes at once (FRR's bgp listen limit, 1..65535)
  Secret password;
  std::uint32_t keepalive_s = 3;
  std::uint32_t hold_s = 9;
  bool bfd = true;                     // node <-> reflector, FRR's default 300 ms x 3
  std::uint32_t max_prefix = 1000;     // blocks per node
  std::uint32_t max_prefix_restart_min = 1;  // as PeerConfig's
  bool operator==(const ReflectorNodes&) const = default;
};

struct FrrSettings {
  ApplyMode apply = ApplyMode::kReload;
  std::string config_path = "/etc/frr/frr.conf";
  std::string vtysh = "/usr/bin/vtysh";
  std::string reload_script = "/usr/lib/frr/frr-reload.py";
  std::string vty_socket_dir;          // empty: FRR's default
  std::uint32_t status_interval_ms = 2000;
  bool operator==(const FrrSettings&) const = default;
};

inline constexpr std::uint16_t kDefaultFpmPort = 620;
inline constexpr std::uint16_t kZebraDefaultFpmPort = 2620;  // what zebra dials without `port`

struct FpmSettings {
  net::Ipv4Addr listen{0x7f000001};
  // Below 1024, so no unprivileged process can take it first (privileged_port.hpp; zebra's
  // own default, 2620, is any user's); rendered into zebra's `fpm address ... port`.
  std::uint16_t port = kDefaultFpmPort;
  // After zebra (re)connects, routes it did not resend are swept once the stream has been
  // quiet for resync_settle_ms AND at least resync_min_ms have passed since the connection:
  // a restarted zebra needs bgpd to re-learn its routes before its table is complete.
  std::uint32_t resync_settle_ms = 2000;
  std::uint32_t resync_min_ms = 10000;
  // Only a socket owned by this user may feed us routes (zebra drops privileges to it).
  std::string zebra_user = "frr";
  bool operator==(const FpmSettings&) const = default;
};

// How vxfedd learns the routes bgpd selected (docs/bgp.md, "Route feeds"). FPM: zebra streams
// its FIB over FPM; bgpd tracks every next hop, which does not finish at 130,000 VTEPs. BMP:
// bgpd runs as a BGP view (no next-hop tracking, nothing installed in zebra) and streams
// each monitored peer's routes to vxfedd's BMP station.
enum class Feed : std::uint8_t { kFpm, kBmp };

inline constexpr std::uint16_t kDefaultBmpPort = 621;
inline constexpr const char* kBgpViewName = "vxfed";

struct BmpSettings {
  net::Ipv4Addr listen{0x7f000001};
  // Below 1024 for the same reason as the FPM port: bgpd connects out, so whoever binds the
  // port first would get the feed (privileged_port.hpp).
  std::uint16_t port = kDefaultBmpPort;
  // bgpd's reconnect back-off towards the station, rendered into `bmp connect`. FRR's own
  // default (30 s, backing off to 720 s) outlasts vxfedd's route cache.
  std::uint32_t min_retry_ms = 100;
  std::uint32_t max_retry_ms = 1000;
  // How long a route bgpd has not re-sent after a reconnect is kept at most (0: restart_time).
  std::uint32_t stale_time_s = 0;
  // Only a socket owned by this user may feed us routes (bgpd drops privileges to it).
  std::string bgpd_user = "frr";
  bool operator==(const BmpSettings&) const = default;
};

struct BgpConfig {
  bool enabled = false;
  Role role = Role::kNode;
  std::uint32_t asn = 0;
  net::Ipv4Addr router_id;
  bool graceful_restart = true;
  std::uint32_t restart_time_s = 120;
  std::vector<net::Ipv4Prefix> advertise;                       // extra CIDRs to advertise
  std::map<std::string, std::vector<net::Ipv4Prefix>> clusters; // remote cluster -> its CIDRs
  std::map<std::string, std::vector<net::Ipv4Prefix>> vtep_ranges; // remote cluster -> its VTEPs' underlay ranges
  std::vector<PeerConfig> peers;
  ReflectorNodes nodes;                                         // role route-reflector only
  // This node's own cluster (vxfedd: cluster.name; not a key of the bgp: section): the cluster
  // its reflector peers report in their status and metrics. Empty: unknown.
  std::string local_cluster;
  // Not a key of the YAML either: vxfedd sets it from node.gbp, what this node's registration in
  // the federation store says (NodeRecord.gbp). Our blocks then carry the GBP mark
  // (gbp_mark.hpp): the other nodes send this node VXLAN-GBP.
  bool gbp_mark = false;
  FrrSettings frr;
  // parse_config's default: kBmp for a node, kFpm (unused: it installs nothing) for a reflector.
  Feed feed = Feed::kFpm;
  // A route reflector's bgpd as the BGP view `vxfed` (bgp.view, default true): no next-hop
  // tracking (at 130,000 VTEPs it never finishes; and its late answers made a restarted
  // reflector's End-of-RIB sweep its nodes' routes: docs/faults.md), no FIB. A node's bgpd is
  // a view exactly when its feed is bmp.
  bool view = false;
  // Not a key of the YAML: set by the adapter while the running bgpd still holds the default
  // instance although the feed is bmp (a node moving from FPM to BMP): the BMP target is then
  // rendered into `router bgp ASN`, and the view waits in frr.conf for bgpd's next start
  // (instance_kind.hpp; docs/bgp.md, "Moving a running node from FPM to BMP").
  bool bmp_in_default_instance = false;
  FpmSettings fpm;
  BmpSettings bmp;
  bool operator==(const BgpConfig&) const = default;
};

// Parses the node under `bgp:` (a null/undefined node gives enabled=false). Errors name the
// field path and the reason: "bgp.peers[1].hold: must be 0 or 3..65535 (got 2)".
Result<BgpConfig> parse_config(const YAML::Node& bgp);

// Our own prefixes (`ours`: bgp.advertise, or the blocks/CIDRs vxfedd advertises) against the
// CIDRs of the clusters our eBGP peers belong to: the first overlap, as an error naming both
// ("'10.245.128.0/17' overlaps '10.245.0.0/16' of cluster 'b' (bgp.clusters): ..."); empty:
// none. FRR would prefer our own `network` statement and we would lose the route to that
// cluster. Our own cluster's reflector (an iBGP peer) is not compared: its CIDRs hold ours.
std::string own_prefix_overlap(const std::vector<net::Ipv4Prefix>& ours, const BgpConfig& cfg);

const char* to_string(ApplyMode mode);
const char* to_string(Role role);
const char* to_string(Feed feed);

}  // namespace vxfed::bgp
