// common/net: one strict parse and one format per address form, from tables of cases. Each
// refused case says why it is refused; the error must quote the text so a person finds it.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "common/net/ipv4.hpp"
#include "common/net/mac.hpp"
#include "common/net/vxlan.hpp"

namespace {

using vxfed::net::Ipv4Addr;
using vxfed::net::Ipv4Interface;
using vxfed::net::Ipv4Prefix;
using vxfed::net::Mac;

struct AddrCase {
  const char* text;
  std::optional<std::uint32_t> value;  // nullopt: refused
  const char* why;
};

TEST(Ipv4Addr, ParseAcceptsOneSpellingOnly) {
  const AddrCase cases[] = {
      {"10.244.0.1", 0x0af40001u, "plain"},
      {"0.0.0.0", 0u, "all zero"},
      {"255.255.255.255", 0xffffffffu, "all ones"},
      {"198.18.0.100", 0xc6120064u, "three digits"},
      {"", std::nullopt, "empty"},
      {"10.244.0", std::nullopt, "three parts"},
      {"10.244.0.1.5", std::nullopt, "five parts"},
      {"10.244.0.256", std::nullopt, "octet above 255"},
      {"10.244.0.1000", std::nullopt, "four digits"},
      {"010.244.0.1", std::nullopt, "leading zero (octal in inet_aton)"},
      {"10.244.00.1", std::nullopt, "double zero"},
      {"10.244.0.1 ", std::nullopt, "trailing space"},
      {" 10.244.0.1", std::nullopt, "leading space"},
      {"10.244..1", std::nullopt, "empty octet"},
      {"10.244.0.", std::nullopt, "trailing dot"},
      {"+10.244.0.1", std::nullopt, "sign"},
      {"10.244.0.-1", std::nullopt, "negative"},
      {"0x0a.244.0.1", std::nullopt, "hex"},
      {"167772161", std::nullopt, "one number"},
      {"10.244.0.1/32", std::nullopt, "a prefix is not an address"},
  };
  for (const auto& c : cases) {
    auto a = Ipv4Addr::parse(c.text);
    ASSERT_EQ(a.ok(), c.value.has_value()) << c.why << ": '" << c.text << "'";
    if (c.value) {
      EXPECT_EQ(a->value, *c.value) << c.why;
      EXPECT_EQ(a->str(), c.text) << c.why << ": prints as it was written";
    } else {
      EXPECT_NE(a.error().find("'" + std::string(c.text) + "' is not an IPv4 address"), std::string::npos)
          << c.why << ": " << a.error();
    }
  }
}

TEST(Ipv4Addr, ByteOrderIsExplicit) {
  const Ipv4Addr a{0x0af40001u};  // 10.244.0.1
  EXPECT_EQ(a.to_network(), 0x0100f40au) << "network order: the first octet is the lowest byte on x86";
  EXPECT_EQ(Ipv4Addr::from_network(0x0100f40au), a);
  const auto* bytes = reinterpret_cast<const unsigned char*>(&a.value);
  const std::uint32_t be = a.to_network();
  const auto* wire = reinterpret_cast<const unsigned char*>(&be);
  EXPECT_EQ(wire[0], 10);
  EXPECT_EQ(wire[3], 1);
  EXPECT_EQ(bytes[3], 10) << "host order keeps the first octet in the high byte";
  EXPECT_LT(*Ipv4Addr::parse("9.255.255.255"), *Ipv4Addr::parse("10.0.0.0")) << "orders as numbers";
}

struct PrefixCase {
  const char* text;
  bool ok;
  std::uint32_t addr;
  int len;
  const char* error;  // substring of the error when refused
};

TEST(Ipv4Prefix, ParseRefusesHostBits) {
  const PrefixCase cases[] = {
      {"10.244.0.0/16", true, 0x0af40000u, 16, ""},
      {"0.0.0.0/0", true, 0, 0, ""},
      {"10.244.1.7/32", true, 0x0af40107u, 32, ""},
      {"10.244.1.0/24", true, 0x0af40100u, 24, ""},
      {"10.244.1.0/16", false, 0, 0, "'10.244.1.0/16' has host bits set (did you mean 10.244.0.0/16?)"},
      {"10.0.0.1/0", false, 0, 0, "did you mean 0.0.0.0/0?"},
      {"10.244.0.0", false, 0, 0, "'10.244.0.0' is not an IPv4 CIDR (expected a.b.c.d/len"},
      {"10.244.0.0/33", false, 0, 0, "'10.244.0.0/33' has an invalid prefix length (expected 0..32)"},
      {"10.244.0.0/", false, 0, 0, "invalid prefix length"},
      {"10.244.0.0/016", false, 0, 0, "invalid prefix length"},
      {"10.244.0.0/08", false, 0, 0, "invalid prefix length"},
      {"10.244.0.0/-1", false, 0, 0, "invalid prefix length"},
      {"10.244.0.0/16 ", false, 0, 0, "invalid prefix length"},
      {"10.244.0.0/1/6", false, 0, 0, "invalid prefix length"},
      {"10.244.0/16", false, 0, 0, "'10.244.0/16' is not an IPv4 CIDR: '10.244.0' is not an IPv4 address"},
      {"/16", false, 0, 0, "is not an IPv4 address"},
  };
  for (const auto& c : cases) {
    auto p = Ipv4Prefix::parse(c.text);
    ASSERT_EQ(p.ok(), c.ok) << c.text;
    if (c.ok) {
      EXPECT_EQ(p->addr, c.addr) << c.text;
      EXPECT_EQ(p->len, c.len) << c.text;
      EXPECT_EQ(p->str(), c.text);
    } else {
      EXPECT_NE(p.error().find(c.error), std::string::npos) << c.text << ": " << p.error();
    }
  }
}

TEST(Ipv4Prefix, MakeClearsHostBitsOnPurpose) {
  EXPECT_EQ(Ipv4Prefix::make(0x0af40107u, 16).str(), "10.244.0.0/16");
  EXPECT_EQ(Ipv4Prefix::make(0x0af40107u, 0).str(), "0.0.0.0/0");
  EXPECT_EQ(Ipv4Prefix::make(0x0af40107u, 40).str(), "10.244.1.7/32") << "lengths above 32 are 32";
  EXPECT_EQ(Ipv4Prefix::make(Ipv4Addr{0x0af40107u}, 24).str(), "10.244.1.0/24");
}

TEST(Ipv4Prefix, ContainsAndOverlaps) {
  const auto p16 = *Ipv4Prefix::parse("10.244.0.0/16");
  const auto p24 = *Ipv4Prefix::parse("10.244.7.0/24");
  const auto other = *Ipv4Prefix::parse("10.245.0.0/16");
  const auto all = *Ipv4Prefix::parse("0.0.0.0/0");
  struct Case {
    Ipv4Prefix a, b;
    bool a_contains_b, overlap;
  } cases[] = {
      {p16, p24, true, true},   {p24, p16, false, true}, {p16, p16, true, true},
      {p16, other, false, false}, {all, other, true, true}, {other, all, false, true},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(c.a.contains(c.b), c.a_contains_b) << c.a.str() << " contains " << c.b.str();
    EXPECT_EQ(c.a.overlaps(c.b), c.overlap) << c.a.str() << " overlaps " << c.b.str();
  }
  EXPECT_TRUE(p16.contains(*Ipv4Addr::parse("10.244.255.255")));
  EXPECT_FALSE(p16.contains(*Ipv4Addr::parse("10.245.0.0")));
  EXPECT_TRUE(all.contains(*Ipv4Addr::parse("255.255.255.255")));
  EXPECT_EQ(p16.network().str(), "10.244.0.0");
  EXPECT_EQ(p16.last().str(), "10.244.255.255");
  EXPECT_EQ(p16.mask(), 0xffff0000u);
  EXPECT_EQ(all.mask(), 0u);
}

TEST(Ipv4Interface, KeepsHostBits) {
  struct Case {
    const char* text;
    bool ok;
    const char* prefix;  // its subnet
  } cases[] = {
      {"10.244.1.5/16", true, "10.244.0.0/16"},
      {"10.244.1.5/32", true, "10.244.1.5/32"},
      {"10.244.0.0/16", true, "10.244.0.0/16"},
      {"10.244.1.5", false, ""},
      {"10.244.1.5/33", false, ""},
      {"10.244.1/16", false, ""},
  };
  for (const auto& c : cases) {
    auto i = Ipv4Interface::parse(c.text);
    ASSERT_EQ(i.ok(), c.ok) << c.text;
    if (!c.ok) {
      EXPECT_NE(i.error().find(std::string("'") + c.text + "'"), std::string::npos) << i.error();
      continue;
    }
    EXPECT_EQ(i->str(), c.text);
    EXPECT_EQ(i->prefix().str(), c.prefix);
  }
  EXPECT_EQ(Ipv4Interface::parse("10.244.1.5/16")->addr.str(), "10.244.1.5");
  EXPECT_NE(*Ipv4Interface::parse("10.244.1.5/16"), *Ipv4Interface::parse("10.244.1.5/24"));
}

TEST(Mac, ParseAcceptsColonPairsInEitherCase) {
  struct Case {
    const char* text;
    bool ok;
    const char* printed;
  } cases[] = {
      {"02:00:00:00:00:01", true, "02:00:00:00:00:01"},
      {"0A:58:0a:F4:00:05", true, "0a:58:0a:f4:00:05"},
      {"ff:ff:ff:ff:ff:ff", true, "ff:ff:ff:ff:ff:ff"},
      {"0a-58-0a-f4-00-05", false, ""},  // '-' refused: one spelling
      {"0a:58:0a:f4:00", false, ""},
      {"0a:58:0a:f4:00:05:06", false, ""},
      {"0a:58:0a:f4:00:zz", false, ""},
      {"a:58:0a:f4:00:05:", false, ""},
      {"0a:58:0a:f4:00:5", false, ""},
      {"0a58.0af4.0005", false, ""},
      {"0a:58:0a:f4:00:05 ", false, ""},
      {"", false, ""},
  };
  for (const auto& c : cases) {
    auto m = vxfed::net::parse_mac(c.text);
    ASSERT_EQ(m.ok(), c.ok) << c.text;
    if (c.ok) {
      EXPECT_EQ(vxfed::net::format_mac(*m), c.printed);
    } else {
      EXPECT_NE(m.error().find(std::string("'") + c.text + "' is not a MAC address"), std::string::npos)
          << m.error();
    }
  }
}

TEST(Mac, Unicast) {
  using vxfed::net::is_unicast;
  EXPECT_TRUE(is_unicast(Mac{0x02, 0, 0, 0, 0, 1}));
  EXPECT_FALSE(is_unicast(Mac{0x01, 0x00, 0x5e, 0, 0, 1})) << "multicast";
  EXPECT_FALSE(is_unicast(Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})) << "broadcast";
  EXPECT_FALSE(is_unicast(Mac{})) << "all zero";
}

TEST(Vxlan, NumbersAndTheGatewayMacRule) {
  EXPECT_EQ(vxfed::net::kVxlanOverhead, 50u);
  EXPECT_EQ(vxfed::net::pod_mtu(9000), 8950u);
  EXPECT_EQ(vxfed::net::pod_mtu(1500), 1450u);
  EXPECT_EQ(vxfed::net::kVxlanUdpPort, 4789);
  EXPECT_EQ(vxfed::net::kVxlanFlagsVni, 0x08);
  struct Case {
    std::uint32_t vni;
    const char* mac;
  } cases[] = {{5000, "02:76:78:00:13:88"}, {1, "02:76:78:00:00:01"}, {0xfffffe, "02:76:78:ff:ff:fe"}};
  for (const auto& c : cases) {
    const Mac m = vxfed::net::gateway_mac(c.vni);
    EXPECT_EQ(vxfed::net::format_mac(m), c.mac) << c.vni;
    EXPECT_TRUE(vxfed::net::is_unicast(m)) << "a host may own it";
    EXPECT_EQ(m[0] & 2, 2) << "locally administered";
  }
}

}  // namespace
