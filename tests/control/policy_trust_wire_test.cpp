// control/policy/policy_wire.hpp add_identity_clusters and policy_publisher.hpp
// cluster_cidrs_of (docs/policy.md, "Trusting the identity"): the clusters a NetworkPolicy
// carries for the forwarder's GBP trust check — the identities its tables let a remote node
// claim (local-ingress peers, remote-egress identities), grouped by cluster when the cluster's
// CIDRs are known, in an order that gives equal bytes (the forwarder's side of the same entry:
// tests/dataplane/policy_trust_test.cpp).
#include <gtest/gtest.h>

#include "control/daemon/daemon_config.hpp"
#include "control/policy/policy_publisher.hpp"
#include "control/policy/policy_wire.hpp"

namespace vxfed::control {
namespace {

dp::NetworkPolicy entry_naming(std::initializer_list<std::uint32_t> ingress_peers,
                               std::initializer_list<std::uint32_t> remote_egress) {
  dp::NetworkPolicy p;
  p.set_vni(7);
  p.add_port_sets();
  p.add_port_sets()->set_every_protocol(true);
  auto* in = p.add_local_ingress();
  in->set_isolated(true);
  for (std::uint32_t id : ingress_peers) {
    auto* peer = in->add_peers();
    peer->set_identity(id);
    peer->set_ports(1);
  }
  auto* out = p.add_local_egress();
  out->set_isolated(true);
  out->add_peers()->set_identity(900);  // a destination: no claim anyone makes
  if (remote_egress.size() > 0) {
    auto* group = p.add_remote_egress();
    for (std::uint32_t id : remote_egress) group->add_identities(id);
  }
  return p;
}

TEST(PolicyTrustWire, ClaimableIdentitiesGroupedByKnownCluster) {
  const std::map<std::uint16_t, std::string> clusters = {{1, ""}, {300, "b"}, {301, "a"}, {302, "b"}, {400, "z"},
                                                         {500, "a"}, {900, "a"}};
  const ClusterOf of = [&](std::uint16_t n) -> const std::string* {
    const auto it = clusters.find(n);
    return it == clusters.end() ? nullptr : &it->second;
  };
  const ClusterCidrs cidrs = {{"a", {"10.244.0.0/16"}}, {"b", {"10.245.0.0/16", "10.247.0.0/24"}}};
  auto p = entry_naming({1, 2, 300, 301, 400, 600}, {302, 500});
  add_identity_clusters(p, cidrs, of);
  ASSERT_EQ(p.clusters_size(), 2) << p.DebugString();
  EXPECT_EQ(p.clusters(0).name(), "a");
  EXPECT_EQ(std::vector<std::uint32_t>(p.clusters(0).identities().begin(), p.clusters(0).identities().end()),
            (std::vector<std::uint32_t>{301, 500}))
      << "900 is only a destination (local egress)";
  EXPECT_EQ(p.clusters(1).name(), "b");
  EXPECT_EQ(std::vector<std::uint32_t>(p.clusters(1).identities().begin(), p.clusters(1).identities().end()),
            (std::vector<std::uint32_t>{300, 302}));
  EXPECT_EQ(p.clusters(1).cidrs_size(), 2);
  // 1 (unlabelled, no cluster), 2 and 600 (unknown numbers), 400 (cluster z, CIDRs unknown): not listed.
  // Equal input, equal bytes.
  auto again = entry_naming({1, 2, 300, 301, 400, 600}, {302, 500});
  add_identity_clusters(again, cidrs, of);
  EXPECT_EQ(again.SerializeAsString(), p.SerializeAsString());
  // No CIDRs known: no clusters, the forwarder does not check.
  auto none = entry_naming({300}, {});
  add_identity_clusters(none, {}, of);
  EXPECT_EQ(none.clusters_size(), 0);
}

TEST(PolicyTrustWire, ClusterCidrsFromTheConfig) {
  Config config;
  config.cluster.name = "a";
  config.cluster.pod_cidrs = {"10.244.0.0/16"};
  config.bgp.clusters["b"] = {*net::Ipv4Prefix::parse("10.245.0.0/16"), *net::Ipv4Prefix::parse("10.247.0.0/24")};
  const auto cidrs = cluster_cidrs_of(config);
  ASSERT_EQ(cidrs.size(), 2u);
  EXPECT_EQ(cidrs.at("a"), (std::vector<std::string>{"10.244.0.0/16"}));
  EXPECT_EQ(cidrs.at("b"), (std::vector<std::string>{"10.245.0.0/16", "10.247.0.0/24"}));
  config.cluster.pod_cidrs.clear();
  EXPECT_EQ(cluster_cidrs_of(config).count("a"), 0u) << "no CIDRs: the cluster is not listed";
}

}  // namespace
}  // namespace vxfed::control
