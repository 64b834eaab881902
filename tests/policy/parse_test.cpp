// Unit tests of the policy parser (policy/parse.hpp): objects as `kubectl get -o yaml` prints
// them (one, a stream, a List), Kubernetes' defaults, and every refused field with the exact
// path and reason of its error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/names.hpp"
#include "policy/parse.hpp"
#include "policy/yaml_stream.hpp"

namespace {

using namespace vxfed::policy;

// What `kubectl get multi-networkpolicy -o yaml` prints: the API server's metadata included.
const char* kKubectlPolicy = R"(apiVersion: k8s.cni.cncf.io/v1beta1
kind: MultiNetworkPolicy
metadata:
  annotations:
    k8s.v1.cni.cncf.io/policy-for: training/fed-a, fed-b
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"k8s.cni.cncf.io/v1beta1","kind":"MultiNetworkPolicy"}
  creationTimestamp: "2026-12-01T10:00:00Z"
  generation: 1
  managedFields:
  - apiVersion: k8s.cni.cncf.io/v1beta1
    fieldsType: FieldsV1
    manager: kubectl-client-side-apply
    operation: Update
  name: allow-trainers
  namespace: prod
  resourceVersion: "4242"
  uid: 6f1c2d9e-0000-4000-8000-000000000001
spec:
  podSelector:
    matchLabels:
      app.kubernetes.io/name: trainer
    matchExpressions:
    - key: tier
      operator: NotIn
      values: [debug, canary]
  policyTypes:
  - Ingress
  - Egress
  ingress:
  - from:
    - namespaceSelector:
        matchLabels:
          team: blue
      podSelector:
        matchLabels:
          role: client
    - ipBlock:
        cidr: 172.17.0.0/16
        except:
        - 172.17.1.0/24
    ports:
    - protocol: TCP
      port: 6379
    - port: 32000
      endPort: 32768
    - protocol: UDP
  egress:
  - to:
    - podSelector: {}
)";

Objects parse_ok(const std::string& text) {
  auto r = parse_objects(text, "a", "in.yaml");
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? std::move(r).value() : Objects{};
}

// The errors of `text`, every one (parse_objects must fail with the same lines).
std::vector<std::string> errors_of(const std::string& text) {
  Parsed p = read_objects(text, "a", "in.yaml");
  auto r = parse_objects(text, "a", "in.yaml");
  EXPECT_FALSE(r.ok()) << "expected errors";
  if (!r.ok()) {
    std::string joined;
    for (const auto& e : p.errors) joined += (joined.empty() ? "" : "\n") + e;
    EXPECT_EQ(r.error(), joined);
  }
  return p.errors;
}

// A policy in namespace prod for network fed-a with `spec` (indented by two spaces).
std::string policy_with(const std::string& spec, const std::string& name = "p") {
  return "apiVersion: k8s.cni.cncf.io/v1beta1\nkind: MultiNetworkPolicy\nmetadata:\n  name: " + name +
         "\n  namespace: prod\n  annotations:\n    k8s.v1.cni.cncf.io/policy-for: prod/fed-a\nspec:\n" + spec;
}

