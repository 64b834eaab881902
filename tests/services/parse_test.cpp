// Unit tests of the service parser and validator (services/parse.hpp, validate.hpp): objects
// as `kubectl get -o yaml` prints them (a stream and a List), Kubernetes' defaults, and every
// refused input with the object, the exact path and the reason of its error; any error
// refuses the whole input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/names.hpp"
#include "services/annotations.hpp"
#include "services/parse.hpp"
#include "services/validate.hpp"

namespace {

using namespace vxfed::services;
using vxfed::net::Ipv4Addr;
using vxfed::net::Ipv4Prefix;

// What `kubectl get service,endpointslice,serviceexport -o yaml` prints in cluster-a, the API
// server's metadata included (trimmed of status).
const char* kKubectlService = R"(apiVersion: v1
kind: Service
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"v1","kind":"Service"}
    vxfed.io/strategy: WeightedRoundRobin
    vxfed.io/weights: cluster-a=3, cluster-b=1
  creationTimestamp: "2026-12-01T10:00:00Z"
  labels:
    app: web
  name: web
  namespace: default
  resourceVersion: "4242"
  uid: 6f1c2d9e-0000-4000-8000-000000000001
spec:
  clusterIP: 10.96.12.7
  clusterIPs:
  - 10.96.12.7
  internalTrafficPolicy: Cluster
  ipFamilies:
  - IPv4
  ipFamilyPolicy: SingleStack
  ports:
  - name: http
    port: 80
    protocol: TCP
    targetPort: 8080
  - name: dns
    port: 53
    protocol: UDP
    targetPort: 5353
  selector:
    app: web
  sessionAffinity: None
  type: ClusterIP
status:
  loadBalancer: {}
)";

const char* kKubectlSlice = R"(addressType: IPv4
apiVersion: discovery.k8s.io/v1
endpoints:
- addresses:
  - 10.244.1.5
  conditions:
    ready: true
    serving: true
    terminating: false
  nodeName: node-a1
  targetRef:
    kind: Pod
    name: web-6d4cf56db6-4xkzp
    namespace: default
    uid: 11111111-0000-4000-8000-000000000002
- addresses:
  - 10.244.2.9
  conditions:
    ready: false
  nodeName: node-a2
- addresses:
  - 10.244.3.3
kind: EndpointSlice
metadata:
  creationTimestamp: "2026-12-01T10:00:01Z"
  generateName: web-
  generation: 3
  labels:
    endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io
    kubernetes.io/service-name: web
  name: web-abcde
  namespace: default
  ownerReferences:
  - apiVersion: v1
    kind: Service
    name: web
ports:
- name: http
  port: 8080
  protocol: TCP
- name: dns
  port: 5353
  protocol: UDP
)";

const char* kKubectlExport = R"(apiVersion: multicluster.x-k8s.io/v1alpha1
kind: ServiceExport
metadata:
  creationTimestamp: "2026-12-01T10:05:00Z"
  generation: 1
  name: web
  namespace: default
  uid: 22222222-0000-4000-8000-000000000003
status:
  conditions:
  - lastTransitionTime: "2026-12-01T10:05:01Z"
    status: "True"
    type: Valid
)";

std::string stream() { return std::string(kKubectlService) + "---\n" + kKubectlSlice + "---\n" + kKubectlExport; }

FederationView federation() {
  FederationView f;
  f.cluster_cidrs["cluster-a"] = {*Ipv4Prefix::parse("10.244.0.0/16")};
  f.cluster_cidrs["cluster-b"] = {*Ipv4Prefix::parse("10.245.0.0/16")};
  f.service_range = *Ipv4Prefix::parse("10.100.0.0/24");
  return f;
}

// Every error of `text` applied for cluster-a: parsing, then validation when parsing passed.
std::vector<std::string> errors_of(const std::string& text) {
  Parsed p = read_objects(text, "cluster-a", "in.yaml");
  if (p.errors.empty()) p.errors = validate(p.objects, federation(), "in.yaml");
  auto r = parse_and_validate(text, "cluster-a", federation(), "in.yaml");
  EXPECT_FALSE(r.ok()) << "expected errors";
  if (!r.ok()) {
    std::string joined;
    for (const auto& e : p.errors) joined += (joined.empty() ? "" : "\n") + e;
    EXPECT_EQ(r.error(), joined) << "parse_and_validate must report the same lines";
  }
  return p.errors;
}

