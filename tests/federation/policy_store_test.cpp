// Network policy in the federation store against an in-memory etcd (fake_kv.hpp): identity
// numbers (one per canonical key across appliers, races played by a competing applier between
// a read and the transaction, hold-down, exhaustion in a small range, reserved numbers),
// policies / namespaces / pods per cluster, and batches that apply whole or not at all.
#include <gtest/gtest.h>

#include "federation/identities.hpp"
#include "federation/policy_store.hpp"
#include "federation/schema.hpp"
#include "policy/identity.hpp"
#include "policy/parse.hpp"
#include "tests/federation/fake_kv.hpp"

namespace vxfed::federation {
namespace {

using testing::FakeKv;

constexpr std::uint64_t kNow = 1'000'000;
constexpr std::uint64_t kHoldDown = 300'000;

PolicyStoreOptions small_range(std::uint32_t first = 256, std::uint32_t last = 265) {
  PolicyStoreOptions o;
  o.identity_range = IdentityRange{first, last, kHoldDown};
  return o;
}

policy::Pod pod(const std::string& cluster, const std::string& ns, const std::string& name, policy::Labels labels) {
  return policy::Pod{cluster, ns, name, std::move(labels), {}};
}

PolicyBatch pods_batch(const std::string& cluster, std::vector<policy::Pod> pods) {
  PolicyBatch b;
  b.cluster = cluster;
  b.pods = std::move(pods);
  return b;
}

std::uint32_t number_of(const ApplyReport& r, const std::string& name) {
  for (const auto& p : r.pods)
    if (p.name == name) return p.identity;
  ADD_FAILURE() << "pod " << name << " not in the report";
  return 0;
}

const char* kPolicyYaml = R"(
apiVersion: k8s.cni.cncf.io/v1beta1
kind: MultiNetworkPolicy
metadata:
  name: web-from-blue
  namespace: prod
  annotations:
    k8s.v1.cni.cncf.io/policy-for: prod/red, other/blue
spec:
  podSelector:
    matchLabels: {app: web}
    matchExpressions: [{key: tier, operator: In, values: [front, edge]}, {key: canary, operator: DoesNotExist}]
  policyTypes: [Ingress, Egress]
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {team: blue}}
      podSelector: {matchLabels: {role: client}}
    - ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}
    ports:
    - {protocol: TCP, port: 80, endPort: 90}
    - {protocol: UDP}
  - {}
  egress:
  - to: [{podSelector: {}}]
)";

policy::Policy parsed_policy(const std::string& cluster) {
  auto objects = policy::parse_objects(kPolicyYaml, cluster, "test");
  EXPECT_TRUE(objects) << objects.error();
  return objects->policies.at(0);
}

// ------------------------------------------------------------------ pure parts

TEST(Identities, ReservedNumbersAndRange) {
  EXPECT_EQ(reserved_identity(policy::canonical_key(policy::Identity::make_unlabelled("a", "prod"))), kIdentityUnlabelled);
  policy::Identity id;
  id.cluster = "a";
  id.namespace_name = "prod";
  EXPECT_FALSE(reserved_identity(policy::canonical_key(id)));
  EXPECT_TRUE(validate(IdentityRange{}));
  EXPECT_EQ(IdentityRange{}.first, 256u);
  EXPECT_EQ(IdentityRange{}.last, 65535u);
  auto low = validate(IdentityRange{2, 300, 0});
  ASSERT_FALSE(low);
  EXPECT_NE(low.error().find("0-255 are reserved"), std::string::npos) << low.error();
  EXPECT_FALSE(validate(IdentityRange{256, 65536, 0}));
  EXPECT_FALSE(validate(IdentityRange{300, 299, 0}));
}