TEST(Parse, ReadsAPolicyAsKubectlPrintsIt) {
  const Objects o = parse_ok(kKubectlPolicy);
  ASSERT_EQ(o.policies.size(), 1u);
  const Policy& p = o.policies[0];
  EXPECT_EQ(p.cluster, "a");
  EXPECT_EQ(p.namespace_name, "prod");
  EXPECT_EQ(p.name, "allow-trainers");
  // A bare NAD name is in the policy's own namespace.
  EXPECT_EQ(p.policy_for, (std::vector<NadRef>{{"training", "fed-a"}, {"prod", "fed-b"}}));
  EXPECT_EQ(p.pod_selector.match_labels, (Labels{{"app.kubernetes.io/name", "trainer"}}));
  ASSERT_EQ(p.pod_selector.match_expressions.size(), 1u);
  EXPECT_EQ(p.pod_selector.match_expressions[0].op, Operator::NotIn);
  EXPECT_EQ(p.pod_selector.match_expressions[0].values, (std::vector<std::string>{"debug", "canary"}));
  EXPECT_TRUE(p.ingress_type);
  EXPECT_TRUE(p.egress_type);
  ASSERT_EQ(p.ingress.size(), 1u);
  const Rule& r = p.ingress[0];
  ASSERT_EQ(r.peers.size(), 2u);
  ASSERT_TRUE(r.peers[0].namespace_selector && r.peers[0].pod_selector);
  EXPECT_EQ(r.peers[0].namespace_selector->match_labels, (Labels{{"team", "blue"}}));
  EXPECT_EQ(r.peers[0].pod_selector->match_labels, (Labels{{"role", "client"}}));
  EXPECT_FALSE(r.peers[0].ip_block);
  ASSERT_TRUE(r.peers[1].ip_block);
  EXPECT_EQ(r.peers[1].ip_block->cidr.str(), "172.17.0.0/16");
  ASSERT_EQ(r.peers[1].ip_block->except.size(), 1u);
  EXPECT_EQ(r.peers[1].ip_block->except[0].str(), "172.17.1.0/24");
  ASSERT_EQ(r.ports.size(), 3u);
  EXPECT_EQ(r.ports[0].protocol, Protocol::Tcp);
  EXPECT_EQ(r.ports[0].port, 6379);
  EXPECT_FALSE(r.ports[0].end_port);
  EXPECT_EQ(r.ports[1].protocol, Protocol::Tcp) << "TCP is the default";
  EXPECT_EQ(r.ports[1].port, 32000);
  EXPECT_EQ(r.ports[1].end_port, 32768);
  EXPECT_EQ(r.ports[2].protocol, Protocol::Udp);
  EXPECT_FALSE(r.ports[2].port) << "no port: every UDP port";
  ASSERT_EQ(p.egress.size(), 1u);
  ASSERT_EQ(p.egress[0].peers.size(), 1u);
  ASSERT_TRUE(p.egress[0].peers[0].pod_selector);
  EXPECT_TRUE(p.egress[0].peers[0].pod_selector->empty());
  EXPECT_FALSE(p.egress[0].peers[0].namespace_selector);
  EXPECT_TRUE(p.egress[0].ports.empty());
}

TEST(Parse, PolicyTypesDefaultAsKubernetes) {
  struct Case {
    const char* what;
    std::string spec;
    bool ingress, egress;
  } cases[] = {
      {"no policyTypes, no egress: Ingress", "  podSelector: {}\n", true, false},
      {"no policyTypes, ingress rules: Ingress", "  podSelector: {}\n  ingress:\n  - {}\n", true, false},
      {"no policyTypes, egress rules: Ingress and Egress", "  podSelector: {}\n  egress:\n  - {}\n", true, true},
      {"no policyTypes, empty egress list: Ingress only", "  podSelector: {}\n  egress: []\n", true, false},
      {"Egress alone", "  podSelector: {}\n  policyTypes: [Egress]\n  ingress:\n  - {}\n", false, true},
      {"both given", "  podSelector: {}\n  policyTypes: [Ingress, Egress]\n", true, true},
  };
  for (const auto& c : cases) {
    const Objects o = parse_ok(policy_with(c.spec));
    ASSERT_EQ(o.policies.size(), 1u) << c.what;
    EXPECT_EQ(o.policies[0].ingress_type, c.ingress) << c.what;
    EXPECT_EQ(o.policies[0].egress_type, c.egress) << c.what;
  }
}

TEST(Parse, EmptyAndAbsentPartsKeepTheirMeaning) {
  const Objects o = parse_ok(policy_with("  podSelector: {}\n  ingress:\n  - from: []\n    ports: []\n  - {}\n"));
  ASSERT_EQ(o.policies.size(), 1u);
  const Policy& p = o.policies[0];
  EXPECT_TRUE(p.pod_selector.empty());
  ASSERT_EQ(p.ingress.size(), 2u);
  EXPECT_TRUE(p.ingress[0].peers.empty());
  EXPECT_TRUE(p.ingress[0].ports.empty());
  EXPECT_TRUE(p.ingress[1].peers.empty());
  // An absent podSelector is {} too (Kubernetes decodes it so); an absent ingress is no rules.
  const Objects q = parse_ok(policy_with("  policyTypes: [Ingress]\n"));
  ASSERT_EQ(q.policies.size(), 1u);
  EXPECT_TRUE(q.policies[0].pod_selector.empty());
  EXPECT_TRUE(q.policies[0].ingress.empty());
  EXPECT_TRUE(q.policies[0].ingress_type);
}