// `text` must be refused with exactly one error, equal to `expected`.
void expect_one_error(const std::string& text, const std::string& expected) {
  const auto errors = errors_of(text);
  ASSERT_EQ(errors.size(), 1u) << (errors.empty() ? "none" : errors[0] + (errors.size() > 1 ? "\n" + errors[1] : ""));
  EXPECT_EQ(errors[0], expected);
}

// `from` replaced by `to` in `text` (once; the replacement must exist).
std::string edit(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(ServicesParse, KubectlStreamIsAccepted) {
  auto r = parse_and_validate(stream(), "cluster-a", federation(), "in.yaml");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->services.size(), 1u);
  const Service& s = r->services[0];
  EXPECT_EQ(s.cluster, "cluster-a");
  EXPECT_EQ(s.key.str(), "default/web");
  ASSERT_EQ(s.ports.size(), 2u);
  EXPECT_EQ(s.ports[0], (ServicePort{"http", Protocol::Tcp, 80, 8080}));
  EXPECT_EQ(s.ports[1], (ServicePort{"dns", Protocol::Udp, 53, 5353}));
  EXPECT_EQ(s.strategy.strategy, Strategy::WeightedRoundRobin);
  EXPECT_EQ(s.strategy.weights, (std::map<std::string, std::uint32_t>{{"cluster-a", 3}, {"cluster-b", 1}}));
  EXPECT_FALSE(s.pinned_vip);
  ASSERT_EQ(r->slices.size(), 1u);
  const EndpointSlice& e = r->slices[0];
  EXPECT_EQ(e.cluster, "cluster-a") << "no source-cluster label: the apply's cluster";
  EXPECT_EQ(e.service_name, "web");
  ASSERT_EQ(e.endpoints.size(), 3u);
  EXPECT_TRUE(e.endpoints[0].ready);
  EXPECT_FALSE(e.endpoints[1].ready);
  EXPECT_TRUE(e.endpoints[2].ready) << "no conditions: ready, as Kubernetes says";
  ASSERT_EQ(r->exports.size(), 1u);
  EXPECT_EQ(r->exports[0].created_s, *parse_timestamp("2026-12-01T10:05:00Z"));
  EXPECT_EQ(r->exports[0].cluster, "cluster-a");
}

TEST(ServicesParse, ListAndDefaults) {
  const std::string list = R"(apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: {name: db, namespace: prod, annotations: {vxfed.io/strategy: FailoverOnly, vxfed.io/failover-order: "cluster-b,cluster-a", vxfed.io/vip: 10.100.0.9}}
  spec:
    ports:
    - port: 5432
- apiVersion: discovery.k8s.io/v1
  kind: EndpointSlice
  metadata: {name: db-1, namespace: prod, labels: {kubernetes.io/service-name: db, multicluster.kubernetes.io/source-cluster: cluster-b}}
  addressType: IPv4
  endpoints: [{addresses: [10.245.0.4]}]
  ports: [{port: 5432, name: ""}]
)";
  auto r = parse_and_validate(list, "cluster-a", federation(), "in.yaml");
  ASSERT_TRUE(r.ok()) << r.error();
  ASSERT_EQ(r->services.size(), 1u);
  EXPECT_EQ(r->services[0].ports[0], (ServicePort{"", Protocol::Tcp, 5432, 5432})) << "TCP, targetPort = port";
  EXPECT_EQ(r->services[0].strategy.strategy, Strategy::FailoverOnly);
  EXPECT_EQ(r->services[0].strategy.failover_order, (std::vector<std::string>{"cluster-b", "cluster-a"}));
  EXPECT_EQ(r->services[0].pinned_vip, *Ipv4Addr::parse("10.100.0.9"));
  EXPECT_EQ(r->slices[0].cluster, "cluster-b") << "the MCS source-cluster label names the backends' cluster";

  // No strategy annotation: WeightedRoundRobin without weights (docs/services.md).
  auto plain = parse_and_validate(edit(kKubectlService, "    vxfed.io/strategy: WeightedRoundRobin\n    vxfed.io/weights: cluster-a=3, cluster-b=1\n", ""),
                                  "cluster-a", federation(), "");
  ASSERT_TRUE(plain.ok()) << plain.error();
  EXPECT_EQ(plain->services[0].strategy, StrategySpec{});
  EXPECT_EQ(StrategySpec{}.strategy, Strategy::WeightedRoundRobin);
}

