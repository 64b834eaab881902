// control/policy/policy_publisher.hpp and NodeState::set_policies: each network's compiled
// tables reach the dataplane as one NetworkPolicy upsert when they or the pods' mapping change,
// nothing when unchanged; a network without policy gets no entry; its policies deleted or its
// last pod detached: a removal; tables() carries the entries for a restarted dataplane. The
// feed is PolicyFeed over listings and the pods local_pods() makes of NodeState's endpoints, as
// vxfedd runs them (no etcd, no dataplane: the sink records the deltas).
#include <gtest/gtest.h>

#include "control/node/node_state.hpp"
#include "control/policy/policy_follower.hpp"
#include "control/policy/policy_publisher.hpp"
#include "policy/parse.hpp"
#include "tests/control/recording_sink.hpp"
#include "tests/control/test_support.hpp"

namespace vxfed::control {
namespace {

namespace fed = ::vxfed::federation;
namespace pol = ::vxfed::policy;
using namespace vxfed::control::testing;

constexpr const char* kPolicy = R"(
- apiVersion: k8s.cni.cncf.io/v1beta1
  kind: MultiNetworkPolicy
  metadata: {name: db, namespace: prod, annotations: {k8s.v1.cni.cncf.io/policy-for: red}}
  spec:
    podSelector: {matchLabels: {app: db}}
    policyTypes: [Ingress]
    ingress:
    - from: [{podSelector: {matchLabels: {app: web}}}]
      ports: [{protocol: TCP, port: 5432}]
)";

// A listing of prod's pods db-0 (app: db) and web-1 (app: web), numbered 300 and 301, with
// the policy when `with_policy`.
fed::PolicySnapshot listing(std::int64_t revision, bool with_policy) {
  std::string yaml = "apiVersion: v1\nkind: List\nitems:\n"
                     "- {apiVersion: v1, kind: Namespace, metadata: {name: prod}}\n"
                     "- {apiVersion: v1, kind: Pod, metadata: {name: db-0, namespace: prod, labels: {app: db}}}\n"
                     "- {apiVersion: v1, kind: Pod, metadata: {name: web-1, namespace: prod, labels: {app: web}}}\n";
  if (with_policy) yaml += kPolicy;
  auto objects = pol::parse_objects(yaml, "cluster-a", "test.yaml");
  EXPECT_TRUE(objects) << (objects ? "" : objects.error());
  fed::PolicySnapshot s;
  s.revision = revision;
  s.namespaces = objects->namespaces;
  s.policies = objects->policies;
  std::uint32_t number = 300;
  for (const auto& pod : objects->pods) {
    const auto key = pol::canonical_key(pol::identity_of(pod, &objects->namespaces.at(0)));
    s.pods.push_back({pod.cluster, pod.namespace_name, pod.name, fed::PodRecord{pod.labels, number}});
    s.identities[number] = fed::IdentityRecord{number, key};
    s.users[number] = 1;
    ++number;
  }
  return s;
}

v1::EndpointSpec pod(const std::string& container, const std::string& name, const std::string& ip, const std::string& iface) {
  auto e = endpoint(container, "red", ip, iface);
  (*e.mutable_pod())["K8S_POD_NAMESPACE"] = "prod";
  (*e.mutable_pod())["K8S_POD_NAME"] = name;
  return e;
}

struct Bed {
  TempDir dir;
  std::unique_ptr<NodeState> state;
  RecordingSink sink;
  PolicyFeed feed{"cluster-a"};
  std::unique_ptr<PolicyPublisher> publisher;
  std::vector<LocalPod> pods;

