// Each local pod's policy identity reaches its dataplane endpoint (dp::Endpoint.identity):
// control/policy/policy_follower.hpp endpoint_identity() over PolicyFeed's listings, given to
// NodeState::set_endpoint_identities() as vxfedd does. A change (the labels arriving after the
// attach, a relabel) is one endpoint upsert in a delta; nothing changed, nothing sent; the
// snapshot (tables()) carries the same number; an endpoint attached without pod names stays 0.
#include <gtest/gtest.h>

#include "control/node/node_state.hpp"
#include "control/policy/policy_follower.hpp"
#include "policy/parse.hpp"
#include "tests/control/recording_sink.hpp"
#include "tests/control/test_support.hpp"

namespace vxfed::control {
namespace {

namespace fed = ::vxfed::federation;
namespace pol = ::vxfed::policy;
using namespace vxfed::control::testing;

// A listing with db-0's record numbered `number` under `labels` (the store's numbering is not
// under test here: any number the listing holds must reach the endpoint).
fed::PolicySnapshot listing(std::int64_t revision, std::uint32_t number, const std::string& labels) {
  const std::string yaml = "apiVersion: v1\nkind: List\nitems:\n"
                           "- {apiVersion: v1, kind: Namespace, metadata: {name: prod}}\n"
                           "- {apiVersion: v1, kind: Pod, metadata: {name: db-0, namespace: prod, labels: " +
                           labels + "}}\n";
  auto objects = pol::parse_objects(yaml, "cluster-a", "test.yaml");
  EXPECT_TRUE(objects) << (objects ? "" : objects.error());
  fed::PolicySnapshot s;
  s.revision = revision;
  s.namespaces = objects->namespaces;
  const auto& pod = objects->pods.at(0);
  const auto key = pol::canonical_key(pol::identity_of(pod, &objects->namespaces.at(0)));
  s.pods.push_back({pod.cluster, pod.namespace_name, pod.name, fed::PodRecord{pod.labels, number}});
  s.identities[number] = fed::IdentityRecord{number, key};
  s.users[number] = 1;
  return s;
}

std::map<std::string, std::uint32_t> identities_in(const dp::Tables& t) {
  std::map<std::string, std::uint32_t> out;
  for (const auto& e : t.endpoints()) out[e.id()] = e.identity();
  return out;
}

TEST(EndpointIdentity, ChangesReachTheDataplaneAsEndpointUpserts) {
  TempDir dir;
  NodeState::Options o;
  o.state_dir = dir.path;
  auto opened = NodeState::open(test_config(dir.path), o, nullptr);
  ASSERT_TRUE(opened.ok()) << opened.error();
  auto& state = **opened;
  RecordingSink sink;
  state.set_sink(&sink);

  v1::ErrorCode code;
  auto pod = endpoint("c1", "red", "10.244.1.5");
  (*pod.mutable_pod())["K8S_POD_NAMESPACE"] = "prod";
  (*pod.mutable_pod())["K8S_POD_NAME"] = "db-0";
  ASSERT_TRUE(state.attach(pod, &code).ok());
  ASSERT_TRUE(state.attach(endpoint("c2", "red", "10.244.1.6", "vxf1"), &code).ok());  // by hand: no pod
  const std::string pod_id = NodeState::endpoint_id("c1", "net1");
  const std::string hand_id = NodeState::endpoint_id("c2", "net1");
  EXPECT_EQ(identities_in(state.tables()), (std::map<std::string, std::uint32_t>{{pod_id, 0}, {hand_id, 0}}));

  PolicyFeed feed("cluster-a");
  auto apply = [&] {
    sink.deltas.clear();
    state.set_endpoint_identities([&](const v1::EndpointInfo& info) { return endpoint_identity(feed, info); });
  };
  auto upserted = [&]() -> std::map<std::string, std::uint32_t> {
    std::map<std::string, std::uint32_t> out;
    for (const auto& d : sink.deltas)
      for (const auto& e : d.upsert().endpoints()) out[e.id()] = e.identity();
    return out;
  };
  const auto pods = local_pods(state.list_endpoints());
  ASSERT_EQ(pods.size(), 1u);

  // The store has no labels for it yet: the unlabelled number, one upsert of the pod alone.
  feed.update(fed::PolicySnapshot{}, pods);
  apply();
  ASSERT_EQ(sink.deltas.size(), 1u);
  EXPECT_EQ(upserted(), (std::map<std::string, std::uint32_t>{{pod_id, pol::kPeerUnlabelled}}));
  // The upsert is the whole endpoint, not only its identity.
  EXPECT_EQ(sink.deltas[0].upsert().endpoints(0).ip(), "10.244.1.5");
  EXPECT_EQ(sink.deltas[0].upsert().endpoints(0).iface(), "vxf0");

  // Nothing changed: nothing sent.
  apply();
  EXPECT_TRUE(sink.deltas.empty());

  // Its labels arrive.
  feed.update(listing(1, 300, "{app: db}"), pods);
  apply();
  ASSERT_EQ(sink.deltas.size(), 1u);
  EXPECT_EQ(upserted(), (std::map<std::string, std::uint32_t>{{pod_id, 300}}));
  EXPECT_EQ(identities_in(state.tables()), (std::map<std::string, std::uint32_t>{{pod_id, 300}, {hand_id, 0}}));

  // Relabelled: the new number.
  feed.update(listing(2, 301, "{app: db, tier: gold}"), pods);
  apply();
  EXPECT_EQ(upserted(), (std::map<std::string, std::uint32_t>{{pod_id, 301}}));
  EXPECT_EQ(identities_in(state.tables()), (std::map<std::string, std::uint32_t>{{pod_id, 301}, {hand_id, 0}}));

  // Its record gone from the store: unlabelled again.
  feed.update(fed::PolicySnapshot{.revision = 3}, pods);
  apply();
  EXPECT_EQ(upserted(), (std::map<std::string, std::uint32_t>{{pod_id, pol::kPeerUnlabelled}}));
}

}  // namespace
}  // namespace vxfed::control
