// control/policy/policy_wire.hpp: a network's compiled tables in the wire's form. A world of
// two clusters (policies with selector, namespace, ipBlock-with-except, port-range and egress
// rules; local pods labelled and unlabelled) is compiled; its NetworkPolicy is read back by a
// reader of this test's own (the forwarder's is engineer A's), and every decide_*() answer of
// the read-back tables equals the compiler's, for every local identity, every peer identity
// (the reserved ones and one never allocated too), addresses at the ipBlock edges, TCP, UDP and
// ICMP, ports at the range edges. Then the invariants the forwarder may rely on: sorted and
// unique peers, identities and endpoints, each identity in one remote-egress group, the two
// fixed port sets, nothing but `isolated` in a table that is not; equal input gives equal
// bytes, another endpoint mapping other bytes.
#include <gtest/gtest.h>

#include <set>

#include "control/policy/policy_wire.hpp"
#include "policy/parse.hpp"
#include "policy/table_compiler.hpp"

namespace vxfed::control {
namespace {

namespace pol = ::vxfed::policy;

constexpr const char* kClusterA = R"(apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: prod, labels: {team: blue}}}
- {apiVersion: v1, kind: Namespace, metadata: {name: dev, labels: {team: red}}}
- apiVersion: k8s.cni.cncf.io/v1beta1
  kind: MultiNetworkPolicy
  metadata: {name: db, namespace: prod, annotations: {k8s.v1.cni.cncf.io/policy-for: red}}
  spec:
    podSelector: {matchLabels: {app: db}}
    policyTypes: [Ingress, Egress]
    ingress:
    - from: [{podSelector: {matchLabels: {app: web}}}]
      ports: [{protocol: TCP, port: 5432}]
    - from: [{namespaceSelector: {matchLabels: {team: red}}, podSelector: {matchLabels: {app: batch}}}]
      ports: [{protocol: TCP, port: 6000, endPort: 6010}, {protocol: UDP, port: 7000}]
    - from: [{ipBlock: {cidr: 192.168.0.0/16, except: [192.168.5.0/24]}}]
    egress:
    - to: [{namespaceSelector: {matchLabels: {team: blue}}}]
      ports: [{protocol: UDP, port: 53}]
    - to: [{ipBlock: {cidr: 10.9.0.0/16}}]
      ports: [{protocol: TCP, port: 443}]
- apiVersion: k8s.cni.cncf.io/v1beta1
  kind: MultiNetworkPolicy
  metadata: {name: web-out, namespace: prod, annotations: {k8s.v1.cni.cncf.io/policy-for: red}}
  spec:
    podSelector: {matchLabels: {app: web}}
    policyTypes: [Egress]
    egress:
    - to: [{podSelector: {matchLabels: {app: db}}}]
      ports: [{protocol: TCP, port: 5432}]
    - ports: [{protocol: UDP, port: 53}]
- apiVersion: k8s.cni.cncf.io/v1beta1
  kind: MultiNetworkPolicy
  metadata: {name: deny-all, namespace: dev, annotations: {k8s.v1.cni.cncf.io/policy-for: red}}
  spec:
    podSelector: {}
    policyTypes: [Ingress]
- {apiVersion: v1, kind: Pod, metadata: {name: web-1, namespace: prod, labels: {app: web}}}
- {apiVersion: v1, kind: Pod, metadata: {name: db-0, namespace: prod, labels: {app: db}}}
- {apiVersion: v1, kind: Pod, metadata: {name: batch-0, namespace: dev, labels: {app: batch}}}
- {apiVersion: v1, kind: Pod, metadata: {name: cache-0, namespace: prod, labels: {app: cache}}}
)";

constexpr const char* kClusterB = R"(apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: prod, labels: {team: blue}}}
- {apiVersion: v1, kind: Namespace, metadata: {name: dev, labels: {team: red}}}
- apiVersion: k8s.cni.cncf.io/v1beta1
  kind: MultiNetworkPolicy
  metadata: {name: web-out, namespace: prod, annotations: {k8s.v1.cni.cncf.io/policy-for: red}}
  spec:
    podSelector: {matchLabels: {app: web}}
    policyTypes: [Egress]
    egress:
    - to: [{podSelector: {matchLabels: {app: db}}}]
- {apiVersion: v1, kind: Pod, metadata: {name: web-7, namespace: prod, labels: {app: web}}}
- {apiVersion: v1, kind: Pod, metadata: {name: web-8, namespace: prod, labels: {app: web, v: "2"}}}
- {apiVersion: v1, kind: Pod, metadata: {name: batch-9, namespace: dev, labels: {app: batch}}}
)";

struct World {
  std::vector<pol::Policy> policies;
  std::vector<pol::NumberedIdentity> identities;
  std::vector<pol::LocalIdentity> locals;  // cluster-a's db, web, cache and an unlabelled prod pod
};