TEST(Identities, KeysEscapeToOneElementAndBack) {
  const std::string key = "vxfed-identity/1\ncluster=a\npod-label:app.kubernetes.io/name=web\n%";
  const std::string escaped = escape_key_element(key);
  EXPECT_EQ(escaped.find('/'), std::string::npos) << escaped;
  EXPECT_EQ(escaped.find('\n'), std::string::npos) << escaped;
  EXPECT_EQ(escaped, "vxfed-identity%2F1%0Acluster=a%0Apod-label:app.kubernetes.io%2Fname=web%0A%25");
  EXPECT_EQ(unescape_key_element(escaped), key);
  EXPECT_FALSE(unescape_key_element("abc%2"));
  EXPECT_FALSE(unescape_key_element("abc%zz"));
}

TEST(Identities, PickTakesTheLowestFreeAndExhaustionNamesTheLargestNamespaces) {
  const IdentityRange range{256, 259, kHoldDown};
  std::map<std::uint32_t, IdentityRecord> records;
  records[256] = IdentityRecord{256, "vxfed-identity/1\ncluster=a\nnamespace=prod\n", IdentityState::allocated, 0};
  records[258] = IdentityRecord{258, "vxfed-identity/1\ncluster=a\nnamespace=prod\npod-label:x=1\n", IdentityState::held, 5000};
  EXPECT_EQ(*pick_identity_number(range, records, {}), 257u);
  EXPECT_EQ(*pick_identity_number(range, records, {257}), 259u);
  records[257] = IdentityRecord{257, "vxfed-identity/1\ncluster=b\nnamespace=dev\n", IdentityState::allocated, 0};
  auto none = pick_identity_number(range, records, {259});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.code(), Code::exhausted);
  EXPECT_NE(none.error().find("all 4 numbers 256-259 are taken (2 allocated, 1 held down, the first free again at unix ms 5000)"),
            std::string::npos)
      << none.error();
  EXPECT_NE(none.error().find("the most identities: namespace prod of cluster a (2), namespace dev of cluster b (1)"),
            std::string::npos)
      << none.error();
}

TEST(PolicyRecords, APolicyRoundTripsThroughItsKubernetesJson) {
  const auto p = parsed_policy("cluster-a");
  const std::string json = encode_policy(p);
  auto back = decode_policy(KeyValue{"v1/policy/policies/cluster-a/prod/web-from-blue", json}, "cluster-a");
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(encode_policy(*back), json);
  EXPECT_EQ(back->policy_for.size(), 2u);
  ASSERT_EQ(back->ingress.size(), 2u);
  EXPECT_TRUE(back->ingress[1].peers.empty());
  ASSERT_EQ(back->ingress[0].ports.size(), 2u);
  EXPECT_EQ(back->ingress[0].ports[0].end_port, std::optional<std::uint16_t>(90));
  EXPECT_FALSE(back->ingress[0].ports[1].port);
  EXPECT_EQ(back->ingress[0].peers[1].ip_block->except.at(0).str(), "10.1.0.0/16");
  EXPECT_TRUE(back->egress_type);
  // A damaged record is reported with its key, by the policy parser's rules.
  auto bad = decode_policy(KeyValue{"v1/policy/policies/cluster-a/prod/x",
                                    R"({"apiVersion":"k8s.cni.cncf.io/v1beta1","kind":"MultiNetworkPolicy",)"
                                    R"("metadata":{"name":"x","namespace":"prod","annotations":{"k8s.v1.cni.cncf.io/policy-for":"red"}},)"
                                    R"("spec":{"podSelector":{},"bogus":1}})"},
                           "cluster-a");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("federation store key v1/policy/policies/cluster-a/prod/x: spec.bogus"), std::string::npos)
      << bad.error();
}

// ------------------------------------------------------------------ the store