TEST(ServicesParse, ProtocolAndNamedTargetPortNameTheField) {
  expect_one_error(edit(stream(), "protocol: UDP\n    targetPort: 5353", "protocol: SCTP\n    targetPort: 5353"),
                   "in.yaml: Service default/web: documents[0].spec.ports[1].protocol: 'SCTP' is not supported "
                   "(vxfed balances TCP and UDP)");
  expect_one_error(edit(stream(), "targetPort: 8080", "targetPort: http-alt"),
                   "in.yaml: Service default/web: documents[0].spec.ports[0].targetPort: named targetPort 'http-alt' "
                   "is not supported: give the port number");
  expect_one_error(edit(stream(), "targetPort: 8080", "targetPort: \"8080\""),
                   "in.yaml: Service default/web: documents[0].spec.ports[0].targetPort: named targetPort '8080' "
                   "is not supported: give the port number");
  expect_one_error(edit(stream(), "    port: 80\n", "    port: 70000\n"),
                   "in.yaml: Service default/web: documents[0].spec.ports[0].port: must be an integer 1..65535 (got '70000')");
}

TEST(ServicesParse, SessionAffinityTypeAndFamiliesAreRefusedWithTheField) {
  expect_one_error(edit(stream(), "sessionAffinity: None", "sessionAffinity: ClientIP"),
                   "in.yaml: Service default/web: documents[0].spec.sessionAffinity: 'ClientIP' is not supported yet: "
                   "vxfed keeps each flow on its backend (consistent hashing and connection tracking), not each "
                   "client; use None");
  expect_one_error(edit(stream(), "type: ClusterIP", "type: LoadBalancer"),
                   "in.yaml: Service default/web: documents[0].spec.type: 'LoadBalancer' is not supported: a global "
                   "service is ClusterIP (its VIP comes from the federation's service range)");
  expect_one_error(edit(stream(), "  - IPv4\n  ipFamilyPolicy", "  - IPv6\n  ipFamilyPolicy"),
                   "in.yaml: Service default/web: documents[0].spec.ipFamilies[0]: 'IPv6' is not supported: vxfed "
                   "services are IPv4");
  const auto unknown = errors_of(edit(stream(), "  type: ClusterIP", "  type: ClusterIP\n  externalName: x"));
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].rfind("in.yaml: Service default/web: documents[0].spec.externalName: unknown key (expected one of: ports, ", 0), 0u)
      << unknown[0];
}

TEST(ServicesParse, PortNamesAndNumbersFollowKubernetesRules) {
  expect_one_error(edit(stream(), "  - name: dns\n    port: 53", "  - port: 53"),
                   "in.yaml: Service default/web: documents[0].spec.ports[1].name: is required when a Service has more "
                   "than one port");
  expect_one_error(edit(stream(), "  - name: dns\n    port: 53", "  - name: http\n    port: 53"),
                   "in.yaml: Service default/web: documents[0].spec.ports[1].name: 'http' is used twice (first at "
                   "documents[0].spec.ports[0])");
  expect_one_error(edit(edit(stream(), "  - name: dns\n    port: 53\n    protocol: UDP", "  - name: dns\n    port: 80\n    protocol: TCP"),
                        "- name: dns\n  port: 5353\n  protocol: UDP", "- name: dns\n  port: 5353\n  protocol: TCP"),
                   "in.yaml: Service default/web: documents[0].spec.ports[1].port: 80/TCP is used twice (first at "
                   "documents[0].spec.ports[0])");
  expect_one_error(edit(stream(), "internalTrafficPolicy: Cluster", "internalTrafficPolicy: Local"),
                   "in.yaml: Service default/web: documents[0].spec.internalTrafficPolicy: must be Cluster (got "
                   "'Local'): where traffic goes is the vxfed.io/strategy annotation's");
  expect_one_error(edit(stream(), "  type: ClusterIP", "  type: ClusterIP\n  publishNotReadyAddresses: true"),
                   "in.yaml: Service default/web: documents[0].spec.publishNotReadyAddresses: true is not supported: "
                   "vxfed picks ready backends only");
}