World world() {
  World w;
  std::uint16_t next = 256;
  std::set<std::string> keys;
  for (auto [yaml, cluster] : {std::pair{kClusterA, "cluster-a"}, std::pair{kClusterB, "cluster-b"}}) {
    auto objects = pol::parse_objects(yaml, cluster, "test.yaml");
    EXPECT_TRUE(objects) << (objects ? "" : objects.error());
    w.policies.insert(w.policies.end(), objects->policies.begin(), objects->policies.end());
    for (const auto& pod : objects->pods) {
      const pol::Namespace* ns = nullptr;
      for (const auto& n : objects->namespaces)
        if (n.name == pod.namespace_name) ns = &n;
      auto identity = pol::identity_of(pod, ns);
      if (!keys.insert(pol::canonical_key(identity)).second) continue;
      // Numbers far apart, so the peers of a table span several high bytes.
      w.identities.push_back({next, identity});
      if (cluster == std::string("cluster-a") && pod.name != "batch-0") w.locals.push_back({next, identity});
      next = static_cast<std::uint16_t>(next + 700);
    }
  }
  w.locals.push_back({pol::kPeerUnlabelled, pol::Identity::make_unlabelled("cluster-a", "prod")});
  return w;
}

// The test's own reader of the wire's form (what the forwarder must rebuild).
pol::DirectionTable direction_from_wire(const dp::PolicyDirection& d) {
  pol::DirectionTable t;
  t.isolated = d.isolated();
  t.any_peer = d.any_peer();
  for (const auto& p : d.peers()) t.peers.push_back({static_cast<std::uint16_t>(p.identity()), p.ports()});
  pol::index_peers(t);
  t.some_selector = d.some_selector();
  for (const auto& a : d.addresses()) t.addresses.push_back({a.first(), a.last(), a.ports()});
  return t;
}

pol::PolicyTables from_wire(const dp::NetworkPolicy& wire) {
  pol::PolicyTables t;
  for (const auto& s : wire.port_sets()) {
    pol::PortSet set;
    set.every_protocol = s.every_protocol();
    for (const auto& span : s.spans())
      set.spans.push_back({static_cast<std::uint8_t>(span.protocol()), static_cast<std::uint16_t>(span.first()),
                           static_cast<std::uint16_t>(span.last())});
    t.port_sets.push_back(std::move(set));
  }
  for (const auto& d : wire.local_ingress()) t.local_ingress.push_back(direction_from_wire(d));
  for (const auto& d : wire.local_egress()) t.local_egress.push_back(direction_from_wire(d));
  t.remote_egress_of.assign(65536, pol::PolicyTables::kNoTable);
  for (const auto& group : wire.remote_egress()) {
    for (auto identity : group.identities())
      t.remote_egress_of.at(identity) = static_cast<std::uint32_t>(t.remote_egress_tables.size());
    t.remote_egress_tables.push_back(direction_from_wire(group.table()));
  }
  return t;
}

std::vector<EndpointLocal> endpoints_of(const World& w) {
  std::vector<EndpointLocal> out;
  // Out of order and with a duplicate: the conversion sorts and keeps one.
  for (std::size_t i = w.locals.size(); i-- > 0;) out.push_back({"c" + std::to_string(i) + "/net1", static_cast<std::uint32_t>(i)});
  out.push_back(out.front());
  out.push_back({"z-second-pod-of-local-0/net1", 0});
  return out;
}

void expect_same_decisions(const pol::PolicyTables& got, const pol::PolicyTables& want, const World& w) {
  std::vector<std::uint16_t> peers = {pol::kPeerUnknown, pol::kPeerUnlabelled, pol::kPeerWorld, 60000};
  for (const auto& n : w.identities) peers.push_back(n.number);
  const char* addresses[] = {"10.244.1.9", "192.168.0.0", "192.168.4.255", "192.168.5.0", "192.168.5.255",
                             "192.168.6.0", "192.168.255.255", "193.0.0.0", "10.9.0.1", "10.10.0.1"};
  std::size_t allowed = 0, denied = 0, asked = 0;
  for (std::uint32_t local = 0; local < w.locals.size(); ++local)
    for (auto peer : peers)
      for (const char* text : addresses)
        for (std::uint8_t proto : {1, 6, 17})
          for (std::uint16_t port : {0, 53, 443, 5432, 5999, 6000, 6010, 6011, 7000, 65535}) {
            const auto a = *net::Ipv4Addr::parse(text);
            const std::string where = "local " + std::to_string(local) + " peer " + std::to_string(peer) + " " + text +
                                      " proto " + std::to_string(proto) + " port " + std::to_string(port);
            const bool in = pol::decide_ingress(want, local, peer, a, proto, port);
            ASSERT_EQ(pol::decide_ingress(got, local, peer, a, proto, port), in) << "ingress " << where;
            const bool out = pol::decide_local_egress(want, local, peer, a, proto, port);
            ASSERT_EQ(pol::decide_local_egress(got, local, peer, a, proto, port), out) << "egress " << where;
            const auto at_source = pol::decide_egress_at_source(want, local, a, proto, port);
            ASSERT_EQ(pol::decide_egress_at_source(got, local, a, proto, port), at_source) << "at source " << where;
            // The peer as the source of a remote egress toward the local identity's number.
            const auto number = w.locals[local].number;
            const bool remote = pol::decide_remote_egress(want, peer, number, a, proto, port);
            ASSERT_EQ(pol::decide_remote_egress(got, peer, number, a, proto, port), remote) << "remote " << where;
            allowed += in + out + remote;
            denied += !in + !out + !remote;
            asked += at_source == pol::EgressAtSource::AskDestination;
          }
  // The comparison is of tables that decide both ways, not of two empty ones.
  EXPECT_GT(allowed, 1000u);
  EXPECT_GT(denied, 1000u);
  EXPECT_GT(asked, 0u);
}

