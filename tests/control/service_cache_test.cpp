// control/services/service_cache.hpp: the entries vxfedd keeps across its restarts.
#include "control/services/service_cache.hpp"

#include "control/node/policy_cache.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/control/test_support.hpp"

namespace vxfed::control {
namespace {

namespace dp = ::vxfed::dataplane::v1;

dp::Service entry(const char* id, const char* backend) {
  dp::Service s;
  s.set_id(id);
  s.set_vni(1000);
  s.set_vip("10.96.0.1");
  auto* p = s.add_ports();
  p->set_protocol(17);
  p->set_port(53);
  auto* b = s.add_backends();
  b->set_ip(backend);
  b->set_weight(3);
  s.set_table_size(251);
  return s;
}

TEST(ServiceCache, RoundTripAbsentAndDamaged) {
  testing::TempDir dir;
  const std::string path = dir.path + "/services.cache";
  auto none = load_service_cache(path);
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_TRUE(none->empty());

  std::map<std::string, dp::Service> entries{{"a/x", entry("a/x", "10.244.0.5")}, {"b/y", entry("b/y", "10.244.0.6")}};
  ASSERT_TRUE(save_service_cache(path, entries).ok());
  auto back = load_service_cache(path);
  ASSERT_TRUE(back.ok()) << back.error();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].SerializeAsString(), entries["a/x"].SerializeAsString());
  EXPECT_EQ((*back)[1].backends(0).weight(), 3u);

  std::ofstream(path, std::ios::trunc) << "\xff\xff\xff garbage";
  auto bad = load_service_cache(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find(path), std::string::npos) << bad.error();
}

// The two caches share one file format (control/node/tables_file.hpp): each refuses the other's
// file, naming it, rather than reading it as empty.
TEST(ServiceCache, RefusesAPolicyCacheAndThePolicyCacheRefusesIt) {
  testing::TempDir dir;
  const std::string services = dir.path + "/services.cache", policies = dir.path + "/policies.cache";
  ASSERT_TRUE(save_service_cache(services, {{"a/x", entry("a/x", "10.244.0.5")}}).ok());
  dp::NetworkPolicy policy;
  policy.set_vni(1000);
  ASSERT_TRUE(save_policy_cache(policies, {{1000u, policy}}).ok());

  auto as_services = load_service_cache(policies);
  ASSERT_FALSE(as_services.ok());
  EXPECT_NE(as_services.error().find(policies + ": not a service cache"), std::string::npos) << as_services.error();
  auto as_policies = load_policy_cache(services);
  ASSERT_FALSE(as_policies.ok());
  EXPECT_NE(as_policies.error().find(services + ": not a policy cache"), std::string::npos) << as_policies.error();
  auto own = load_policy_cache(policies);
  ASSERT_TRUE(own.ok()) << own.error();
  ASSERT_EQ(own->size(), 1u);
  EXPECT_EQ((*own)[0].vni(), 1000u);
}

}  // namespace
}  // namespace vxfed::control