TEST(ServicesParse, NamesFollowTheApiServersRules) {
  expect_one_error(edit(stream(), "  name: web\n  namespace: default\n  resourceVersion", "  name: web.v2\n  namespace: default\n  resourceVersion"),
                   "in.yaml: Service: documents[0].metadata.name: 'web.v2' " +
                       vxfed::policy::check_dns_label("web.v2"));
  // A slice's name is a DNS subdomain: dots are fine there.
  auto dotted = parse_and_validate(edit(stream(), "name: web-abcde", "name: web.abcde"), "cluster-a", federation(), "");
  EXPECT_TRUE(dotted.ok()) << dotted.error();
}

TEST(ServicesParse, StrategyAnnotationsAreChecked) {
  expect_one_error(edit(stream(), "strategy: WeightedRoundRobin", "strategy: Nearest"),
                   "in.yaml: Service default/web: documents[0].metadata.annotations[\"vxfed.io/strategy\"]: unknown "
                   "strategy 'Nearest': must be LocalFirst, WeightedRoundRobin or FailoverOnly");
  const std::string weights = "in.yaml: Service default/web: documents[0].metadata.annotations[\"vxfed.io/weights\"]: ";
  expect_one_error(edit(stream(), "cluster-a=3, cluster-b=1", "cluster-a=3;cluster-b=1"),
                   weights + "weight '3;cluster-b=1' of cluster 'cluster-a' must be an integer 0..1000");
  expect_one_error(edit(stream(), "cluster-a=3, cluster-b=1", "cluster-a:3"),
                   weights + "'cluster-a:3' has no '=': expected CLUSTER=WEIGHT[,CLUSTER=WEIGHT...], e.g. "
                             "cluster-a=3,cluster-b=1");
  expect_one_error(edit(stream(), "cluster-a=3, cluster-b=1", "cluster-a=-1"),
                   weights + "weight '-1' of cluster 'cluster-a' must be an integer 0..1000");
  expect_one_error(edit(stream(), "cluster-a=3, cluster-b=1", "cluster-a=3,,cluster-b=1"),
                   weights + "'cluster-a=3,,cluster-b=1' has an empty entry: expected CLUSTER=WEIGHT[,CLUSTER=WEIGHT...], "
                             "e.g. cluster-a=3,cluster-b=1");
  expect_one_error(edit(stream(), "cluster-a=3, cluster-b=1", "cluster-a=3,cluster-a=1"),
                   weights + "cluster 'cluster-a' is given twice in 'cluster-a=3,cluster-a=1'");
  expect_one_error(edit(stream(), "cluster-a=3, cluster-b=1", "cluster-a=0"),
                   weights + "'cluster-a=0': at least one weight must be above 0 (else no backend could be picked)");
  expect_one_error(edit(stream(), "cluster-a=3, cluster-b=1", "cluster-a=3,cluster-c=1"),
                   weights + "cluster 'cluster-c' is not in the federation (known: cluster-a, cluster-b)");
  expect_one_error(edit(stream(), "strategy: WeightedRoundRobin", "strategy: LocalFirst"),
                   weights + "is read with strategy WeightedRoundRobin only (the strategy is LocalFirst)");
  expect_one_error(edit(stream(), "    vxfed.io/strategy: WeightedRoundRobin\n    vxfed.io/weights: cluster-a=3, cluster-b=1",
                        "    vxfed.io/strategy: FailoverOnly"),
                   "in.yaml: Service default/web: documents[0].metadata.annotations[\"vxfed.io/failover-order\"]: is "
                   "required with strategy FailoverOnly: the clusters in the order they serve, e.g. cluster-a,cluster-b");
  expect_one_error(edit(stream(), "    vxfed.io/weights: cluster-a=3, cluster-b=1",
                        "    vxfed.io/failover-order: cluster-a,cluster-a"),
                   "in.yaml: Service default/web: documents[0].metadata.annotations[\"vxfed.io/failover-order\"]: is "
                   "read with strategy FailoverOnly only (the strategy is WeightedRoundRobin)");
}

