// ForwardingTables::apply (a Delta applied in place) against the reference meaning of a Delta:
// apply_delta() on the protobuf, then ForwardingTables::create of the result. Random Deltas
// over a small universe (three VNIs sharing prefixes, /0 to /32, endpoints on the /32s of
// routes, ECMP groups, explicit VTEPs, static neighbours, removals of absent keys, invalid
// entries) must be accepted or refused alike, and leave tables that dump and look up alike.
#include <algorithm>
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "dataplane/core/tables.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

using dataplane::v1::Delta;
using dataplane::v1::Tables;

std::uint32_t be(const std::string& text) { return htonl(ip(text.c_str())); }

const std::uint32_t kVnis[] = {101, 102, 103};
// No default route here: painting the whole first level (64 MiB) for every rebuilt reference
// would make the test slow; DefaultRouteInPlace covers it.
const char* kPrefixes[] = {"10.128.0.0/9", "10.0.0.0/8",  "10.1.0.0/16", "10.1.2.0/24", "10.1.2.0/25",
                           "10.1.2.0/28", "10.1.2.1/32", "10.1.2.3/32", "10.2.0.0/16", "10.1.3.0/24"};
const char* kProbes[] = {"10.1.2.0", "10.1.2.1", "10.1.2.2", "10.1.2.3", "10.1.2.4", "10.1.2.100",
                         "10.1.2.200", "10.1.3.7", "10.2.5.5", "10.200.0.1", "11.0.0.1", "10.9.0.1"};

class Generator {
 public:
  explicit Generator(unsigned seed) : rng_(seed) {}
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(int percent) { return pick(100) < percent; }
  std::uint32_t vni() { return chance(3) ? 999 : kVnis[pick(3)]; }
  std::string vtep() { return "198.18.0." + std::to_string(2 + pick(6)); }

  void network(Tables& t) {
    auto* n = t.add_networks();
    n->set_vni(vni());
    n->set_gateway_ip(chance(80) ? "10.9.0.1" : "10.9.0.2");
    if (chance(20)) n->set_gateway_mac("02:00:00:00:77:01");
    if (chance(20)) n->set_mtu(1400);
    if (chance(2)) n->set_mtu(20);  // invalid
  }
  void endpoint(Tables& t) {
    auto* e = t.add_endpoints();
    const int port = 1 + pick(6);
    e->set_id("e" + std::to_string(pick(6)));
    e->set_vni(vni());
    e->set_ip(chance(4) ? "10.9.0.1" : "10.1.2." + std::to_string(1 + pick(4)));
    char mac[18];
    std::snprintf(mac, sizeof(mac), "02:%02x:%02x:00:00:%02x", e->vni() & 0xff, port, pick(3));
    e->set_mac(mac);
    e->set_iface("port" + std::to_string(port));
  }
  void route(Tables& t) {
    auto* r = t.add_routes();
    r->set_vni(vni());
    r->set_prefix(chance(3) ? "10.1.2.1/24" : kPrefixes[pick(10)]);
    const int hops = 1 + pick(3);
    std::vector<std::string> used;
    for (int h = 0; h < hops; ++h) {
      std::string v = vtep();
      if (std::find(used.begin(), used.end(), v) != used.end() && !chance(5)) continue;
      used.push_back(v);
      auto* nh = r->add_next_hops();
      nh->set_vtep(v);
      nh->set_weight(static_cast<std::uint32_t>(pick(4)));
    }
  }
  void vtep_entry(Tables& t) {
    auto* v = t.add_vteps();
    v->set_ip("198.18.0." + std::to_string(2 + pick(8)));
    for (std::uint32_t x : kVnis)
      if (chance(50)) v->add_vnis(x);
  }
  // Services at addresses that endpoints and the gateway may also take (both refused alike).
  void service(Tables& t) {
    auto* sv = t.add_services();
    sv->set_id("s" + std::to_string(pick(4)));
    sv->set_vni(vni());
    sv->set_vip(chance(5) ? "10.9.0.1" : chance(10) ? "10.1.2." + std::to_string(1 + pick(4)) : "10.3.0." + std::to_string(1 + pick(3)));
    const int ports = chance(3) ? 0 : 1 + pick(2);
    for (int k = 0; k < ports; ++k) {
      auto* p = sv->add_ports();
      p->set_protocol(chance(3) ? 1 : chance(50) ? 6 : 17);
      p->set_port(chance(50) ? 80 : 53);
      if (chance(50)) p->set_target_port(8080);
    }
    const int backends = pick(4);
    for (int k = 0; k < backends; ++k) {
      auto* b = sv->add_backends();
      b->set_ip("10.1.2." + std::to_string(100 + pick(5)));
      b->set_weight(static_cast<std::uint32_t>(pick(3)));
    }
    if (chance(10)) sv->set_table_size(chance(50) ? 1000 : 251);
  }
  void neighbor(Tables& t) {
    auto* n = t.add_neighbors();
    n->set_ip("198.18.0." + std::to_string(2 + pick(8)));
    n->set_mac("02:00:00:00:05:0" + std::to_string(pick(3)));
  }

