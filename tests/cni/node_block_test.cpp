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

TEST(NodeBlock, SeveralBlocksAreOneRangeSetSoHostLocalGivesOneAddressAndMovesOnWhenOneIsFull) {
  const json conf = {{"type", "vxfed"}, {"ipam", {{"type", "host-local"}}}};
  const auto subnet = prefix("10.244.0.0/24");
  const net::Ipv4Addr gw = *net::Ipv4Addr::parse("10.244.0.1");
  auto two = with_node_ranges(conf, subnet, {prefix("10.244.0.0/28"), prefix("10.244.0.32/28")}, gw);
  EXPECT_EQ(two["ipam"]["ranges"], json::parse(R"([[{"subnet":"10.244.0.0/24","rangeStart":"10.244.0.1",
                                                   "rangeEnd":"10.244.0.14","gateway":"10.244.0.1"},
                                                  {"subnet":"10.244.0.0/24","rangeStart":"10.244.0.33",
                                                   "rangeEnd":"10.244.0.46","gateway":"10.244.0.1"}]])"));
  // A requested address is fine in any of the node's blocks, refused outside all of them.
  Requested wanted;
  wanted.ips = {*net::Ipv4Addr::parse("10.244.0.40")};
  wanted.ips_source = "runtimeConfig.ips";
  const std::vector<net::Ipv4Prefix> blocks{prefix("10.244.0.0/28"), prefix("10.244.0.32/28")};
  EXPECT_TRUE(check_requested_in_blocks(wanted, {}, blocks, "fed").ok());
  wanted.ips = {*net::Ipv4Addr::parse("10.244.0.20")};
  auto out = check_requested_in_blocks(wanted, {}, blocks, "fed");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().msg.find("outside this node's blocks 10.244.0.0/28, 10.244.0.32/28"), std::string::npos)
      << out.error().msg;
}

json host_local_ranges(json ranges) { return {{"ipam", {{"type", "host-local"}, {"ranges", std::move(ranges)}}}}; }

TEST(NodeBlock, HostLocalRangesOutsideTheBlockAreRefusedNamingTheFieldTheRangeAndTheBlock) {
  const auto subnet = prefix("10.244.0.0/16");
  const std::optional<net::Ipv4Prefix> block = prefix("10.244.7.0/24");
  // The range docs/cni.md's chained example once hard-coded: right on one node only.
  const auto other_node = host_local_ranges(json::parse(
      R"([[{"subnet":"10.244.0.0/16","rangeStart":"10.244.1.2","rangeEnd":"10.244.1.254","gateway":"10.244.0.1"}]])"));
  auto out = check_ranges_in_block(other_node, block, subnet, "fed-a", "plugins[0]");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code, kInvalidConfig);
  EXPECT_EQ(out.error().msg, "plugins[0].ipam.ranges[0][0]: host-local's range 10.244.1.2-10.244.1.254 is not inside "
                             "this node's block 10.244.7.0/24 of vxfed network \"fed-a\"");
  EXPECT_NE(out.error().details.find("leave \"ranges\" out"), std::string::npos) << out.error().details;

  EXPECT_TRUE(check_ranges_in_block(host_local_ranges(json::parse(
      R"([[{"subnet":"10.244.0.0/16","rangeStart":"10.244.7.10","rangeEnd":"10.244.7.20"}]])")), block, subnet, "n", "p").ok());
  // Without rangeStart/rangeEnd host-local hands out the whole subnet; partly inside is outside.
  auto whole = check_ranges_in_block(host_local_ranges(json::parse(R"([[{"subnet":"10.244.0.0/16"}]])")), block, subnet, "n", "p");
  ASSERT_FALSE(whole.ok());
  EXPECT_NE(whole.error().msg.find("10.244.0.1-10.244.255.254"), std::string::npos) << whole.error().msg;
  auto partly = check_ranges_in_block(host_local_ranges(json::parse(
      R"([[{"subnet":"10.244.7.0/24"}],[{"subnet":"10.244.0.0/16","rangeStart":"10.244.7.2","rangeEnd":"10.244.8.2"}]])")),
      block, subnet, "n", "p");
  ASSERT_FALSE(partly.ok());
  EXPECT_NE(partly.error().msg.find("p.ipam.ranges[1][0]: host-local's range 10.244.7.2-10.244.8.2"), std::string::npos)
      << partly.error().msg;
  auto reversed = check_ranges_in_block(host_local_ranges(json::parse(
      R"([[{"subnet":"10.244.0.0/16","rangeStart":"10.244.7.9","rangeEnd":"10.244.7.2"}]])")), block, subnet, "n", "p");
  EXPECT_FALSE(reversed.ok());
  // The legacy single range, at the ipam level.
  const json legacy = {{"ipam", {{"type", "host-local"}, {"subnet", "10.244.0.0/16"}, {"rangeStart", "10.244.1.2"},
                                 {"rangeEnd", "10.244.1.9"}}}};
  auto old = check_ranges_in_block(legacy, block, subnet, "n", "p");
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().msg.find("p.ipam: host-local's range 10.244.1.2-10.244.1.9"), std::string::npos) << old.error().msg;
}

TEST(NodeBlock, RangesAreCheckedAgainstTheSubnetWhenTheNodeHasAllOfIt) {
  const auto subnet = prefix("10.244.0.0/16");
  EXPECT_TRUE(check_ranges_in_block(host_local_ranges(json::parse(R"([[{"subnet":"10.244.0.0/16"}]])")), std::nullopt,
                                    subnet, "n", "p").ok());
  auto out = check_ranges_in_block(host_local_ranges(json::parse(R"([[{"subnet":"10.99.0.0/16"}]])")), std::nullopt,
                                   subnet, "fed", "p");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.error().msg.find("is not inside vxfed network \"fed\"'s subnet 10.244.0.0/16 (this node has all of it)"),
            std::string::npos) << out.error().msg;
}

TEST(NodeBlock, RangeCheckSkipsWhatItNeedNotCheckAndRefusesWhatHostLocalCannotUse) {
  const auto subnet = prefix("10.244.0.0/16");
  const std::optional<net::Ipv4Prefix> block = prefix("10.244.7.0/24");
  EXPECT_TRUE(check_ranges_in_block(json{{"ipam", {{"type", "host-local"}, {"dataDir", "/d"}}}}, block, subnet, "n", "p").ok());
  EXPECT_TRUE(check_ranges_in_block(json{{"ipam", {{"type", "static"}, {"subnet", "10.99.0.0/16"}}}}, block, subnet, "n", "p").ok());
  EXPECT_TRUE(check_ranges_in_block(json{{"type", "vxfed"}}, block, subnet, "n", "p").ok());
  for (const char* bad : {R"([[{"subnet":"fd00::/64"}]])", R"([[{"rangeStart":"10.244.7.2"}]])",
                          R"([[{"subnet":"10.244.7.0/24","rangeEnd":"10.244.7.300"}]])", R"([{"subnet":"x"}])", R"({})"}) {
    auto out = check_ranges_in_block(host_local_ranges(json::parse(bad)), block, subnet, "n", "p");
    ASSERT_FALSE(out.ok()) << bad;
    EXPECT_EQ(out.error().code, kInvalidConfig) << bad;
    EXPECT_EQ(out.error().msg.rfind("p.ipam.ranges", 0), 0u) << out.error().msg;
  }
}

}  // namespace
}  // namespace vxfed::cni
