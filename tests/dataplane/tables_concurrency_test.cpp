// ForwardingTables changed in place while reader threads look up, as workers do: no reader
// may ever see a half-written entry or an answer of another network. Every entry carries its
// network in its content so that a reader can check it alone: an endpoint's MAC is
// 02:<vni>:<port>:..., a route of VNI v goes to VTEPs 198.18.v.x, a pod port's entry names
// a network whose VNI its MAC repeats. The writer applies random Deltas that move endpoints
// between networks (same port, or another), move routes between VNIs, remove VTEPs with
// their routes and remove and re-create networks; freed memory is reclaimed by a small QSBR
// (readers report quiescent states between batches of lookups), as the runtime's rte_rcu_qsbr.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/core/tables.hpp"
#include "tests/dataplane/eal_env.hpp"
#include "tests/dataplane/sample_tables.hpp"

namespace vxfed::test {
namespace {

using dataplane::v1::Delta;
using dataplane::v1::Tables;

constexpr int kReaders = 2;
constexpr std::uint32_t kNets = 4;   // VNIs 1..4
constexpr int kPorts = 8;

// Quiescent-state based reclamation for the test's reader threads.
class TestQsbr final : public dp::Reclaimer {
 public:
  void quiescent(int r) { seen_[r].fetch_add(1, std::memory_order_acq_rel); }
  void offline(int r) { seen_[r].store(kOffline, std::memory_order_release); }
  void defer(std::function<void()> f) override { pending_.push_back(std::move(f)); }
  void synchronize() override {
    auto due = std::move(pending_);
    pending_.clear();
    std::uint64_t at[kReaders];
    for (int r = 0; r < kReaders; ++r) at[r] = seen_[r].load(std::memory_order_acquire);
    for (int r = 0; r < kReaders; ++r)
      while (at[r] != kOffline && seen_[r].load(std::memory_order_acquire) == at[r]) std::this_thread::yield();
    for (auto& f : due) f();
    ++grace_periods;
  }
  std::uint64_t grace_periods = 0;

