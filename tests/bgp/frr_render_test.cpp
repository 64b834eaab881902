// FRR renderer: golden files (tests/bgp/golden/*.conf). To update them after an intended
// change: VXFED_UPDATE_GOLDEN=1 build-x/tests/bgp/bgp_frr_render_test, then review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "bgp/config.hpp"
#include "bgp/frr_render.hpp"
#include "bgp/instance_kind.hpp"
#include "bgp/reflector_render.hpp"
#include "common/read_file.hpp"

#ifndef BGP_GOLDEN_DIR
#error "BGP_GOLDEN_DIR must point at tests/bgp/golden"
#endif

namespace {

using namespace vxfed::bgp;
using vxfed::net::Ipv4Addr, vxfed::net::Ipv4Prefix;

std::string read_file(const std::string& path) {  // "" for a golden file not written yet
  auto text = vxfed::read_file(path);
  return text ? *text : std::string();
}

void check_golden(const std::string& name, const std::string& yaml, const char* vtep,
                  std::vector<const char*> advertise) {
  auto c = parse_config(YAML::Load(yaml));
  ASSERT_TRUE(c.ok()) << c.error();
  RenderInput in{&*c, *Ipv4Addr::parse(vtep), {}};
  for (const char* a : advertise) in.advertise.push_back(*Ipv4Prefix::parse(a));
  const std::string text = render_frr_config(in);
  const std::string path = std::string(BGP_GOLDEN_DIR) + "/" + name + ".conf";
  if (const char* u = std::getenv("VXFED_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(path) << text;
  }
  EXPECT_EQ(text, read_file(path)) << "golden file " << path << " differs";
  EXPECT_EQ(render_frr_config(in), text) << "rendering must be deterministic";
}

TEST(FrrRender, TwoClusterPeer) {
  check_golden("two_cluster", R"(
asn: 65001
feed: fpm
router_id: 198.18.0.1
clusters: {cluster-b: [10.245.0.0/16]}
peers:
  - {address: 198.18.0.2, remote_asn: 65002, cluster: cluster-b, network: fed, keepalive: 1, hold: 3,
     max_prefix: 100, graceful_restart: false}
)", "198.18.0.11", {"10.244.0.0/16"});
}

TEST(FrrRender, EveryOption) {
  check_golden("every_option", R"(
asn: 65001
feed: fpm
router_id: 198.18.0.1
graceful_restart: true
restart_time: 60
advertise: [10.244.128.0/17]
clusters: {b: [10.245.0.0/16], c: [10.246.0.0/16, 10.247.0.0/16]}
peers:
  - address: 198.18.0.2
    remote_asn: 65002
    cluster: b
    network: fed
    password: s3cret
    bfd: true
    ebgp_multihop: 3
    update_source: 198.18.0.1
    connect_retry: 2
    accept: ["10.245.0.0/16 le 24", {prefix: 10.245.0.0/16, ge: 28, le: 32}]
  - {address: 198.18.0.3, remote_asn: 65003, cluster: c, vni: 2000, graceful_restart: false}
fpm: {listen: 127.0.0.1, port: 2700}
)", "198.18.0.11", {"10.244.0.0/16", "10.244.0.0/16"});
}

TEST(FrrRender, NothingToAdvertiseDeniesAll) {
  check_golden("no_advertise", R"(
asn: 65001
feed: fpm
router_id: 198.18.0.1
graceful_restart: false
clusters: {b: [10.245.0.0/16]}
peers: [{address: 198.18.0.2, remote_asn: 65002, cluster: b, network: fed, graceful_restart: true}]
)", "198.18.0.11", {});
}

// The FPM goldens above name `feed: fpm`: the previous release's feed, kept for one release as
// the way back. A node without `feed` learns over BMP; a reflector has no feed to choose.
TEST(BgpConfig, ANodeLearnsOverBmpUnlessItsConfigSaysFpm) {
  auto node = parse_config(YAML::Load("{asn: 65001, router_id: 1.1.1.1}"));
  ASSERT_TRUE(node.ok()) << node.error();
  EXPECT_EQ(node->feed, Feed::kBmp);
  auto fpm = parse_config(YAML::Load("{asn: 65001, router_id: 1.1.1.1, feed: fpm}"));
  ASSERT_TRUE(fpm.ok()) << fpm.error();
  EXPECT_EQ(fpm->feed, Feed::kFpm);
  auto rr = parse_config(YAML::Load(
      "{role: route-reflector, asn: 65001, router_id: 1.1.1.1, nodes: {listen_range: 198.18.0.0/24, cidrs: [10.244.0.0/16]}}"));
  ASSERT_TRUE(rr.ok()) << rr.error();
  EXPECT_EQ(rr->feed, Feed::kFpm);
}

// A node of a cluster: iBGP to its cluster's reflector (helper-only graceful restart, BFD),
// its blocks out with its VTEP as next hop, every cluster's blocks in.
TEST(FrrRender, NodeOfAClusterPeersWithItsReflector) {
  check_golden("node_reflector", R"(
asn: 65001
feed: fpm
router_id: 198.18.0.11
clusters: {cluster-a: [10.244.0.0/16], cluster-b: [10.245.0.0/16]}
peers:
  - {address: 198.18.0.10, remote_asn: 65001, network: fed, bfd: true}
)", "198.18.0.11", {"10.244.3.0/24", "10.246.1.0/26"});
}

// The same node with the BMP feed: bgpd as the view `vxfed` (no next-hop tracking, nothing
// in zebra), no FPM lines, and a BMP target at vxfedd's station with a short back-off. The
// golden file was loaded into FRR 8.4.4 and matches its `show running-config` line for line.
TEST(FrrRender, NodeWithTheBmpFeedRunsAViewWithABmpTarget) {
  check_golden("node_reflector_bmp", R"(
asn: 65001
router_id: 198.18.0.11
feed: bmp
bmp: {port: 622, min_retry_ms: 200, max_retry_ms: 2000}
clusters: {cluster-a: [10.244.0.0/16], cluster-b: [10.245.0.0/16]}
peers:
  - {address: 198.18.0.10, remote_asn: 65001, network: fed, bfd: true}
)", "198.18.0.11", {"10.244.3.0/24"});
}

// A node moving from FPM to BMP while its bgpd still holds the default instance (docs/bgp.md,
// "Moving a running node from FPM to BMP"): the same config but in `router bgp ASN`, the BMP
// target in it, and the status and clear commands addressing the default instance.
TEST(FrrRender, BmpServedFromTheDefaultInstanceWhileBgpdStillRunsIt) {
  auto c = parse_config(YAML::Load(R"(
asn: 65001
router_id: 198.18.0.11
feed: bmp
clusters: {cluster-a: [10.244.0.0/16], cluster-b: [10.245.0.0/16]}
peers:
  - {address: 198.18.0.10, remote_asn: 65001, network: fed, bfd: true}
)"));
  ASSERT_TRUE(c.ok()) << c.error();
  RenderInput in{&*c, *Ipv4Addr::parse("198.18.0.11"), {*Ipv4Prefix::parse("10.244.3.0/24")}};
  const std::string view = render_frr_config(in);
  c->bmp_in_default_instance = true;
  const std::string transitional = render_frr_config(in);
  EXPECT_NE(view.find("router bgp 65001 view vxfed\n"), std::string::npos) << view;
  EXPECT_NE(transitional.find("router bgp 65001\n"), std::string::npos) << transitional;
  EXPECT_EQ(transitional.find(" view "), std::string::npos) << transitional;
  EXPECT_NE(transitional.find(" bmp targets vxfed\n"), std::string::npos) << transitional;
  EXPECT_EQ(transitional.find("fpm address"), std::string::npos) << "zebra's FPM is not the feed any more";
  // Apart from the instance line, the two are the same config.
  std::string same = view;
  same.replace(same.find("router bgp 65001 view vxfed"), 27, "router bgp 65001");
  EXPECT_EQ(same, transitional);
  EXPECT_EQ(bgp_instance_suffix(*c), "");
}

TEST(InstanceKind, ReadFromRunningConfig) {
  EXPECT_EQ(running_instance_kind(""), BgpInstanceKind::kNone);
  EXPECT_EQ(running_instance_kind("frr version 8.4.4\n!\nip prefix-list x seq 5 deny any\n!\nend\n"),
            BgpInstanceKind::kNone);
  EXPECT_EQ(running_instance_kind("!\nrouter bgp 65001\n bgp router-id 1.1.1.1\nexit\n"), BgpInstanceKind::kDefault);
  EXPECT_EQ(running_instance_kind("!\r\nrouter bgp 65001 view vxfed\r\n neighbor x\n"), BgpInstanceKind::kView);
  // Only a line that starts with it: a description that mentions it is not an instance.
  EXPECT_EQ(running_instance_kind(" neighbor 1.1.1.1 description router bgp 1 view x\n"), BgpInstanceKind::kNone);
}

TEST(BgpConfig, BmpSettingsAreCheckedByName) {
  auto bad = parse_config(YAML::Load("{asn: 65001, router_id: 1.1.1.1, feed: zebra}"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("bgp.feed: must be fpm or bmp (got 'zebra')"), std::string::npos) << bad.error();
  bad = parse_config(YAML::Load("{asn: 65001, router_id: 1.1.1.1, feed: bmp, bmp: {min_retry_ms: 500, max_retry_ms: 200}}"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("bgp.bmp.max_retry_ms: must be at least min_retry_ms (500)"), std::string::npos)
      << bad.error();
  bad = parse_config(YAML::Load("{asn: 65001, router_id: 1.1.1.1, bmp: {min_retry_ms: 50}}"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("bgp.bmp.min_retry_ms"), std::string::npos) << bad.error();
  auto good = parse_config(YAML::Load("{asn: 65001, router_id: 1.1.1.1, feed: bmp}"));
  ASSERT_TRUE(good.ok()) << good.error();
  EXPECT_EQ(good->feed, Feed::kBmp);
  EXPECT_EQ(good->bmp.port, kDefaultBmpPort);
  EXPECT_EQ(good->bmp.min_retry_ms, 100u);
  EXPECT_EQ(good->bmp.max_retry_ms, 1000u);
}

TEST(ReflectorRender, ClusterReflector) {
  auto c = parse_config(YAML::Load(R"(
role: route-reflector
asn: 65001
router_id: 198.18.0.10
restart_time: 30
clusters: {cluster-b: [10.245.0.0/16], cluster-c: [10.246.0.0/16, 10.247.0.0/16]}
nodes: {listen_range: 198.18.0.0/28, cidrs: [10.244.0.0/16, 10.248.0.0/16], password: nodesecret, listen_limit: 100}
peers:
  - {address: 198.18.0.20, remote_asn: 65002, cluster: cluster-b, bfd: true, password: rrsecret}
  - {address: 198.18.1.30, remote_asn: 65003, cluster: cluster-c, ebgp_multihop: 4, update_source: 198.18.0.10,
     graceful_restart: false, max_prefix: 300000, accept: ["10.246.0.0/16 le 26"]}
)"));
  ASSERT_TRUE(c.ok()) << c.error();
  const std::string text = render_reflector_config(*c);
  const std::string path = std::string(BGP_GOLDEN_DIR) + "/reflector.conf";  // a view: the default
  if (const char* u = std::getenv("VXFED_UPDATE_GOLDEN"); u && std::string(u) == "1") std::ofstream(path) << text;
  EXPECT_EQ(text, read_file(path)) << "golden file " << path << " differs";
  EXPECT_EQ(render_reflector_config(*c), text);
  EXPECT_EQ(redact_frr_text(text).find("secret"), std::string::npos);
}

// The reflector as the default instance (bgp.view: false; a view is the default, as in
// ClusterReflector): next hops tracked, and a table-map keeps the routes out of zebra's FIB.
// A node may not set view (its feed decides).
TEST(ReflectorRender, NotAView) {
  auto c = parse_config(YAML::Load(R"(
role: route-reflector
asn: 65001
router_id: 198.18.0.10
view: false
clusters: {cluster-b: [10.245.0.0/16]}
nodes: {listen_range: 198.18.0.0/28, cidrs: [10.244.0.0/16]}
peers:
  - {address: 198.18.0.20, remote_asn: 65002, cluster: cluster-b, bfd: true}
)"));
  ASSERT_TRUE(c.ok()) << c.error();
  const std::string text = render_reflector_config(*c);
  const std::string path = std::string(BGP_GOLDEN_DIR) + "/reflector_default_instance.conf";
  if (const char* u = std::getenv("VXFED_UPDATE_GOLDEN"); u && std::string(u) == "1") std::ofstream(path) << text;
  EXPECT_EQ(text, read_file(path)) << "golden file " << path << " differs";
  EXPECT_NE(text.find("router bgp 65001\n"), std::string::npos);
  EXPECT_NE(text.find("  table-map vxfed-no-fib\n"), std::string::npos);
  auto node = parse_config(YAML::Load("{asn: 65001, router_id: 1.1.1.1, view: true}"));
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.error().find("bgp.view: a route reflector's setting"), std::string::npos) << node.error();
}

TEST(FrrRender, RedactionHidesPasswords) {
  auto c = parse_config(YAML::Load(R"(
asn: 65001
router_id: 198.18.0.1
clusters: {b: [10.245.0.0/16]}
peers: [{address: 198.18.0.2, remote_asn: 65002, cluster: b, network: fed, password: hunter2pass}]
)"));
  ASSERT_TRUE(c.ok());
  RenderInput in{&*c, *Ipv4Addr::parse("198.18.0.11"), {}};
  const std::string text = render_frr_config(in);
  ASSERT_NE(text.find("neighbor 198.18.0.2 password hunter2pass"), std::string::npos);
  const std::string red = redact_frr_text(text);
  EXPECT_EQ(red.find("hunter2pass"), std::string::npos);
  EXPECT_NE(red.find("neighbor 198.18.0.2 password <redacted>"), std::string::npos);
  // frr-reload's own log format (python list of lines) is covered too.
  EXPECT_EQ(redact_frr_text("['router bgp 1\\n neighbor 1.2.3.4 password hunter2pass\\n']").find("hunter2pass"),
            std::string::npos);
}

// The GBP mark (docs/bgp.md, "The GBP mark") is set on what we advertise exactly when the node's
// registration says it takes GBP (BgpConfig::gbp_mark, from node.gbp); nothing else changes.
TEST(FrrRender, GbpMarkOnTheOutboundRouteMapOnlyWhenTheNodeTakesGbp) {
  auto c = parse_config(YAML::Load(R"(
asn: 65001
router_id: 198.18.0.1
clusters: {cluster-b: [10.245.0.0/16]}
peers:
  - {address: 198.18.0.2, remote_asn: 65002, cluster: cluster-b, network: fed}
)"));
  ASSERT_TRUE(c.ok()) << c.error();
  RenderInput in{&*c, *Ipv4Addr::parse("198.18.0.11"), {*Ipv4Prefix::parse("10.244.0.0/24")}};
  const std::string plain = render_frr_config(in);
  EXPECT_EQ(plain.find("large-community"), std::string::npos);
  c->gbp_mark = true;
  const std::string marked = render_frr_config(in);
  const std::string line = " set ip next-hop 198.18.0.11\n set large-community 4200000000:34:1\nexit\n";
  EXPECT_NE(marked.find("route-map vxfed-out permit 10\n match ip address prefix-list vxfed-out\n" + line),
            std::string::npos)
      << marked;
  EXPECT_EQ(marked.size(), plain.size() + std::string(" set large-community 4200000000:34:1\n").size());
}

}  // namespace