  // Removals mostly name what `current` has.
  Delta delta(const Tables& current) {
    Delta d;
    const int ops = 1 + pick(4);
    for (int i = 0; i < ops; ++i) {
      switch (pick(13)) {
        case 11: service(*d.mutable_upsert()); break;
        case 12:
          d.add_remove_services(current.services_size() && chance(85) ? current.services(pick(current.services_size())).id() : "s" + std::to_string(pick(4)));
          break;
        case 0: network(*d.mutable_upsert()); break;
        case 1: case 2: endpoint(*d.mutable_upsert()); break;
        case 3: case 4: case 5: route(*d.mutable_upsert()); break;
        case 6: vtep_entry(*d.mutable_upsert()); break;
        case 7: neighbor(*d.mutable_upsert()); break;
        case 8:
          if (chance(20)) d.add_remove_networks(current.networks_size() && chance(85) ? current.networks(pick(current.networks_size())).vni() : vni());
          else d.add_remove_endpoints(current.endpoints_size() && chance(85) ? current.endpoints(pick(current.endpoints_size())).id() : "e" + std::to_string(pick(6)));
          break;
        case 9: {
          auto* k = d.add_remove_routes();
          if (current.routes_size() && chance(85)) {
            const auto& r = current.routes(pick(current.routes_size()));
            k->set_vni(r.vni());
            k->set_prefix(r.prefix());
          } else {
            k->set_vni(vni());
            k->set_prefix(kPrefixes[pick(10)]);
          }
          break;
        }
        case 10:
          if (chance(50)) d.add_remove_vteps(current.vteps_size() && chance(85) ? current.vteps(pick(current.vteps_size())).ip() : "198.18.0." + std::to_string(2 + pick(8)));
          else d.add_remove_neighbors(current.neighbors_size() && chance(85) ? current.neighbors(pick(current.neighbors_size())).ip() : "198.18.0." + std::to_string(2 + pick(8)));
          break;
      }
    }
    return d;
  }

 private:
  std::mt19937 rng_;
};

// The VTEP addresses a group sends to, slot by slot.
std::vector<std::uint32_t> slots_of(const dp::ForwardingTables& t, const dp::NextHopGroup* g) {
  std::vector<std::uint32_t> out;
  if (!g) return out;
  for (std::uint32_t i = 0; i < g->count; ++i) out.push_back(t.vtep(t.group_slots()[g->first + i]).ip_be);
  return out;
}

// How often a service was found in both tables (the generator must make some).
std::size_t service_lookups = 0;

// How often the burst loop's shortcut answered in expect_same_lookups (it must be exercised).
std::size_t direct_vtep_answers = 0;

