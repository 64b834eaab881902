// control/services/service_requests.hpp: service requests into store applies and answers back
// (through a ServiceStore on the in-memory etcd of tests/federation/fake_kv.hpp).
#include <gtest/gtest.h>

#include "control/services/service_requests.hpp"
#include "tests/federation/fake_kv.hpp"

namespace vxfed::control {
namespace {

using federation::testing::FakeKv;

services::FederationView view() {
  services::FederationView v;
  v.cluster_cidrs["cluster-a"] = {*net::Ipv4Prefix::parse("10.244.0.0/16")};
  v.cluster_cidrs["cluster-b"] = {*net::Ipv4Prefix::parse("10.245.0.0/16")};
  v.service_range = *net::Ipv4Prefix::parse("10.96.0.0/24");
  return v;
}

std::string web(const std::string& address, const std::string& weights = "cluster-a=3,cluster-b=1") {
  return "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: default\n  annotations:\n"
         "    vxfed.io/strategy: WeightedRoundRobin\n    vxfed.io/weights: \"" + weights + "\"\n"
         "spec:\n  ports:\n  - {name: http, protocol: TCP, port: 80, targetPort: 8080}\n---\n"
         "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: web-1\n  namespace: default\n"
         "  labels: {kubernetes.io/service-name: web}\naddressType: IPv4\n"
         "ports:\n- {name: http, protocol: TCP, port: 8080}\nendpoints:\n- addresses: [\"" + address + "\"]\n"
         "  conditions: {ready: false}\n---\n"
         "apiVersion: multicluster.x-k8s.io/v1alpha1\nkind: ServiceExport\nmetadata:\n  name: web\n  namespace: default\n"
         "  creationTimestamp: \"2026-12-06T10:00:00Z\"\n";
}

v1::ServiceApply apply_request(const std::string& text) {
  v1::ServiceApply r;
  r.set_text(text);
  r.set_source("web.yaml");
  return r;
}

TEST(ServiceRequests, ApplyThenListingShowsVipStrategyBackendsAndConditions) {
  auto apply = service_apply_of(apply_request(web("10.244.0.5")), "cluster-a", view());
  ASSERT_TRUE(apply.ok()) << apply.error();
  FakeKv kv;
  services::ServiceStore store(kv, services::ServiceStoreOptions{view().service_range});
  auto report = store.apply(*apply, 1000);
  ASSERT_TRUE(report.ok()) << report.error();
  const auto applied = service_applied_message("cluster-a", *report);
  ASSERT_EQ(applied.allocated_size(), 1);
  EXPECT_EQ(applied.allocated(0), "default/web 10.96.0.1");

  auto snapshot = store.list();
  ASSERT_TRUE(snapshot.ok());
  auto listing = service_listing_message(*snapshot);
  ASSERT_TRUE(listing.ok()) << listing.error();
  EXPECT_EQ(listing->service_range(), "10.96.0.0/24");
  ASSERT_EQ(listing->services_size(), 1);
  const auto& s = listing->services(0);
  EXPECT_EQ(s.vip(), "10.96.0.1");
  EXPECT_EQ(s.strategy(), "WeightedRoundRobin");
  EXPECT_EQ(s.weights().at("cluster-a"), 3u);
  EXPECT_EQ(s.weights().at("cluster-b"), 1u);
  ASSERT_EQ(s.ports_size(), 1);
  EXPECT_EQ(s.ports(0).target_port(), 8080u);
  ASSERT_EQ(s.backends_size(), 1);
  EXPECT_EQ(s.backends(0).address(), "10.244.0.5");
  EXPECT_FALSE(s.backends(0).ready());
  ASSERT_EQ(listing->conditions_size(), 1);
  EXPECT_EQ(listing->conditions(0).reason(), "NoConflicts");
}

TEST(ServiceRequests, BadInputIsRefusedNamingTheField) {
  auto outside = service_apply_of(apply_request(web("10.250.0.1")), "cluster-a", view());
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().find("endpoints[0].addresses[0]"), std::string::npos) << outside.error();
  auto weights = service_apply_of(apply_request(web("10.244.0.5", "cluster-a=x")), "cluster-a", view());
  ASSERT_FALSE(weights.ok());
  EXPECT_NE(weights.error().find("metadata.annotations[\"vxfed.io/weights\"]"), std::string::npos) << weights.error();
  EXPECT_FALSE(service_apply_of(apply_request(""), "cluster-a", view()).ok());

  v1::ServiceDelete del;
  auto* ref = del.add_services();
  ref->set_namespace_("default");
  ref->set_name("Web_");
  auto refused = service_delete_of(del, "cluster-a", view());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("services[0].name: 'Web_'"), std::string::npos) << refused.error();
  EXPECT_FALSE(service_delete_of(v1::ServiceDelete{}, "cluster-a", view()).ok()) << "nothing to delete";
}

TEST(ServiceRequests, DeleteTakesTheFilesServicesAndTheNamedOnesOnce) {
  v1::ServiceDelete del;
  del.set_text(web("10.244.0.5"));
  del.set_source("web.yaml");
  auto* ref = del.add_services();
  ref->set_namespace_("default");
  ref->set_name("web");
  ref = del.add_services();
  ref->set_namespace_("default");
  ref->set_name("api");
  auto out = service_delete_of(del, "cluster-a", view());
  ASSERT_TRUE(out.ok()) << out.error();
  ASSERT_EQ(out->deletes.size(), 2u);
  EXPECT_EQ(out->deletes[0].str(), "default/api");
  EXPECT_EQ(out->deletes[1].str(), "default/web");
  EXPECT_TRUE(out->objects.services.empty());
}

}  // namespace
}  // namespace vxfed::control
