// cni/conf_check: `vxfed --check`'s reading of a conflist, and its warning for cniVersion 1.1.0.
#include <gtest/gtest.h>

#include "cni/conf_check.hpp"

namespace vxfed::cni {
namespace {

std::string conflist(const std::string& version) {
  return R"({"cniVersion": ")" + version + R"(", "name": "fed-a", "plugins": [
    {"type": "vxfed", "ipam": {"type": "host-local"}}, {"type": "tuning"}, {"type": "portmap"}]})";
}

TEST(ConfCheck, EachVxfedPluginIsHandedOnAsADDSeesItWithWhereItIs) {
  auto out = check_network_file(conflist("1.0.0"));
  ASSERT_TRUE(out.ok()) << out.error().msg;
  EXPECT_EQ(out->summary, "conflist fed-a (1.0.0): vxfed network fed-a, host-local IPAM; tuning; portmap");
  EXPECT_TRUE(out->warnings.empty());
  ASSERT_EQ(out->vxfed.size(), 1u);
  EXPECT_EQ(out->vxfed[0].first, "plugins[0]");
  EXPECT_EQ(out->vxfed[0].second.network, "fed-a");
  EXPECT_EQ(out->vxfed[0].second.cni_version, "1.0.0");

  auto single = check_network_file(R"({"cniVersion": "0.4.0", "name": "n", "type": "vxfed", "network": "fed-b"})");
  ASSERT_TRUE(single.ok()) << single.error().msg;
  ASSERT_EQ(single->vxfed.size(), 1u);
  EXPECT_EQ(single->vxfed[0].first, "the configuration");
  EXPECT_EQ(single->vxfed[0].second.network, "fed-b");
}

TEST(ConfCheck, TheSummaryNamesTheServiceRangeAndRefusalsNameItsEntry) {
  auto out = check_network_file(R"({"cniVersion": "1.0.0", "name": "fed-a", "plugins": [
    {"type": "vxfed", "serviceCidrs": ["10.96.0.0/24", "10.97.0.0/24"], "ipam": {"type": "host-local"}}]})");
  ASSERT_TRUE(out.ok()) << out.error().msg;
  EXPECT_EQ(out->summary, "conflist fed-a (1.0.0): vxfed network fed-a, host-local IPAM, service range 10.96.0.0/24 10.97.0.0/24");
  auto bad = check_network_file(R"({"cniVersion": "1.0.0", "name": "fed-a", "plugins": [
    {"type": "vxfed", "serviceCidrs": ["10.96.0.7/24"], "ipam": {"type": "host-local"}}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().msg.find("plugins[0]: serviceCidrs[0]: "), std::string::npos) << bad.error().msg;
}

// libcni before 1.2 runs the plugins of a 1.1.0 list, then cannot read their result: the pod
// is wired and the runtime reports a failed ADD. Valid, so a warning that says what to set.
TEST(ConfCheck, CniVersion110IsValidWithAWarningNamingTheRuntimesAndTheFix) {
  auto out = check_network_file(conflist("1.1.0"));
  ASSERT_TRUE(out.ok()) << out.error().msg;
  ASSERT_EQ(out->warnings.size(), 1u);
  const std::string& w = out->warnings[0];
  for (const char* part : {"plugins[0]: cniVersion 1.1.0", "libcni 1.2 or later", "podman 4.3",
                           "unsupported CNI result version", R"(set "cniVersion": "1.0.0")"})
    EXPECT_NE(w.find(part), std::string::npos) << part << " not in: " << w;
  auto single = check_network_file(R"({"cniVersion": "1.1.0", "name": "n", "type": "vxfed"})");
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->warnings.size(), 1u);
}

}  // namespace
}  // namespace vxfed::cni
