// control/policy/policy_feed.hpp: the follower's step, listing -> compilers. Each listing of a
// sequence (nothing; a policy and its pods; a new pod and a changed policy; a pod relabelled;
// everything deleted) is fed incrementally, and after each one every decision of the fed
// compiler equals that of a compiler built whole from the same listing. Plus
// control/policy/identity_key.hpp: keys read back exactly, malformed ones refused.
#include <gtest/gtest.h>

#include "control/policy/identity_key.hpp"
#include "control/policy/policy_feed.hpp"
#include "policy/parse.hpp"

namespace vxfed::control {
namespace {

namespace fed = ::vxfed::federation;
namespace pol = ::vxfed::policy;

pol::Objects objects(const std::string& yaml, const std::string& cluster = "cluster-a") {
  auto parsed = pol::parse_objects(yaml, cluster, "test.yaml");
  EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error());
  return parsed ? *parsed : pol::Objects{};
}

// A listing as PolicyStore::list() gives it: the objects, each distinct identity numbered in
// order of first appearance from `first` (as the store numbers them), pod records with them.
struct World {
  std::vector<pol::Objects> clusters;
  std::map<std::string, std::uint32_t> numbers;  // canonical key -> number, kept across listings
  std::uint32_t next = 256;
  std::int64_t revision = 0;

  fed::PolicySnapshot list() {
    fed::PolicySnapshot s;
    s.revision = ++revision;
    for (const auto& o : clusters) {
      s.policies.insert(s.policies.end(), o.policies.begin(), o.policies.end());
      s.namespaces.insert(s.namespaces.end(), o.namespaces.begin(), o.namespaces.end());
      for (const auto& pod : o.pods) {
        const pol::Namespace* ns = nullptr;
        for (const auto& n : o.namespaces)
          if (n.name == pod.namespace_name) ns = &n;
        const auto key = pol::canonical_key(pol::identity_of(pod, ns));
        auto [it, fresh] = numbers.emplace(key, next);
        if (fresh) ++next;
        s.pods.push_back({pod.cluster, pod.namespace_name, pod.name, fed::PodRecord{pod.labels, it->second}});
        s.identities[it->second] = fed::IdentityRecord{it->second, key};
        ++s.users[it->second];
      }
    }
    return s;
  }
};

// A compiler built whole from a listing, as a vxfedd starting now would: the reference.
pol::PolicyCompiler built(const fed::PolicySnapshot& s, const std::vector<LocalPod>& pods, const std::string& network) {
  PolicyFeed fresh("cluster-a");
  fresh.update(s, pods);
  auto it = fresh.compilers().find(network);
  EXPECT_NE(it, fresh.compilers().end());
  return *it->second;
}

// Every decision of `got` equals `want`'s: each local identity's ingress and local egress,
// toward every identity number in use (and 0, 1, 2), two addresses, TCP/UDP, a few ports.
void expect_same_decisions(const pol::PolicyCompiler& got, const pol::PolicyCompiler& want,
                           const fed::PolicySnapshot& s, const std::string& what) {
  ASSERT_EQ(got.locals().size(), want.locals().size()) << what;
  std::vector<std::uint16_t> peers = {0, 1, 2};
  for (const auto& [number, record] : s.identities) peers.push_back(static_cast<std::uint16_t>(number));
  peers.push_back(static_cast<std::uint16_t>(s.identities.empty() ? 300 : s.identities.rbegin()->first + 1));
  std::size_t allowed = 0;
  for (std::size_t i = 0; i < got.locals().size(); ++i) {
    // The same local identity at the same place (both sort them).
    ASSERT_EQ(got.locals()[i].number, want.locals()[i].number) << what;
    for (auto peer : peers)
      for (const auto* address : {"10.244.1.9", "192.168.7.1"})
        for (std::uint8_t proto : {6, 17})
          for (std::uint16_t port : {53, 5432, 8080}) {
            const auto a = *net::Ipv4Addr::parse(address);
            const bool in = pol::decide_ingress(got.tables(), i, peer, a, proto, port);
            ASSERT_EQ(in, pol::decide_ingress(want.tables(), i, peer, a, proto, port))
                << what << ": ingress of local " << got.locals()[i].number << " from " << peer << " " << address
                << " proto " << int(proto) << " port " << port;
            const bool out = pol::decide_local_egress(got.tables(), i, peer, a, proto, port);
            ASSERT_EQ(out, pol::decide_local_egress(want.tables(), i, peer, a, proto, port))
                << what << ": egress of local " << got.locals()[i].number << " to " << peer;
            allowed += in + out;
          }
  }
  EXPECT_GT(allowed, 0u) << what << ": something is allowed (the comparison is not of two empty tables)";
}

const char* kPolicy = R"(apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Namespace, metadata: {name: prod, labels: {team: blue}}}
- apiVersion: k8s.cni.cncf.io/v1beta1
  kind: MultiNetworkPolicy
  metadata: {name: db-from-web, namespace: prod, annotations: {k8s.v1.cni.cncf.io/policy-for: prod/red}}
  spec:
    podSelector: {matchLabels: {app: db}}
    policyTypes: [Ingress, Egress]
    ingress:
    - from: [{podSelector: {matchLabels: {app: web}}}]
      ports: [{protocol: TCP, port: 5432}]
    egress:
    - to: [{namespaceSelector: {matchLabels: {team: blue}}}]
      ports: [{protocol: UDP, port: 53}]
- {apiVersion: v1, kind: Pod, metadata: {name: web-1, namespace: prod, labels: {app: web}}}
- {apiVersion: v1, kind: Pod, metadata: {name: db-0, namespace: prod, labels: {app: db}}}
)";

