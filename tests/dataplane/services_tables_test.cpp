// ForwardingTables' services (docs/services.md, docs/conntrack.md): validation errors that name
// the entry and field, the hot-path lookup, the dump, Deltas (removal, the cascade of a
// network), and the default Maglev table sizes' shares and disruption with 2-byte slots.
// Deltas against the reference apply_delta() are compared in tables_inplace_test.cpp.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>
#include <string>

#include "dataplane/core/flow_hash.hpp"
#include "dataplane/core/tables.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

using dataplane::v1::Delta;
using dataplane::v1::Service;
using dataplane::v1::Tables;

std::uint32_t be(const char* text) { return htonl(ip(text)); }

Service* add_web(Tables& t, const char* vip = "10.96.0.10") {
  auto* sv = t.add_services();
  sv->set_id("ns/web");
  sv->set_vni(kVniA);
  sv->set_vip(vip);
  auto* p = sv->add_ports();
  p->set_protocol(6);
  p->set_port(80);
  p->set_target_port(8080);
  auto* q = sv->add_ports();
  q->set_protocol(17);
  q->set_port(53);
  for (const char* b : {"10.245.0.7", "10.244.1.11", "10.245.0.3"}) {
    auto* x = sv->add_backends();
    x->set_ip(b);
    x->set_weight(1);
  }
  return sv;
}

// The span of a network's VIPs that the pod burst tests before the services map: it covers
// every VIP, follows Deltas both ways, and is 0 (only 0.0.0.0 passes) without services.
TEST(ServicesTables, VipSpanCoversTheNetworksVipsAndFollowsDeltas) {
  VXFED_REQUIRE_EAL();
  Node node;
  Tables t = sample_tables();
  add_web(t, "10.96.0.10");
  add_web(t, "10.96.3.1")->set_id("ns/api");
  auto built = node.build(t);
  ASSERT_TRUE(built.ok()) << built.error();
  auto& tables = **built;
  const std::uint16_t a = tables.network_by_vni(kVniA)->index, b = tables.network_by_vni(kVniB)->index;
  using dp::ForwardingTables;
  const std::uint64_t span = tables.service_vip_span(a);
  EXPECT_EQ(span, std::uint64_t{ip("10.96.0.10")} << 32 | (ip("10.96.3.1") - ip("10.96.0.10")));
  for (const char* in : {"10.96.0.10", "10.96.1.200", "10.96.3.1"})
    EXPECT_TRUE(ForwardingTables::within_vip_span(span, be(in))) << in;
  for (const char* out : {"10.96.0.9", "10.96.3.2", "10.245.0.7", "0.0.0.0", "255.255.255.255"})
    EXPECT_FALSE(ForwardingTables::within_vip_span(span, be(out))) << out;
  EXPECT_EQ(tables.service_vip_span(b), 0u);
  EXPECT_FALSE(ForwardingTables::within_vip_span(0, be("10.96.0.10")));
  auto ctx = node.context();
  dp::ImmediateReclaimer reclaimer;
  Delta rm;
  rm.add_remove_services("ns/web");
  ASSERT_TRUE(tables.apply(rm, ctx, reclaimer).ok());
  EXPECT_EQ(tables.service_vip_span(a), std::uint64_t{ip("10.96.3.1")} << 32) << "narrowed to the one VIP left";
  EXPECT_FALSE(ForwardingTables::within_vip_span(tables.service_vip_span(a), be("10.96.0.10")));
  Delta put;
  *put.mutable_upsert()->add_services() = t.services(0);
  ASSERT_TRUE(tables.apply(put, ctx, reclaimer).ok());
  EXPECT_EQ(tables.service_vip_span(a), span) << "widened again";
  Delta rm_all;
  rm_all.add_remove_services("ns/web");
  rm_all.add_remove_services("ns/api");
  ASSERT_TRUE(tables.apply(rm_all, ctx, reclaimer).ok());
  EXPECT_EQ(tables.service_vip_span(a), 0u);
}