TEST(PolicyStore, ClusterBSeesWhatClusterAApplied) {
  FakeKv kv;
  PolicyStore a(kv, small_range());
  PolicyBatch batch;
  batch.cluster = "cluster-a";
  batch.policies.push_back(parsed_policy("cluster-a"));
  batch.namespaces.push_back(policy::Namespace{"cluster-a", "prod", {{"team", "blue"}}, {}});
  batch.pods = {pod("cluster-a", "prod", "web-1", {{"app", "web"}, {"pod-template-hash", "abc"}}),
                pod("cluster-a", "prod", "web-2", {{"app", "web"}, {"pod-template-hash", "def"}}),
                pod("cluster-a", "prod", "db-1", {{"app", "db"}})};
  auto r = a.apply(batch, kNow);
  ASSERT_TRUE(r) << r.error();
  // web-1 and web-2 differ only in a volatile label: one identity. The first numbers are the
  // range's first; nothing below 256 is ever handed out.
  EXPECT_EQ(number_of(*r, "web-1"), 256u);
  EXPECT_EQ(number_of(*r, "web-2"), 256u);
  EXPECT_EQ(number_of(*r, "db-1"), 257u);
  EXPECT_EQ(r->new_identities, 2u);
  EXPECT_GT(r->revision, 0);

  // Another node (of cluster B) reads it all at one revision.
  PolicyStore b(kv, small_range());
  auto seen = b.list();
  ASSERT_TRUE(seen) << seen.error();
  ASSERT_EQ(seen->policies.size(), 1u);
  EXPECT_EQ(seen->policies[0].cluster, "cluster-a");
  EXPECT_EQ(encode_policy(seen->policies[0]), encode_policy(batch.policies[0]));
  ASSERT_EQ(seen->namespaces.size(), 1u);
  EXPECT_EQ(seen->namespaces[0].labels.at("team"), "blue");
  ASSERT_EQ(seen->pods.size(), 3u);
  EXPECT_EQ(seen->pods[2].name, "web-2");
  EXPECT_EQ(seen->pods[2].record.labels.at("pod-template-hash"), "def");  // stored as given
  ASSERT_EQ(seen->identities.size(), 2u);
  EXPECT_EQ(seen->identities.at(256).key,
            "vxfed-identity/1\ncluster=cluster-a\nnamespace=prod\nnamespace-label:kubernetes.io/metadata.name=prod\n"
            "namespace-label:team=blue\npod-label:app=web\n");
  EXPECT_EQ(seen->users.at(256), 2u);
  EXPECT_EQ(seen->users.at(257), 1u);
  EXPECT_EQ(seen->revision, r->revision);
  // The keys as docs/federation.md lists them.
  const auto d = kv.dump("v1/policy/");
  EXPECT_TRUE(d.count("v1/policy/policies/cluster-a/prod/web-from-blue"));
  EXPECT_TRUE(d.count("v1/policy/namespaces/cluster-a/prod"));
  EXPECT_EQ(d.at("v1/policy/pods/cluster-a/prod/db-1"), R"({"identity":257,"labels":{"app":"db"}})");
  EXPECT_TRUE(d.count("v1/policy/identity-users/256/cluster-a/prod/web-1"));
  EXPECT_EQ(d.at("v1/policy/identity-range"), R"({"first":256,"hold_down_seconds":300,"last":265})");
  EXPECT_EQ(d.at("v1/policy/identity-keys/" + escape_key_element(seen->identities.at(257).key)), "257");

  // The same pod labels in cluster B are another identity (the cluster is part of it); the
  // same policy name in cluster B is another policy.
  PolicyBatch other;
  other.cluster = "cluster-b";
  auto pb = parsed_policy("cluster-b");
  pb.ingress_type = true;
  pb.egress_type = false;
  other.policies.push_back(pb);
  other.pods = {pod("cluster-b", "prod", "web-1", {{"app", "web"}})};
  auto rb = b.apply(other, kNow);
  ASSERT_TRUE(rb) << rb.error();
  EXPECT_EQ(number_of(*rb, "web-1"), 258u);
  auto both = a.list();
  ASSERT_TRUE(both);
  EXPECT_EQ(both->policies.size(), 2u);
  EXPECT_TRUE(both->policies[0].egress_type);   // cluster-a's, untouched
  EXPECT_FALSE(both->policies[1].egress_type);  // cluster-b's
}