TEST(ServicesParse, VipOutsideTheRangeIsRefused) {
  const std::string with_vip = edit(stream(), "    vxfed.io/strategy", "    vxfed.io/vip: 10.101.0.1\n    vxfed.io/strategy");
  expect_one_error(with_vip, "in.yaml: Service default/web: documents[0].metadata.annotations[\"vxfed.io/vip\"]: "
                             "10.101.0.1 is outside the service range 10.100.0.0/24 (or is its network or broadcast "
                             "address)");
  expect_one_error(edit(with_vip, "10.101.0.1", "10.100.0.255"),
                   "in.yaml: Service default/web: documents[0].metadata.annotations[\"vxfed.io/vip\"]: "
                   "10.100.0.255 is outside the service range 10.100.0.0/24 (or is its network or broadcast "
                   "address)");
  expect_one_error(edit(with_vip, "10.101.0.1", "10.100.0.300"),
                   "in.yaml: Service default/web: documents[0].metadata.annotations[\"vxfed.io/vip\"]: "
                   "'10.100.0.300' is not an IPv4 address: " + Ipv4Addr::parse("10.100.0.300").error());
}

TEST(ServicesParse, SlicePortsMustMatchTheService) {
  expect_one_error(edit(stream(), "  port: 8080\n", "  port: 8081\n"),
                   "in.yaml: EndpointSlice default/web-abcde: documents[1].ports[0].port: 8081 does not match Service "
                   "default/web port 'http''s targetPort 8080");
  const auto missing = errors_of(edit(stream(), "- name: dns\n  port: 5353\n  protocol: UDP\n", ""));
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0], "in.yaml: EndpointSlice default/web-abcde: documents[1].ports: has no port 'dns'/UDP of Service "
                        "default/web (targetPort 5353)");
  const auto extra = errors_of(edit(stream(), "- name: dns\n  port: 5353\n", "- name: metrics\n  port: 5353\n"));
  ASSERT_EQ(extra.size(), 2u) << "a port the Service lacks, and the Service's port the slice lacks";
  EXPECT_EQ(extra[0], "in.yaml: EndpointSlice default/web-abcde: documents[1].ports[1].name: no port named "
                      "'metrics'/UDP in Service default/web: the slice's ports must be the Service's");
}

TEST(ServicesParse, BackendsOutsideTheirClusterAreRefused) {
  expect_one_error(edit(stream(), "  - 10.244.3.3", "  - 192.168.3.3"),
                   "in.yaml: EndpointSlice default/web-abcde: documents[1].endpoints[2].addresses[0]: 192.168.3.3 is "
                   "outside cluster 'cluster-a''s pod CIDRs (10.244.0.0/16)");
  expect_one_error(edit(stream(), "  - 10.244.3.3", "  - 10.245.3.3"),
                   "in.yaml: EndpointSlice default/web-abcde: documents[1].endpoints[2].addresses[0]: 10.245.3.3 is "
                   "outside cluster 'cluster-a''s pod CIDRs (10.244.0.0/16); it is in cluster 'cluster-b''s 10.245.0.0/16");
  expect_one_error(edit(stream(), "    kubernetes.io/service-name: web",
                        "    kubernetes.io/service-name: web\n    multicluster.kubernetes.io/source-cluster: cluster-z"),
                   "in.yaml: EndpointSlice default/web-abcde: "
                   "documents[1].metadata.labels[\"multicluster.kubernetes.io/source-cluster\"]: cluster 'cluster-z' "
                   "is not in the federation (known: cluster-a, cluster-b)");
  expect_one_error(edit(stream(), "addressType: IPv4", "addressType: FQDN"),
                   "in.yaml: EndpointSlice default/web-abcde: documents[1].addressType: 'FQDN' is not supported: "
                   "vxfed services are IPv4");
}

