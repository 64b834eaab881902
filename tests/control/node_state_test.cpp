// NodeState: networks get VNIs, endpoints attach idempotently, everything survives a restart,
// routes merge, and the dataplane deltas match the snapshot; ApiHandler's attaches that wait for
// the dataplane (carried, refused, timed out).
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "control/api/api_handler.hpp"
#include "control/node/node_state.hpp"
#include "tests/control/recording_sink.hpp"
#include "tests/control/test_support.hpp"

namespace {

using namespace vxfed::control;
using namespace vxfed::control::testing;
using vxfed::RemoteRoute;
using vxfed::RouteUpdate;

RemoteRoute route(std::uint32_t vni, const char* prefix, std::vector<const char*> vteps, const char* peer) {
  RemoteRoute r;
  r.vni = vni;
  r.prefix = *vxfed::net::Ipv4Prefix::parse(prefix);
  for (auto* v : vteps) r.vteps.push_back(*vxfed::net::Ipv4Addr::parse(v));
  r.peer = *vxfed::net::Ipv4Addr::parse(peer);
  return r;
}

std::unique_ptr<NodeState> open(const Config& c, std::vector<std::string>* notes = nullptr) {
  NodeState::Options o;
  o.state_dir = c.daemon.state_dir;
  auto s = NodeState::open(c, o, notes);
  EXPECT_TRUE(s.ok()) << s.error();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(NodeState, NetworksGetVnisAndKeepThemAcrossRestarts) {
  TempDir dir;
  auto config = test_config(dir.path);
  std::uint32_t red = 0;
  {
    auto s = open(config);
    v1::ErrorCode code;
    auto info = s->get_network("red", &code);
    ASSERT_TRUE(info.ok());
    red = info->vni();
    EXPECT_GE(red, 1000u);
    EXPECT_EQ(info->gateway_mac().substr(0, 9), "02:76:78:");
  }
  auto s = open(config);
  v1::ErrorCode code;
  EXPECT_EQ(s->get_network("red", &code)->vni(), red);
  EXPECT_EQ(s->get_network("blue", &code)->vni(), 5000u);
  EXPECT_EQ(s->get_network("blue", &code)->pool(), "");
  EXPECT_FALSE(s->get_network("nope", &code).ok());
  EXPECT_EQ(code, v1::NOT_FOUND);
}

TEST(NodeState, GatewayMacIsDerivedFromTheVni) {
  TempDir dir;
  auto s = open(test_config(dir.path));
  v1::ErrorCode code;
  EXPECT_EQ(s->get_network("blue", &code)->gateway_mac(), "02:76:78:00:13:88");  // 5000 = 0x1388
  auto t = s->tables();
  for (const auto& n : t.networks())
    if (n.vni() == 5000) EXPECT_EQ(n.gateway_mac(), "02:76:78:00:13:88");
}

TEST(NodeState, AttachIsIdempotentAndRefusesConflicts) {
  TempDir dir;
  auto s = open(test_config(dir.path));
  v1::ErrorCode code;
  auto a = s->attach(endpoint("c1", "red", "10.244.1.5"), &code);
  ASSERT_TRUE(a.ok()) << a.error();
  auto again = s->attach(endpoint("c1", "red", "10.244.1.5"), &code);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(code, v1::OK);
  EXPECT_EQ(again->created_unix_ms(), a->created_unix_ms());
  auto changed = s->attach(endpoint("c1", "red", "10.244.1.6"), &code);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(code, v1::ALREADY_EXISTS);
  EXPECT_NE(changed.error().find("10.244.1.5"), std::string::npos) << changed.error();
  auto ip_taken = s->attach(endpoint("c2", "red", "10.244.1.5"), &code);
  ASSERT_FALSE(ip_taken.ok());
  EXPECT_EQ(code, v1::ALREADY_EXISTS);
  struct Bad { v1::EndpointSpec spec; v1::ErrorCode code; const char* what; };
  std::vector<Bad> bad;
  bad.push_back({endpoint("c3", "nope", "10.244.1.7"), v1::NOT_FOUND, "network"});
  bad.push_back({endpoint("c3", "red", "10.244.2.7"), v1::INVALID_ARGUMENT, "not a host address"});
  bad.push_back({endpoint("c3", "red", "10.244.1.1"), v1::INVALID_ARGUMENT, "gateway"});
  bad.push_back({endpoint("c3", "red", "10.244.1.7/24"), v1::INVALID_ARGUMENT, "not an IPv4"});
  bad.push_back({endpoint("", "red", "10.244.1.7"), v1::INVALID_ARGUMENT, "container_id"});
  auto mac = endpoint("c3", "red", "10.244.1.7");
  mac.set_mac("zz");
  bad.push_back({mac, v1::INVALID_ARGUMENT, "mac"});
  auto iface = endpoint("c3", "red", "10.244.1.7", "much-too-long-interface");
  bad.push_back({iface, v1::INVALID_ARGUMENT, "host_iface"});
  for (const auto& b : bad) {
    auto r = s->attach(b.spec, &code);
    ASSERT_FALSE(r.ok()) << b.what;
    EXPECT_EQ(code, b.code) << b.what << ": " << r.error();
    EXPECT_NE(r.error().find(b.what), std::string::npos) << r.error();
  }
  EXPECT_EQ(s->endpoint_count(), 1u);
}

TEST(NodeState, DetachOfUnknownSucceedsAndFreesTheIp) {
  TempDir dir;
  auto s = open(test_config(dir.path));
  v1::ErrorCode code;
  EXPECT_TRUE(s->detach("ghost", "net1", &code).ok());
  ASSERT_TRUE(s->attach(endpoint("c1", "red", "10.244.1.5"), &code).ok());
  ASSERT_TRUE(s->detach("c1", "net1", &code).ok());
  EXPECT_EQ(s->endpoint_count(), 0u);
  EXPECT_FALSE(s->check("c1", "net1", &code).ok());
  EXPECT_EQ(code, v1::NOT_FOUND);
  EXPECT_TRUE(s->attach(endpoint("c2", "red", "10.244.1.5"), &code).ok());
}

TEST(NodeState, EndpointsAndRuntimeNetworksSurviveRestart) {
  TempDir dir;
  auto config = test_config(dir.path);
  dp::Tables before;
  {
    auto s = open(config);
    v1::ErrorCode code;
    NetworkConfig green;
    green.name = "green";
    green.subnet = "10.244.3.0/24";
    ASSERT_TRUE(s->add_network(green, false, &code).ok());
    for (int i = 0; i < 20; ++i)
      ASSERT_TRUE(s->attach(endpoint("c" + std::to_string(i), i % 2 ? "red" : "green", "10.244." + std::string(i % 2 ? "1" : "3") + "." + std::to_string(10 + i)), &code).ok());
    ASSERT_TRUE(s->detach("c4", "net1", &code).ok());
    before = s->tables();
  }
  auto s = open(config);
  EXPECT_EQ(s->endpoint_count(), 19u);
  EXPECT_EQ(s->network_count(), 3u);
  EXPECT_EQ(s->tables().SerializeAsString(), before.SerializeAsString());
}

TEST(NodeState, NetworkLeavingTheConfigIsKeptWhileEndpointsUseIt) {
  TempDir dir;
  auto config = test_config(dir.path, "  - {name: gone, subnet: 10.244.9.0/24}\n");
  std::uint32_t vni = 0;
  {
    auto s = open(config);
    v1::ErrorCode code;
    vni = s->get_network("gone", &code)->vni();
    ASSERT_TRUE(s->attach(endpoint("c1", "gone", "10.244.9.5"), &code).ok());
  }
  auto smaller = test_config(dir.path);
  std::vector<std::string> notes;
  auto s = open(smaller, &notes);
  v1::ErrorCode code;
  ASSERT_TRUE(s->get_network("gone", &code).ok()) << "kept for its endpoint";
  EXPECT_FALSE(s->attach(endpoint("c2", "gone", "10.244.9.6"), &code).ok()) << "no new endpoints";
  ASSERT_TRUE(s->detach("c1", "net1", &code).ok());
  EXPECT_FALSE(s->get_network("gone", &code).ok()) << "removed with its last endpoint";
  bool held = false;
  for (const auto& v : s->list_vnis())
    if (v.vni() == vni) held = v.state() == "held";
  EXPECT_TRUE(held);
}

TEST(NodeState, RemoveNetworkRules) {
  TempDir dir;
  auto s = open(test_config(dir.path));
  v1::ErrorCode code;
  EXPECT_FALSE(s->remove_network("red", &code).ok()) << "config networks are removed in the config";
  NetworkConfig green;
  green.name = "green";
  green.subnet = "10.244.3.0/24";
  ASSERT_TRUE(s->add_network(green, false, &code).ok());
  EXPECT_TRUE(s->add_network(green, false, &code).ok()) << "idempotent";
  green.subnet = "10.244.4.0/24";
  EXPECT_FALSE(s->add_network(green, false, &code).ok());
  EXPECT_EQ(code, v1::ALREADY_EXISTS);
  ASSERT_TRUE(s->attach(endpoint("c1", "green", "10.244.3.9"), &code).ok());
  EXPECT_FALSE(s->remove_network("green", &code).ok()) << "has endpoints";
  ASSERT_TRUE(s->detach("c1", "net1", &code).ok());
  EXPECT_TRUE(s->remove_network("green", &code).ok());
  EXPECT_FALSE(s->remove_network("green", &code).ok());
  EXPECT_EQ(code, v1::NOT_FOUND);
}

TEST(NodeState, GarbageCollectKeepsOnlyValidAttachments) {
  TempDir dir;
  auto s = open(test_config(dir.path));
  v1::ErrorCode code;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(s->attach(endpoint("c" + std::to_string(i), "red", "10.244.1." + std::to_string(10 + i)), &code).ok());
  ASSERT_TRUE(s->attach(endpoint("b0", "blue", "10.244.2.10"), &code).ok());
  v1::GarbageCollect gc;
  auto* v = gc.add_valid();
  v->set_container_id("c1");
  v->set_ifname("net1");
  gc.add_networks("red");
  auto removed = s->garbage_collect(gc, &code);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->size(), 4u);
  EXPECT_EQ(s->endpoint_count(), 2u) << "c1 and the blue endpoint remain";
}

TEST(NodeState, RoutesMergeStaticFirstAndDeltasMatchTheSnapshot) {
  TempDir dir;
  auto s = open(test_config(dir.path));
  RecordingSink sink;
  s->set_sink(&sink);
  dp::Tables applied = s->tables();
  v1::ErrorCode code;
  const auto red = *s->vni_of("red");
  RouteUpdate full;
  full.full = true;
  full.upserts.push_back(route(red, "10.245.1.0/24", {"198.18.0.9"}, "198.18.0.9"));  // static wins
  full.upserts.push_back(route(red, "10.245.2.0/24", {"198.18.0.3", "198.18.0.4"}, "198.18.0.3"));
  full.upserts.push_back(route(0, "10.245.3.0/24", {"198.18.0.3"}, "198.18.0.3"));  // no VNI: ignored
  full.upserts.push_back(route(7777, "10.245.4.0/24", {"198.18.0.3"}, "198.18.0.3"));  // no network yet
  s->apply_routes(RouteOrigin::bgp, full);
  auto routes = s->list_routes();
  ASSERT_EQ(routes.size(), 3u);
  EXPECT_EQ(routes[0].prefix(), "10.245.1.0/24");
  EXPECT_EQ(routes[0].source(), "static");
  EXPECT_EQ(routes[0].peer(), "");
  EXPECT_EQ(routes[0].network(), "red");
  EXPECT_EQ(routes[1].vteps_size(), 2);
  EXPECT_EQ(routes[1].source(), "bgp");
  EXPECT_EQ(routes[1].peer(), "198.18.0.3");
  EXPECT_EQ(routes[2].vni(), 7777u);
  EXPECT_EQ(routes[2].network(), "");
  EXPECT_EQ(s->route_count(), 2u) << "the route of VNI 7777 waits for its network";
  auto info = s->get_network("red", &code);
  ASSERT_EQ(info->remote_cidrs_size(), 2);
  RouteUpdate delta;
  delta.removals.push_back({red, *vxfed::net::Ipv4Prefix::parse("10.245.2.0/24")});
  s->apply_routes(RouteOrigin::bgp, delta);
  EXPECT_EQ(s->list_routes().size(), 2u);
  // The network of VNI 7777 appears: its waiting route goes to the dataplane with it.
  NetworkConfig green;
  green.name = "green";
  green.subnet = "10.244.7.0/24";
  green.pinned_vni = 7777;
  ASSERT_TRUE(s->add_network(green, false, &code).ok());
  EXPECT_EQ(s->route_count(), 2u);
  ASSERT_FALSE(sink.deltas.empty());
  // Replaying the deltas over the first snapshot gives the current snapshot's routes.
  std::map<std::pair<std::uint32_t, std::string>, std::string> table;
  for (const auto& r : applied.routes()) table[{r.vni(), r.prefix()}] = r.SerializeAsString();
  for (const auto& d : sink.deltas) {
    for (const auto& r : d.upsert().routes()) table[{r.vni(), r.prefix()}] = r.SerializeAsString();
    for (const auto& k : d.remove_routes()) table.erase({k.vni(), k.prefix()});
  }
  std::map<std::pair<std::uint32_t, std::string>, std::string> now;
  // tables() returns by value: keep it alive for the loop (a range-for over a member of a
  // temporary dangles).
  const dp::Tables current = s->tables();
  for (const auto& r : current.routes()) now[{r.vni(), r.prefix()}] = r.SerializeAsString();
  EXPECT_EQ(table, now);
  s->set_sink(nullptr);
}

// Route sources resolve network names to VNIs; NodeState tells them when that answer may have
// changed, once per operation, and only then.
TEST(NodeState, TellsTheObserverOncePerOperationThatChangesNetworks) {
  TempDir dir;
  auto config = test_config(dir.path);
  auto s = open(config);
  int calls = 0;
  std::optional<std::uint32_t> seen;
  s->set_networks_observer([&] {
    ++calls;
    seen = s->vni_of("green");  // the change is visible when the observer runs
  });
  v1::ErrorCode code;
  NetworkConfig green;
  green.name = "green";
  green.subnet = "10.244.7.0/24";
  ASSERT_TRUE(s->add_network(green, false, &code).ok());
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(seen.has_value());
  ASSERT_TRUE(s->add_network(green, false, &code).ok());  // idempotent: nothing changed
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(s->attach(endpoint("c1", "red", "10.244.1.5"), &code).ok());
  ASSERT_TRUE(s->detach("c1", "net1", &code).ok());
  EXPECT_EQ(calls, 1) << "endpoints alone do not change networks";
  ASSERT_TRUE(s->remove_network("green", &code).ok());
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(seen.has_value());
  // A reload that adds two networks and removes one: one call.
  auto next = test_config(dir.path, R"(
  - {name: n1, subnet: 10.244.8.0/24}
  - {name: n2, subnet: 10.244.9.0/24}
)");
  next.networks.erase(next.networks.begin() + 1);  // blue leaves the config
  std::vector<std::string> notes;
  ASSERT_TRUE(s->reconfigure(next, &notes).ok());
  EXPECT_EQ(calls, 3);
  EXPECT_TRUE(s->vni_of("n1") && s->vni_of("n2") && !s->vni_of("blue"));
  ASSERT_TRUE(s->reconfigure(next, &notes).ok());  // the same config again
  EXPECT_EQ(calls, 3);
}

TEST(NodeState, CorruptEndpointStoreRefusesToStart) {
  TempDir dir;
  auto config = test_config(dir.path);
  {
    auto s = open(config);
    v1::ErrorCode code;
    ASSERT_TRUE(s->attach(endpoint("c1", "red", "10.244.1.5"), &code).ok());
  }
  const std::string journal = dir.path + "/endpoints.journal";
  std::string bytes;
  {
    FILE* f = fopen(journal.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    fseek(f, 30, SEEK_SET);
    fputc(0x5a, f);
    fclose(f);
  }
  NodeState::Options o;
  o.state_dir = dir.path;
  auto s = NodeState::open(config, o, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("corrupt"), std::string::npos) << s.error();
}

}  // namespace

namespace {

using namespace vxfed::control;
using namespace vxfed::control::testing;

// ---------------------------------------------------------------- with the federation store

// Plays the federation store: hands out VNIs from 7000 and /26 blocks, or refuses as UNAVAILABLE.
class FakeAllocator : public NetworkAllocator {
 public:
  bool down = false;
  std::map<std::string, NetworkGrant> granted;
  std::vector<std::string> asked, left_networks;
  vxfed::Result<NetworkGrant> join(const NetworkConfig& n, v1::ErrorCode* code) override {
    asked.push_back(n.name);
    if (down) {
      *code = v1::UNAVAILABLE;
      return vxfed::make_error("federation store fake etcd is unavailable");
    }
    *code = v1::OK;
    auto it = granted.find(n.name);
    if (it == granted.end()) {
      const auto index = granted.size();
      it = granted.emplace(n.name, NetworkGrant{static_cast<std::uint32_t>(7000 + index), "federation",
                                                n.subnet.substr(0, n.subnet.rfind('.')) + ".64/26"}).first;
    }
    return it->second;
  }
  void left(const std::string& network) override { left_networks.push_back(network); }
};

std::unique_ptr<NodeState> open_federated(const Config& c, FakeAllocator& store, std::vector<std::string>* notes = nullptr) {
  NodeState::Options o;
  o.state_dir = c.daemon.state_dir;
  o.allocator = &store;
  auto s = NodeState::open(c, o, notes);
  EXPECT_TRUE(s.ok()) << s.error();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(NodeStateFederation, VnisAndBlocksComeFromTheStoreAndStayLocal) {
  TempDir dir;
  auto config = test_config(dir.path);
  FakeAllocator store;
  {
    auto s = open_federated(config, store);
    v1::ErrorCode code;
    auto red = s->get_network("red", &code);
    ASSERT_TRUE(red.ok());
    EXPECT_EQ(red->vni(), 7000u);
    EXPECT_EQ(red->node_block(), "10.244.1.64/26");
    EXPECT_EQ(s->get_network("blue", &code)->vni(), 7001u);  // the store's word, even over a pin
  }
  // Restart with the store away: the known networks come back from the local copy, untouched.
  store.down = true;
  store.asked.clear();
  auto s = open_federated(config, store);
  EXPECT_TRUE(store.asked.empty());
  v1::ErrorCode code;
  EXPECT_EQ(s->get_network("red", &code)->vni(), 7000u);
  EXPECT_EQ(s->get_network("red", &code)->node_block(), "10.244.1.64/26");
  // Pods on a known network: fine without the store.
  auto pod = s->attach(endpoint("c1", "red", "10.244.1.70"), &code);
  ASSERT_TRUE(pod.ok()) << pod.error();
  ASSERT_TRUE(s->detach("c1", "net1", &code).ok());
  // Something new: UNAVAILABLE, naming the store.
  v1::NetworkSpec spec;
  spec.set_name("green");
  spec.set_subnet("10.244.3.0/24");
  auto green = s->add_network(network_config_from_spec(spec), false, &code);
  ASSERT_FALSE(green.ok());
  EXPECT_EQ(code, v1::UNAVAILABLE);
  EXPECT_NE(green.error().find("fake etcd"), std::string::npos) << green.error();
  store.down = false;
  ASSERT_TRUE(s->add_network(network_config_from_spec(spec), false, &code).ok());
  ASSERT_TRUE(s->remove_network("green", &code).ok());
  EXPECT_EQ(store.left_networks, std::vector<std::string>{"green"});
}

TEST(NodeStateFederation, ConfigNetworksWaitForTheStoreInsteadOfFailingTheStart) {
  TempDir dir;
  FakeAllocator store;
  {
    auto s = open_federated(test_config(dir.path), store);  // red and blue known
  }
  store.down = true;
  std::vector<std::string> notes;
  auto config = test_config(dir.path, "  - {name: green, subnet: 10.244.3.0/24}\n");
  auto s = open_federated(config, store, &notes);
  ASSERT_TRUE(s);
  v1::ErrorCode code;
  EXPECT_TRUE(s->get_network("red", &code).ok());
  EXPECT_FALSE(s->get_network("green", &code).ok());
  EXPECT_EQ(s->pending_count(), 1u);
  bool noted = false;
  for (const auto& n : notes) noted = noted || n.find("'green' waits for the federation store") != std::string::npos;
  EXPECT_TRUE(noted);
  s->retry_pending();
  EXPECT_EQ(s->pending_count(), 1u);
  store.down = false;
  s->retry_pending();
  EXPECT_EQ(s->pending_count(), 0u);
  EXPECT_EQ(s->get_network("green", &code)->node_block(), "10.244.3.64/26");
  const auto local = s->local_networks();
  EXPECT_EQ(local.size(), 3u);
}

// Records prepare() calls and answers them when the test says (the store's thread, played).
class PreparingAllocator : public FakeAllocator {
 public:
  std::vector<std::pair<std::string, Prepared>> prepared;
  void prepare(const NetworkConfig& n, Prepared done) override { prepared.emplace_back(n.name, std::move(done)); }
};

TEST(NodeStateFederation, AddNetworkIsPreparedOnlyWhenTheStoreIsNeeded) {
  TempDir dir;
  PreparingAllocator store;
  auto s = open_federated(test_config(dir.path), store);  // red and blue joined at start
  v1::ErrorCode code;
  int ready = 0;
  v1::ErrorCode got = v1::INTERNAL;
  auto count = [&](v1::ErrorCode c, const std::string&) {
    ++ready;
    got = c;
  };
  // Known networks and invalid specs: ready at once, nothing asked.
  s->prepare_network(s->local_networks()[0].config, count);
  NetworkConfig bad;
  bad.name = "bad";
  bad.subnet = "not a subnet";
  s->prepare_network(bad, count);
  EXPECT_EQ(ready, 2);
  EXPECT_TRUE(store.prepared.empty());
  // A new network: asked, and ready only when the store's thread answers.
  v1::NetworkSpec spec;
  spec.set_name("green");
  spec.set_subnet("10.244.3.0/24");
  s->prepare_network(network_config_from_spec(spec), count);
  ASSERT_EQ(store.prepared.size(), 1u);
  EXPECT_EQ(store.prepared[0].first, "green");
  EXPECT_EQ(ready, 2);
  store.prepared[0].second(v1::UNAVAILABLE, "federation store fake etcd is unavailable");
  EXPECT_EQ(ready, 3);
  EXPECT_EQ(got, v1::UNAVAILABLE);
  EXPECT_FALSE(s->get_network("green", &code).ok());
}

TEST(NodeStateFederation, WithoutTheStoreTheConfigBlockIsTheNodes) {
  TempDir dir;
  auto s = open(test_config(dir.path, "  - {name: green, subnet: 10.244.3.0/24, block: 10.244.3.128/25}\n"));
  v1::ErrorCode code;
  EXPECT_EQ(s->get_network("green", &code)->node_block(), "10.244.3.128/25");
  EXPECT_EQ(s->get_network("red", &code)->node_block(), "");
  // Pods of the node get addresses of its block only; without a block the whole subnet.
  EXPECT_TRUE(s->attach(endpoint("c1", "green", "10.244.3.130"), &code).ok());
  auto outside = s->attach(endpoint("c2", "green", "10.244.3.5"), &code);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(code, v1::INVALID_ARGUMENT);
  EXPECT_NE(outside.error().find("outside this node's block 10.244.3.128/25"), std::string::npos) << outside.error();
  EXPECT_TRUE(s->attach(endpoint("c3", "red", "10.244.1.5"), &code).ok());
}

// The dataplane as ApiHandler's waiting attaches see it: told what it carries and refused.
class ControlledSink : public TablesSink {
 public:
  void publish(const TablesDelta&) override { ++generation; }
  bool ready() const override { return true; }
  bool carries(const dp::Endpoint& e) const override { return carried.count(e.id()) > 0; }
  std::optional<std::string> refusal(const std::string& id) const override {
    auto it = refused.find(id);
    if (it == refused.end()) return std::nullopt;
    return it->second;
  }
  std::set<std::string> carried;
  std::map<std::string, std::string> refused;
  std::uint64_t generation = 0;
};

TEST(ApiHandlerWait, AnAttachAnswersOnceTheDataplaneCarriesRefusesOrTimesOut) {
  TempDir dir;
  auto s = open(test_config(dir.path));
  ControlledSink sink;
  s->set_sink(&sink);
  ApiHandler handler(*s, DaemonView{});
  const auto request = [](const std::string& cid, const std::string& ip, std::uint32_t wait_ms) {
    v1::ControlRequest r;
    r.set_request_id(7);
    *r.mutable_attach_endpoint()->mutable_endpoint() = endpoint(cid, "red", ip, "vxf" + cid);
    r.mutable_attach_endpoint()->set_wait_ms(wait_ms);
    return r;
  };
  std::vector<v1::ControlResponse> answers;
  const auto reply = [&answers](v1::ControlResponse r) { answers.push_back(std::move(r)); };
  v1::ErrorCode code;

  // Carried: no answer until the dataplane acknowledged it.
  handler.handle(request("c1", "10.244.1.5", 5000), reply);
  handler.progress();
  EXPECT_TRUE(answers.empty());
  EXPECT_EQ(handler.waiting(), 1u);
  sink.carried.insert("c1/net1");
  handler.progress();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].code(), v1::OK) << answers[0].error();
  EXPECT_EQ(answers[0].request_id(), 7u);
  EXPECT_TRUE(answers[0].endpoint().in_dataplane());
  EXPECT_EQ(answers[0].endpoint().dataplane(), v1::DP_CARRIED);

