// Global services in the federation store (services/service_store.hpp) against the in-memory
// etcd (tests/federation/fake_kv.hpp): records per cluster read back as they were applied, one
// VIP per namespace/name across clusters (also when a competing cluster allocates between the
// read and the transaction), the VIP held down when the last export goes and not handed to
// another service meanwhile, applies whole or not at all, and the federated view of a list.
#include <gtest/gtest.h>

#include "services/parse.hpp"
#include "services/service_store.hpp"
#include "tests/federation/fake_kv.hpp"

namespace {

using namespace vxfed::services;
using vxfed::federation::Code;
using vxfed::federation::testing::FakeKv;
using vxfed::net::Ipv4Addr;
using vxfed::net::Ipv4Prefix;

constexpr std::uint64_t kNow = 1'000'000;
constexpr std::uint64_t kHoldDown = 300'000;

ServiceStoreOptions options(const char* range = "10.96.0.0/29") {
  ServiceStoreOptions o;
  o.service_range = *Ipv4Prefix::parse(range);
  o.hold_down_ms = kHoldDown;
  return o;
}

// Service `name` with one TCP port, an export created at `created`, and a slice of `cluster`
// with `address` (ready unless told).
std::string yaml(const std::string& name, const std::string& cluster, const std::string& address,
                 const std::string& created, int target_port = 8080, bool ready = true,
                 const std::string& annotations = "") {
  return "apiVersion: v1\nkind: Service\nmetadata:\n  name: " + name + "\n  namespace: default\n" +
         (annotations.empty() ? "" : "  annotations:\n" + annotations) +
         "spec:\n  ports:\n  - name: http\n    protocol: TCP\n    port: 80\n    targetPort: " + std::to_string(target_port) +
         "\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: " + name + "-" + cluster +
         "\n  namespace: default\n  labels:\n    kubernetes.io/service-name: " + name +
         "\naddressType: IPv4\nports:\n- name: http\n  protocol: TCP\n  port: " + std::to_string(target_port) +
         "\nendpoints:\n- addresses: [\"" + address + "\"]\n  conditions:\n    ready: " + (ready ? "true" : "false") +
         "\n---\napiVersion: multicluster.x-k8s.io/v1alpha1\nkind: ServiceExport\nmetadata:\n  name: " + name +
         "\n  namespace: default\n  creationTimestamp: \"" + created + "\"\n";
}

ServiceApply apply_of(const std::string& cluster, const std::string& text) {
  Parsed parsed = read_objects(text, cluster, "test.yaml");
  EXPECT_TRUE(parsed.errors.empty()) << parsed.errors.front();
  return ServiceApply{cluster, parsed.objects, {}};
}

ServiceApply delete_of(const std::string& cluster, const std::string& name) {
  return ServiceApply{cluster, {}, {ServiceKey{"default", name}}};
}

const ServiceKey kWeb{"default", "web"};

TEST(ServiceStore, TwoClustersExportingOneServiceShareOneVipAndOneBackendSet) {
  FakeKv kv;
  ServiceStore a(kv, options()), b(kv, options());
  auto ra = a.apply(apply_of("cluster-a", yaml("web", "cluster-a", "10.244.0.5", "2026-12-06T10:00:00Z")), kNow);
  ASSERT_TRUE(ra.ok()) << ra.error();
  ASSERT_EQ(ra->allocated.size(), 1u);
  auto rb = b.apply(apply_of("cluster-b", yaml("web", "cluster-b", "10.245.0.7", "2026-12-06T11:00:00Z")), kNow);
  ASSERT_TRUE(rb.ok()) << rb.error();
  EXPECT_TRUE(rb->allocated.empty()) << "cluster-b finds cluster-a's VIP";

  auto snap = b.list();
  ASSERT_TRUE(snap.ok()) << snap.error();
  ASSERT_EQ(snap->applies.size(), 2u);
  EXPECT_EQ(snap->range->str(), "10.96.0.0/29");
  auto set = federated(*snap);
  ASSERT_TRUE(set.ok()) << set.error();
  const FederatedService& fs = set->services.at(kWeb);
  ASSERT_TRUE(fs.vip.has_value());
  EXPECT_EQ(*fs.vip, ra->allocated.front().vip);
  ASSERT_EQ(fs.backends.size(), 2u);
  EXPECT_EQ(fs.backends[0], (Backend{"cluster-a", *Ipv4Addr::parse("10.244.0.5"), true}));
  EXPECT_EQ(fs.backends[1], (Backend{"cluster-b", *Ipv4Addr::parse("10.245.0.7"), true}));
  ASSERT_EQ(set->conditions.size(), 2u);
  for (const auto& c : set->conditions) EXPECT_FALSE(c.conflict) << c.message;
}

TEST(ServiceStore, RecordsReadBackAsApplied) {
  FakeKv kv;
  ServiceStore store(kv, options());
  const std::string annotations =
      "    vxfed.io/strategy: WeightedRoundRobin\n    vxfed.io/weights: cluster-a=3,cluster-b=1\n"
      "    vxfed.io/vip: 10.96.0.4\n";
  ServiceApply in = apply_of("cluster-a", yaml("web", "cluster-a", "10.244.0.5", "2026-12-06T10:00:00Z", 9090, false, annotations));
  ASSERT_TRUE(store.apply(in, kNow).ok());
  auto snap = store.list();
  ASSERT_TRUE(snap.ok()) << snap.error();
  ASSERT_EQ(snap->applies.size(), 1u);
  const Objects& out = snap->applies.front();
  ASSERT_EQ(out.services.size(), 1u);
  EXPECT_EQ(out.services[0].ports, in.objects.services[0].ports);
  EXPECT_EQ(out.services[0].strategy, in.objects.services[0].strategy);
  EXPECT_EQ(out.services[0].pinned_vip, in.objects.services[0].pinned_vip);
  ASSERT_EQ(out.slices.size(), 1u);
  EXPECT_EQ(out.slices[0].cluster, "cluster-a");
  EXPECT_EQ(out.slices[0].ports[0].port, 9090);
  ASSERT_EQ(out.slices[0].endpoints.size(), 1u);
  EXPECT_FALSE(out.slices[0].endpoints[0].ready);
  ASSERT_EQ(out.exports.size(), 1u);
  EXPECT_EQ(out.exports[0].created_s, in.objects.exports[0].created_s);
  ASSERT_EQ(snap->vips.size(), 1u);
  EXPECT_EQ(snap->vips[0].vip.str(), "10.96.0.4") << "the pinned VIP";
}

TEST(ServiceStore, RacingClustersGetOneVip) {
  FakeKv kv;
  ServiceStore a(kv, options()), b(kv, options());
  ASSERT_TRUE(a.service_range().ok());  // seeded before the race
  std::optional<ServiceApplyReport> b_report;
  // cluster-b allocates between cluster-a's read and its transaction.
  kv.before_txn = [&] {
    auto r = b.apply(apply_of("cluster-b", yaml("web", "cluster-b", "10.245.0.7", "2026-12-06T11:00:00Z")), kNow);
    ASSERT_TRUE(r.ok()) << r.error();
    b_report = *r;
  };
  auto ra = a.apply(apply_of("cluster-a", yaml("web", "cluster-a", "10.244.0.5", "2026-12-06T10:00:00Z")), kNow);
  ASSERT_TRUE(ra.ok()) << ra.error();
  ASSERT_TRUE(b_report.has_value());
  ASSERT_EQ(b_report->allocated.size(), 1u);
  EXPECT_EQ(ra->attempts, 2u) << "cluster-a lost the race and read again";
  EXPECT_TRUE(ra->allocated.empty()) << "and found cluster-b's VIP";
  auto snap = a.list();
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(snap->vips.size(), 1u);
  EXPECT_EQ(snap->vips[0].vip, b_report->allocated[0].vip);
}

TEST(ServiceStore, LastExportGoneHoldsTheVipDownThenItIsReused) {
  FakeKv kv;
  ServiceStore a(kv, options("10.96.0.0/30")), b(kv, options("10.96.0.0/30"));  // 2 VIPs: .1 and .2
  auto web = a.apply(apply_of("cluster-a", yaml("web", "cluster-a", "10.244.0.5", "2026-12-06T10:00:00Z")), kNow);
  ASSERT_TRUE(web.ok()) << web.error();
  ASSERT_TRUE(b.apply(apply_of("cluster-b", yaml("web", "cluster-b", "10.245.0.7", "2026-12-06T11:00:00Z")), kNow).ok());
  ASSERT_TRUE(a.apply(apply_of("cluster-a", yaml("api", "cluster-a", "10.244.0.6", "2026-12-06T10:00:00Z")), kNow).ok());

  auto del_a = a.apply(delete_of("cluster-a", "web"), kNow);
  ASSERT_TRUE(del_a.ok()) << del_a.error();
  EXPECT_TRUE(del_a->released.empty()) << "cluster-b still exports web";
  auto del_b = b.apply(delete_of("cluster-b", "web"), kNow);
  ASSERT_TRUE(del_b.ok()) << del_b.error();
  ASSERT_EQ(del_b->released.size(), 1u);
  EXPECT_EQ(del_b->released[0].vip, web->allocated[0].vip);
  EXPECT_EQ(del_b->released[0].held_until_ms, kNow + kHoldDown);

  // The range's other VIP is api's and web's is held down: a new service finds none.
  auto db = a.apply(apply_of("cluster-a", yaml("db", "cluster-a", "10.244.0.9", "2026-12-06T10:00:00Z")), kNow + 1000);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.code(), Code::exhausted) << db.error();
  EXPECT_TRUE(kv.dump(store_keys::objects(ServiceKey{"default", "db"})).empty()) << "nothing of the refused apply written";
  // Once the hold-down ended, it is forgotten and handed out again.
  db = a.apply(apply_of("cluster-a", yaml("db", "cluster-a", "10.244.0.9", "2026-12-06T10:00:00Z")), kNow + kHoldDown);
  ASSERT_TRUE(db.ok()) << db.error();
  ASSERT_EQ(db->allocated.size(), 1u);
  EXPECT_EQ(db->allocated[0].vip, web->allocated[0].vip);