TEST(ServicesParse, ObjectsMustBelongTogether) {
  expect_one_error(edit(stream(), "kubernetes.io/service-name: web", "kubernetes.io/service-name: api"),
                   "in.yaml: EndpointSlice default/web-abcde: documents[1].metadata.labels[\"kubernetes.io/service-name\"]: "
                   "Service default/api is not in this input (apply a slice with its Service)");
  const std::string export_only = kKubectlExport;
  expect_one_error(export_only, "in.yaml: ServiceExport default/web: metadata.name: Service default/web is not in this "
                                "input (export a Service applied with it)");
  expect_one_error(edit(stream(), "  creationTimestamp: \"2026-12-01T10:05:00Z\"\n", ""),
                   "in.yaml: ServiceExport default/web: documents[2].metadata.creationTimestamp: is required: the "
                   "oldest export of a service wins when exports disagree");
  expect_one_error(edit(stream(), "\"2026-12-01T10:05:00Z\"", "\"2026-02-30T10:05:00Z\""),
                   "in.yaml: ServiceExport default/web: documents[2].metadata.creationTimestamp: '2026-02-30T10:05:00Z' "
                   "is not a timestamp like 2026-12-06T12:16:00Z (RFC 3339, UTC)");
  expect_one_error(stream() + "---\n" + kKubectlExport,
                   "in.yaml: ServiceExport default/web: documents[3]: appears twice (first at documents[2])");
}

TEST(ServicesParse, EveryErrorIsReportedAndNothingIsApplied) {
  std::string bad = edit(stream(), "protocol: UDP\n    targetPort: 5353", "protocol: SCTP\n    targetPort: 5353");
  bad = edit(bad, "strategy: WeightedRoundRobin", "strategy: Nearest");
  bad = edit(bad, "  - 10.244.3.3", "  - 192.168.3.3");
  // Parsing stops before validation, so the address is not reported yet: two errors, then
  // the third once the first two are fixed.
  const auto errors = errors_of(bad);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("strategy"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("protocol"), std::string::npos) << errors[1];
  Parsed p = read_objects(bad, "cluster-a", "in.yaml");
  EXPECT_FALSE(p.errors.empty());
  auto r = parse_and_validate(bad, "cluster-a", federation(), "in.yaml");
  EXPECT_FALSE(r.ok()) << "a batch with any error applies nothing";
}

TEST(ServicesParse, SyntaxErrorsAndOtherKinds) {
  const auto syntax = errors_of("apiVersion: v1\nkind: [Service\n");
  ASSERT_EQ(syntax.size(), 1u);
  EXPECT_EQ(syntax[0].rfind("in.yaml: line ", 0), 0u) << syntax[0];
  expect_one_error("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: d}\n",
                   "in.yaml: kind: 'Pod' is not read by vxfed services (expected Service v1, EndpointSlice "
                   "discovery.k8s.io/v1 or ServiceExport multicluster.x-k8s.io/v1alpha1)");
  expect_one_error(edit(stream(), "apiVersion: multicluster.x-k8s.io/v1alpha1", "apiVersion: multicluster.x-k8s.io/v1beta1"),
                   "in.yaml: documents[2].apiVersion: must be multicluster.x-k8s.io/v1alpha1 for ServiceExport (got "
                   "'multicluster.x-k8s.io/v1beta1')");
  expect_one_error("", "in.yaml: no objects (expected Service, EndpointSlice or ServiceExport objects)");
  // Found by services_parse_fuzz: an empty List was accepted as an apply of nothing.
  expect_one_error("apiVersion: v1\nkind: List\nitems:\n",
                   "in.yaml: no objects (expected Service, EndpointSlice or ServiceExport objects)");
}

TEST(ServicesParse, Timestamps) {
  EXPECT_EQ(*parse_timestamp("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*parse_timestamp("2000-03-01T00:00:01Z"), 951868801);
  EXPECT_EQ(*parse_timestamp("2024-02-29T23:59:59.123456Z"), 1709251199);
  EXPECT_FALSE(parse_timestamp("2023-02-29T00:00:00Z").ok());
  EXPECT_FALSE(parse_timestamp("2024-01-01T00:00:00+01:00").ok()) << "the API server writes UTC";
  EXPECT_FALSE(parse_timestamp("2024-01-01T24:00:00Z").ok());
  EXPECT_FALSE(parse_timestamp("2024-01-01T00:00:00.Z").ok());
}

}  // namespace
