// parse_config: defaults, every field, and errors that name the field.
#include <gtest/gtest.h>

#include "bgp/config.hpp"

namespace {

using vxfed::bgp::parse_config;

constexpr const char* kBase = R"(
asn: 65001
router_id: 198.18.0.1
clusters:
  cluster-b: [10.245.0.0/16]
peers:
  - address: 198.18.0.2
    remote_asn: 65002
    cluster: cluster-b
    network: fed
)";

vxfed::Result<vxfed::bgp::BgpConfig> parse(const std::string& yaml) {
  return parse_config(YAML::Load(yaml));
}

TEST(BgpConfig, DefaultsAcceptOnlyTheClusterCidrsExactly) {
  auto c = parse(kBase);
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_EQ(c->peers.size(), 1u);
  const auto& p = c->peers[0];
  EXPECT_TRUE(c->enabled);
  EXPECT_EQ(c->asn, 65001u);
  EXPECT_EQ(c->router_id.str(), "198.18.0.1");
  EXPECT_EQ(p.keepalive_s, 3u);
  EXPECT_EQ(p.hold_s, 9u);
  EXPECT_EQ(p.max_prefix, 1000u);
  EXPECT_TRUE(p.graceful_restart);
  EXPECT_FALSE(p.bfd);
  EXPECT_TRUE(p.password.empty());
  ASSERT_EQ(p.accept.size(), 1u);
  EXPECT_TRUE(p.accept_defaulted);
  EXPECT_TRUE(p.accepts(*vxfed::net::Ipv4Prefix::parse("10.245.0.0/16")));
  EXPECT_FALSE(p.accepts(*vxfed::net::Ipv4Prefix::parse("10.245.1.0/24")));
  EXPECT_FALSE(p.accepts(*vxfed::net::Ipv4Prefix::parse("10.0.0.0/8")));
  EXPECT_EQ(c->fpm.port, 620) << "below 1024: no unprivileged process may take it first";
  EXPECT_EQ(c->fpm.listen.str(), "127.0.0.1");
  EXPECT_EQ(c->frr.apply, vxfed::bgp::ApplyMode::kReload);
}

TEST(BgpConfig, AbsentSectionMeansDisabled) {
  auto c = parse_config(YAML::Node());
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->enabled);
  auto d = parse("enabled: false");
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->enabled);
}

TEST(BgpConfig, EveryPeerField) {
  auto c = parse(R"(
asn: 65001
router_id: 198.18.0.1
graceful_restart: false
restart_time: 30
advertise: [10.244.0.0/16]
clusters: {b: [10.245.0.0/16]}
peers:
  - address: 198.18.0.2
    remote_asn: 4200000000
    cluster: b
    vni: 1500
    password: s3cret
    keepalive: 1
    hold: 3
    connect_retry: 2
    bfd: true
    graceful_restart: true
    ebgp_multihop: 2
    update_source: 198.18.0.1
    max_prefix: 5
    accept: ["10.245.0.0/16 le 24", {prefix: 10.245.128.0/17, ge: 20, le: 28}]
frr: {apply: vtysh, config_path: /tmp/x/frr.conf, vty_socket_dir: /tmp/x, status_interval_ms: 500}
fpm: {listen: 127.0.0.1, port: 2700, resync_settle_ms: 100, resync_min_ms: 200}
)");
  ASSERT_TRUE(c.ok()) << c.error();
  const auto& p = c->peers[0];
  EXPECT_EQ(p.remote_asn, 4200000000u);
  EXPECT_EQ(p.vni, 1500u);
  EXPECT_EQ(p.password.reveal(), "s3cret");
  EXPECT_EQ(p.password.redacted(), "<redacted>");
  EXPECT_EQ(p.keepalive_s, 1u);
  EXPECT_EQ(p.hold_s, 3u);
  EXPECT_EQ(p.connect_retry_s, 2u);
  EXPECT_TRUE(p.bfd);
  EXPECT_TRUE(p.graceful_restart);
  EXPECT_FALSE(c->graceful_restart);
  EXPECT_EQ(c->restart_time_s, 30u);
  EXPECT_EQ(p.ebgp_multihop, 2u);
  EXPECT_EQ(p.update_source, "198.18.0.1");
  EXPECT_EQ(p.max_prefix, 5u);
  ASSERT_EQ(p.accept.size(), 2u);
  EXPECT_EQ(p.accept[0].str(), "10.245.0.0/16 le 24");
  EXPECT_EQ(p.accept[1].str(), "10.245.128.0/17 ge 20 le 28");
  using vxfed::net::Ipv4Prefix;
  EXPECT_TRUE(p.accepts(*Ipv4Prefix::parse("10.245.0.0/16")));
  EXPECT_TRUE(p.accepts(*Ipv4Prefix::parse("10.245.7.0/24")));
  EXPECT_FALSE(p.accepts(*Ipv4Prefix::parse("10.245.7.0/25")));
  EXPECT_TRUE(p.accepts(*Ipv4Prefix::parse("10.245.200.16/28")));
  EXPECT_EQ(c->frr.apply, vxfed::bgp::ApplyMode::kVtysh);
  EXPECT_EQ(c->frr.vty_socket_dir, "/tmp/x");
  EXPECT_EQ(c->fpm.port, 2700);
  EXPECT_EQ(c->fpm.resync_min_ms, 200u);
  ASSERT_EQ(c->advertise.size(), 1u);
}