  auto again = b.apply(delete_of("cluster-b", "web"), kNow);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->absent_deletes, 1u) << "a repeated delete is no error";
}

TEST(ServiceStore, ConflictingExportIsStoredAndReportedNotRefused) {
  FakeKv kv;
  ServiceStore store(kv, options());
  ASSERT_TRUE(store.apply(apply_of("cluster-a", yaml("web", "cluster-a", "10.244.0.5", "2026-12-06T10:00:00Z", 8080)), kNow).ok());
  ASSERT_TRUE(store.apply(apply_of("cluster-b", yaml("web", "cluster-b", "10.245.0.7", "2026-12-06T11:00:00Z", 9090)), kNow).ok());
  auto snap = store.list();
  ASSERT_TRUE(snap.ok());
  auto set = federated(*snap);
  ASSERT_TRUE(set.ok()) << set.error();
  ASSERT_EQ(set->conditions.size(), 2u);
  EXPECT_FALSE(set->conditions[0].conflict) << "cluster-a's export is the oldest";
  EXPECT_TRUE(set->conditions[1].conflict);
  EXPECT_EQ(set->conditions[1].cluster, "cluster-b");
  EXPECT_EQ(set->conditions[1].reason, "PortConflict");
}

TEST(ServiceStore, ApplyIsWholeOrNothing) {
  FakeKv kv;
  ServiceStore store(kv, options());
  // Two services, the second pinned to a VIP outside the range: neither is written.
  ServiceApply in = apply_of("cluster-a", yaml("web", "cluster-a", "10.244.0.5", "2026-12-06T10:00:00Z") + "---\n" +
                                              yaml("api", "cluster-a", "10.244.0.6", "2026-12-06T10:00:00Z", 8080, true,
                                                   "    vxfed.io/vip: 10.97.0.1\n"));
  auto r = store.apply(in, kNow);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::invalid);
  EXPECT_NE(r.error().find("10.97.0.1"), std::string::npos) << r.error();
  EXPECT_TRUE(kv.dump(store_keys::objects()).empty());
  EXPECT_TRUE(kv.dump(store_keys::vips()).empty());

  // Objects stamped with another cluster, or one service put and deleted, are refused first.
  ServiceApply foreign = apply_of("cluster-b", yaml("web", "cluster-b", "10.245.0.7", "2026-12-06T10:00:00Z"));
  foreign.cluster = "cluster-a";
  EXPECT_EQ(store.apply(foreign, kNow).code(), Code::invalid);
  ServiceApply both = apply_of("cluster-a", yaml("web", "cluster-a", "10.244.0.5", "2026-12-06T10:00:00Z"));
  both.deletes.push_back(kWeb);
  EXPECT_EQ(store.apply(both, kNow).code(), Code::invalid);
  EXPECT_EQ(kv.txns, 1u) << "only the range was seeded";
}