TEST(PolicyStore, TwoAppliersRacingForOneKeyGetOneNumber) {
  FakeKv kv;
  PolicyStore first(kv, small_range()), second(kv, small_range());
  ASSERT_TRUE(first.identity_range());  // seeded, so that the hook meets the apply's own transaction
  // Between `first`'s reads and its transaction, `second` numbers the same label set.
  ApplyReport theirs;
  kv.before_txn = [&] {
    auto r = second.apply(pods_batch("cluster-a", {pod("cluster-a", "prod", "web-b", {{"app", "web"}})}), kNow);
    ASSERT_TRUE(r) << r.error();
    theirs = *r;
  };
  auto ours = first.apply(pods_batch("cluster-a", {pod("cluster-a", "prod", "web-a", {{"app", "web"}})}), kNow);
  ASSERT_TRUE(ours) << ours.error();
  EXPECT_EQ(number_of(theirs, "web-b"), 256u);
  EXPECT_EQ(number_of(*ours, "web-a"), 256u);   // read again after its guard failed: the winner's number
  EXPECT_EQ(ours->new_identities, 0u);
  EXPECT_EQ(ours->attempts, 2u);
  auto seen = first.list();
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->identities.size(), 1u);
  EXPECT_EQ(seen->users.at(256), 2u);
}

TEST(PolicyStore, TwoKeysRacingForOneNumberGetTwo) {
  FakeKv kv;
  PolicyStore first(kv, small_range()), second(kv, small_range());
  ASSERT_TRUE(first.identity_range());  // seeded, so that the hook meets the apply's own transaction
  kv.before_txn = [&] {
    auto r = second.apply(pods_batch("cluster-a", {pod("cluster-a", "prod", "db", {{"app", "db"}})}), kNow);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(number_of(*r, "db"), 256u);
  };
  auto ours = first.apply(pods_batch("cluster-a", {pod("cluster-a", "prod", "web", {{"app", "web"}})}), kNow);
  ASSERT_TRUE(ours) << ours.error();
  EXPECT_EQ(ours->attempts, 2u);
  EXPECT_EQ(number_of(*ours, "web"), 257u);
  auto seen = first.list();
  ASSERT_TRUE(seen);
  EXPECT_NE(seen->identities.at(256).key, seen->identities.at(257).key);
}

TEST(PolicyStore, ANumberIsReleasedWithItsLastUserAndHeldDownBeforeReuse) {
  FakeKv kv;
  PolicyStore s(kv, small_range(256, 256));  // one number: reuse is visible
  auto web = pods_batch("cluster-a", {pod("cluster-a", "prod", "web-1", {{"app", "web"}}),
                                      pod("cluster-a", "prod", "web-2", {{"app", "web"}})});
  ASSERT_TRUE(s.apply(web, kNow));
  PolicyBatch del;
  del.cluster = "cluster-a";
  del.delete_pods = {{"prod", "web-1"}};
  ASSERT_TRUE(s.apply(del, kNow));
  auto seen = s.list();
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->identities.at(256).state, IdentityState::allocated);  // web-2 still holds it
  del.delete_pods = {{"prod", "web-2"}, {"prod", "never-was"}};
  auto gone = s.apply(del, kNow);
  ASSERT_TRUE(gone) << gone.error();
  EXPECT_EQ(gone->absent_deletes, 1u);
  seen = s.list();
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->identities.at(256).state, IdentityState::held);
  EXPECT_EQ(seen->identities.at(256).held_until_unix_ms, kNow + kHoldDown);
  EXPECT_TRUE(seen->users.empty());

  // Within the hold-down another label set waits (the range's one number is held)...
  auto db = pods_batch("cluster-a", {pod("cluster-a", "prod", "db", {{"app", "db"}})});
  auto refused = s.apply(db, kNow + 1000);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.code(), Code::exhausted);
  EXPECT_NE(refused.error().find("1 held down"), std::string::npos) << refused.error();
  // ...while the same label set takes its number back.
  auto back = s.apply(pods_batch("cluster-a", {pod("cluster-a", "prod", "web-3", {{"app", "web"}})}), kNow + 2000);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(number_of(*back, "web-3"), 256u);
  EXPECT_EQ(s.list()->identities.at(256).state, IdentityState::allocated);

  // Released again; maintain() forgets it only once the hold-down has passed.
  del.delete_pods = {{"prod", "web-3"}};
  ASSERT_TRUE(s.apply(del, kNow + 3000));
  auto early = s.maintain(kNow + 3000 + kHoldDown - 1);
  ASSERT_TRUE(early);
  EXPECT_EQ(early->forgotten, 0u);
  auto late = s.maintain(kNow + 3000 + kHoldDown);
  ASSERT_TRUE(late) << late.error();
  EXPECT_EQ(late->forgotten, 1u);
  EXPECT_TRUE(kv.dump("v1/policy/identities/").empty());
  EXPECT_TRUE(kv.dump("v1/policy/identity-keys/").empty());
  auto reused = s.apply(db, kNow + 3000 + kHoldDown);
  ASSERT_TRUE(reused) << reused.error();
  EXPECT_EQ(number_of(*reused, "db"), 256u);
}