TEST(ServicesTables, ServiceIsFoundByNetworkAndVip) {
  VXFED_REQUIRE_EAL();
  Node node;
  Tables t = sample_tables();
  add_web(t);
  auto built = node.build(t);
  ASSERT_TRUE(built.ok()) << built.error();
  const auto& tables = **built;
  const std::uint16_t a = tables.network_by_vni(kVniA)->index, b = tables.network_by_vni(kVniB)->index;
  EXPECT_TRUE(tables.network_has_services(a));
  EXPECT_FALSE(tables.network_has_services(b)) << "the other network pays no lookup";
  EXPECT_EQ(tables.service(b, be("10.96.0.10")), nullptr) << "a VIP belongs to its network";
  EXPECT_EQ(tables.service(a, be("10.96.0.11")), nullptr);
  const dp::ServiceEntry* s = tables.service(a, be("10.96.0.10"));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->network, a);
  ASSERT_NE(s->port(6, htons(80)), nullptr);
  EXPECT_EQ(s->port(6, htons(80))->target_port_be, htons(8080));
  ASSERT_NE(s->port(17, htons(53)), nullptr);
  EXPECT_EQ(s->port(17, htons(53))->target_port_be, htons(53)) << "target_port 0 is the port";
  EXPECT_EQ(s->port(17, htons(80)), nullptr) << "the protocol is part of the port";
  // Backends in address order (Maglev's id order), slots 2 bytes, the default size for 3.
  ASSERT_EQ(s->backend_ip_be.size(), 3u);
  EXPECT_EQ(s->backend_ip_be[0], be("10.244.1.11"));
  EXPECT_EQ(s->backend_ip_be[2], be("10.245.0.7"));
  EXPECT_EQ(s->backend_index(be("10.245.0.3")), 1u);
  EXPECT_EQ(s->backend_index(be("10.245.0.4")), dp::ServiceEntry::kNoBackend);
  EXPECT_EQ(s->slots.size(), dp::default_service_table_size(3));
  EXPECT_EQ(sizeof(s->slots[0]), 2u);
  std::array<int, 3> picked{};
  for (std::uint32_t h = 0; h < 3000; ++h) ++picked.at(s->pick(h * 0x9e3779b1u));
  for (int n : picked) EXPECT_GT(n, 800) << "each backend gets about a third";
  // The dump gives back what was given (ports in order, target 0 kept, backends by address).
  const auto dumped = tables.dump();
  ASSERT_EQ(dumped.services_size(), 1);
  EXPECT_EQ(dumped.services(0).vip(), "10.96.0.10");
  EXPECT_EQ(dumped.services(0).ports(1).target_port(), 0u);
  EXPECT_EQ(dumped.services(0).backends(0).ip(), "10.244.1.11");
  auto again = Node().build(dumped);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ((*again)->dump().SerializeAsString(), dumped.SerializeAsString());
}