const char* kNamespaceAndPod = R"(apiVersion: v1
kind: Namespace
metadata:
  creationTimestamp: "2026-12-01T10:00:00Z"
  labels:
    kubernetes.io/metadata.name: prod
    team: blue
  name: prod
  resourceVersion: "17"
  uid: 0a0b0c0d-0000-4000-8000-000000000002
spec:
  finalizers:
  - kubernetes
status:
  phase: Active
---
apiVersion: v1
kind: Pod
metadata:
  annotations:
    k8s.v1.cni.cncf.io/networks: '[{"name": "fed-a", "interface": "net1"}]'
  labels:
    app: web
    pod-template-hash: 7d4b9c8f6
  name: web-7d4b9c8f6-x2x9z
  namespace: prod
  ownerReferences:
  - apiVersion: apps/v1
    kind: ReplicaSet
    name: web-7d4b9c8f6
    uid: 0a0b0c0d-0000-4000-8000-000000000003
spec:
  containers:
  - image: nginx
    name: web
status:
  phase: Running
  podIP: 10.0.0.7
)";

TEST(Parse, MultiDocumentStream) {
  const std::string text = "# from kubectl\n---\n" + std::string(kKubectlPolicy) + "---\n" + kNamespaceAndPod + "---\n";
  const Objects o = parse_ok(text);
  ASSERT_EQ(o.policies.size(), 1u);
  ASSERT_EQ(o.namespaces.size(), 1u);
  ASSERT_EQ(o.pods.size(), 1u);
  EXPECT_EQ(o.namespaces[0].name, "prod");
  EXPECT_EQ(o.namespaces[0].cluster, "a");
  EXPECT_EQ(o.namespaces[0].labels, (Labels{{"kubernetes.io/metadata.name", "prod"}, {"team", "blue"}}));
  EXPECT_EQ(o.pods[0].name, "web-7d4b9c8f6-x2x9z");
  EXPECT_EQ(o.pods[0].namespace_name, "prod");
  EXPECT_EQ(o.pods[0].labels, (Labels{{"app", "web"}, {"pod-template-hash", "7d4b9c8f6"}}))
      << "the parser keeps every label; identities filter them";
  EXPECT_EQ(o.pods[0].annotations.at("k8s.v1.cni.cncf.io/networks"), R"([{"name": "fed-a", "interface": "net1"}])");
}

TEST(Parse, KindList) {
  const std::string text = R"(apiVersion: v1
kind: List
metadata:
  resourceVersion: ""
items:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: prod
- apiVersion: k8s.cni.cncf.io/v1beta1
  kind: MultiNetworkPolicy
  metadata:
    name: deny-all
    namespace: prod
    annotations:
      k8s.v1.cni.cncf.io/policy-for: fed-a
  spec:
    podSelector: {}
    policyTypes: [Ingress]
- apiVersion: k8s.cni.cncf.io/v1beta1
  kind: MultiNetworkPolicy
  metadata:
    name: allow-web
    namespace: prod
    annotations:
      k8s.v1.cni.cncf.io/policy-for: fed-a
  spec:
    podSelector: {matchLabels: {app: web}}
    ingress:
    - ports: [{port: 80}]
)";
  const Objects o = parse_ok(text);
  ASSERT_EQ(o.namespaces.size(), 1u);
  ASSERT_EQ(o.policies.size(), 2u);
  EXPECT_EQ(o.policies[0].name, "deny-all");
  EXPECT_TRUE(o.policies[0].ingress.empty());
  EXPECT_EQ(o.policies[1].name, "allow-web");
  EXPECT_EQ(o.policies[1].ingress.at(0).ports.at(0).port, 80);
}