  // Refused: the dataplane's reason, and vxfedd no longer has the endpoint.
  handler.handle(request("c2", "10.244.1.6", 5000), reply);
  sink.refused["c2/net1"] = "cannot serve interface vxfc2: all 2 pod ports of this dataplane are in use";
  handler.progress();
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[1].code(), v1::DATAPLANE_REFUSED);
  EXPECT_NE(answers[1].error().find("all 2 pod ports"), std::string::npos) << answers[1].error();
  EXPECT_FALSE(s->check("c2", "net1", &code).ok()) << "a refused attach must leave no endpoint";

  // Not within wait_ms: UNAVAILABLE saying so, and removed too.
  handler.handle(request("c3", "10.244.1.7", 30), reply);
  handler.progress();
  EXPECT_EQ(answers.size(), 2u);
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  handler.progress();
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answers[2].code(), v1::UNAVAILABLE);
  EXPECT_NE(answers[2].error().find("within 30 ms"), std::string::npos) << answers[2].error();
  EXPECT_FALSE(s->check("c3", "net1", &code).ok());
  EXPECT_EQ(handler.waiting(), 0u);

  // wait_ms 0: answered at once, pending.
  handler.handle(request("c4", "10.244.1.8", 0), reply);
  ASSERT_EQ(answers.size(), 4u);
  EXPECT_EQ(answers[3].code(), v1::OK);
  EXPECT_EQ(answers[3].endpoint().dataplane(), v1::DP_PENDING);
  EXPECT_FALSE(answers[3].endpoint().in_dataplane());
  EXPECT_TRUE(s->check("c1", "net1", &code).ok()) << "the carried endpoint stays";
  s->set_sink(nullptr);
}