 private:
  static constexpr std::uint64_t kOffline = ~0ull;
  std::atomic<std::uint64_t> seen_[kReaders] = {};
  std::vector<std::function<void()>> pending_;
};

std::string vtep_of(std::uint32_t vni, int k) { return "198.18." + std::to_string(vni) + "." + std::to_string(1 + k); }
std::string mac_of(std::uint32_t vni, int port, int gen) {
  char b[18];
  std::snprintf(b, sizeof(b), "02:%02x:%02x:%02x:00:01", vni, port, gen & 0xff);
  return b;
}

struct Violations {
  std::atomic<std::uint64_t> count{0};
  std::mutex m;
  std::string first;
  void add(const std::string& what) {
    if (count.fetch_add(1) == 0) {
      std::lock_guard<std::mutex> g(m);
      first = what;
    }
  }
};

// One reader's checks of everything a packet could read.
void check_all(const dp::ForwardingTables& t, Violations& v, std::uint64_t& lookups) {
  static const char* kDsts[] = {"10.1.2.1", "10.1.2.2", "10.1.2.3", "10.1.2.4", "10.1.2.5", "10.1.2.77",
                                "10.1.3.9", "10.2.0.1", "10.200.1.1", "10.1.2.130"};
  auto group_ok = [&](const dp::NextHopGroup* g, std::uint32_t vni, const char* what) {
    if (!g) return;
    if (g->count == 0 || g->count > 256) return v.add(std::string(what) + ": group with " + std::to_string(g->count) + " slots");
    for (std::uint32_t i = 0; i < g->count; ++i) {
      const std::uint32_t ip = ntohl(t.vtep(t.group_slots()[g->first + i]).ip_be);
      if (((ip >> 8) & 0xff) != vni || (ip >> 16) != ((198u << 8) | 18u))
        return v.add(std::string(what) + ": vni " + std::to_string(vni) + " routed to VTEP " + dp::ipv4_text(htonl(ip)));
    }
  };
  auto endpoint_ok = [&](const dp::EndpointEntry& e, std::uint32_t vni, const char* what) {
    if (e.mac[1] != vni || e.mac[2] != e.port)
      v.add(std::string(what) + ": vni " + std::to_string(vni) + " got endpoint port " + std::to_string(e.port) + " mac " +
            dp::mac_text(e.mac));
  };
  for (std::uint32_t vni = 1; vni <= kNets; ++vni) {
    const dp::NetworkEntry* n = t.network_by_vni(vni);
    if (!n) continue;
    if (n->vni != vni || n->vni_field_be != wire::vxlan_vni_field(vni)) v.add("network entry of vni " + std::to_string(vni) + " torn");
    for (const char* dst : kDsts) {
      const std::uint32_t d = htonl(ip(dst));
      const auto r = t.resolve(n->index, d);
      if (r.endpoint) endpoint_ok(*r.endpoint, vni, "resolve");
      group_ok(r.group, vni, "resolve");
      group_ok(t.route(n->index, d), vni, "route");
      if (auto e = t.endpoint(n->index, d)) endpoint_ok(*e, vni, "endpoint");
      lookups += 3;
    }
    for (std::uint32_t w = 1; w <= kNets; ++w)
      for (int k = 0; k < 3; ++k) {
        if (auto a = t.allowed_network(htonl(ip(vtep_of(w, k).c_str())), vni)) {
          if (w != vni || t.network(*a).vni != vni)
            v.add("VTEP " + vtep_of(w, k) + " admitted for vni " + std::to_string(vni) + " into network of vni " +
                  std::to_string(t.network(*a).vni));
        }
        ++lookups;
      }
  }
  for (std::uint16_t p = 1; p <= kPorts; ++p) {
    const dp::PodPortEntry* e = t.pod_port(p);
    if (!e) continue;
    const std::uint32_t vni = t.network(e->network).vni;
    if (e->mac[1] != vni || e->mac[2] != p)
      v.add("pod port " + std::to_string(p) + " in vni " + std::to_string(vni) + " has mac " + dp::mac_text(e->mac));
    ++lookups;
  }
}

class Churn {
 public:
  explicit Churn(unsigned seed) : rng_(seed) {}
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  std::uint32_t vni() { return 1 + static_cast<std::uint32_t>(pick(kNets)); }

  void network(Delta& d, std::uint32_t vni) {
    auto* n = d.mutable_upsert()->add_networks();
    n->set_vni(vni);
    n->set_gateway_ip(pick(2) ? "10.9.0.1" : "10.9.0.2");
    n->set_mtu(pick(2) ? 0 : 1400);
  }
  void endpoint(Delta& d, int id, std::uint32_t vni, int port) {
    auto* e = d.mutable_upsert()->add_endpoints();
    e->set_id("e" + std::to_string(id));
    e->set_vni(vni);
    e->set_ip("10.1.2." + std::to_string(1 + pick(5)));
    e->set_mac(mac_of(vni, port, ++gen_));
    e->set_iface("port" + std::to_string(port));
  }
  void route(Delta& d, std::uint32_t vni, const char* prefix) {
    auto* r = d.mutable_upsert()->add_routes();
    r->set_vni(vni);
    r->set_prefix(prefix);
    const int hops = 1 + pick(3), start = pick(3);
    for (int k = 0; k < hops; ++k) {
      auto* h = r->add_next_hops();
      h->set_vtep(vtep_of(vni, (start + k) % 3));
      h->set_weight(static_cast<std::uint32_t>(pick(3)));
    }
  }