TEST(PolicyStore, ExhaustionRefusesTheWholeApplyAndIsCounted) {
  FakeKv kv;
  PolicyStore s(kv, small_range(256, 258));
  ASSERT_TRUE(s.apply(pods_batch("cluster-a", {pod("cluster-a", "prod", "a", {{"app", "a"}}),
                                               pod("cluster-a", "prod", "b", {{"app", "b"}}),
                                               pod("cluster-a", "dev", "c", {{"app", "c"}})}),
                      kNow));
  const auto before = kv.dump();
  PolicyBatch batch = pods_batch("cluster-a", {pod("cluster-a", "prod", "a2", {{"app", "a"}}),   // has a number
                                               pod("cluster-a", "prod", "d", {{"app", "d"}})});  // needs a fourth
  batch.policies.push_back(parsed_policy("cluster-a"));
  auto r = s.apply(batch, kNow);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.code(), Code::exhausted);
  EXPECT_NE(r.error().find("pod prod/d of cluster cluster-a: identity numbers exhausted: all 3 numbers 256-258 are taken "
                           "(3 allocated, 0 held down); the most identities: namespace prod of cluster cluster-a (2), "
                           "namespace dev of cluster cluster-a (1)"),
            std::string::npos)
      << r.error();
  EXPECT_NE(r.error().find("nothing of this apply was written"), std::string::npos);
  EXPECT_EQ(kv.dump(), before);  // not the policy, not pod a2
  EXPECT_EQ(s.exhausted_refusals(), 1u);
  // The pods already numbered keep their numbers and may still change other things.
  EXPECT_TRUE(s.apply(pods_batch("cluster-a", {pod("cluster-a", "prod", "a3", {{"app", "a"}})}), kNow));
  EXPECT_EQ(s.exhausted_refusals(), 1u);
}

TEST(PolicyStore, ABatchIsOneTransactionOrNothing) {
  FakeKv kv;
  PolicyStoreOptions options = small_range();
  options.max_txn_ops = 8;
  PolicyStore s(kv, options);
  // Too many operations for one transaction: refused before anything is written.
  std::vector<policy::Pod> many;
  for (int i = 0; i < 4; ++i) many.push_back(pod("cluster-a", "prod", "p" + std::to_string(i), {{"app", std::to_string(i)}}));
  auto big = s.apply(pods_batch("cluster-a", many), kNow);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.code(), Code::invalid);
  EXPECT_NE(big.error().find("this apply needs 16 operations"), std::string::npos) << big.error();
  EXPECT_NE(big.error().find("--max-txn-ops"), std::string::npos);
  EXPECT_TRUE(kv.dump("v1/policy/pods/").empty());
  EXPECT_TRUE(kv.dump("v1/policy/identities/").empty());

  // The store unreachable: UNAVAILABLE, nothing written.
  PolicyBatch batch = pods_batch("cluster-a", {pod("cluster-a", "prod", "web", {{"app", "web"}})});
  batch.policies.push_back(parsed_policy("cluster-a"));
  kv.down = true;
  auto down = s.apply(batch, kNow);
  kv.down = false;
  ASSERT_FALSE(down);
  EXPECT_EQ(down.code(), Code::unavailable);
  EXPECT_NE(down.error().find("fake etcd"), std::string::npos);
  EXPECT_TRUE(kv.dump("v1/policy/policies/").empty());

  // Refused whole before the store is asked: an object of another cluster, one named twice,
  // a name that cannot be a key element.
  PolicyBatch mixed = batch;
  mixed.pods.push_back(pod("cluster-b", "prod", "x", {}));
  auto wrong = s.apply(mixed, kNow);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().find("pod prod/x of cluster cluster-a is stamped with cluster 'cluster-b'"), std::string::npos)
      << wrong.error();
  PolicyBatch twice = batch;
  twice.delete_policies.push_back({"prod", "web-from-blue"});
  auto dup = s.apply(twice, kNow);
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().find("policy prod/web-from-blue of cluster cluster-a appears twice"), std::string::npos) << dup.error();
  PolicyBatch slash = pods_batch("cluster-a", {pod("cluster-a", "prod", "a/b", {})});
  EXPECT_EQ(s.apply(slash, kNow).code(), Code::invalid);
  EXPECT_TRUE(kv.dump("v1/policy/pods/").empty());

  // The same batch on a store that answers: everything at once, one revision.
  const auto txns = kv.txns;
  auto ok = s.apply(batch, kNow);
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(kv.txns, txns + 1);  // the batch, in one transaction (the range was seeded above)
  EXPECT_EQ(kv.dump("v1/policy/policies/").size(), 1u);
  EXPECT_EQ(kv.dump("v1/policy/pods/").size(), 1u);
}