struct ErrorCase {
  const char* name;
  std::string yaml;
  const char* expected;  // substring of the error
};

std::string with_peer(const std::string& extra) {
  return std::string(kBase) + extra;
}

TEST(BgpConfig, ErrorsNameTheFieldAndReason) {
  const ErrorCase cases[] = {
      {"missing asn", "router_id: 1.2.3.4", "bgp.asn: is required"},
      {"asn zero", "asn: 0\nrouter_id: 1.2.3.4", "bgp.asn: must be an integer 1..4294967295"},
      {"asn text", "asn: abc\nrouter_id: 1.2.3.4", "bgp.asn: must be an integer"},
      {"router id", "asn: 1\nrouter_id: 1.2.3", "bgp.router_id: '1.2.3' is not an IPv4 address"},
      {"unknown key", "asn: 1\nrouter_id: 1.2.3.4\npeerz: []", "bgp.peerz: unknown key"},
      {"host bits", "asn: 1\nrouter_id: 1.2.3.4\nadvertise: [10.244.1.0/16]",
       "bgp.advertise[0]: '10.244.1.0/16' has host bits set (did you mean 10.244.0.0/16?)"},
      {"hold too small", with_peer("    hold: 2\n"), "bgp.peers[0].hold: must be 0 or 3..65535"},
      {"keepalive >= hold", with_peer("    keepalive: 9\n"), "bgp.peers[0].keepalive: must be less than hold"},
      {"reflector with gr", std::string(kBase).replace(std::string(kBase).find("65002"), 5, "65001") +
                                "    graceful_restart: true\n",
       "bgp.peers[0].graceful_restart: must be false for a route reflector"},
      {"role", "asn: 1\nrouter_id: 1.2.3.4\nrole: spine", "bgp.role: must be node or route-reflector (got 'spine')"},
      {"reflector without nodes", "asn: 1\nrouter_id: 1.2.3.4\nrole: route-reflector", "bgp.nodes: is required"},
      {"reflector without cidrs", "asn: 1\nrouter_id: 1.2.3.4\nrole: route-reflector\nnodes: {listen_range: 10.0.0.0/24}",
       "bgp.nodes.cidrs: is required"},
      {"nodes on a node", "asn: 1\nrouter_id: 1.2.3.4\nnodes: {listen_range: 10.0.0.0/24}",
       "bgp.nodes: is for role route-reflector only"},
      {"reflector ibgp peer",
       "asn: 1\nrouter_id: 1.2.3.4\nrole: route-reflector\nnodes: {listen_range: 10.0.0.0/24, cidrs: [10.244.0.0/16]}\n"
       "clusters: {b: [10.245.0.0/16]}\npeers: [{address: 10.0.0.9, remote_asn: 1, cluster: b}]",
       "bgp.peers[0].remote_asn: equals the local asn: a route reflector's peers are the other clusters' reflectors"},
      {"reflector peer network",
       "asn: 1\nrouter_id: 1.2.3.4\nrole: route-reflector\nnodes: {listen_range: 10.0.0.0/24, cidrs: [10.244.0.0/16]}\n"
       "clusters: {b: [10.245.0.0/16]}\npeers: [{address: 10.0.0.9, remote_asn: 2, cluster: b, network: fed}]",
       "'network' and 'vni' are for nodes"},
      {"nodes hold", "asn: 1\nrouter_id: 1.2.3.4\nrole: route-reflector\n"
                     "nodes: {listen_range: 10.0.0.0/24, cidrs: [10.244.0.0/16], hold: 2}",
       "bgp.nodes.hold: must be 0 or 3..65535"},
      {"unknown cluster", std::string(kBase).replace(std::string(kBase).find("cluster: cluster-b"), 18, "cluster: nope"),
       "bgp.peers[0].cluster: 'nope' is not declared under bgp.clusters"},
      {"network and vni", with_peer("    vni: 7\n"), "exactly one of 'network'"},
      {"password space", with_peer("    password: a b\n"), "bgp.peers[0].password: must not contain whitespace"},
      {"accept le", with_peer("    accept: ['10.245.0.0/16 le 8']\n"), "le must be greater than the prefix length"},
      {"accept ge>le", with_peer("    accept: ['10.245.0.0/16 ge 24 le 20']\n"), "le must be >= ge"},
      {"accept word", with_peer("    accept: ['10.245.0.0/16 lt 20']\n"), "unknown keyword 'lt'"},
      {"accept empty", with_peer("    accept: []\n"), "bgp.peers[0].accept: must be a non-empty list"},
      // Issue 37: an accept list of everything filtered nothing.
      {"accept everything", with_peer("    accept: [10.245.0.0/16, '0.0.0.0/0 le 32']\n"),
       "bgp.peers[0].accept[1]: '0.0.0.0/0 le 32' is too wide: it admits the default route or any prefix"},
      {"accept default route", with_peer("    accept: [{prefix: 0.0.0.0/0}]\n"),
       "bgp.peers[0].accept[0]: '0.0.0.0/0' is too wide"},
      {"max prefix", with_peer("    max_prefix: 0\n"), "bgp.peers[0].max_prefix: must be an integer 1.."},
      {"max prefix restart", with_peer("    max_prefix_restart: 0\n"),
       "bgp.peers[0].max_prefix_restart: must be an integer 1..65535"},
      {"max prefix restart and warning-only", with_peer("    max_prefix_restart: 5\n    max_prefix_warning_only: true\n"),
       "bgp.peers[0].max_prefix_restart: has no meaning with max_prefix_warning_only: true"},
      {"advertise a peer cluster's pods", "advertise: [10.245.7.0/24]\n" + std::string(kBase),
       "bgp.advertise[0]: '10.245.7.0/24' overlaps '10.245.0.0/16' of cluster 'cluster-b' (peer 198.18.0.2)"},
      {"advertise around a peer cluster", "advertise: [10.244.0.0/16, 10.0.0.0/8]\n" + std::string(kBase),
       "bgp.advertise[1]: '10.0.0.0/8' overlaps '10.245.0.0/16' of cluster 'cluster-b'"},
      {"bfd", with_peer("    bfd: maybe\n"), "bgp.peers[0].bfd: must be true or false"},
      {"bfd yaml 1.1", with_peer("    bfd: yes\n"), "bgp.peers[0].bfd: must be true or false (got 'yes')"},
      {"hold hex", with_peer("    hold: 0x10\n"), "bgp.peers[0].hold: must be an integer 0..65535 (got '0x10')"},
      {"multihop", with_peer("    ebgp_multihop: 300\n"), "bgp.peers[0].ebgp_multihop: must be an integer 0..255"},
      {"peer typo", with_peer("    hodl: 3\n"), "bgp.peers[0].hodl: unknown key"},
      {"duplicate peer", with_peer("  - {address: 198.18.0.2, remote_asn: 65002, cluster: cluster-b, network: fed}\n"),
       "bgp.peers[1].address: 198.18.0.2 is listed twice"},
      {"overlap across networks",
       with_peer("  - {address: 198.18.0.3, remote_asn: 65003, cluster: cluster-b, network: other,"
                 " accept: ['10.0.0.0/8 le 16']}\n"),
       "overlaps"},
      {"apply mode", "asn: 1\nrouter_id: 1.2.3.4\nfrr: {apply: magic}", "bgp.frr.apply: must be reload, vtysh or none"},
      {"fpm port", "asn: 1\nrouter_id: 1.2.3.4\nfpm: {port: 70000}", "bgp.fpm.port: must be an integer 1..65535"},
  };
  for (const auto& tc : cases) {
    auto c = parse(tc.yaml);
    ASSERT_FALSE(c.ok()) << tc.name;
    EXPECT_NE(c.error().find(tc.expected), std::string::npos)
        << tc.name << ": got '" << c.error() << "', expected it to contain '" << tc.expected << "'";
  }
}