// Every refused field: the exact line, path included.
TEST(Parse, RefusedFieldsNameTheirPath) {
  struct Case {
    std::string spec;
    std::string error;
  } cases[] = {
      {"  ingress:\n  - ports:\n    - port: 443\n    - port: 80\n      endPort: 79\n",
       "spec.ingress[0].ports[1].endPort: must be >= port (80)"},
      {"  ingress:\n  - ports:\n    - protocol: SCTP\n      port: 9\n",
       "spec.ingress[0].ports[0].protocol: SCTP is refused until supported (vxfed enforces TCP and UDP)"},
      {"  ingress:\n  - ports:\n    - protocol: tcp\n",
       "spec.ingress[0].ports[0].protocol: must be TCP or UDP (got 'tcp')"},
      {"  egress:\n  - ports:\n    - port: http\n",
       "spec.egress[0].ports[0].port: named port 'http' is refused until supported: give the port number"},
      {"  egress:\n  - ports:\n    - port: \"80\"\n",
       "spec.egress[0].ports[0].port: named port '80' is refused until supported: give the port number"},
      {"  ingress:\n  - ports:\n    - port: 0\n", "spec.ingress[0].ports[0].port: must be an integer 1..65535 (got '0')"},
      {"  ingress:\n  - ports:\n    - port: 65536\n",
       "spec.ingress[0].ports[0].port: must be an integer 1..65535 (got '65536')"},
      {"  ingress:\n  - ports:\n    - endPort: 90\n",
       "spec.ingress[0].ports[0].endPort: requires a numeric port (port is not set)"},
      {"  ingress:\n  - ports:\n    - port: 80\n      endPort: 70000\n",
       "spec.ingress[0].ports[0].endPort: must be an integer 1..65535 (got '70000')"},
      {"  ingress:\n  - ports:\n    - port: 80\n      range: 5\n",
       "spec.ingress[0].ports[0].range: unknown key (expected one of: protocol, port, endPort)"},
      {"  podSelector:\n    matchExpressions:\n    - key: app\n      operator: In\n",
       "spec.podSelector.matchExpressions[0].values: must be non-empty when operator is In"},
      {"  podSelector:\n    matchExpressions:\n    - key: app\n      operator: NotIn\n      values: []\n",
       "spec.podSelector.matchExpressions[0].values: must be non-empty when operator is NotIn"},
      {"  podSelector:\n    matchExpressions:\n    - key: app\n      operator: Exists\n      values: [web]\n",
       "spec.podSelector.matchExpressions[0].values: must be empty when operator is Exists"},
      {"  podSelector:\n    matchExpressions:\n    - key: app\n      operator: DoesNotExist\n      values: [x]\n",
       "spec.podSelector.matchExpressions[0].values: must be empty when operator is DoesNotExist"},
      {"  podSelector:\n    matchExpressions:\n    - key: app\n      operator: Equals\n      values: [x]\n",
       "spec.podSelector.matchExpressions[0].operator: must be In, NotIn, Exists or DoesNotExist (got 'Equals')"},
      {"  podSelector:\n    matchExpressions:\n    - operator: Exists\n",
       "spec.podSelector.matchExpressions[0].key: is required"},
      {"  podSelector:\n    matchLabels:\n      -app: web\n",
       "spec.podSelector.matchLabels.-app: '-app' has name part '-app', which must be at most 63 characters of "
       "[A-Za-z0-9-_.], starting and ending alphanumeric"},
      {"  podSelector:\n    matchLabels:\n      Example.COM/app: web\n",
       "spec.podSelector.matchLabels[\"Example.COM/app\"]: 'Example.COM/app' has prefix 'Example.COM', which must "
       "consist of [a-z0-9-.] (a DNS subdomain)"},
      {"  podSelector:\n    matchLabels:\n      app: " + std::string(64, 'x') + "\n",
       "spec.podSelector.matchLabels.app: '" + std::string(64, 'x') +
           "' must be at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric"},
      {"  podSelector:\n    matchLabels:\n      pod-template-hash: 7d4b9c8f6\n",
       "spec.podSelector.matchLabels.pod-template-hash: selects on 'pod-template-hash', which vxfed leaves out of "
       "pod identities (it changes with every rollout or run; docs/policy.md): this selector could never match"},
      {"  ingress:\n  - from:\n    - podSelector:\n        matchExpressions:\n        - key: controller-revision-hash\n"
       "          operator: Exists\n",
       "spec.ingress[0].from[0].podSelector.matchExpressions[0].key: selects on 'controller-revision-hash', which "
       "vxfed leaves out of pod identities (it changes with every rollout or run; docs/policy.md): this selector "
       "could never match"},
      {"  podSelector:\n    matchLabel:\n      app: web\n",
       "spec.podSelector.matchLabel: unknown key (expected one of: matchLabels, matchExpressions)"},
      {"  ingress:\n  - from:\n    - ipBlock:\n        cidr: 10.0.0.0/16\n        except: [10.1.0.0/24]\n",
       "spec.ingress[0].from[0].ipBlock.except[0]: '10.1.0.0/24' must lie strictly inside cidr 10.0.0.0/16"},
      {"  ingress:\n  - from:\n    - ipBlock:\n        cidr: 10.0.0.0/16\n        except: [10.0.0.0/16]\n",
       "spec.ingress[0].from[0].ipBlock.except[0]: '10.0.0.0/16' must lie strictly inside cidr 10.0.0.0/16"},
      {"  ingress:\n  - from:\n    - ipBlock:\n        cidr: 10.0.0.0/8\n        except: [10.0.0.0/33]\n",
       "spec.ingress[0].from[0].ipBlock.except[0]: " + std::string(vxfed::net::Ipv4Prefix::parse("10.0.0.0/33").error())},
      {"  ingress:\n  - from:\n    - ipBlock:\n        cidr: 10.1.0.0/8\n",
       "spec.ingress[0].from[0].ipBlock.cidr: " + std::string(vxfed::net::Ipv4Prefix::parse("10.1.0.0/8").error())},
      {"  egress:\n  - to:\n    - ipBlock:\n        cidr: fd00::/64\n",
       "spec.egress[0].to[0].ipBlock.cidr: 'fd00::/64' is an IPv6 CIDR: vxfed networks carry IPv4 only (refused "
       "until supported)"},
      {"  egress:\n  - to:\n    - ipBlock: {except: [10.0.0.0/24]}\n", "spec.egress[0].to[0].ipBlock.cidr: is required"},
      {"  ingress:\n  - from:\n    - ipBlock:\n        cidr: 10.0.0.0/8\n      podSelector: {}\n",
       "spec.ingress[0].from[0]: ipBlock cannot be combined with podSelector or namespaceSelector in one peer (make "
       "them two entries)"},
      {"  ingress:\n  - from:\n    - {}\n",
       "spec.ingress[0].from[0]: must have podSelector, namespaceSelector or ipBlock (Kubernetes refuses an empty "
       "peer; to match every peer, leave out from/to)"},
      {"  ingress:\n  - to:\n    - podSelector: {}\n",
       "spec.ingress[0].to: unknown key (expected one of: from, ports)"},
      {"  ingresss:\n  - {}\n",
       "spec.ingresss: unknown key (expected one of: podSelector, policyTypes, ingress, egress)"},
      {"  policyTypes: [Ingress, Both]\n", "spec.policyTypes[1]: must be Ingress or Egress (got 'Both')"},
      {"  ingress: {from: []}\n", "spec.ingress: must be a list (got a mapping)"},
      // A scalar where a mapping belongs: one error, at that field.
      {"  podSelector: web\n", "spec.podSelector: must be a mapping (got 'web')"},
      {"  ingress:\n  - from: [web]\n", "spec.ingress[0].from[0]: must be a mapping (got 'web')"},
      {"  ingress:\n  - ports: [80]\n", "spec.ingress[0].ports[0]: must be a mapping (got '80')"},
      {"  ingress:\n  - from: [{ipBlock: 10.0.0.0/8}]\n",
       "spec.ingress[0].from[0].ipBlock: must be a mapping (got '10.0.0.0/8')"},
      {"  ingress:\n  - from: [{podSelector: {matchLabels: app}}]\n",
       "spec.ingress[0].from[0].podSelector.matchLabels: must be a mapping (got 'app')"},
      {"  ingress: [web]\n", "spec.ingress[0]: must be a mapping (got 'web')"},
      {"  podSelector:\n    matchExpressions: [app]\n",
       "spec.podSelector.matchExpressions[0]: must be a mapping (got 'app')"},
      {"  podSelector:\n    matchLabels: {app: {name: web}}\n",
       "spec.podSelector.matchLabels.app: must be a string (got a mapping)"},
  };
  for (const auto& c : cases) {
    const auto errors = errors_of(policy_with(c.spec));
    EXPECT_EQ(errors.size(), 1u) << c.spec << (errors.empty() ? "" : errors[0]);
    if (errors.empty()) continue;
    EXPECT_EQ(errors[0], "in.yaml: " + c.error) << c.spec;
  }
}