TEST(PolicyStore, APodIsNeverNumberedWithNamespaceLabelsThatChangedMeanwhile) {
  FakeKv kv;
  PolicyStore s(kv, small_range()), other(kv, small_range());
  PolicyBatch ns;
  ns.cluster = "cluster-a";
  ns.namespaces.push_back(policy::Namespace{"cluster-a", "prod", {{"team", "blue"}}, {}});
  ASSERT_TRUE(s.apply(ns, kNow));
  // Between our read of prod's labels and our transaction, another applier relabels prod.
  kv.before_txn = [&] {
    ns.namespaces[0].labels = {{"team", "red"}};
    ASSERT_TRUE(other.apply(ns, kNow));
  };
  auto r = s.apply(pods_batch("cluster-a", {pod("cluster-a", "prod", "web", {{"app", "web"}})}), kNow);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->attempts, 2u);
  const auto key = s.list()->identities.at(number_of(*r, "web")).key;
  EXPECT_NE(key.find("namespace-label:team=red"), std::string::npos) << key;
  EXPECT_EQ(key.find("team=blue"), std::string::npos) << key;
}

TEST(PolicyStore, EveryKeyAnApplyWritesIsGuarded) {
  // The client may send a guarded transaction twice; a copy applied late must fail its guard,
  // not undo what another apply wrote meanwhile. So a policy or namespace written by someone
  // else between our read and our transaction makes ours read again.
  FakeKv kv;
  PolicyStore s(kv, small_range()), other(kv, small_range());
  ASSERT_TRUE(s.identity_range());
  PolicyBatch ours;
  ours.cluster = "cluster-a";
  ours.policies.push_back(parsed_policy("cluster-a"));
  ours.namespaces.push_back(policy::Namespace{"cluster-a", "prod", {{"team", "blue"}}, {}});
  PolicyBatch theirs = ours;
  theirs.policies[0].egress_type = false;
  theirs.namespaces[0].labels = {{"team", "red"}};
  kv.before_txn = [&] { ASSERT_TRUE(other.apply(theirs, kNow)); };
  auto r = s.apply(ours, kNow);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->attempts, 2u);
  auto seen = s.list();
  ASSERT_TRUE(seen);
  EXPECT_TRUE(seen->policies.at(0).egress_type);
  EXPECT_EQ(seen->namespaces.at(0).labels.at("team"), "blue");
}

