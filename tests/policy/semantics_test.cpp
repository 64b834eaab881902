// Unit tests of the policy semantics (policy/selector.hpp, policy/compile.hpp): selectors,
// which policies select a pod, and allowed() on tables of connections, following the cases of
// the Kubernetes NetworkPolicy documentation, plus vxfed's cross-cluster scope and unlabelled
// pods. Policies are written as YAML and read by the real parser.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "policy/compile.hpp"
#include "policy/parse.hpp"
#include "policy/selector.hpp"

namespace {

using namespace vxfed::policy;
using vxfed::net::Ipv4Addr;

constexpr std::uint8_t kIcmp = 1, kTcp = 6, kUdp = 17;

// Every policy here is for network fed-a (NAD prod/fed-a) unless a test says otherwise.
std::vector<Policy> policies(const std::string& specs_yaml_stream, const std::string& cluster = "a") {
  auto r = parse_objects(specs_yaml_stream, cluster, "test");
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r->policies : std::vector<Policy>{};
}

std::string policy(const std::string& name, const std::string& spec, const std::string& ns = "prod",
                   const std::string& policy_for = "fed-a") {
  return "---\napiVersion: k8s.cni.cncf.io/v1beta1\nkind: MultiNetworkPolicy\nmetadata:\n  name: " + name +
         "\n  namespace: " + ns + "\n  annotations:\n    k8s.v1.cni.cncf.io/policy-for: " + policy_for +
         "\nspec:\n" + spec;
}

// The namespaces of the test world; the same names and labels in every cluster.
const std::map<std::string, Labels> kNamespaceLabels = {
    {"prod", {{"team", "blue"}}},
    {"monitoring", {{"team", "blue"}, {"purpose", "metrics"}}},
    {"dev", {{"team", "red"}}},
};

Identity pod(const std::string& ns, Labels labels, const std::string& cluster = "a") {
  const Namespace n{cluster, ns, kNamespaceLabels.at(ns), {}};
  return identity_of(Pod{cluster, ns, "p", std::move(labels), {}}, &n);
}

PeerRef from_pod(const std::string& ns, Labels labels, const std::string& cluster = "a") {
  return PeerRef{pod(ns, std::move(labels), cluster), std::nullopt};
}
PeerRef from_ip(const char* ip) { return PeerRef{std::nullopt, *Ipv4Addr::parse(ip)}; }

const Identity kWeb = pod("prod", {{"app", "web"}});

struct Case {
  const char* what;
  Direction direction;
  PeerRef peer;
  std::uint8_t protocol;
  std::uint16_t port;
  bool allowed;
  Identity local = kWeb;
  std::string network = "fed-a";
};

void run(const std::vector<Policy>& ps, const std::vector<Case>& cases) {
  ASSERT_FALSE(ps.empty());
  for (const auto& c : cases)
    EXPECT_EQ(allowed(c.direction, c.local, c.network, ps, c.peer, c.protocol, c.port), c.allowed) << c.what;
}

constexpr auto In = Direction::Ingress;
constexpr auto Out = Direction::Egress;

TEST(Selector, MatchesAsKubernetes) {
  const Labels web{{"app", "web"}, {"tier", "front"}};
  const Labels bare{};
  struct C {
    const char* what;
    LabelSelector s;
    Labels labels;
    bool match;
  } cases[] = {
      {"{} matches all", {}, web, true},
      {"{} matches no labels", {}, bare, true},
      {"matchLabels equal", {{{"app", "web"}}, {}}, web, true},
      {"matchLabels other value", {{{"app", "db"}}, {}}, web, false},
      {"matchLabels absent key", {{{"zone", "z1"}}, {}}, web, false},
      {"matchLabels all must hold", {{{"app", "web"}, {"tier", "back"}}, {}}, web, false},
      {"In", {{}, {{"tier", Operator::In, {"back", "front"}}}}, web, true},
      {"In, other value", {{}, {{"tier", Operator::In, {"back"}}}}, web, false},
      {"In, absent key", {{}, {{"zone", Operator::In, {"z1"}}}}, web, false},
      {"NotIn, other value", {{}, {{"tier", Operator::NotIn, {"back"}}}}, web, true},
      {"NotIn, listed value", {{}, {{"tier", Operator::NotIn, {"front"}}}}, web, false},
      {"NotIn, absent key", {{}, {{"zone", Operator::NotIn, {"z1"}}}}, web, true},
      {"Exists", {{}, {{"app", Operator::Exists, {}}}}, web, true},
      {"Exists, absent", {{}, {{"zone", Operator::Exists, {}}}}, web, false},
      {"DoesNotExist", {{}, {{"zone", Operator::DoesNotExist, {}}}}, web, true},
      {"DoesNotExist, present", {{}, {{"app", Operator::DoesNotExist, {}}}}, web, false},
      {"labels and expressions AND", {{{"app", "web"}}, {{"tier", Operator::NotIn, {"front"}}}}, web, false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(matches(c.s, c.labels), c.match) << c.what;
    // Unknown labels: only {} is sure to match, even where the empty set would (NotIn, DoesNotExist).
    EXPECT_EQ(matches_unknown(c.s), c.s.empty()) << c.what;
  }
}

TEST(Semantics, NoPolicyAllowsEverything) {
  const std::vector<Policy> none;
  EXPECT_TRUE(allowed(In, kWeb, "fed-a", none, from_ip("192.0.2.1"), kTcp, 22));
  EXPECT_TRUE(allowed(Out, kWeb, "fed-a", none, from_pod("dev", {}), kUdp, 53));
  const CompiledRules r = compile(kWeb, "fed-a", none);
  EXPECT_FALSE(r.ingress.isolated);
  EXPECT_FALSE(r.egress.isolated);
}

// "Default deny all ingress traffic" and the scope of a policy: its namespace, its cluster, its networks.
TEST(Semantics, DefaultDenyIngress) {
  run(policies(policy("default-deny-ingress", "  podSelector: {}\n  policyTypes: [Ingress]\n")),
      {
          {"ingress from a pod of the namespace", In, from_pod("prod", {{"app", "client"}}), kTcp, 80, false},
          {"ingress from an address", In, from_ip("10.0.0.1"), kTcp, 80, false},
          {"ICMP too", In, from_ip("10.0.0.1"), kIcmp, 0, false},
          {"egress is not isolated", Out, from_ip("10.0.0.1"), kTcp, 80, true},
          {"a pod of another namespace is not selected", In, from_ip("10.0.0.1"), kTcp, 80, true,
           pod("dev", {{"app", "web"}})},
          {"the same namespace in another cluster is not selected", In, from_ip("10.0.0.1"), kTcp, 80, true,
           pod("prod", {{"app", "web"}}, "b")},
          {"the pod on another network is not selected", In, from_ip("10.0.0.1"), kTcp, 80, true, kWeb, "fed-b"},
      });
}

TEST(Semantics, AllowAllAndDenyAllForms) {
  run(policies(policy("allow-all", "  podSelector: {}\n  ingress:\n  - {}\n")),
      {{"a rule without from/ports allows everything", In, from_ip("192.0.2.1"), kIcmp, 0, true}});
  run(policies(policy("empty-from", "  podSelector: {}\n  ingress:\n  - from: []\n    ports: [{port: 80}]\n")),
      {{"from: [] is every source", In, from_ip("192.0.2.1"), kTcp, 80, true},
       {"but only the port given", In, from_ip("192.0.2.1"), kTcp, 81, false}});
  run(policies(policy("empty-ingress", "  podSelector: {}\n  policyTypes: [Ingress]\n  ingress: []\n")),
      {{"ingress: [] with Ingress denies all", In, from_pod("prod", {}), kTcp, 80, false}});
  run(policies(policy("default-deny-egress", "  podSelector: {}\n  policyTypes: [Egress]\n")),
      {{"egress denied", Out, from_pod("prod", {}), kUdp, 53, false},
       {"ingress not isolated", In, from_pod("prod", {}), kUdp, 53, true}});
}

// namespaceSelector and podSelector in one element (AND) against two elements (OR).
TEST(Semantics, NamespaceAndPodSelectorAndVersusOr) {
  const auto and_policy = policies(policy("and", R"(  podSelector: {matchLabels: {app: web}}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {team: blue}}
      podSelector: {matchLabels: {role: client}}
)"));
  run(and_policy, {
                      {"client in prod (blue)", In, from_pod("prod", {{"role", "client"}}), kTcp, 80, true},
                      {"client in monitoring (blue)", In, from_pod("monitoring", {{"role", "client"}}), kTcp, 80, true},
                      {"server in monitoring", In, from_pod("monitoring", {{"role", "server"}}), kTcp, 80, false},
                      {"client in dev (red)", In, from_pod("dev", {{"role", "client"}}), kTcp, 80, false},
                      {"client in monitoring of cluster b", In, from_pod("monitoring", {{"role", "client"}}, "b"),
                       kTcp, 80, true},
                      {"an address is no pod", In, from_ip("10.0.0.1"), kTcp, 80, false},
                  });
  const auto or_policy = policies(policy("or", R"(  podSelector: {matchLabels: {app: web}}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {team: blue}}
    - podSelector: {matchLabels: {role: client}}
)"));
  run(or_policy, {
                     {"any pod of a blue namespace", In, from_pod("monitoring", {{"role", "server"}}), kTcp, 80, true},
                     {"a client in the policy's namespace", In, from_pod("prod", {{"role", "client"}}), kTcp, 80, true},
                     {"a client elsewhere: podSelector alone is the policy's namespace", In,
                      from_pod("dev", {{"role", "client"}}), kTcp, 80, false},
                     {"a server in dev", In, from_pod("dev", {{"role", "server"}}), kTcp, 80, false},
                     {"a client in prod of cluster b (namespace sameness)", In,
                      from_pod("prod", {{"role", "client"}}, "b"), kTcp, 80, true},
                     {"a client in dev of cluster b", In, from_pod("dev", {{"role", "client"}}, "b"), kTcp, 80, false},
                 });
  // The namespace name label the API server sets selects one namespace by name.
  run(policies(policy("by-name", R"(  podSelector: {}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: dev}}
)")),
      {{"from dev", In, from_pod("dev", {}), kTcp, 80, true}, {"from monitoring", In, from_pod("monitoring", {}), kTcp, 80, false}});
}

TEST(Semantics, IpBlockWithExcept) {
  run(policies(policy("ipblock", R"(  podSelector: {}
  ingress:
  - from:
    - ipBlock:
        cidr: 172.17.0.0/16
        except: [172.17.1.0/24]
)")),
      {
          {"inside the cidr", In, from_ip("172.17.2.5"), kTcp, 80, true},
          {"first address", In, from_ip("172.17.0.0"), kTcp, 80, true},
          {"inside the except", In, from_ip("172.17.1.5"), kTcp, 80, false},
          {"outside", In, from_ip("172.18.0.1"), kTcp, 80, false},
          {"a pod's address counts too", In, PeerRef{pod("dev", {}), *Ipv4Addr::parse("172.17.3.3")}, kTcp, 80,
           true},
          {"a pod known only by identity does not", In, from_pod("dev", {}), kTcp, 80, false},
      });
}

TEST(Semantics, PortsProtocolsAndRanges) {
  run(policies(policy("ports", R"(  podSelector: {}
  ingress:
  - ports:
    - port: 32000
      endPort: 32768
    - protocol: UDP
      port: 53
    - port: 8080
  - from: [{ipBlock: {cidr: 10.9.0.0/16}}]
    ports: [{protocol: UDP}]
)")),
      {
          {"range start", In, from_ip("10.0.0.1"), kTcp, 32000, true},
          {"range end (inclusive)", In, from_ip("10.0.0.1"), kTcp, 32768, true},
          {"below the range", In, from_ip("10.0.0.1"), kTcp, 31999, false},
          {"above the range", In, from_ip("10.0.0.1"), kTcp, 32769, false},
          {"the range is TCP (the default)", In, from_ip("10.0.0.1"), kUdp, 32000, false},
          {"UDP 53", In, from_ip("10.0.0.1"), kUdp, 53, true},
          {"TCP 53 is not UDP 53", In, from_ip("10.0.0.1"), kTcp, 53, false},
          {"single port", In, from_ip("10.0.0.1"), kTcp, 8080, true},
          {"next to it", In, from_ip("10.0.0.1"), kTcp, 8081, false},
          {"ICMP is no listed protocol", In, from_ip("10.0.0.1"), kIcmp, 0, false},
          {"every UDP port from 10.9/16", In, from_ip("10.9.1.1"), kUdp, 5000, true},
          {"not TCP from 10.9/16", In, from_ip("10.9.1.1"), kTcp, 5000, false},
      });
}

TEST(Semantics, PoliciesAddUp) {
  const auto ps = policies(policy("allow-a", R"(  podSelector: {matchLabels: {app: web}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: a}}}]
    ports: [{port: 80}]
)") + policy("allow-b", R"(  podSelector: {matchExpressions: [{key: app, operator: In, values: [web, api]}]}
  ingress:
  - from: [{podSelector: {matchLabels: {app: b}}}]
    ports: [{port: 443}]
)") + policy("allow-all-to-db", "  podSelector: {matchLabels: {app: db}}\n  ingress:\n  - {}\n"));
  run(ps, {
              {"a on 80 (first policy)", In, from_pod("prod", {{"app", "a"}}), kTcp, 80, true},
              {"b on 443 (second policy)", In, from_pod("prod", {{"app", "b"}}), kTcp, 443, true},
              {"a on 443: each rule keeps its own ports", In, from_pod("prod", {{"app", "a"}}), kTcp, 443, false},
              {"b on 80", In, from_pod("prod", {{"app", "b"}}), kTcp, 80, false},
              {"c: the db policy does not select web", In, from_pod("prod", {{"app", "c"}}), kTcp, 80, false},
              {"db allows all", In, from_pod("prod", {{"app", "c"}}), kTcp, 5432, true, pod("prod", {{"app", "db"}})},
          });
  std::vector<std::string> names;
  for (const Policy* p : policies_selecting(ps, kWeb, "fed-a")) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"allow-a", "allow-b"}));
}

TEST(Semantics, EgressIsolation) {
  run(policies(policy("dns-only", R"(  podSelector: {matchLabels: {app: web}}
  policyTypes: [Egress]
  ingress:
  - from: [{podSelector: {matchLabels: {never: here}}}]
  egress:
  - to: [{ipBlock: {cidr: 10.96.0.0/12}}]
    ports: [{protocol: UDP, port: 53}]
  - to: [{namespaceSelector: {matchLabels: {purpose: metrics}}}]
)")),
      {
          {"DNS to the service range", Out, from_ip("10.96.0.10"), kUdp, 53, true},
          {"TCP DNS is not listed", Out, from_ip("10.96.0.10"), kTcp, 53, false},
          {"DNS elsewhere", Out, from_ip("8.8.8.8"), kUdp, 53, false},
          {"any port to monitoring", Out, from_pod("monitoring", {}), kTcp, 9090, true},
          {"monitoring in cluster b too", Out, from_pod("monitoring", {}, "b"), kTcp, 9090, true},
          {"not to dev", Out, from_pod("dev", {}), kTcp, 9090, false},
          {"ingress rules of an Egress-only policy are not in force", In, from_pod("dev", {}), kTcp, 80, true},
      });
}

TEST(Semantics, CompiledRulesAreTheCrossProduct) {
  const auto ps = policies(policy("x", R"(  podSelector: {}
  ingress:
  - from:
    - podSelector: {matchLabels: {app: a}}
    - namespaceSelector: {}
    ports: [{port: 80}, {port: 90, endPort: 99}, {protocol: UDP}]
)"));
  const CompiledRules r = compile(kWeb, "fed-a", ps);
  EXPECT_TRUE(r.ingress.isolated);
  EXPECT_FALSE(r.egress.isolated);
  ASSERT_EQ(r.ingress.allow.size(), 6u);
  const AllowRule& first = r.ingress.allow[0];
  EXPECT_EQ(first.policy, "prod/x");
  EXPECT_EQ(first.peer.kind, PeerPredicate::Kind::Pods);
  EXPECT_EQ(first.peer.namespace_name, "prod") << "podSelector alone: the policy's namespace";
  EXPECT_EQ(first.ports.first, 80);
  EXPECT_EQ(first.ports.last, 80);
  const AllowRule& range = r.ingress.allow[1];
  EXPECT_EQ(range.ports.first, 90);
  EXPECT_EQ(range.ports.last, 99);
  const AllowRule& udp = r.ingress.allow[5];
  EXPECT_FALSE(udp.peer.namespace_name);
  EXPECT_TRUE(udp.peer.namespace_selector.empty());
  EXPECT_FALSE(udp.peer.pod_selector) << "namespaceSelector alone: every pod of those namespaces";
  EXPECT_EQ(udp.ports.protocol, Protocol::Udp);
  EXPECT_EQ(udp.ports.first, 0);
  EXPECT_EQ(udp.ports.last, 65535);
}

TEST(Semantics, PolicyForNamesNetworks) {
  const auto ps = policies(policy("deny", "  podSelector: {}\n  policyTypes: [Ingress]\n", "prod",
                                  "training/fed-a-static, fed-b"));
  ASSERT_EQ(ps.size(), 1u);
  // The default rule: the NAD's name is the network's.
  EXPECT_TRUE(is_for_network(ps[0], "fed-a-static"));
  EXPECT_TRUE(is_for_network(ps[0], "fed-b"));
  EXPECT_FALSE(is_for_network(ps[0], "fed-a"));
  // A resolver that knows the NAD's config (training/fed-a-static carries network fed-a).
  const NadResolver nads = [](const NadRef& nad) -> std::optional<std::string> {
    if (nad == NadRef{"training", "fed-a-static"}) return "fed-a";
    if (nad == NadRef{"prod", "fed-b"}) return std::nullopt;  // not a vxfed NAD
    return nad.name;
  };
  EXPECT_TRUE(is_for_network(ps[0], "fed-a", nads));
  EXPECT_FALSE(is_for_network(ps[0], "fed-b", nads));
  EXPECT_FALSE(allowed(In, kWeb, "fed-a", ps, from_ip("10.0.0.1"), kTcp, 80, nads));
  EXPECT_TRUE(allowed(In, kWeb, "fed-b", ps, from_ip("10.0.0.1"), kTcp, 80, nads));
}

// A pod whose labels have not arrived: never allowed more than it will be once they have.
TEST(Semantics, UnlabelledPods) {
  const Identity local = Identity::make_unlabelled("a", "prod");
  const auto web_only = policies(policy("web", "  podSelector: {matchLabels: {app: web}}\n  ingress:\n  - {}\n"));
  EXPECT_EQ(selects(web_only[0], local, "fed-a"), Selection::Maybe);
  const CompiledRules r = compile(local, "fed-a", web_only);
  EXPECT_TRUE(r.ingress.isolated) << "a policy that may select it isolates it";
  EXPECT_TRUE(r.ingress.allow.empty()) << "but gives it none of its rules";
  EXPECT_TRUE(policies_selecting(web_only, local, "fed-a").empty());
  run(web_only, {{"unlabelled local pod, possibly selected: denied", In, from_ip("10.0.0.1"), kTcp, 80, false, local},
                 {"unlabelled pod of another namespace: not selected", In, from_ip("10.0.0.1"), kTcp, 80, true,
                  Identity::make_unlabelled("a", "dev")}});
  run(policies(policy("all", "  podSelector: {}\n  ingress:\n  - ports: [{port: 80}]\n")),
      {{"a policy for every pod selects it surely", In, from_ip("10.0.0.1"), kTcp, 80, true, local},
       {"and isolates it", In, from_ip("10.0.0.1"), kTcp, 81, false, local}});

  // As a peer: only rules that select every pod (of a namespace, or of all) match it.
  const PeerRef unknown{Identity::make_unlabelled(), std::nullopt};
  const PeerRef unknown_in_prod{Identity::make_unlabelled("b", "prod"), std::nullopt};
  const auto peers = [](const char* from) {
    return policies(policy("p", std::string("  podSelector: {}\n  ingress:\n  - from: ") + from + "\n"));
  };
  run(policies(policy("p", "  podSelector: {}\n  ingress:\n  - ports: [{port: 80}]\n")),
      {{"a rule without from", In, unknown, kTcp, 80, true}});
  run(peers("[{namespaceSelector: {}}]"), {{"every pod of every namespace", In, unknown, kTcp, 80, true}});
  run(peers("[{namespaceSelector: {}, podSelector: {}}]"), {{"the same, spelt out", In, unknown, kTcp, 80, true}});
  run(peers("[{podSelector: {}}]"),
      {{"every pod of prod: its namespace is unknown", In, unknown, kTcp, 80, false},
       {"every pod of prod: its namespace is known", In, unknown_in_prod, kTcp, 80, true}});
  run(peers("[{podSelector: {matchExpressions: [{key: role, operator: DoesNotExist}]}}]"),
      {{"DoesNotExist: its labels may have the key", In, unknown_in_prod, kTcp, 80, false},
       {"a labelled pod without the key matches", In, from_pod("prod", {{"app", "x"}}), kTcp, 80, true}});
  run(peers("[{namespaceSelector: {matchLabels: {team: blue}}}]"),
      {{"a namespace selector needs its namespace's labels", In, unknown_in_prod, kTcp, 80, false}});
}

}  // namespace