TEST(Parse, RefusedObjectsAndMetadata) {
  struct Case {
    std::string text;
    std::string error;
  } cases[] = {
      {"apiVersion: k8s.cni.cncf.io/v1beta1\nkind: MultiNetworkPolicy\nmetadata:\n  name: p\n  namespace: prod\n"
       "spec:\n  podSelector: {}\n",
       "metadata.annotations[\"k8s.v1.cni.cncf.io/policy-for\"]: is required: it names the networks the policy is "
       "for (NAMESPACE/NAD, comma-separated)"},
      {"apiVersion: k8s.cni.cncf.io/v1beta1\nkind: MultiNetworkPolicy\nmetadata:\n  name: p\n  namespace: prod\n"
       "  annotations:\n    k8s.v1.cni.cncf.io/policy-for: prod/fed-a,,fed-b\nspec: {}\n",
       "metadata.annotations[\"k8s.v1.cni.cncf.io/policy-for\"]: 'prod/fed-a,,fed-b' has an empty entry: expected "
       "NAMESPACE/NAD[,NAMESPACE/NAD...]"},
      {"apiVersion: k8s.cni.cncf.io/v1beta1\nkind: MultiNetworkPolicy\nmetadata:\n  name: p\n  namespace: prod\n"
       "  annotations:\n    k8s.v1.cni.cncf.io/policy-for: Prod/fed-a\nspec: {}\n",
       "metadata.annotations[\"k8s.v1.cni.cncf.io/policy-for\"]: 'Prod' is not a namespace name: must consist of "
       "[a-z0-9-] (a DNS label)"},
      {"apiVersion: k8s.cni.cncf.io/v1beta1\nkind: MultiNetworkPolicy\nmetadata:\n  name: p\n  namespace: prod\n"
       "  annotations:\n    k8s.v1.cni.cncf.io/policy-for: fed-a, prod/Fed_B\nspec: {}\n",
       "metadata.annotations[\"k8s.v1.cni.cncf.io/policy-for\"]: 'Fed_B' is not a NAD name: must consist of "
       "[a-z0-9-.] (a DNS subdomain)"},
      {"apiVersion: k8s.cni.cncf.io/v1beta1\nkind: MultiNetworkPolicy\nmetadata:\n  name: p\n"
       "  annotations:\n    k8s.v1.cni.cncf.io/policy-for: fed-a\nspec: {}\n",
       "metadata.namespace: is required (kubectl get -o yaml prints it; vxfedctl has no current namespace)"},
      {"apiVersion: k8s.cni.cncf.io/v1beta1\nkind: MultiNetworkPolicy\nmetadata:\n  name: p\n  namespace: prod\n"
       "  annotations:\n    k8s.v1.cni.cncf.io/policy-for: fed-a\n",
       "spec: is required"},
      {"apiVersion: k8s.cni.cncf.io/v1beta2\nkind: MultiNetworkPolicy\nmetadata:\n  name: p\n",
       "apiVersion: must be k8s.cni.cncf.io/v1beta1 for MultiNetworkPolicy (got 'k8s.cni.cncf.io/v1beta2'; other "
       "versions are refused until supported)"},
      {"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: p\n",
       "kind: 'NetworkPolicy' is not read by vxfed (expected MultiNetworkPolicy k8s.cni.cncf.io/v1beta1, Namespace "
       "v1 or Pod v1)"},
      {"kind: Pod\nmetadata:\n  name: p\n", "apiVersion: is required"},
      {"apiVersion: v1\nkind: Pod\nmetadata:\n  name: Web_1\n  namespace: prod\n",
       "metadata.name: 'Web_1' must consist of [a-z0-9-.] (a DNS subdomain)"},
      {"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod.eu\n",
       "metadata.name: 'prod.eu' must consist of [a-z0-9-] (a DNS label)"},
      {"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod\n  labels:\n    team: a b\n",
       "metadata.labels.team: 'a b' must be at most 63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric"},
      {"apiVersion: v1\nkind: Pod\nspec: {}\n", "metadata: is required"},
      {"apiVersion: k8s.cni.cncf.io/v1beta1\nkind: MultiNetworkPolicy\nmetadata:\n  name: p\n  namespace: prod\n"
       "  annotations:\n    k8s.v1.cni.cncf.io/policy-for: fed-a\nspec: open\n",
       "spec: must be a mapping (got 'open')"},
      {"apiVersion: v1\nkind: Pod\nmetadata: web\n", "metadata: must be a mapping (got 'web')"},
      {"- a\n- b\n", "(top level): must be a mapping (got a list)"},
      {"apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: b\n",
       "line 4, column 1: YAML syntax error: end of map flow not found"},
      {"", "no objects (expected MultiNetworkPolicy, Namespace or Pod objects)"},
      {"apiVersion: v1\nkind: List\nitems:\n", "no objects (expected MultiNetworkPolicy, Namespace or Pod objects)"},
  };
  for (const auto& c : cases) {
    const auto errors = errors_of(c.text);
    EXPECT_EQ(errors.size(), 1u) << c.text << (errors.empty() ? "" : errors[0]);
    if (errors.empty()) continue;
    EXPECT_EQ(errors[0], "in.yaml: " + c.error) << c.text;
  }
}