  Bed() {
    NodeState::Options o;
    o.state_dir = dir.path;
    auto opened = NodeState::open(test_config(dir.path), o, nullptr);
    EXPECT_TRUE(opened.ok()) << opened.error();
    state = std::move(*opened);
    state->set_sink(&sink);
    publisher = std::make_unique<PolicyPublisher>(
        [this](const std::vector<dp::NetworkPolicy>& u, const std::vector<std::uint32_t>& r, bool complete) {
          state->set_policies(u, r, complete);
        });
  }
  // The follower's step: the attached pods read, the feed and then the publisher told.
  void list(const fed::PolicySnapshot& s) {
    sink.deltas.clear();
    pods = local_pods(state->list_endpoints());
    std::sort(pods.begin(), pods.end());
    feed.update(s, pods);
    publisher->update(feed, pods, std::nullopt);
  }
  void look() {
    sink.deltas.clear();
    pods = local_pods(state->list_endpoints());
    std::sort(pods.begin(), pods.end());
    feed.update_locals(pods);
    publisher->update(feed, pods, std::nullopt);
  }
  // The policy parts of what was sent.
  std::vector<dp::NetworkPolicy> upserted() const {
    std::vector<dp::NetworkPolicy> out;
    for (const auto& d : sink.deltas) out.insert(out.end(), d.upsert().policies().begin(), d.upsert().policies().end());
    return out;
  }
  std::vector<std::uint32_t> removed() const {
    std::vector<std::uint32_t> out;
    for (const auto& d : sink.deltas) out.insert(out.end(), d.remove_policies().begin(), d.remove_policies().end());
    return out;
  }
};

std::map<std::string, std::uint32_t> mapping(const dp::NetworkPolicy& p) {
  std::map<std::string, std::uint32_t> out;
  for (const auto& e : p.endpoints()) out[e.endpoint_id()] = e.local();
  return out;
}

TEST(PolicyPublisher, ChangesReachTheDataplaneAsOneUpsertAndNothingWhenUnchanged) {
  Bed bed;
  v1::ErrorCode code;
  ASSERT_TRUE(bed.state->attach(pod("c-db", "db-0", "10.244.1.5", "vxf0"), &code).ok());
  ASSERT_TRUE(bed.state->attach(endpoint("c-hand", "red", "10.244.1.7", "vxf2"), &code).ok());  // no pod names
  const auto red = *bed.state->vni_of("red");
  const std::string db_id = NodeState::endpoint_id("c-db", "net1");

  // Labels but no policy: no entry (everything passes).
  bed.list(listing(1, false));
  EXPECT_TRUE(bed.sink.deltas.empty());
  EXPECT_TRUE(bed.publisher->published().empty());
  EXPECT_EQ(bed.state->tables().policies_size(), 0);

  // The policy: one delta, one upsert for red's VNI; db-0 mapped to its isolated local table.
  bed.list(listing(2, true));
  ASSERT_EQ(bed.sink.deltas.size(), 1u);
  auto up = bed.upserted();
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].vni(), red);
  EXPECT_EQ(mapping(up[0]), (std::map<std::string, std::uint32_t>{{db_id, 0}}));
  ASSERT_EQ(up[0].local_ingress_size(), 1);
  EXPECT_TRUE(up[0].local_ingress(0).isolated());
  ASSERT_EQ(up[0].local_ingress(0).peers_size(), 1);
  EXPECT_EQ(up[0].local_ingress(0).peers(0).identity(), 301u);  // web-1
  EXPECT_EQ(bed.publisher->published().at("red").generation, 1u);
  // The snapshot carries it, the same bytes.
  ASSERT_EQ(bed.state->tables().policies_size(), 1);
  EXPECT_EQ(bed.state->tables().policies(0).SerializeAsString(), up[0].SerializeAsString());

  // The same listing again, and a look with the pods unchanged: nothing sent.
  bed.list(listing(3, true));
  bed.look();
  EXPECT_TRUE(bed.sink.deltas.empty());
  EXPECT_GE(bed.publisher->stats().unchanged, 1u);

  // web-1 attached here: its own local table, and the mapping of both pods; one upsert.
  ASSERT_TRUE(bed.state->attach(pod("c-web", "web-1", "10.244.1.6", "vxf1"), &code).ok());
  bed.look();
  up = bed.upserted();
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].endpoints_size(), 2);
  EXPECT_EQ(up[0].local_ingress_size(), 2);
  const auto web_local = mapping(up[0]).at(NodeState::endpoint_id("c-web", "net1"));
  EXPECT_NE(web_local, mapping(up[0]).at(db_id));
  EXPECT_FALSE(up[0].local_ingress(static_cast<int>(web_local)).isolated());

  // db-0 re-attached under another container (same pod name): only the mapping changes.
  ASSERT_TRUE(bed.state->detach("c-db", "net1", &code).ok());
  ASSERT_TRUE(bed.state->attach(pod("c-db2", "db-0", "10.244.1.5", "vxf0"), &code).ok());
  bed.look();
  up = bed.upserted();
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(mapping(up[0]).count(db_id), 0u);
  EXPECT_EQ(mapping(up[0]).count(NodeState::endpoint_id("c-db2", "net1")), 1u);

  // The policy deleted: the entry removed, and gone from the snapshot.
  bed.list(listing(4, false));
  EXPECT_TRUE(bed.upserted().empty());
  EXPECT_EQ(bed.removed(), (std::vector<std::uint32_t>{red}));
  EXPECT_EQ(bed.state->tables().policies_size(), 0);

  // Back, then the last pods detached: removed again.
  bed.list(listing(5, true));
  ASSERT_EQ(bed.upserted().size(), 1u);
  ASSERT_TRUE(bed.state->detach("c-db2", "net1", &code).ok());
  ASSERT_TRUE(bed.state->detach("c-web", "net1", &code).ok());
  bed.look();
  EXPECT_EQ(bed.removed(), (std::vector<std::uint32_t>{red}));
  EXPECT_TRUE(bed.publisher->published().empty());
  EXPECT_EQ(bed.publisher->stats().removals, 2u);
}