TEST(ServicesTables, BadServicesAreRefusedNamingTheEntryAndField) {
  VXFED_REQUIRE_EAL();
  struct Case {
    const char* what;
    std::function<void(Service&)> edit;
    std::string error;  // the whole message after "tables refused: "
  };
  const std::string web = "services[0] (id \"ns/web\"): ";
  const std::vector<Case> cases = {
      {"bad vip", [](Service& s) { s.set_vip("10.96.0"); }, web + "vip: \"10.96.0\" is not a unicast IPv4 address"},
      {"multicast vip", [](Service& s) { s.set_vip("224.0.0.5"); }, web + "vip: \"224.0.0.5\" is not a unicast IPv4 address"},
      {"vip of an endpoint", [](Service& s) { s.set_vip("10.244.1.10"); },
       web + "vip: 10.244.1.10 is the ip of endpoint \"pod1/net1\" in vni 1001"},
      {"vip of the gateway", [](Service& s) { s.set_vip("10.244.0.1"); }, web + "vip: 10.244.0.1 is the gateway of vni 1001"},
      {"protocol", [](Service& s) { s.mutable_ports(1)->set_protocol(1); },
       web + "ports[1].protocol: must be 6 (TCP) or 17 (UDP) (got 1)"},
      {"port 0", [](Service& s) { s.mutable_ports(0)->set_port(0); }, web + "ports[0].port: must be 1..65535 (got 0)"},
      {"port too big", [](Service& s) { s.mutable_ports(0)->set_port(65536); }, web + "ports[0].port: must be 1..65535 (got 65536)"},
      {"target too big", [](Service& s) { s.mutable_ports(0)->set_target_port(70000); },
       web + "ports[0].target_port: must be 1..65535, or 0 for the port (got 70000)"},
      {"duplicate port", [](Service& s) { *s.add_ports() = s.ports(0); },
       web + "ports[2]: protocol 6 port 80 listed twice (also ports[0])"},
      {"no port", [](Service& s) { s.clear_ports(); }, web + "ports is empty (a service serves at least one protocol and port)"},
      {"backend ip", [](Service& s) { s.mutable_backends(2)->set_ip("10.245.0.300"); },
       web + "backends[2].ip: \"10.245.0.300\" is not a unicast IPv4 address"},
      {"backend twice", [](Service& s) { s.mutable_backends(2)->set_ip("10.245.0.7"); },
       web + "backends[2].ip: 10.245.0.7 listed twice (also backends[0])"},
      {"weight", [](Service& s) { s.mutable_backends(1)->set_weight(70000); }, web + "backends[1].weight: must be 0..65535 (got 70000)"},
      {"table not prime", [](Service& s) { s.set_table_size(1000); },
       web + "table_size: must be a prime in 3..65537, or 0 for the default (got 1000)"},
      {"table too big", [](Service& s) { s.set_table_size(131071); },
       web + "table_size: must be a prime in 3..65537, or 0 for the default (got 131071)"},
      {"table too small",
       [](Service& s) {
         auto* b = s.add_backends();
         b->set_ip("10.245.0.8");
         b->set_weight(1);
         s.set_table_size(3);
       },
       web + "table_size: 3 slots cannot hold 4 backends with a weight (choose a larger prime, or 0)"},
      {"unknown vni", [](Service& s) { s.set_vni(77); }, web + "vni 77 is not a configured network"},
      {"empty id", [](Service& s) { s.set_id(""); }, "services[0] (id \"\"): id is empty"},
  };
  for (const Case& c : cases) {
    Tables t = sample_tables();
    c.edit(*add_web(t));
    auto built = Node().build(t);
    ASSERT_FALSE(built.ok()) << c.what;
    EXPECT_EQ(built.error(), "tables refused: " + c.error) << c.what;
  }
  // A table of 3 holds 3 weighted backends and any number of weight 0 (draining): accepted.
  Tables t = sample_tables();
  add_web(t)->set_table_size(3);
  auto* drain = t.mutable_services(0)->add_backends();
  drain->set_ip("10.245.0.8");
  drain->set_weight(0);
  EXPECT_TRUE(Node().build(t).ok());
  // Two services on one VIP of a network; the same VIP in another network is fine.
  Tables two = sample_tables();
  add_web(two);
  add_web(two)->set_id("ns/other");
  EXPECT_EQ(Node().build(two).error(), "tables refused: services[1] (id \"ns/other\"): vip: 10.96.0.10 already used in vni 1001 by " + web.substr(0, web.size() - 2));
  two.mutable_services(1)->set_vni(kVniB);
  EXPECT_TRUE(Node().build(two).ok());
}

TEST(ServicesTables, DeltasChangeRemoveAndCascade) {
  VXFED_REQUIRE_EAL();
  Node node;
  Tables t = sample_tables();
  add_web(t);
  auto built = node.build(t);
  ASSERT_TRUE(built.ok()) << built.error();
  auto& tables = **built;
  auto ctx = node.context();
  dp::ImmediateReclaimer reclaimer;
  const std::uint16_t a = tables.network_by_vni(kVniA)->index;
  const dp::ServiceEntry* before = tables.service(a, be("10.96.0.10"));
  // A backend added: a new entry with a new generation; the old one is replaced whole.
  Delta add;
  *add.mutable_upsert()->add_services() = t.services(0);
  auto* x = add.mutable_upsert()->mutable_services(0)->add_backends();
  x->set_ip("10.245.0.9");
  x->set_weight(1);
  ASSERT_TRUE(tables.apply(add, ctx, reclaimer).ok());
  const dp::ServiceEntry* after = tables.service(a, be("10.96.0.10"));
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->backend_ip_be.size(), 4u);
  EXPECT_NE(after->generation, before->generation);
  // An endpoint upserted onto the VIP is refused naming it; nothing changes.
  Delta clash;
  auto* ep = clash.mutable_upsert()->add_endpoints();
  ep->set_id("pod9/net1");
  ep->set_vni(kVniA);
  ep->set_ip("10.96.0.10");
  ep->set_mac("02:aa:00:00:00:19");
  ep->set_iface("veth9");
  auto refused = tables.apply(clash, ctx, reclaimer);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("endpoint \"pod9/net1\": ip 10.96.0.10 is the vip of service \"ns/web\" in vni 1001"),
            std::string::npos)
      << refused.error();
  // Removed by id; removing it again names it.
  Delta rm;
  rm.add_remove_services("ns/web");
  ASSERT_TRUE(tables.apply(rm, ctx, reclaimer).ok());
  EXPECT_EQ(tables.service(a, be("10.96.0.10")), nullptr);
  EXPECT_FALSE(tables.network_has_services(a));
  auto again = tables.apply(rm, ctx, reclaimer);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error(), "remove_services[0] (id \"ns/web\"): not present");
  // A network takes its services with it (apply_delta alike).
  Delta put;
  *put.mutable_upsert()->add_services() = t.services(0);
  ASSERT_TRUE(tables.apply(put, ctx, reclaimer).ok());
  Delta drop_net;
  drop_net.add_remove_networks(kVniA);
  ASSERT_TRUE(tables.apply(drop_net, ctx, reclaimer).ok());
  EXPECT_EQ(tables.service_count(), 0u);
  auto merged = dp::apply_delta(t, drop_net);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->services_size(), 0);
}