TEST(ServiceStore, StoreDownIsUnavailableAndWritesNothing) {
  FakeKv kv;
  ServiceStore store(kv, options());
  kv.down = true;
  auto r = store.apply(apply_of("cluster-a", yaml("web", "cluster-a", "10.244.0.5", "2026-12-06T10:00:00Z")), kNow);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::unavailable);
  EXPECT_EQ(store.list().code(), Code::unavailable);
  kv.down = false;
  EXPECT_TRUE(kv.dump().empty());
}

TEST(ServiceStore, StoreVipAllocatorKeepsThePoolsPromises) {
  FakeKv kv;
  StoreVipAllocator one(kv, options()), two(kv, options());
  auto a = one.allocate(kWeb, std::nullopt, kNow);
  ASSERT_TRUE(a.ok()) << a.error();
  auto again = two.allocate(kWeb, std::nullopt, kNow);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->vip, a->vip) << "idempotent across nodes";
  ASSERT_TRUE(two.release(kWeb, kNow).ok());
  EXPECT_FALSE(one.find(kWeb).has_value());
  auto other = one.allocate(ServiceKey{"default", "api"}, a->vip, kNow);
  ASSERT_FALSE(other.ok()) << "held down after release";
  auto back = one.allocate(kWeb, std::nullopt, kNow + 1);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->vip, a->vip) << "the service gets its held VIP back";
}

}  // namespace