TEST(Parse, ListItemErrorsNameTheItem) {
  const std::string text = R"(apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata: {name: prod}
- apiVersion: v1
  kind: Namespace
  metadata: {name: dev}
- apiVersion: k8s.cni.cncf.io/v1beta1
  kind: MultiNetworkPolicy
  metadata:
    name: web
    namespace: prod
    annotations: {k8s.v1.cni.cncf.io/policy-for: fed-a}
  spec:
    ingress:
    - ports:
      - port: 443
      - port: 80
        endPort: 79
)";
  EXPECT_EQ(errors_of(text), (std::vector<std::string>{"in.yaml: items[2].spec.ingress[0].ports[1].endPort: must be >= port (80)"}));
}

// A bad input is refused whole and every error is listed, across objects and documents.
TEST(Parse, EveryErrorIsListedAndNothingIsApplied) {
  const std::string text = policy_with(
                               "  podSelector:\n    matchExpressions:\n    - key: app\n      operator: In\n"
                               "  ingress:\n  - ports:\n    - protocol: SCTP\n    - port: http\n      endPort: 90\n"
                               "  egress:\n  - to:\n    - ipBlock: {cidr: 10.0.0.0/8, except: [11.0.0.0/16]}\n") +
                           "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod\n---\n" +
                           "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: prod\n---\n" +
                           "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n";
  const auto errors = errors_of(text);
  EXPECT_EQ(errors, (std::vector<std::string>{
                        "in.yaml: documents[0].spec.podSelector.matchExpressions[0].values: must be non-empty when "
                        "operator is In",
                        "in.yaml: documents[0].spec.ingress[0].ports[0].protocol: SCTP is refused until supported "
                        "(vxfed enforces TCP and UDP)",
                        "in.yaml: documents[0].spec.ingress[0].ports[1].port: named port 'http' is refused until "
                        "supported: give the port number",
                        "in.yaml: documents[0].spec.ingress[0].ports[1].endPort: requires a numeric port (port is a "
                        "name)",
                        "in.yaml: documents[0].spec.egress[0].to[0].ipBlock.except[0]: '11.0.0.0/16' must lie "
                        "strictly inside cidr 10.0.0.0/8",
                        "in.yaml: documents[2]: Namespace prod appears twice (first at documents[1])",
                        "in.yaml: documents[3].metadata.namespace: is required (kubectl get -o yaml prints it; "
                        "vxfedctl has no current namespace)",
                    }));
}