// The GBP capability of VTEPs (docs/policy.md, "VXLAN-GBP on the wire"): Vtep{ip, gbp: true}
// for a VTEP when every route naming it carries the GBP mark, in the snapshot and in deltas;
// removed when a route naming it without the mark arrives. A static route carries no mark.
TEST(NodeState, VtepTakesGbpWhenEveryRouteNamingItCarriesTheMark) {
  TempDir dir;
  auto s = open(test_config(dir.path));  // red: a static route via 198.18.0.2
  RecordingSink sink;
  s->set_sink(&sink);
  const auto red = *s->vni_of("red");
  auto marked = [&](const char* prefix, const char* vtep, bool mark) {
    auto r = route(red, prefix, {vtep}, "10.0.0.2");
    r.gbp_mark = mark;
    return r;
  };
  auto gbp_vteps = [](const dp::Tables& t) {
    std::vector<std::string> out;
    for (const auto& v : t.vteps()) out.push_back(v.ip() + (v.gbp() ? " gbp" : " plain"));
    return out;
  };
  RouteUpdate full;
  full.full = true;
  full.upserts.push_back(marked("10.245.2.0/24", "198.18.0.3", true));
  full.upserts.push_back(marked("10.245.3.0/24", "198.18.0.3", true));
  full.upserts.push_back(marked("10.245.5.0/24", "198.18.0.2", true));   // 198.18.0.2: also static
  full.upserts.push_back(marked("10.245.6.0/24", "198.18.0.4", false));  // the previous release
  s->apply_routes(RouteOrigin::bgp, full);
  EXPECT_EQ(gbp_vteps(s->tables()), std::vector<std::string>{"198.18.0.3 gbp"});
  ASSERT_EQ(sink.deltas.size(), 1u);
  ASSERT_EQ(sink.deltas[0].upsert().vteps_size(), 1);
  EXPECT_EQ(sink.deltas[0].upsert().vteps(0).ip(), "198.18.0.3");
  EXPECT_TRUE(sink.deltas[0].upsert().vteps(0).gbp());
  // One of 198.18.0.3's routes loses the mark (same VTEPs): the entry goes.
  RouteUpdate delta;
  delta.upserts.push_back(marked("10.245.3.0/24", "198.18.0.3", false));
  s->apply_routes(RouteOrigin::bgp, delta);
  ASSERT_EQ(sink.deltas.size(), 2u);
  EXPECT_EQ(sink.deltas[1].upsert().routes_size(), 0) << "the route's next hops did not change";
  ASSERT_EQ(sink.deltas[1].remove_vteps_size(), 1);
  EXPECT_EQ(sink.deltas[1].remove_vteps(0), "198.18.0.3");
  EXPECT_TRUE(gbp_vteps(s->tables()).empty());
  // 198.18.0.4's node is upgraded: its route now carries the mark.
  RouteUpdate upgraded;
  upgraded.upserts.push_back(marked("10.245.6.0/24", "198.18.0.4", true));
  s->apply_routes(RouteOrigin::bgp, upgraded);
  EXPECT_EQ(gbp_vteps(s->tables()), std::vector<std::string>{"198.18.0.4 gbp"});
  // Its route withdrawn: cleared, nothing names it.
  RouteUpdate gone;
  gone.removals.push_back({red, *vxfed::net::Ipv4Prefix::parse("10.245.6.0/24")});
  s->apply_routes(RouteOrigin::bgp, gone);
  ASSERT_EQ(sink.deltas.back().remove_vteps_size(), 1);
  EXPECT_EQ(sink.deltas.back().remove_vteps(0), "198.18.0.4");
  EXPECT_TRUE(gbp_vteps(s->tables()).empty());
  s->set_sink(nullptr);
}

}  // namespace