TEST(BgpConfig, MaxPrefixRestartsAfterAMinuteUnlessWarningOnly) {
  auto c = parse(kBase);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->peers[0].max_prefix_restart_min, 1u);
  EXPECT_FALSE(c->peers[0].max_prefix_warning_only);
  c = parse(with_peer("    max_prefix_restart: 15\n"));
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->peers[0].max_prefix_restart_min, 15u);
  c = parse(with_peer("    max_prefix_warning_only: true\n"));
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_TRUE(c->peers[0].max_prefix_warning_only);
  // Our own cluster's aggregate to our reflector is fine: only peer clusters' pods are refused.
  c = parse("advertise: [10.244.0.0/16]\n" + std::string(kBase));
  ASSERT_TRUE(c.ok()) << c.error();
}

// A node of a cluster peers iBGP with its cluster's reflector: no cluster needed, every
// cluster's blocks accepted at any length, graceful restart helper only, a large max-prefix.
TEST(BgpConfig, AReflectorPeerOfANode) {
  auto c = parse(R"(
asn: 65001
router_id: 198.18.0.11
clusters: {cluster-a: [10.244.0.0/16], cluster-b: [10.245.0.0/16]}
peers: [{address: 198.18.0.10, remote_asn: 65001, network: fed, bfd: true}]
)");
  ASSERT_TRUE(c.ok()) << c.error();
  const auto& p = c->peers[0];
  EXPECT_TRUE(p.reflector);
  EXPECT_EQ(p.cluster, "");
  EXPECT_FALSE(p.graceful_restart);
  EXPECT_TRUE(c->graceful_restart);
  EXPECT_EQ(p.max_prefix, 1000000u);
  ASSERT_EQ(p.accept.size(), 2u);
  EXPECT_EQ(p.accept[0].str(), "10.244.0.0/16 le 32");
  EXPECT_EQ(p.accept[1].str(), "10.245.0.0/16 le 32");
  using vxfed::net::Ipv4Prefix;
  EXPECT_TRUE(p.accepts(*Ipv4Prefix::parse("10.245.7.0/24")));
  EXPECT_FALSE(p.accepts(*Ipv4Prefix::parse("10.246.0.0/24")));
}