TEST(PolicyFeed, IncrementalEqualsWholeBuildThroughASequenceOfListings) {
  World world;
  PolicyFeed feed("cluster-a");
  std::vector<LocalPod> pods = {{"red", "prod", "db-0"}};

  // 0. An empty store, a pod attached: one network, its pod unlabelled (1).
  auto s = world.list();
  auto r = feed.update(s, pods);
  EXPECT_EQ(r.networks_built, 1u);
  ASSERT_EQ(feed.compilers().count("red"), 1u);
  ASSERT_EQ(feed.compilers().at("red")->locals().size(), 1u);
  EXPECT_EQ(feed.compilers().at("red")->locals()[0].number, pol::kPeerUnlabelled);

  // 1. The policy, the namespace and both pods.
  world.clusters = {objects(kPolicy)};
  s = world.list();
  r = feed.update(s, pods);
  EXPECT_EQ(r.policies_applied, 1u);
  EXPECT_EQ(r.identities_added, 2u);
  EXPECT_EQ(r.locals_replaced, 1u);  // unlabelled -> db's number: not an addition
  EXPECT_EQ(feed.policies(), 1u);
  EXPECT_EQ(feed.identities(), 2u);
  const auto& red = *feed.compilers().at("red");
  ASSERT_EQ(red.locals().size(), 1u);
  const auto db = red.locals()[0].number;
  EXPECT_EQ(db, world.numbers.at(pol::canonical_key(red.locals()[0].identity)));
  EXPECT_EQ(red.locals()[0].identity.pod_labels.at("app"), "db");
  expect_same_decisions(red, built(s, pods, "red"), s, "1");
  const auto web = static_cast<std::uint16_t>(db == 256 ? 257 : 256);
  const auto pod_address = *net::Ipv4Addr::parse("10.244.1.9");
  EXPECT_TRUE(pol::decide_ingress(red.tables(), 0, web, pod_address, 6, 5432));
  EXPECT_FALSE(pol::decide_ingress(red.tables(), 0, web, pod_address, 6, 5433));
  EXPECT_FALSE(pol::decide_ingress(red.tables(), 0, 0, pod_address, 6, 5432));

  // 2. Unchanged listing: nothing fed.
  s = world.list();
  r = feed.update(s, pods);
  EXPECT_FALSE(r.changed());

  // 3. Another local pod (a new identity: an addition), a cluster-b pod, the policy's port changed.
  std::string changed = kPolicy;
  changed.replace(changed.find("port: 5432"), 10, "port: 8080");
  changed += "- {apiVersion: v1, kind: Pod, metadata: {name: cache-0, namespace: prod, labels: {app: cache}}}\n";
  world.clusters = {objects(changed),
                    objects("{apiVersion: v1, kind: Pod, metadata: {name: web-9, namespace: prod, labels: {app: web}}}\n",
                            "cluster-b")};
  pods.push_back({"red", "prod", "cache-0"});
  s = world.list();
  r = feed.update(s, pods);
  EXPECT_EQ(r.policies_applied, 1u);
  EXPECT_EQ(r.identities_added, 2u);
  EXPECT_EQ(r.locals_added, 1u);
  EXPECT_EQ(r.locals_replaced, 0u);
  expect_same_decisions(*feed.compilers().at("red"), built(s, pods, "red"), s, "3");

  // 4. db-0 relabelled (its old number without users: gone from the listing, as a forgotten one).
  std::string relabelled = changed;
  relabelled.replace(relabelled.find("name: db-0, namespace: prod, labels: {app: db}"),
                     std::string("name: db-0, namespace: prod, labels: {app: db}").size(),
                     "name: db-0, namespace: prod, labels: {app: db, tier: gold}");
  world.clusters[0] = objects(relabelled);
  s = world.list();
  r = feed.update(s, pods);
  EXPECT_EQ(r.identities_added, 1u);
  EXPECT_EQ(r.identities_removed, 1u);
  EXPECT_EQ(r.locals_replaced, 1u);
  expect_same_decisions(*feed.compilers().at("red"), built(s, pods, "red"), s, "4");

  // 5. Attached pods change alone: cache-0 detached.
  pods.pop_back();
  r = feed.update_locals(pods);
  EXPECT_EQ(r.locals_replaced, 1u);
  expect_same_decisions(*feed.compilers().at("red"), built(s, pods, "red"), s, "5");

  // 6. Everything of cluster-a deleted: db-0 unlabelled again, no policy isolates it.
  world.clusters.erase(world.clusters.begin());
  s = world.list();
  r = feed.update(s, pods);
  EXPECT_EQ(r.policies_deleted, 1u);
  EXPECT_EQ(feed.policies(), 0u);
  const auto& after = *feed.compilers().at("red");
  ASSERT_EQ(after.locals().size(), 1u);
  EXPECT_EQ(after.locals()[0].number, pol::kPeerUnlabelled);
  EXPECT_FALSE(after.tables().local_ingress[0].isolated);

  // 7. The last pod detached: the network's compiler dropped.
  r = feed.update_locals({});
  EXPECT_EQ(r.networks_dropped, 1u);
  EXPECT_TRUE(feed.compilers().empty());
}