TEST(PolicyWire, ReadBackDecidesAsTheCompiler) {
  const auto w = world();
  pol::PolicyCompiler compiler("red");
  compiler.build(w.policies, w.identities, w.locals);
  const auto& tables = compiler.tables();
  const auto wire = network_policy_to_wire(4097, tables, endpoints_of(w));
  EXPECT_EQ(wire.vni(), 4097u);
  const auto back = from_wire(wire);
  EXPECT_GT(back.remote_egress_tables.size(), 0u);  // web-out of both clusters: remote-egress tables exist
  expect_same_decisions(back, tables, w);
}

TEST(PolicyWire, InvariantsTheForwarderMayRelyOn) {
  const auto w = world();
  pol::PolicyCompiler compiler("red");
  compiler.build(w.policies, w.identities, w.locals);
  const auto wire = network_policy_to_wire(4097, compiler.tables(), endpoints_of(w));

  ASSERT_GE(wire.port_sets_size(), 2);
  EXPECT_FALSE(wire.port_sets(0).every_protocol());
  EXPECT_EQ(wire.port_sets(0).spans_size(), 0);
  EXPECT_TRUE(wire.port_sets(1).every_protocol());
  for (const auto& set : wire.port_sets())
    for (int i = 1; i < set.spans_size(); ++i) {
      const auto &a = set.spans(i - 1), &b = set.spans(i);
      EXPECT_TRUE(a.protocol() < b.protocol() || (a.protocol() == b.protocol() && a.last() < b.first()));
    }
  EXPECT_EQ(wire.local_ingress_size(), static_cast<int>(w.locals.size()));
  EXPECT_EQ(wire.local_egress_size(), wire.local_ingress_size());

  std::size_t isolated = 0, open = 0;
  auto check = [&](const dp::PolicyDirection& d) {
    if (!d.isolated()) {
      ++open;
      EXPECT_EQ(d.ByteSizeLong(), 0u) << "a table that is not isolated carries nothing else";
      return;
    }
    ++isolated;
    const auto sets = static_cast<std::uint32_t>(wire.port_sets_size());
    EXPECT_LT(d.any_peer(), sets);
    EXPECT_LT(d.some_selector(), sets);
    for (int i = 0; i < d.peers_size(); ++i) {
      EXPECT_LT(d.peers(i).ports(), sets);
      EXPECT_LE(d.peers(i).identity(), 65535u);
      if (i > 0) {
        EXPECT_LT(d.peers(i - 1).identity(), d.peers(i).identity());
      }
    }
    for (int i = 0; i < d.addresses_size(); ++i) {
      EXPECT_LE(d.addresses(i).first(), d.addresses(i).last());
      if (i > 0) {
        EXPECT_LT(d.addresses(i - 1).last(), d.addresses(i).first());
      }
    }
  };
  for (const auto& d : wire.local_ingress()) check(d);
  for (const auto& d : wire.local_egress()) check(d);
  std::set<std::uint32_t> seen;
  for (const auto& group : wire.remote_egress()) {
    EXPECT_GT(group.identities_size(), 0);
    EXPECT_TRUE(group.table().isolated());
    for (int i = 0; i < group.identities_size(); ++i) {
      EXPECT_TRUE(seen.insert(group.identities(i)).second) << "identity " << group.identities(i) << " in two groups";
      if (i > 0) {
        EXPECT_LT(group.identities(i - 1), group.identities(i));
      }
    }
    check(group.table());
  }
  EXPECT_GT(isolated, 0u);
  EXPECT_GT(open, 0u);  // cache-0 and the unlabelled prod pod: selected by nothing

  // Endpoints: sorted by id, one each, every local index in range.
  ASSERT_EQ(wire.endpoints_size(), static_cast<int>(w.locals.size()) + 1);
  for (int i = 0; i < wire.endpoints_size(); ++i) {
    EXPECT_LT(wire.endpoints(i).local(), static_cast<std::uint32_t>(wire.local_ingress_size()));
    if (i > 0) {
      EXPECT_LT(wire.endpoints(i - 1).endpoint_id(), wire.endpoints(i).endpoint_id());
    }
  }

  // Equal input, equal bytes (the publisher compares serializations); another mapping differs.
  auto again = network_policy_to_wire(4097, compiler.tables(), endpoints_of(w));
  EXPECT_EQ(again.SerializeAsString(), wire.SerializeAsString());
  auto moved = endpoints_of(w);
  moved.back().local = 1;
  EXPECT_NE(network_policy_to_wire(4097, compiler.tables(), moved).SerializeAsString(), wire.SerializeAsString());
}

}  // namespace
}  // namespace vxfed::control