TEST(BgpConfig, ARouteReflector) {
  auto c = parse(R"(
role: route-reflector
asn: 65001
router_id: 198.18.0.10
clusters: {cluster-b: [10.245.0.0/16]}
nodes: {listen_range: 198.18.0.0/28, cidrs: [10.244.0.0/16], bfd: false, max_prefix: 4}
peers: [{address: 198.18.0.20, remote_asn: 65002, cluster: cluster-b}]
)");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->role, vxfed::bgp::Role::kRouteReflector);
  EXPECT_EQ(c->nodes.listen_range.str(), "198.18.0.0/28");
  EXPECT_EQ(c->nodes.listen_limit, 5000u);
  EXPECT_FALSE(c->nodes.bfd);
  EXPECT_EQ(c->nodes.max_prefix, 4u);
  EXPECT_EQ(c->nodes.keepalive_s, 3u);
  EXPECT_EQ(c->nodes.hold_s, 9u);
  ASSERT_EQ(c->peers.size(), 1u);
  EXPECT_EQ(c->peers[0].accept[0].str(), "10.245.0.0/16 le 32");
  EXPECT_EQ(c->peers[0].max_prefix, 1000000u);
  EXPECT_TRUE(c->peers[0].graceful_restart);
}

TEST(BgpConfig, VtepRangesBelongToDeclaredClusters) {
  auto c = parse(std::string(kBase) + "vtep_ranges:\n  cluster-b: [198.18.0.0/24]\n");
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_EQ(c->peers[0].vtep_ranges.size(), 1u);
  EXPECT_EQ(c->peers[0].vtep_ranges[0].str(), "198.18.0.0/24");
  auto unknown = parse(std::string(kBase) + "vtep_ranges:\n  cluster-x: [198.18.0.0/24]\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("'cluster-x' is not declared"), std::string::npos) << unknown.error();
}

TEST(BgpConfig, SameNetworkPeersMayOverlap) {
  auto c = parse(with_peer("  - {address: 198.18.0.3, remote_asn: 65002, cluster: cluster-b, network: fed}\n"));
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->peers.size(), 2u);
}

TEST(BgpConfig, PasswordNeverInErrors) {
  auto c = parse(with_peer("    password: topsecret\n    hold: 1\n"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().find("topsecret"), std::string::npos);
}

}  // namespace