// Everything a packet could ask, compared between the two tables.
void expect_same_lookups(const dp::ForwardingTables& a, const Node& na, const dp::ForwardingTables& b, const Node& nb,
                         const std::string& context) {
  ASSERT_EQ(a.dump().SerializeAsString(), b.dump().SerializeAsString()) << context;
  for (std::uint32_t vni : kVnis) {
    const auto* x = a.network_by_vni(vni);
    const auto* y = b.network_by_vni(vni);
    ASSERT_EQ(x != nullptr, y != nullptr) << context;
    if (!x) continue;
    EXPECT_EQ(x->gateway_ip_be, y->gateway_ip_be);
    EXPECT_EQ(x->gateway_mac, y->gateway_mac);
    EXPECT_EQ(x->mtu, y->mtu);
    for (const char* probe : kProbes) {
      const std::string where = context + " vni " + std::to_string(vni) + " dst " + probe;
      const auto da = a.resolve(x->index, be(probe));
      const auto db = b.resolve(y->index, be(probe));
      ASSERT_EQ(da.endpoint != nullptr, db.endpoint != nullptr) << where;
      if (da.endpoint) {
        EXPECT_EQ(da.endpoint->port, db.endpoint->port) << where;
        EXPECT_EQ(da.endpoint->mac, db.endpoint->mac) << where;
      }
      EXPECT_EQ(slots_of(a, da.group), slots_of(b, db.group)) << where;
      // The burst loop's shortcut (a route to one VTEP answered by the LPM entry itself) names
      // that route's one VTEP, in both tables alike.
      for (const auto* t : {&a, &b}) {
        const std::uint16_t net = t == &a ? x->index : y->index;
        const std::uint64_t entry =
            dp::LpmTable::lookup_in(t->lpm().tbl24(), t->lpm().tbl8(), ntohl(be(probe)));
        std::uint32_t v;
        if (!dp::ForwardingTables::direct_vtep(net, entry, &v)) continue;
        ++direct_vtep_answers;
        ASSERT_EQ(slots_of(a, da.group).size(), 1u) << where << ": a direct VTEP for a route of several slots";
        EXPECT_EQ(t->vtep(v).ip_be, slots_of(a, da.group)[0]) << where;
      }
      EXPECT_EQ(slots_of(a, a.route(x->index, be(probe))), slots_of(b, b.route(y->index, be(probe)))) << where;
      for (int v = 2; v <= 9; ++v) {
        const std::uint32_t vtep = be("198.18.0." + std::to_string(v));
        const auto slots = slots_of(a, da.group);
        const bool routed = std::find(slots.begin(), slots.end(), vtep) != slots.end();
        EXPECT_EQ(a.source_routed_to(x->index, be(probe), vtep), routed) << where << " vtep ." << v;
        EXPECT_EQ(b.source_routed_to(y->index, be(probe), vtep), routed) << where << " vtep ." << v;
      }
      const auto ea = a.endpoint(x->index, be(probe));
      const auto eb = b.endpoint(y->index, be(probe));
      ASSERT_EQ(ea.has_value(), eb.has_value()) << where;
      if (ea) {
        EXPECT_EQ(ea->port, eb->port) << where;
      }
    }
  }
  const auto dumped = a.dump();
  for (int v = 2; v <= 9; ++v) {
    const std::uint32_t vtep = be("198.18.0." + std::to_string(v));
    for (std::uint32_t vni : kVnis) {
      const auto xa = a.allowed_network(vtep, vni);
      const auto xb = b.allowed_network(vtep, vni);
      ASSERT_EQ(xa.has_value(), xb.has_value()) << context << " vtep ." << v;
      // Explicitly admitted exactly when a Vtep entry of the tables names the pair (whatever
      // routes also admit it): what the reverse-path check of decapsulation asks.
      bool listed = false;
      for (const auto& e : dumped.vteps())
        if (be(e.ip()) == vtep)
          for (std::uint32_t x : e.vnis()) listed |= x == vni;
      const std::uint64_t key = dp::ForwardingTables::admission_key(vtep, vni);
      EXPECT_EQ(a.explicitly_admitted(key), listed) << context << " vtep ." << v << " vni " << vni;
      EXPECT_EQ(b.explicitly_admitted(key), listed) << context << " vtep ." << v << " vni " << vni;
      if (xa) {
        EXPECT_EQ(a.network(*xa).vni, vni);
        EXPECT_EQ(b.network(*xb).vni, vni);
      }
    }
    EXPECT_EQ(a.vtep_index(vtep).has_value(), b.vtep_index(vtep).has_value()) << context << " vtep ." << v;
    EXPECT_EQ(na.neighbors.lookup(vtep), nb.neighbors.lookup(vtep)) << context << " neighbour ." << v;
  }
  for (std::uint16_t port = 1; port <= 6; ++port) {
    const auto* pa = a.pod_port(port);
    const auto* pb = b.pod_port(port);
    ASSERT_EQ(pa != nullptr, pb != nullptr) << context << " port " << port;
    if (!pa) continue;
    EXPECT_EQ(a.network(pa->network).vni, b.network(pb->network).vni);
    EXPECT_EQ(pa->ip_be, pb->ip_be);
    EXPECT_EQ(pa->mac, pb->mac);
  }
  EXPECT_EQ(a.pod_port_ids(), b.pod_port_ids()) << context;
  // Services: the same entry (ports, backends, Maglev slots) at every address a packet could ask.
  EXPECT_EQ(a.service_count(), b.service_count()) << context;
  for (std::uint32_t vni : kVnis) {
    const auto* x = a.network_by_vni(vni);
    if (!x) continue;
    const std::uint16_t ya = x->index, yb = b.network_by_vni(vni)->index;
    EXPECT_EQ(a.network_has_services(ya), b.network_has_services(yb)) << context << " vni " << vni;
    // The span of VIPs tested before the map (the lowest VIP and the highest's distance),
    // narrowed by removals in place as a fresh build has it.
    EXPECT_EQ(a.service_vip_span(ya), b.service_vip_span(yb)) << context << " vni " << vni;
    bool any = false;
    for (int host = 1; host <= 3; ++host) {
      const std::uint32_t vip = be("10.3.0." + std::to_string(host));
      const auto* sa = a.network_has_services(ya) ? a.service(ya, vip) : nullptr;
      const auto* sb = b.network_has_services(yb) ? b.service(yb, vip) : nullptr;
      ASSERT_EQ(sa != nullptr, sb != nullptr) << context << " vni " << vni << " vip 10.3.0." << host;
      if (!sa) continue;
      EXPECT_TRUE(dp::ForwardingTables::within_vip_span(a.service_vip_span(ya), vip)) << context << " vip 10.3.0." << host;
      any = true;
      EXPECT_EQ(sa->ports, sb->ports) << context;
      EXPECT_EQ(sa->backend_ip_be, sb->backend_ip_be) << context;
      EXPECT_EQ(sa->slots, sb->slots) << context;
      EXPECT_EQ(sa->network, ya);
      ++service_lookups;
    }
    if (!any) EXPECT_EQ(a.service(ya, be("10.3.0.1")), nullptr);
  }
  EXPECT_EQ(a.route_count(), b.route_count()) << context;
  EXPECT_EQ(a.vtep_count(), b.vtep_count()) << context;
  EXPECT_EQ(a.group_count() <= a.route_count(), true) << context;
}