// The default table sizes (kServiceTableTiers): the goals on the
// forwarder's own entries, 2-byte slots, over 10,000 flow hashes of random client tuples.
std::vector<std::uint32_t> client_hashes() {
  std::mt19937 rng(36);
  std::vector<std::uint32_t> out;
  for (int i = 0; i < 10000; ++i)
    out.push_back(dp::flow_hash(htonl(0x0af40000u | (rng() & 0xffff)), be("10.96.0.10"), 6,
                                static_cast<std::uint16_t>(rng()), htons(80)));
  return out;
}

const dp::ServiceEntry* build_with(Node& node, std::unique_ptr<dp::ForwardingTables>& keep, int backends,
                                   std::function<std::uint32_t(int)> weight = [](int) { return 1u; }) {
  Tables t = sample_tables();
  auto* sv = add_web(t);
  sv->clear_backends();
  for (int i = 0; i < backends; ++i) {
    auto* b = sv->add_backends();
    b->set_ip("10.247." + std::to_string(i / 200) + "." + std::to_string(1 + i % 200));
    b->set_weight(weight(i));
  }
  auto built = node.build(t);
  EXPECT_TRUE(built.ok()) << built.error();
  keep = std::move(*built);
  return keep->service(keep->network_by_vni(kVniA)->index, be("10.96.0.10"));
}

TEST(ServicesTables, DefaultTableSizesKeepDisruptionAndWeightsWithinTheGoals) {
  VXFED_REQUIRE_EAL();
  const auto hashes = client_hashes();
  // Adding one backend moves at most 1/(n+1) + 2 % of new flows (within a size tier).
  for (int n : {2, 4, 6, 19, 21, 50, 100, 101, 103, 203}) {
    Node n1, n2;
    std::unique_ptr<dp::ForwardingTables> k1, k2;
    const auto* before = build_with(n1, k1, n);
    const auto* after = build_with(n2, k2, n + 1);
    ASSERT_EQ(before->slots.size(), after->slots.size()) << n << ": the size tier must hold";
    int moved = 0;
    for (std::uint32_t h : hashes)
      if (before->backend_ip_be[before->pick(h)] != after->backend_ip_be[after->pick(h)]) ++moved;
    const double share = moved / 100.0, ideal = 100.0 / (n + 1), goal = ideal + 2.0;
    std::printf("  %d -> %d backends, table %zu: %.2f %% moved (ideal %.2f, goal %.2f)\n", n, n + 1,
                before->slots.size(), share, ideal, goal);
    EXPECT_LE(share, goal) << n << " -> " << n + 1;
  }
  // Weights 3:1 over two clusters of 3 backends each (a cluster's weight split evenly).
  Node node;
  std::unique_ptr<dp::ForwardingTables> keep;
  const auto* s = build_with(node, keep, 6, [](int i) { return i < 3 ? 3u : 1u; });
  int first = 0;
  for (std::uint32_t h : hashes) first += s->pick(h) < 3;
  std::printf("  weights 3:1, table %zu: %.2f / %.2f\n", s->slots.size(), first / 100.0, 100 - first / 100.0);
  EXPECT_NEAR(first / 100.0, 75.0, 2.0);
}

}  // namespace
}  // namespace vxfed::test