  // A Delta for `t` (the writer's view): mostly valid.
  Delta next(const Tables& t) {
    static const char* kPrefixes[] = {"10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "10.1.2.0/25", "10.1.2.128/25",
                                      "10.1.2.1/32", "10.1.2.3/32", "10.2.0.0/16", "10.1.3.0/24"};
    Delta d;
    switch (pick(8)) {
      case 0: {  // an endpoint moves: another network, address and maybe port
        const int id = pick(6);
        endpoint(d, id, vni(), 1 + (pick(2) ? id : pick(kPorts)));
        break;
      }
      case 1: {  // a route moves to another VNI
        if (t.routes_size() == 0) break;
        const auto& r = t.routes(pick(t.routes_size()));
        auto* k = d.add_remove_routes();
        k->set_vni(r.vni());
        k->set_prefix(r.prefix());
        route(d, 1 + (r.vni() % kNets), r.prefix().c_str());
        break;
      }
      case 2: {  // a VTEP goes, with every route through it
        const std::string v = vtep_of(vni(), pick(3));
        for (const auto& r : t.routes())
          for (const auto& h : r.next_hops())
            if (h.vtep() == v) {
              auto* k = d.add_remove_routes();
              k->set_vni(r.vni());
              k->set_prefix(r.prefix());
              break;
            }
        break;
      }
      case 3: {  // a network goes (with its entries) or comes back
        const std::uint32_t n = vni();
        bool present = false;
        for (const auto& x : t.networks()) present |= x.vni() == n;
        if (present && pick(3) == 0) d.add_remove_networks(n);
        else network(d, n);
        break;
      }
      case 4:
        if (t.endpoints_size()) d.add_remove_endpoints(t.endpoints(pick(t.endpoints_size())).id());
        break;
      default:
        for (int i = 0, n = 1 + pick(4); i < n; ++i) route(d, vni(), kPrefixes[pick(9)]);
    }
    return d;
  }

 private:
  std::mt19937 rng_;
  int gen_ = 0;
};

TEST(TablesConcurrency, ReadersNeverSeeAHalfAppliedEntryOrAnotherNetworksAnswer) {
  VXFED_REQUIRE_EAL();
  Node node;
  auto ctx = node.context();
  Tables start;
  for (std::uint32_t vni = 1; vni <= kNets; ++vni) {
    auto* n = start.add_networks();
    n->set_vni(vni);
    n->set_gateway_ip("10.9.0.1");
  }
  auto built = dp::ForwardingTables::create(start, ctx);
  ASSERT_TRUE(built.ok()) << built.error();
  dp::ForwardingTables& t = **built;
  TestQsbr qsbr;
  Violations violations;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> lookups{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r)
    readers.emplace_back([&, r] {
      std::uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        check_all(t, violations, n);
        qsbr.quiescent(r);
      }
      qsbr.offline(r);
      lookups += n;
    });
  Churn churn(7);
  Tables current = start;
  int accepted = 0, refused = 0;
  std::uint64_t handovers = 0;
  // 400 Deltas (a few seconds on a busy 2-core machine), or 30 s at most.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (int i = 0; i < 400 && std::chrono::steady_clock::now() < until && violations.count == 0; ++i) {
    const Delta d = churn.next(current);
    auto merged = dp::apply_delta(current, d);
    auto applied = t.apply(d, ctx, qsbr);
    if (applied) {
      ++accepted;
      handovers += applied->waited_grace_period;
      current = *merged;
    } else {
      ++refused;
    }
    qsbr.synchronize();  // the runtime reclaims asynchronously; here after every Delta
  }
  stop = true;
  for (auto& th : readers) th.join();
  EXPECT_EQ(violations.count.load(), 0u) << violations.first;
  EXPECT_GT(accepted, 250) << "refused " << refused;
  EXPECT_GT(handovers, 0u) << "no Delta moved an endpoint onto a port or address another one left";
  EXPECT_GT(lookups.load(), 100000u);
  // The tables are still what the Deltas say.
  Node ref_node;
  auto ref = dp::ForwardingTables::create(current, ref_node.context());
  ASSERT_TRUE(ref.ok()) << ref.error();
  EXPECT_EQ(t.dump().SerializeAsString(), (*ref)->dump().SerializeAsString());
  std::printf("%d Deltas applied (%d refused, %llu hand-overs), %llu lookups by %d readers, %llu grace periods\n",
              accepted, refused, static_cast<unsigned long long>(handovers),
              static_cast<unsigned long long>(lookups.load()), kReaders,
              static_cast<unsigned long long>(qsbr.grace_periods));
}

}  // namespace
}  // namespace vxfed::test