TEST(PolicyFeed, RecordsThatDoNotReadAreLeftOutAndNamed) {
  World world;
  world.clusters = {objects(kPolicy)};
  auto s = world.list();
  s.identities[999] = fed::IdentityRecord{999, "vxfed-identity/2\ncluster=a\n"};
  PolicyFeed feed("cluster-a");
  auto r = feed.update(s, {{"red", "prod", "db-0"}});
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].find("identity 999"), std::string::npos) << r.skipped[0];
  EXPECT_EQ(feed.identities(), 2u);
}

TEST(IdentityKey, ReadsBackWhatCanonicalKeyWrites) {
  pol::Identity id;
  id.cluster = "cluster-a";
  id.namespace_name = "prod";
  id.namespace_labels = {{"kubernetes.io/metadata.name", "prod"}, {"team", "blue"}};
  id.pod_labels = {{"app", "web"}, {"app.kubernetes.io/name", "x=y"}};
  auto back = identity_from_key(pol::canonical_key(id));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, id);
  auto unlabelled = identity_from_key(pol::canonical_key(pol::Identity::make_unlabelled()));
  ASSERT_TRUE(unlabelled);
  EXPECT_TRUE(unlabelled->unlabelled);
}

TEST(IdentityKey, RefusesWhatIsNotCanonical) {
  for (const char* bad : {"", "vxfed-identity/2\ncluster=a\nnamespace=b\n", "vxfed-identity/1\ncluster=a\nnamespace=b",
                          "vxfed-identity/1\nnamespace=b\ncluster=a\n",
                          "vxfed-identity/1\ncluster=a\nnamespace=b\npod-label:z=1\npod-label:a=1\n",
                          "vxfed-identity/1\ncluster=a\nnamespace=b\npod-label:a=1\nnamespace-label:b=1\n",
                          "vxfed-identity/1\ncluster=a\nnamespace=b\npod-label:noequals\n"})
    EXPECT_FALSE(identity_from_key(bad)) << bad;
}

}  // namespace
}  // namespace vxfed::control
