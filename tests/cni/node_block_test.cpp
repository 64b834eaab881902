// cni/node_block: the node's block handed to IPAM, and requested addresses checked against it.
#include <gtest/gtest.h>

#include "cni/node_block.hpp"

namespace vxfed::cni {
namespace {

using json = nlohmann::json;

net::Ipv4Prefix prefix(const char* text) { return *net::Ipv4Prefix::parse(text); }

net::Ipv4Addr addr(const char* text) { return *net::Ipv4Addr::parse(text); }

TEST(NodeBlock, StaticIpamAddressesAreRead) {
  const json conf = {{"ipam", {{"type", "static"},
                               {"addresses", {{{"address", "10.244.3.9/16"}}, {{"gateway", "x"}},
                                              {{"address", "fd00::1/64"}}, {{"address", "10.244.3.10/16"}}}}}}};
  EXPECT_EQ(static_addresses(conf), (std::vector<net::Ipv4Addr>{addr("10.244.3.9"), addr("10.244.3.10")}));
  EXPECT_TRUE(static_addresses(json{{"ipam", {{"type", "host-local"}}}}).empty());
  EXPECT_TRUE(static_addresses(json::array()).empty());
}

TEST(NodeBlock, RequestsOutsideTheBlockAreAnInvalidConfigNamingWhereBlockAndNetwork) {
  const auto block = prefix("10.244.3.0/24");
  Requested wanted;
  wanted.ips = {addr("10.244.3.1"), addr("10.244.3.255")};
  wanted.ips_source = "runtimeConfig.ips";
  EXPECT_TRUE(check_requested_in_block(wanted, {addr("10.244.3.7")}, block, "fed").ok());
  wanted.ips.push_back(addr("10.244.4.1"));
  auto out = check_requested_in_block(wanted, {}, block, "fed");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, kInvalidConfig);
  EXPECT_NE(out.error().msg.find("10.244.4.1 requested in runtimeConfig.ips is outside this node's block "
                                 "10.244.3.0/24 of vxfed network \"fed\""),
            std::string::npos) << out.error().msg;
  auto from_static = check_requested_in_block(Requested{}, {addr("10.244.9.9")}, block, "fed");
  ASSERT_FALSE(from_static.ok());
  EXPECT_NE(from_static.error().msg.find("10.244.9.9 requested in ipam.addresses"), std::string::npos);
}

TEST(NodeBlock, OnlyHostLocalWithoutRangesTakesTheNodesRange) {
  EXPECT_TRUE(ipam_takes_node_range(json{{"ipam", {{"type", "host-local"}, {"dataDir", "/d"}}}}));
  EXPECT_FALSE(ipam_takes_node_range(json{{"ipam", {{"type", "host-local"}, {"ranges", json::array()}}}}));
  EXPECT_FALSE(ipam_takes_node_range(json{{"ipam", {{"type", "host-local"}, {"subnet", "10.244.0.0/16"}}}}));
  EXPECT_FALSE(ipam_takes_node_range(json{{"ipam", {{"type", "static"}}}}));
  EXPECT_FALSE(ipam_takes_node_range(json{{"type", "vxfed"}}));
}

TEST(NodeBlock, TheRangeIsTheBlockInsideTheSubnetWithoutItsFirstAndLastAddress) {
  const json conf = {{"type", "vxfed"}, {"ipam", {{"type", "host-local"}, {"dataDir", "/d"}}}};
  const auto subnet = prefix("10.244.0.0/16");
  const net::Ipv4Addr gw = *net::Ipv4Addr::parse("10.244.0.1");
  auto middle = with_node_range(conf, subnet, prefix("10.244.3.0/24"), gw);
  EXPECT_EQ(middle["ipam"]["ranges"], json::parse(R"([[{"subnet":"10.244.0.0/16","rangeStart":"10.244.3.1",
                                                      "rangeEnd":"10.244.3.254","gateway":"10.244.0.1"}]])"));
  EXPECT_EQ(middle["ipam"]["dataDir"], "/d");
  EXPECT_EQ(middle["type"], "vxfed");
  auto first = with_node_range(conf, subnet, prefix("10.244.0.0/24"), gw);
  EXPECT_EQ(first["ipam"]["ranges"][0][0]["rangeStart"], "10.244.0.1");
  auto last = with_node_range(conf, subnet, prefix("10.244.255.0/24"), gw);
  EXPECT_EQ(last["ipam"]["ranges"][0][0]["rangeEnd"], "10.244.255.254");
  auto whole = with_node_range(conf, subnet, subnet, gw);
  EXPECT_EQ(whole["ipam"]["ranges"][0][0]["rangeStart"], "10.244.0.1");
  EXPECT_EQ(whole["ipam"]["ranges"][0][0]["rangeEnd"], "10.244.255.254");
}

}  // namespace
}  // namespace vxfed::cni
