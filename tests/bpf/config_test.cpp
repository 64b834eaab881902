// Unit tests of the pure parts of vxfed::bpf: bandwidth validation/parsing (the CNI plugin
// maps a refusal to CNI error 7), defaults, marking rules, pod keys.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bpf/lib/shaper.hpp"
#include "bpf/lib/vxfed_bpf.hpp"

namespace vb = vxfed::bpf;
using nlohmann::json;

namespace {

// A burst above one second of the rate is cut to one second's worth; containerd's default
// (2^32-1 bits) is the case that matters. The sentence names the field and the value used.
TEST(Bandwidth, BurstAboveOneSecondIsCutToIt) {
  vb::BandwidthSpec s{.ingress_rate = 10'000'000, .ingress_burst = 4'294'967'295ULL,
                      .egress_rate = 10'000'000, .egress_burst = 10'000'000};
  auto cuts = vb::cap_bursts(s);
  ASSERT_EQ(cuts.size(), 1u) << "exactly one second is not cut";
  EXPECT_EQ(s.ingress_burst, 10'000'000u);
  EXPECT_EQ(s.egress_burst, 10'000'000u);
  EXPECT_NE(cuts[0].find("ingressBurst 4294967295 bits"), std::string::npos) << cuts[0];
  EXPECT_NE(cuts[0].find("using 10000000 bits"), std::string::npos) << cuts[0];

  vb::BandwidthSpec small{.egress_rate = 10'000'000, .egress_burst = 1'000'000};
  EXPECT_TRUE(vb::cap_bursts(small).empty());
  EXPECT_EQ(small.egress_burst, 1'000'000u);
  vb::BandwidthSpec none{};
  EXPECT_TRUE(vb::cap_bursts(none).empty());
}

// The tbf behind a limit: the bucket is the burst but at least one frame (tbf drops a frame
// larger than its bucket), the queue the burst plus 25 ms at the rate.
TEST(Shaper, TbfParameters) {
  auto p = vxfed::bpf::detail::tbf_params(10'000'000, 1'000'000, 1500);
  EXPECT_EQ(p.rate_bytes, 1'250'000u);
  EXPECT_EQ(p.burst_bytes, 125'000u);
  EXPECT_EQ(p.limit_bytes, 125'000u + 31'250u);
  auto jumbo = vxfed::bpf::detail::tbf_params(10'000'000, 12'000, 8950);
  EXPECT_EQ(jumbo.burst_bytes, 8950u + 18u) << "a 1500-byte burst on a jumbo interface";
  auto slow = vxfed::bpf::detail::tbf_params(8'000, 12'000, 1500);
  EXPECT_EQ(slow.limit_bytes, 1518u + 1518u) << "the queue holds at least one frame";
  EXPECT_EQ(vxfed::bpf::detail::ifb_name_for(4'000'000'000).size(), 14u);
}

TEST(Bandwidth, AcceptsTheReferencePluginUnits) {
  auto bw = vb::parse_bandwidth_json(json::parse(
      R"({"ingressRate": 100000000, "ingressBurst": 25000000, "egressRate": 1000000000, "egressBurst": 250000000})"));
  ASSERT_TRUE(bw) << bw.error();
  EXPECT_EQ(bw->ingress_rate, 100'000'000u);
  EXPECT_EQ(bw->ingress_burst, 25'000'000u);
  EXPECT_EQ(bw->egress_rate, 1'000'000'000u);
  EXPECT_EQ(bw->egress_burst, 250'000'000u);
}

TEST(Bandwidth, OneDirectionOnlyAndEmpty) {
  auto bw = vb::parse_bandwidth_json(json::parse(R"({"egressRate": 50000000, "egressBurst": 1000000})"));
  ASSERT_TRUE(bw) << bw.error();
  EXPECT_FALSE(bw->has_ingress());
  EXPECT_TRUE(bw->has_egress());
  auto none = vb::parse_bandwidth_json(json::object());
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, vb::BandwidthSpec{});
  EXPECT_TRUE(vb::parse_bandwidth_json(json()));  // absent capability
  EXPECT_TRUE(vb::parse_bandwidth_json(json::parse(R"({"ingressRate": 1e8, "ingressBurst": 2e7})")));
}

struct Refused {
  const char* json_text;
  const char* must_mention;
};

class BandwidthRefusals : public ::testing::TestWithParam<Refused> {};

TEST_P(BandwidthRefusals, RefusedWithAReason) {
  auto bw = vb::parse_bandwidth_json(json::parse(GetParam().json_text));
  ASSERT_FALSE(bw) << GetParam().json_text << " was accepted";
  EXPECT_NE(bw.error().find(GetParam().must_mention), std::string::npos) << bw.error();
}

INSTANTIATE_TEST_SUITE_P(
    Invalid, BandwidthRefusals,
    ::testing::Values(Refused{R"({"ingressRate": 1000000})", "ingressBurst is 0"},
                      Refused{R"({"egressBurst": 1000000})", "egressRate is 0"},
                      Refused{R"({"ingressRate": -5, "ingressBurst": 1000})", "negative"},
                      Refused{R"({"egressRate": 1000000.5, "egressBurst": 100000})", "whole number"},
                      Refused{R"({"egressRate": "fast", "egressBurst": 100000})", "must be a number"},
                      Refused{R"({"egressRate": 100, "egressBurst": 100000})", "out of range"},
                      Refused{R"({"egressRate": 1000000, "egressBurst": 100})", "one 1500-byte"},
                      Refused{R"({"egressRate": 1000000, "egressBurst": 40000000000})", "out of range"},
                      Refused{R"({"egressRate": 2000000000000, "egressBurst": 100000})", "out of range"},
                      Refused{R"({"ingresRate": 1000000, "ingressBurst": 100000})", "unknown key"},
                      Refused{R"([1, 2])", "JSON object"}));

TEST(Bandwidth, DefaultsFillOnlyMissingDirections) {
  vb::BandwidthSpec pod{.ingress_rate = 0, .ingress_burst = 0, .egress_rate = 5'000'000, .egress_burst = 100'000};
  vb::BandwidthSpec net{.ingress_rate = 1'000'000'000, .ingress_burst = 10'000'000, .egress_rate = 1'000'000'000,
                        .egress_burst = 10'000'000};
  auto eff = vb::with_defaults(pod, net);
  EXPECT_EQ(eff.ingress_rate, 1'000'000'000u);
  EXPECT_EQ(eff.egress_rate, 5'000'000u);
  EXPECT_EQ(eff.egress_burst, 100'000u);
  EXPECT_EQ(vb::with_defaults(vb::BandwidthSpec{}, vb::BandwidthSpec{}), vb::BandwidthSpec{});
}

TEST(Rules, DefaultIsRoceV2) {
  auto rules = vb::default_mark_rules();
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].protocol, 17);
  EXPECT_EQ(rules[0].dport_lo, 4791);
  EXPECT_EQ(rules[0].dport_hi, 4791);
  EXPECT_EQ(rules[0].dscp, std::optional<uint8_t>(26));
  EXPECT_EQ(rules[0].priority, std::optional<uint8_t>(3));
  EXPECT_TRUE(vb::validate_rules(rules));
}

TEST(Rules, ParsesPortsAndRanges) {
  auto rules = vb::parse_rules_json(json::parse(R"([
    {"name": "roce", "protocol": "udp", "dport": 4791, "dscp": 26, "priority": 3},
    {"name": "bulk", "protocol": "tcp", "dport": [5000, 5100], "dscp": 10},
    {"name": "any-prio", "priority": 1}])"));
  ASSERT_TRUE(rules) << rules.error();
  ASSERT_EQ(rules->size(), 3u);
  EXPECT_EQ((*rules)[1].dport_lo, 5000);
  EXPECT_EQ((*rules)[1].dport_hi, 5100);
  EXPECT_EQ((*rules)[1].protocol, 6);
  EXPECT_FALSE((*rules)[1].priority.has_value());
  EXPECT_EQ((*rules)[2].protocol, 0);
}

TEST(Rules, RefusesBadRules) {
  const char* bad[] = {
      R"([{"name": "x", "protocol": "udp", "dport": 4791, "dscp": 64}])",
      R"([{"name": "x", "protocol": "udp", "dport": 4791, "priority": 8}])",
      R"([{"name": "x", "protocol": "udp", "dport": 4791}])",
      R"([{"name": "x", "protocol": "udp", "dport": [10, 5], "dscp": 1}])",
      R"([{"name": "x", "protocol": "udp", "dport": 70000, "dscp": 1}])",
      R"([{"name": "x", "protocol": "icmp", "dscp": 1}])",
      R"([{"name": "Bad.Name", "dscp": 1}])",
      R"([{"name": "unmatched", "dscp": 1}])",
      R"([{"name": "a", "dscp": 1}, {"name": "a", "dscp": 2}])",
      R"([{"name": "x", "dscp": 1, "colour": "red"}])",
      R"({"name": "x"})",
  };
  for (const char* text : bad) {
    auto r = vb::parse_rules_json(json::parse(text));
    EXPECT_FALSE(r) << text << " was accepted";
    if (!r) {
      EXPECT_FALSE(r.error().empty());
    }
  }
  std::vector<vb::MarkRule> many(17, vb::MarkRule{.name = "a", .dscp = 1});
  for (size_t i = 0; i < many.size(); i++) many[i].name = "r" + std::to_string(i);
  EXPECT_FALSE(vb::validate_rules(many));
}

TEST(PodKey, EscapesWhatBpffsRefuses) {
  EXPECT_EQ(vb::pod_key_for("abc123", "net1"), "abc123_net1");
  EXPECT_EQ(vb::pod_key_for("abc", "net1.100"), "abc_net1=2E100");
  EXPECT_NE(vb::pod_key_for("a_b", "c"), vb::pod_key_for("a", "b_c"));
  EXPECT_TRUE(vb::validate_pod_key(vb::pod_key_for("x/y", "eth0.5")));
  EXPECT_FALSE(vb::validate_pod_key("has.dot"));
  EXPECT_FALSE(vb::validate_pod_key("has/slash"));
  EXPECT_FALSE(vb::validate_pod_key(""));
  EXPECT_FALSE(vb::validate_pod_key(std::string(201, 'a')));
}

}  // namespace