void run_seed(unsigned seed, int deltas) {
  Generator gen(seed);
  Node node;
  auto ctx = node.context();
  ctx.default_neighbors = {{be("198.18.0.8"), {0x02, 0, 0, 0, 0x08, 0x08}}};
  Tables start;
  for (std::uint32_t vni : kVnis) {
    auto* n = start.add_networks();
    n->set_vni(vni);
    n->set_gateway_ip("10.9.0.1");
  }
  auto built = dp::ForwardingTables::create(start, ctx);
  ASSERT_TRUE(built.ok()) << built.error();
  auto& t = **built;
  Tables current = start;
  dp::ImmediateReclaimer reclaimer;
  int accepted = 0;
  for (int i = 0; i < deltas; ++i) {
    const Delta d = gen.delta(current);
    const std::string context = "seed " + std::to_string(seed) + " delta " + std::to_string(i) + ": " + d.ShortDebugString();
    auto merged = dp::apply_delta(current, d);
    Node ref_node;
    auto ref_ctx = ref_node.context();
    ref_ctx.default_neighbors = ctx.default_neighbors;
    auto ref = merged ? dp::ForwardingTables::create(*merged, ref_ctx) : Result<std::unique_ptr<dp::ForwardingTables>>(make_error(merged.error()));
    const std::string before = t.dump().SerializeAsString();
    auto applied = t.apply(d, ctx, reclaimer);
    ASSERT_EQ(applied.ok(), ref.ok()) << context << "\n in place: " << (applied ? "ok" : applied.error())
                                      << "\n reference: " << (ref ? "ok" : ref.error());
    if (!merged) {
      EXPECT_EQ(applied.error(), merged.error()) << context;
    }
    if (!applied) {
      ASSERT_EQ(t.dump().SerializeAsString(), before) << context << ": a refused Delta changed the tables";
      continue;
    }
    ++accepted;
    current = *merged;
    expect_same_lookups(t, node, **ref, ref_node, context);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(accepted, deltas / 4) << "the generator should mostly make valid Deltas";
}

TEST(TablesInPlace, RandomDeltasMatchTheRebuiltTables) {
  VXFED_REQUIRE_EAL();
  // VXFED_INPLACE_SEEDS=N runs more (the default keeps the unit suite quick).
  const char* env = std::getenv("VXFED_INPLACE_SEEDS");
  const unsigned seeds = env ? static_cast<unsigned>(std::stoul(env)) : 40;
  for (unsigned seed = 1; seed <= seeds; ++seed) {
    run_seed(seed, 300);
    if (HasFailure()) return;
  }
  EXPECT_GT(direct_vtep_answers, 1000u) << "routes to one VTEP must be answered by the LPM entry itself";
  EXPECT_GT(service_lookups, 1000u) << "services must be compared, not only absent";
}

}  // namespace
}  // namespace vxfed::test

