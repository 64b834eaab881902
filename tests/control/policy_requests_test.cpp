// control/policy/policy_requests.hpp: PolicyApply/PolicyDelete requests into store batches
// for the node's cluster (every parse error kept, refs checked field by field), the store's
// answers into PolicyApplied/PolicyListing (through a PolicyStore on the in-memory etcd), and
// selectors printed as kubectl prints them.
#include <gtest/gtest.h>

#include "control/policy/policy_requests.hpp"
#include "tests/federation/fake_kv.hpp"

namespace vxfed::control {
namespace {

namespace fed = ::vxfed::federation;

constexpr const char* kObjects = R"(apiVersion: v1
kind: Namespace
metadata: {name: prod, labels: {team: blue}}
---
apiVersion: k8s.cni.cncf.io/v1beta1
kind: MultiNetworkPolicy
metadata:
  name: db-from-web
  namespace: prod
  annotations: {k8s.v1.cni.cncf.io/policy-for: prod/red}
spec:
  podSelector:
    matchLabels: {app: db}
    matchExpressions:
    - {key: tier, operator: NotIn, values: [a, b]}
    - {key: legacy, operator: DoesNotExist}
  policyTypes: [Ingress, Egress]
  ingress:
  - from:
    - podSelector: {matchLabels: {app: web}}
  egress: []
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: prod, labels: {app: db}}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: prod, labels: {app: web, pod-template-hash: abc}}
)";

v1::PolicyApply apply_request(const std::string& text) {
  v1::PolicyApply request;
  request.set_text(text);
  request.set_source("in.yaml");
  return request;
}

TEST(PolicyRequests, ApplyReadsTheObjectsForTheNodesCluster) {
  auto batch = batch_to_apply(apply_request(kObjects), "cluster-a");
  ASSERT_TRUE(batch.ok()) << batch.error();
  EXPECT_EQ(batch->cluster, "cluster-a");
  ASSERT_EQ(batch->policies.size(), 1u);
  EXPECT_EQ(batch->policies[0].cluster, "cluster-a");
  ASSERT_EQ(batch->namespaces.size(), 1u);
  ASSERT_EQ(batch->pods.size(), 2u);
  EXPECT_EQ(batch->pods[1].cluster, "cluster-a");
  EXPECT_TRUE(batch->delete_pods.empty());
}

TEST(PolicyRequests, ApplyRefusesWithEveryFieldNamed) {
  const std::string bad = R"(apiVersion: k8s.cni.cncf.io/v1beta1
kind: MultiNetworkPolicy
metadata:
  name: broken
  namespace: prod
  annotations: {k8s.v1.cni.cncf.io/policy-for: prod/red}
spec:
  podSelector:
    matchExpressions: [{key: app, operator: Includes, values: [db]}]
  ingres: []
  egress:
  - to: [{ipBlock: {cidr: 10.0.0.1/8}}]
    ports: [{protocol: TCP, port: 90, endPort: 80}]
)";
  auto batch = batch_to_apply(apply_request(bad), "cluster-a");
  ASSERT_FALSE(batch.ok());
  for (const char* field : {"in.yaml: spec.ingres:", "in.yaml: spec.podSelector.matchExpressions[0].operator:",
                            "in.yaml: spec.egress[0].to[0].ipBlock.cidr:", "in.yaml: spec.egress[0].ports[0].endPort:"})
    EXPECT_NE(batch.error().find(field), std::string::npos) << field << " not in:\n" << batch.error();
  EXPECT_FALSE(batch_to_apply(apply_request(""), "cluster-a").ok());
}

TEST(PolicyRequests, DeleteTakesTheFilesObjectsAndNamedOnesOnce) {
  v1::PolicyDelete request;
  request.set_text(kObjects);
  request.set_source("in.yaml");
  auto* same = request.add_objects();  // also in the file: deleted once
  same->set_kind("Pod");
  same->set_namespace_("prod");
  same->set_name("db-0");
  auto* other = request.add_objects();
  other->set_kind("Namespace");
  other->set_name("staging");
  auto batch = batch_to_delete(request, "cluster-b");
  ASSERT_TRUE(batch.ok()) << batch.error();
  EXPECT_EQ(batch->cluster, "cluster-b");
  EXPECT_TRUE(batch->policies.empty() && batch->namespaces.empty() && batch->pods.empty());
  EXPECT_EQ(batch->delete_policies, (std::vector<fed::ObjectName>{{"prod", "db-from-web"}}));
  EXPECT_EQ(batch->delete_namespaces, (std::vector<std::string>{"prod", "staging"}));
  EXPECT_EQ(batch->delete_pods, (std::vector<fed::ObjectName>{{"prod", "db-0"}, {"prod", "web-1"}}));
}