TEST(YamlStream, SplitsAtDocumentMarkersOnly) {
  const auto docs = split_documents(
      "# leading comment\n---\na: 1\nb: |\n  ---\n  text\n--- {c: 2}\n----\n...\nd: 4\n---   # comment\n");
  ASSERT_EQ(docs.size(), 5u);
  EXPECT_EQ(docs[0].text, "# leading comment\n");
  EXPECT_EQ(docs[1].text, "   \na: 1\nb: |\n  ---\n  text\n") << "an indented --- is content";
  EXPECT_EQ(docs[1].first_line, 1u);
  EXPECT_EQ(docs[2].text, "    {c: 2}\n----\n") << "text after --- keeps its column; ---- is no marker";
  EXPECT_EQ(docs[2].first_line, 6u);
  EXPECT_EQ(docs[3].text, "d: 4\n") << "after ... comes the next document";
  EXPECT_EQ(docs[3].first_line, 9u);
  EXPECT_EQ(docs[4].text, "      # comment\n");
}

// yaml-cpp 0.7's LoadAll never returns on this (it fills memory with empty documents).
TEST(YamlStream, MalformedStreamsEndWithASyntaxError) {
  const auto errors = errors_of("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n,a: b\n---\n]\n");
  ASSERT_EQ(errors.size(), 2u) << "each document's syntax error";
  EXPECT_EQ(errors[0], "in.yaml: line 4: YAML syntax error: this document has text but reads as empty (a stray ',' or a null?)")
      << "yaml-cpp reads ',a: b' as null without an error; the document starts at its '---' (line 4)";
  EXPECT_TRUE(errors[1].starts_with("in.yaml: line 7, column 1: YAML syntax error: ")) << errors[1];
}