TEST(PolicyPublisher, EntriesOfAVniWithoutANetworkAreHeldNotSent) {
  TempDir dir;
  NodeState::Options o;
  o.state_dir = dir.path;
  auto opened = NodeState::open(test_config(dir.path), o, nullptr);
  ASSERT_TRUE(opened.ok()) << opened.error();
  auto& state = **opened;
  RecordingSink sink;
  state.set_sink(&sink);
  dp::NetworkPolicy entry;
  entry.set_vni(4242);  // no such network here
  state.set_policies({entry}, {});
  EXPECT_TRUE(sink.deltas.empty());
  EXPECT_EQ(state.tables().policies_size(), 0);
  state.set_policies({}, {4242});
  EXPECT_TRUE(sink.deltas.empty());  // the dataplane never had it: no removal it would refuse
  entry.set_vni(5000);  // blue
  state.set_policies({entry}, {});
  ASSERT_EQ(sink.deltas.size(), 1u);
  EXPECT_EQ(sink.deltas[0].upsert().policies_size(), 1);
  EXPECT_EQ(state.tables().policies_size(), 1);
}

// A restarted vxfedd's first snapshot carries the entries it had (policies.cache), until the
// follower's first publication, which is complete: an entry it does not give is removed.
TEST(PolicyPublisher, EntriesOutliveARestartUntilTheFirstPublication) {
  TempDir dir;
  auto open = [&] {
    NodeState::Options o;
    o.state_dir = dir.path;
    auto opened = NodeState::open(test_config(dir.path), o, nullptr);
    EXPECT_TRUE(opened.ok()) << opened.error();
    return std::move(*opened);
  };
  auto state = open();
  const auto red = *state->vni_of("red"), blue = *state->vni_of("blue");
  dp::NetworkPolicy a, b;
  a.set_vni(red);
  a.add_local_ingress()->set_isolated(true);
  b.set_vni(blue);
  state->set_policies({a, b}, {});
  state.reset();

  state = open();
  ASSERT_EQ(state->tables().policies_size(), 2);
  EXPECT_EQ(state->tables().policies(0).SerializeAsString(), a.SerializeAsString());
  RecordingSink sink;
  state->set_sink(&sink);
  // The first publication names red only: blue's entry goes, red's is sent again.
  PolicyPublisher publisher([&](const std::vector<dp::NetworkPolicy>& u, const std::vector<std::uint32_t>& r,
                                bool complete) { state->set_policies(u, r, complete); });
  PolicyFeed feed("cluster-a");
  std::vector<LocalPod> pods = {{"red", "prod", "db-0", "c-db/net1", red}};
  feed.update(listing(1, true), pods);
  publisher.update(feed, pods, std::nullopt);
  ASSERT_EQ(sink.deltas.size(), 1u);
  EXPECT_EQ(sink.deltas[0].upsert().policies_size(), 1);
  EXPECT_EQ(std::vector<std::uint32_t>(sink.deltas[0].remove_policies().begin(), sink.deltas[0].remove_policies().end()),
            (std::vector<std::uint32_t>{blue}));
  ASSERT_EQ(state->tables().policies_size(), 1);
  EXPECT_EQ(state->tables().policies(0).vni(), red);
  // Later publications are not complete: nothing changed, nothing sent.
  sink.deltas.clear();
  publisher.update(feed, pods, std::nullopt);
  EXPECT_TRUE(sink.deltas.empty());
  state.reset();
  state = open();
  EXPECT_EQ(state->tables().policies_size(), 1);

  // A first publication with nothing: every cached entry goes.
  PolicyPublisher empty([&](const std::vector<dp::NetworkPolicy>& u, const std::vector<std::uint32_t>& r,
                            bool complete) { state->set_policies(u, r, complete); });
  empty.update(PolicyFeed("cluster-a"), {}, std::nullopt);
  EXPECT_EQ(state->tables().policies_size(), 0);
}

}  // namespace
}  // namespace vxfed::control