namespace vxfed::test {
namespace {

// The soak's route churn (a window of /24s that moves one prefix per Delta, over 256 /24s)
// and pod churn (one endpoint attached, the oldest of 10 detached, addresses handed out
// through the node's range as host-local does) must leave the tables the size they were:
// freed entries are reused once their grace period is over, not replaced by new pages.
// (The one-hour soak saw a dataplane's tables_bytes grow ~3 KiB per churned pod; these tables
// alone, fed the same churn, do not: see docs/faults.md "Soak".)
TEST(TablesInPlace, ChurnKeepsTheTablesTheirSize) {
  VXFED_REQUIRE_EAL();
  Node node;
  Tables start;
  auto* n = start.add_networks();
  n->set_vni(1000);
  n->set_gateway_ip("10.245.0.1");
  auto built = node.build(start);
  ASSERT_TRUE(built.ok()) << built.error();
  auto& t = **built;
  // Frees run a step later, as the runtime's grace periods end after the next Deltas.
  struct OneStepLater final : dp::Reclaimer {
    std::vector<std::function<void()>> now, next;
    void defer(std::function<void()> free) override { next.push_back(std::move(free)); }
    void synchronize() override { step(); step(); }
    void step() {
      for (auto& f : now) f();
      now = std::move(next);
      next.clear();
    }
  } reclaimer;
  const auto prefix = [](int i) { return "10.250." + std::to_string((i % 256 + 256) % 256) + ".0/24"; };
  // As host-local hands them out: the next address each time, through the node's range.
  const auto pod_ip = [](int i) { return "10.245." + std::to_string(i / 250 % 64) + "." + std::to_string(2 + i % 250); };
  auto apply = [&](const Delta& d) {
    auto r = t.apply(d, node.context(), reclaimer);
    ASSERT_TRUE(r.ok()) << r.error() << " in " << d.ShortDebugString();
  };
  auto step = [&](int i) {
    Delta d;
    auto* r = d.mutable_upsert()->add_routes();
    r->set_vni(1000);
    r->set_prefix(prefix(i + 10));
    r->add_next_hops()->set_vtep("198.18.0.11");
    if (i >= 0) {
      auto* rm = d.add_remove_routes();
      rm->set_vni(1000);
      rm->set_prefix(prefix(i));
    }
    apply(d);
    Delta p;
    auto* e = p.mutable_upsert()->add_endpoints();
    e->set_id("pod-" + std::to_string(i + 10));
    e->set_vni(1000);
    e->set_ip(pod_ip(i + 10));
    e->set_mac("02:aa:00:00:00:01");
    e->set_iface("port" + std::to_string(10 + (i + 10) % 20));
    if (i >= 0) p.add_remove_endpoints("pod-" + std::to_string(i));
    apply(p);
    reclaimer.step();
  };
  for (int i = -10; i < 1000; ++i) step(i);  // warm: every slot and page the churn uses once
  const std::size_t warm = t.memory_bytes();
  for (int i = 1000; i < 5000; ++i) step(i);
  const std::size_t after = t.memory_bytes();
  EXPECT_LT(after, warm + 64 * 1024) << "the tables grew by " << (after - warm) << " bytes";
}

}  // namespace
}  // namespace vxfed::test