TEST(YamlStream, HasContent) {
  EXPECT_FALSE(has_content(""));
  EXPECT_FALSE(has_content("   \n# only a comment\n\t\n"));
  EXPECT_TRUE(has_content("  # c\n ,a: b\n"));
  EXPECT_TRUE(has_content("~"));
}

TEST(Names, AsTheApiServerChecksThem) {
  EXPECT_EQ(check_label_key("app"), "");
  EXPECT_EQ(check_label_key("app.kubernetes.io/name"), "");
  EXPECT_EQ(check_label_key("a_b.c-d"), "");
  EXPECT_EQ(check_label_key(std::string(63, 'k')), "");
  EXPECT_NE(check_label_key(std::string(64, 'k')), "");
  EXPECT_EQ(check_label_key(std::string(253, 'p') + "/" + std::string(63, 'n')), "");
  EXPECT_NE(check_label_key(std::string(254, 'p') + "/n"), "");
  EXPECT_EQ(check_label_key("/app"), "has an empty prefix before '/'");
  EXPECT_EQ(check_label_key("example.com/"), "must have a name (the part after any prefix '/')");
  EXPECT_NE(check_label_key("a/b/c"), "") << "one '/' at most";
  EXPECT_NE(check_label_key("app_"), "");
  EXPECT_EQ(check_label_value(""), "") << "an empty value is valid";
  EXPECT_EQ(check_label_value("v1.2_x-Y"), "");
  EXPECT_NE(check_label_value("a/b"), "");
  EXPECT_NE(check_label_value(".a"), "");
  EXPECT_EQ(check_dns_label("prod-1"), "");
  EXPECT_NE(check_dns_label("prod.1"), "");
  EXPECT_NE(check_dns_label("-prod"), "");
  EXPECT_NE(check_dns_label(std::string(64, 'a')), "");
  EXPECT_EQ(check_dns_subdomain("web-0.prod"), "");
  EXPECT_NE(check_dns_subdomain("web..prod"), "");
  EXPECT_NE(check_dns_subdomain("Web"), "");
}

TEST(Parse, RefusesABadClusterName) {
  EXPECT_EQ(read_objects(kKubectlPolicy, "Cluster_A", "").errors,
            (std::vector<std::string>{"cluster 'Cluster_A' must consist of [a-z0-9-] (a DNS label)"}));
}

}  // namespace