TEST(PolicyStore, ALabelChangeMovesThePodAndReleasesTheOldNumber) {
  FakeKv kv;
  PolicyStore s(kv, small_range());
  auto first = s.apply(pods_batch("cluster-a", {pod("cluster-a", "prod", "web", {{"app", "web"}})}), kNow);
  ASSERT_TRUE(first);
  auto moved = s.apply(pods_batch("cluster-a", {pod("cluster-a", "prod", "web", {{"app", "web"}, {"v", "2"}})}), kNow);
  ASSERT_TRUE(moved) << moved.error();
  EXPECT_EQ(number_of(*moved, "web"), 257u);
  auto seen = s.list();
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->identities.at(256).state, IdentityState::held);
  EXPECT_EQ(seen->users.count(256), 0u);
  EXPECT_EQ(seen->users.at(257), 1u);
}

TEST(PolicyStore, ANamespaceLabelChangeRenumbersItsPods) {
  FakeKv kv;
  PolicyStore s(kv, small_range());
  PolicyBatch batch = pods_batch("cluster-a", {pod("cluster-a", "prod", "web", {{"app", "web"}}),
                                               pod("cluster-a", "prod", "db", {{"app", "db"}}),
                                               pod("cluster-a", "dev", "web", {{"app", "web"}})});
  batch.namespaces.push_back(policy::Namespace{"cluster-a", "prod", {{"team", "blue"}}, {}});
  ASSERT_TRUE(s.apply(batch, kNow));
  PolicyBatch relabel;
  relabel.cluster = "cluster-a";
  relabel.namespaces.push_back(policy::Namespace{"cluster-a", "prod", {{"team", "red"}}, {}});
  auto r = s.apply(relabel, kNow);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->renumbered, 2u);  // prod's two pods; dev's untouched
  EXPECT_TRUE(r->warnings.empty());
  auto seen = s.list();
  ASSERT_TRUE(seen);
  for (const auto& p : seen->pods) {
    const auto& key = seen->identities.at(p.record.identity).key;
    if (p.namespace_name == "prod") EXPECT_NE(key.find("namespace-label:team=red"), std::string::npos) << key;
    else EXPECT_EQ(p.record.identity, 258u);
  }
  // prod's old numbers have no user left: held down.
  EXPECT_EQ(seen->identities.at(256).state, IdentityState::held);
  EXPECT_EQ(seen->identities.at(257).state, IdentityState::held);
  // Applying the same labels again changes nothing.
  auto again = s.apply(relabel, kNow);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->renumbered, 0u);
}

TEST(PolicyStore, MaintainReleasesANumberWhoseUsersVanished) {
  FakeKv kv;
  PolicyStore s(kv, small_range());
  ASSERT_TRUE(s.apply(pods_batch("cluster-a", {pod("cluster-a", "prod", "web", {{"app", "web"}})}), kNow));
  // As if an applier died between an apply that took the last user away and its release step.
  kv.erase("v1/policy/identity-users/256/cluster-a/prod/web");
  auto r = s.maintain(kNow);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->released, 1u);
  EXPECT_EQ(s.list()->identities.at(256).state, IdentityState::held);
  // Numbers in use, and numbers already held, are left alone.
  ASSERT_TRUE(s.apply(pods_batch("cluster-a", {pod("cluster-a", "prod", "db", {{"app", "db"}})}), kNow));
  auto again = s.maintain(kNow);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->released, 0u);
  EXPECT_EQ(again->forgotten, 0u);
  EXPECT_EQ(s.list()->identities.at(257).state, IdentityState::allocated);
}

TEST(PolicyStore, TheStoresRangeWinsAndDamagedRecordsAreNamed) {
  FakeKv kv;
  PolicyStore first(kv, small_range(256, 300));
  ASSERT_TRUE(first.identity_range());
  PolicyStore later(kv, small_range(1000, 2000));
  auto range = later.identity_range();
  ASSERT_TRUE(range);
  EXPECT_EQ(range->first, 256u);
  EXPECT_EQ(range->last, 300u);
  kv.put("v1/policy/identities/300", "{not json");
  auto listed = later.list();
  ASSERT_FALSE(listed);
  EXPECT_NE(listed.error().find("federation store key v1/policy/identities/300 is damaged"), std::string::npos)
      << listed.error();
}

}  // namespace
}  // namespace vxfed::federation
