// Config validation: a good file loads with its defaults; every bad one is refused with an
// error naming the file, the field and the reason.
#include <malloc.h>

#include <gtest/gtest.h>

#include "control/daemon/daemon_config.hpp"

namespace {

using vxfed::control::parse_config;

const char* kGood = R"(
node: {name: node-a1, vtep_ip: 198.18.0.1, uplink: eth1}
cluster: {name: cluster-a, pod_cidrs: [10.244.0.0/16], asn: 65001}
daemon: {socket: /run/vxfed/vxfedd.sock, state_dir: /var/lib/vxfed}
vni:
  hold_down_seconds: 60
  pools:
    - {name: federation, ranges: ["1000-2000"]}
    - {name: gpu, ranges: ["3000-3100", "3200"], selector: {tier: gpu}}
networks:
  - name: red
    subnet: 10.244.1.0/24
    static_routes: [{prefix: 10.245.1.0/24, vteps: [198.18.0.2]}]
  - {name: blue, subnet: 10.244.2.0/24, labels: {tier: gpu}, mtu: 1500}
  - {name: green, subnet: 10.244.3.0/24, vni: 5000, gateway: 10.244.3.254}
bgp: {enabled: false}
)";

TEST(Config, GoodFileLoadsWithDefaults) {
  auto c = parse_config(kGood, "good.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->node.name, "node-a1");
  EXPECT_EQ(c->node.underlay_mtu, 9000u);
  EXPECT_EQ(c->hold_down_ms, 60000u);
  ASSERT_EQ(c->pools.size(), 2u);
  EXPECT_EQ(c->pools[1].ranges.size(), 2u);
  ASSERT_EQ(c->networks.size(), 3u);
  EXPECT_EQ(c->networks[0].gateway, "10.244.1.1");
  EXPECT_EQ(c->networks[0].mtu, 8950u);
  EXPECT_EQ(c->networks[1].mtu, 1500u);
  EXPECT_EQ(c->networks[2].pinned_vni, 5000u);
  EXPECT_EQ(c->networks[0].static_routes.at(0).vteps.at(0), "198.18.0.2");
  EXPECT_FALSE(c->bgp.enabled) << "bgp: {enabled: false} parsed";
  EXPECT_EQ(c->daemon.metrics_listen, "127.0.0.1:9472");
  EXPECT_TRUE(c->bpf.reconcile) << "eBPF pins are reconciled at start-up by default";
  EXPECT_EQ(c->bpf.pin_root, "");
  EXPECT_EQ(c->bpf.grace_ms, 60000u);
}

TEST(Config, BpfSection) {
  auto c = parse_config(std::string(kGood) + "bpf: {reconcile: false, pin_root: /sys/fs/bpf/x, grace_seconds: 5}\n",
                        "bpf.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_FALSE(c->bpf.reconcile);
  EXPECT_EQ(c->bpf.pin_root, "/sys/fs/bpf/x");
  EXPECT_EQ(c->bpf.grace_ms, 5000u);
}

TEST(Config, EmptyValueTakesTheDefault) {
  auto c = parse_config(std::string(kGood) + "bpf: {reconcile: , grace_seconds: ~}\n", "null.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_TRUE(c->bpf.reconcile);
  EXPECT_EQ(c->bpf.grace_ms, 60000u);
}

TEST(Config, DefaultPoolIsTheFederationRange) {
  auto c = parse_config("node: {name: n, vtep_ip: 198.18.0.1}\ncluster: {name: c}\n", "min.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_EQ(c->pools.size(), 1u);
  EXPECT_EQ(c->pools[0].ranges[0].first, 1000u);
  EXPECT_EQ(c->pools[0].ranges[0].last, 2000u);
  EXPECT_EQ(c->hold_down_ms, 300000u);
}

// node.gbp (docs/federation.md, "Nodes"): true unless turned off; the bgp section's GBP mark
// follows it; anything but a boolean is refused naming the field.
TEST(Config, NodeGbpDefaultsOnAndTheBgpMarkFollowsIt) {
  auto on = parse_config("node: {name: n, vtep_ip: 198.18.0.1}\ncluster: {name: c}\n", "on.yaml");
  ASSERT_TRUE(on.ok()) << on.error();
  EXPECT_TRUE(on->node.gbp);
  EXPECT_TRUE(on->bgp.gbp_mark);
  auto off = parse_config("node: {name: n, vtep_ip: 198.18.0.1, gbp: false}\ncluster: {name: c}\n", "off.yaml");
  ASSERT_TRUE(off.ok()) << off.error();
  EXPECT_FALSE(off->node.gbp);
  EXPECT_FALSE(off->bgp.gbp_mark);
  auto bad = parse_config("node: {name: n, vtep_ip: 198.18.0.1, gbp: maybe}\ncluster: {name: c}\n", "bad.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("node.gbp"), std::string::npos) << bad.error();
}

struct Bad {
  const char* what;
  std::string yaml;
  const char* field;
  const char* reason;
};

std::string with(const std::string& from, const std::string& to) {
  std::string text = kGood;
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return text.replace(pos, from.size(), to);
}

TEST(Config, BadFilesNameFileFieldAndReason) {
  const Bad cases[] = {
      {"empty", "", "(top level)", "empty"},
      {"no node", "cluster: {name: c}\n", "node", "required"},
      {"bad vtep", with("198.18.0.1, uplink", "198.18.0.300, uplink"), "node.vtep_ip", "not an IPv4"},
      {"unknown top key", std::string(kGood) + "netwrks: []\n", "netwrks", "unknown key"},
      {"unknown network key", with("mtu: 1500", "mtu: 1500, subnett: x"), "networks[1].subnett", "unknown key"},
      {"bad pod cidr", with("[10.244.0.0/16]", "[10.244.0.1/16]"), "cluster.pod_cidrs[0]", "host bits"},
      {"overlapping pools", with("3000-3100", "1500-3100"), "vni.pools", "overlap"},
      {"reserved vni", with("\"3200\"", "\"16777215\""), "vni.pools", "reserved"},
      {"bad range", with("\"3200\"", "\"32x0\""), "vni.pools[1].ranges[1]", "not a number"},
      {"duplicate network", with("name: blue", "name: red"), "networks[1].name", "already defined"},
      {"bad subnet", with("10.244.2.0/24", "10.244.2.0/33"), "networks[1].subnet", "'10.244.2.0/33' has an invalid prefix length (expected 0..32)"},
      {"mtu too big", with("mtu: 1500", "mtu: 9000"), "networks[1].mtu", "576..8950"},
      {"gateway outside", with("10.244.3.254", "10.244.4.1"), "networks[2].gateway", "not a host address"},
      {"pinned reserved", with("vni: 5000", "vni: 16777215"), "networks[2].vni", "reserved"},
      {"duplicate pin", with("subnet: 10.244.1.0/24", "subnet: 10.244.1.0/24\n    vni: 5000"), "networks[2].vni", "already pinned"},
      {"no pool selects", with("pools:\n    - {name: federation, ranges: [\"1000-2000\"]}\n", "pools:\n"), "networks[0].labels", "no VNI pool"},
      {"bad static vtep", with("vteps: [198.18.0.2]", "vteps: [nope]"), "networks[0].static_routes[0].vteps[0]", "not an IPv4"},
      {"negative number", with("hold_down_seconds: 60", "hold_down_seconds: -1"), "vni.hold_down_seconds", "must be an integer 0..2592000 (got '-1')"},
      {"hex number", with("vni: 5000", "vni: 0x1388"), "networks[2].vni", "must be an integer 0..4294967295 (got '0x1388')"},
      {"bad log level", with("state_dir: /var/lib/vxfed}", "state_dir: /var/lib/vxfed, log_level: loud}"), "daemon.log_level", "not one of"},
      {"yaml syntax", "node: {name: [\n", "bad.yaml:", "YAML syntax error"},
      {"bad metrics", with("state_dir: /var/lib/vxfed}", "state_dir: /var/lib/vxfed, metrics_listen: localhost}"), "daemon.metrics_listen", "IPV4:PORT"},
      {"bpf reconcile not bool", std::string(kGood) + "bpf: {reconcile: maybe}\n", "bpf.reconcile", "must be true or false (got 'maybe')"},
      {"bpf reconcile yaml 1.1", std::string(kGood) + "bpf: {reconcile: no}\n", "bpf.reconcile", "must be true or false (got 'no')"},
      {"bpf relative pin root", std::string(kGood) + "bpf: {pin_root: vxfed}\n", "bpf.pin_root", "absolute"},
      {"bpf unknown key", std::string(kGood) + "bpf: {pinroot: /x}\n", "bpf.pinroot", "unknown key"},
      {"relative state dir", with("state_dir: /var/lib/vxfed}", "state_dir: var}"), "daemon.state_dir", "absolute"},
      {"federation without endpoints", std::string(kGood) + "federation: {key_prefix: /x}\n", "federation.endpoints", "etcd members"},
      {"federation bad endpoint", std::string(kGood) + "federation: {endpoints: [\"etcd:x\"]}\n", "federation.endpoints[0]", "port"},
      {"federation bad prefix", std::string(kGood) + "federation: {endpoints: [\"e:2379\"], key_prefix: vxfed/}\n", "federation.key_prefix", "must start with '/'"},
      {"federation missing CA", std::string(kGood) + "federation: {endpoints: [\"e:2379\"], tls: {ca_file: /nonexistent.pem}}\n", "federation.tls", "cannot be read"},
      {"federation cert without key", std::string(kGood) + "federation: {endpoints: [\"https://e:2379\"], tls: {cert_file: /x.pem}}\n", "federation.tls", "both cert_file and key_file"},
      {"services without range", std::string(kGood) + "services: {}\n", "services.range", "is required"},
      {"services bad range", std::string(kGood) + "services: {range: 10.96.0.0/33}\n", "services.range", "invalid prefix length"},
      {"services range too small", std::string(kGood) + "services: {range: 10.96.0.0/31}\n", "services.range", "length 1 to 30"},
      {"services unknown key", std::string(kGood) + "services: {range: 10.96.0.0/24, cidr: x}\n", "services.cidr", "unknown key"},
      {"services range over pods", std::string(kGood) + "services: {range: 10.244.128.0/24}\n", "services.range", "overlaps cluster.pod_cidrs' 10.244.0.0/16"},
      {"services range over a network", std::string(kGood) + "services: {range: 10.0.0.0/8}\n", "services.range", "overlaps"},
      {"federation unknown key", std::string(kGood) + "federation: {endpoints: [\"e:2379\"], ttl: 3}\n", "federation.ttl", "unknown key"},
      {"static block with federation", with("mtu: 1500", "mtu: 1500, block: 10.244.2.0/25") + "federation: {endpoints: [\"e:2379\"]}\n", "networks[1].block", "without federation"},
      {"block outside subnet", with("mtu: 1500", "mtu: 1500, block: 10.244.9.0/25"), "networks[1].block", "not inside subnet"},
      {"block length too short", with("mtu: 1500", "mtu: 1500, block_prefix_len: 16"), "networks[1].block_prefix_len", "cannot be cut"},
      // Issue 37: --check-config said valid for what the daemon refused at start.
      {"peer cluster overlaps our pods",
       with("bgp: {enabled: false}", "bgp: {asn: 65001, router_id: 198.18.0.1, clusters: {b: [10.244.128.0/17]}, "
                                     "peers: [{address: 198.18.0.2, remote_asn: 65002, cluster: b, network: red, "
                                     "accept: [10.250.0.0/16]}]}"),
       "bgp.clusters", "this node's prefix '10.244.0.0/16' overlaps '10.244.128.0/17' of cluster 'b'"},
      {"accept admits our pods",
       with("bgp: {enabled: false}", "bgp: {asn: 65001, router_id: 198.18.0.1, clusters: {b: [10.245.0.0/16]}, "
                                     "peers: [{address: 198.18.0.2, remote_asn: 65002, cluster: b, network: red, "
                                     "accept: [10.245.0.0/16, '10.244.0.0/16 le 24']}]}"),
       "bgp.peers[0].accept[1]", "'10.244.0.0/16 le 24' admits this cluster's own pod CIDR '10.244.0.0/16'"},
      {"accept everything",
       with("bgp: {enabled: false}", "bgp: {asn: 65001, router_id: 198.18.0.1, clusters: {b: [10.245.0.0/16]}, "
                                     "peers: [{address: 198.18.0.2, remote_asn: 65002, cluster: b, network: red, "
                                     "accept: ['0.0.0.0/0 le 32']}]}"),
       "bgp.peers[0].accept[0]", "too wide"},
  };
  for (const auto& c : cases) {
    auto r = parse_config(c.yaml, "bad.yaml");
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(r.error().rfind("bad.yaml", 0), 0u) << c.what << ": " << r.error();
    EXPECT_NE(r.error().find(c.field), std::string::npos) << c.what << ": " << r.error();
    EXPECT_NE(r.error().find(c.reason), std::string::npos) << c.what << ": " << r.error();
  }
}

// A reflector peer (iBGP) accepts this cluster's blocks by design, and reports this node's
// cluster (bgp/peer_status.hpp).
TEST(Config, AReflectorPeerMayAcceptOurOwnCidrs) {
  auto c = parse_config(with("bgp: {enabled: false}",
                             "bgp: {asn: 65001, router_id: 198.18.0.1, clusters: {cluster-a: [10.244.0.0/16], "
                             "b: [10.245.0.0/16]}, peers: [{address: 198.18.0.10, remote_asn: 65001, network: red}, "
                             "{address: 198.18.0.2, remote_asn: 65002, cluster: b, network: red}]}"),
                        "good.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->bgp.local_cluster, "cluster-a");
}

TEST(Config, FederationSection) {
  auto c = parse_config(std::string(kGood) + "federation:\n  endpoints: [\"10.0.0.1:2379\", \"http://10.0.0.2:2379\"]\n"
                        "  key_prefix: /prod/vxfed\n  node_ttl_seconds: 9\n", "fed.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_TRUE(c->federation.enabled);
  EXPECT_EQ(c->federation.endpoints.size(), 2u);
  EXPECT_EQ(c->federation.key_prefix, "/prod/vxfed");
  EXPECT_EQ(c->federation.node_ttl_seconds, 9u);
  EXPECT_EQ(c->federation.request_timeout_ms, 2000u);
  EXPECT_EQ(c->federation.block_release_after_seconds, 86400u);
  auto alone = parse_config(kGood, "good.yaml");
  ASSERT_TRUE(alone.ok());
  EXPECT_FALSE(alone->federation.enabled);
}

TEST(Config, MissingFileIsNamed) {
  auto r = vxfed::control::load_config("/nonexistent/vxfedd.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("/nonexistent/vxfedd.yaml"), std::string::npos);
}

}  // namespace

namespace {

TEST(Config, DocumentedExampleIsValid) {
  auto c = vxfed::control::load_config(std::string(VXFED_SOURCE_DIR) + "/docs/vxfedd.example.yaml");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->networks.size(), 2u);
  EXPECT_EQ(c->pools.size(), 2u);
}

}  // namespace

// vxfedd copies and moves its Config at every SIGHUP (NodeState keeps a copy, the daemon moves
// the new one in). A Config that held yaml-cpp nodes merged every loaded document into the
// next and kept them all alive (the soak saw ~65 KiB a reload): after 300 loads, assigned over
// one long-lived Config as a reload does, the heap must not hold more than one document's worth.
TEST(Config, ReloadsKeepNoEarlierDocumentAlive) {
  const std::string text = std::string(kGood).replace(std::string(kGood).find("bgp: {enabled: false}"), 21,
                                                      "bgp: {enabled: true, asn: 65001, router_id: 198.18.0.1, "
                                                      "clusters: {b: [10.245.0.0/16]}, "
                                                      "peers: [{address: 198.18.0.2, remote_asn: 65002, cluster: b, network: red}]}");
  auto running = parse_config(text, "good.yaml");
  ASSERT_TRUE(running.ok()) << running.error();
  ASSERT_TRUE(running->bgp.enabled);
  vxfed::control::Config kept = *running;  // as NodeState holds one
  const auto in_use = [] { return static_cast<long>(::mallinfo2().uordblks); };
  const long before = in_use();
  for (int i = 0; i < 300; ++i) {
    auto next = parse_config(text, "good.yaml");
    ASSERT_TRUE(next.ok()) << next.error();
    kept = *next;
    *running = std::move(*next);
  }
  const long grown = in_use() - before;
  EXPECT_LT(grown, 256 * 1024) << "the heap grew by " << grown << " bytes over 300 reloads";
}