TEST(PolicyRequests, DeleteRefusesBadReferencesNamingEach) {
  v1::PolicyDelete request;
  auto add = [&](const char* kind, const char* ns, const char* name) {
    auto* ref = request.add_objects();
    ref->set_kind(kind);
    ref->set_namespace_(ns);
    ref->set_name(name);
  };
  add("Service", "prod", "x");
  add("Namespace", "prod", "prod");
  add("Pod", "", "web-1");
  add("MultiNetworkPolicy", "prod", "Bad_Name");
  add("Pod", "prod", "fine");
  auto batch = batch_to_delete(request, "cluster-a");
  ASSERT_FALSE(batch.ok());
  for (const char* field : {"objects[0].kind:", "objects[1].namespace:", "objects[2].namespace:", "objects[3].name:"})
    EXPECT_NE(batch.error().find(field), std::string::npos) << field << " not in:\n" << batch.error();
  EXPECT_EQ(batch.error().find("objects[4]"), std::string::npos) << batch.error();
  EXPECT_FALSE(batch_to_delete(v1::PolicyDelete(), "cluster-a").ok());  // nothing to delete
}

TEST(PolicyRequests, SelectorsPrintAsKubectlPrintsThem) {
  policy::LabelSelector s;
  EXPECT_EQ(selector_text(s), "");
  s.match_labels = {{"app", "web"}, {"env", "prod"}};
  s.match_expressions = {{"tier", policy::Operator::In, {"a", "b"}},
                         {"zone", policy::Operator::NotIn, {"x"}},
                         {"debug", policy::Operator::Exists, {}},
                         {"legacy", policy::Operator::DoesNotExist, {}}};
  EXPECT_EQ(selector_text(s), "app=web,env=prod,tier in (a,b),zone notin (x),debug,!legacy");
}

TEST(PolicyRequests, StoreAnswersBecomeMessages) {
  fed::testing::FakeKv kv;
  fed::PolicyStore store(kv, fed::PolicyStoreOptions{});
  auto batch = batch_to_apply(apply_request(kObjects), "cluster-a");
  ASSERT_TRUE(batch.ok()) << batch.error();
  auto report = store.apply(*batch, 1'000'000);
  ASSERT_TRUE(report.ok()) << report.error();
  const auto applied = applied_message(*batch, *report);
  EXPECT_EQ(applied.cluster(), "cluster-a");
  EXPECT_EQ(applied.revision(), report->revision);
  EXPECT_EQ(applied.policies(), 1u);
  EXPECT_EQ(applied.namespaces(), 1u);
  EXPECT_EQ(applied.pods(), 2u);
  EXPECT_EQ(applied.new_identities(), 2u);
  ASSERT_EQ(applied.pod_identities_size(), 2);

  auto snapshot = store.list();
  ASSERT_TRUE(snapshot.ok()) << snapshot.error();
  const auto listing = listing_message(*snapshot);
  ASSERT_EQ(listing.policies_size(), 1);
  const auto& p = listing.policies(0);
  EXPECT_EQ(p.cluster(), "cluster-a");
  EXPECT_EQ(p.pod_selector(), "app=db,tier notin (a,b),!legacy");
  EXPECT_EQ(std::vector<std::string>(p.policy_types().begin(), p.policy_types().end()),
            (std::vector<std::string>{"Ingress", "Egress"}));
  EXPECT_EQ(p.ingress_rules(), 1u);
  EXPECT_EQ(p.egress_rules(), 0u);
  EXPECT_EQ(std::vector<std::string>(p.policy_for().begin(), p.policy_for().end()), (std::vector<std::string>{"prod/red"}));
  ASSERT_EQ(listing.namespaces_size(), 1);
  EXPECT_EQ(listing.namespaces(0).labels().at("team"), "blue");
  ASSERT_EQ(listing.pods_size(), 2);  // sorted by name: db-0, web-1
  EXPECT_EQ(listing.pods(0).name(), "db-0");
  EXPECT_EQ(listing.pods(1).name(), "web-1");
  for (const auto& pod : applied.pod_identities())
    EXPECT_EQ(pod.identity(), listing.pods(pod.name() == "db-0" ? 0 : 1).identity()) << pod.name();
  EXPECT_NE(listing.pods(0).identity(), listing.pods(1).identity());
  EXPECT_EQ(listing.identities(), 2u);

  // The delete of the same objects: everything gone, numbers no longer counted as allocated.
  v1::PolicyDelete del;
  del.set_text(kObjects);
  auto gone = batch_to_delete(del, "cluster-a");
  ASSERT_TRUE(gone.ok()) << gone.error();
  auto deleted = store.apply(*gone, 1'000'001);
  ASSERT_TRUE(deleted.ok()) << deleted.error();
  EXPECT_EQ(applied_message(*gone, *deleted).deleted(), 4u);
  auto after = store.list();
  ASSERT_TRUE(after.ok());
  const auto empty = listing_message(*after);
  EXPECT_EQ(empty.policies_size() + empty.namespaces_size() + empty.pods_size(), 0);
  EXPECT_EQ(empty.identities(), 0u);
}

}  // namespace
}  // namespace vxfed::control
