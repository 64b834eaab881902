// vxfed-dataplane's command line after `--` (dataplane/runtime/options.cpp): defaults, every
// option reaching its field, and the errors a person sees for bad input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dataplane/runtime/options.hpp"

namespace vxfed::dataplane {
namespace {

using Args = std::vector<std::string>;

Args required_plus(Args more) {
  Args a{"--uplink", "net_af_packet0", "--vtep-ip", "198.18.0.1"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

Result<ParseOutcome> parse(const Args& args) { return parse_options("vxfed-dataplane", args); }

TEST(DataplaneOptions, Defaults) {
  auto r = parse(required_plus({}));
  ASSERT_TRUE(r.ok()) << r.error();
  const Options& o = r->options;
  EXPECT_FALSE(r->help);
  EXPECT_EQ(o.uplink, "net_af_packet0");
  EXPECT_EQ(o.vtep_ip, "198.18.0.1");
  EXPECT_EQ(o.queues, 1u);
  EXPECT_EQ(o.mtu, 9000u);
  EXPECT_EQ(o.api_socket, "");
  EXPECT_EQ(o.tables_file, "");
  EXPECT_EQ(o.endpoint_frames, 512u);
  EXPECT_TRUE(o.qdisc_bypass);
  EXPECT_EQ(o.mbufs, 0u);
  EXPECT_EQ(o.idle_sleep_us, 20u);
  EXPECT_EQ(o.deep_idle_sleep_us, 1000u);
  EXPECT_EQ(o.deep_idle_after_ms, 50u);
  EXPECT_EQ(o.idle_spin_us, 0u);
  EXPECT_TRUE(o.idle_spin_yield);
  EXPECT_EQ(o.idle_wait, "auto");
  EXPECT_FALSE(o.busy_poll);
  EXPECT_EQ(o.log_level, "info");
  EXPECT_TRUE(o.static_neighbors.empty());
  EXPECT_TRUE(o.endpoint_ports.empty());
  EXPECT_EQ(o.underlay_vlan, -1);
  EXPECT_EQ(o.parsed.underlay_tag.tx_flags, 0u) << "untagged by default";
}

TEST(DataplaneOptions, EveryOptionReachesItsField) {
  auto r = parse(required_plus({"--queues", "4", "--mtu", "1500", "--api-socket", "/run/vxfed/dp.sock",
                                "--tables-file", "t.json", "--underlay-gateway", "198.18.0.254",
                                "--underlay-subnet", "198.18.0.0/24", "--endpoint-frames", "1024",
                                "--qdisc-bypass", "0", "--mbufs", "20000", "--idle-sleep-us", "50",
                                "--deep-idle-sleep-us", "2000", "--deep-idle-after-ms", "0",
                                "--idle-spin-us", "100", "--idle-spin-yield", "0", "--idle-wait", "sleep",
                                "--busy-poll",
                                "--log-level", "debug"}));
  ASSERT_TRUE(r.ok()) << r.error();
  const Options& o = r->options;
  EXPECT_EQ(o.queues, 4u);
  EXPECT_EQ(o.mtu, 1500u);
  EXPECT_EQ(o.api_socket, "/run/vxfed/dp.sock");
  EXPECT_EQ(o.tables_file, "t.json");
  EXPECT_EQ(o.underlay_gateway, "198.18.0.254");
  EXPECT_EQ(o.underlay_subnet, "198.18.0.0/24");
  EXPECT_EQ(o.endpoint_frames, 1024u);
  EXPECT_FALSE(o.qdisc_bypass);
  EXPECT_EQ(o.mbufs, 20000u);
  EXPECT_EQ(o.idle_sleep_us, 50u);
  EXPECT_EQ(o.deep_idle_sleep_us, 2000u);
  EXPECT_EQ(o.deep_idle_after_ms, 0u);
  EXPECT_EQ(o.idle_spin_us, 100u);
  EXPECT_FALSE(o.idle_spin_yield);
  EXPECT_EQ(o.idle_wait, "sleep");
  EXPECT_TRUE(o.busy_poll);
  EXPECT_EQ(o.log_level, "debug");
}

TEST(DataplaneOptions, RepeatedOptionsKeepTheirOrder) {
  auto r = parse(required_plus({"--static-neighbor", "198.18.0.2=02:00:00:00:00:02", "--endpoint-port",
                                "veth-a=net_null1", "--static-neighbor", "198.18.0.3=02:00:00:00:00:03",
                                "--endpoint-port", "veth-b=net_tap0"}));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->options.static_neighbors,
            (std::vector<std::string>{"198.18.0.2=02:00:00:00:00:02", "198.18.0.3=02:00:00:00:00:03"}));
  EXPECT_EQ(r->options.endpoint_port_args, (std::vector<std::string>{"veth-a=net_null1", "veth-b=net_tap0"}));
  EXPECT_EQ(r->options.endpoint_ports,
            (std::map<std::string, std::string>{{"veth-a", "net_null1"}, {"veth-b", "net_tap0"}}));
}

TEST(DataplaneOptions, HelpNeedsNothingElseAndDocumentsEveryOption) {
  for (const char* flag : {"--help", "-h"}) {
    auto r = parse({"--queues", "99", flag});  // even next to a bad value
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_TRUE(r->help);
    for (const char* opt : {"--uplink", "--vtep-ip", "--queues", "--mtu", "--api-socket", "--tables-file",
                            "--underlay-gateway", "--underlay-subnet", "--static-neighbor", "--endpoint-port",
                            "--endpoint-frames", "--qdisc-bypass", "--mbufs", "--idle-sleep-us",
                            "--deep-idle-sleep-us", "--deep-idle-after-ms", "--idle-spin-us", "--idle-spin-yield", "--idle-wait",
                            "--busy-poll", "--worker-rt-priority", "--log-level", "--no-huge", "--underlay-vlan", "--dscp-pcp", "SIGTERM"})
      EXPECT_NE(r->help_text.find(opt), std::string::npos) << opt << " missing from --help";
  }
  EXPECT_EQ(parse({"--help"})->help_text, usage_text("vxfed-dataplane"));
}

struct BadCase {
  const char* what;
  Args args;
  const char* expect;  // in the error text
};

class DataplaneOptionsError : public ::testing::TestWithParam<BadCase> {};

TEST_P(DataplaneOptionsError, IsRefusedWithAMessageNamingTheProblem) {
  const BadCase& c = GetParam();
  auto r = parse(c.args);
  ASSERT_FALSE(r.ok()) << c.what << ": accepted";
  EXPECT_NE(r.error().find(c.expect), std::string::npos) << c.what << ": " << r.error();
  EXPECT_NE(r.error().find("(see --help)"), std::string::npos) << c.what << ": " << r.error();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DataplaneOptionsError,
    ::testing::Values(
        BadCase{"no uplink", {"--vtep-ip", "198.18.0.1"}, "--uplink"},
        BadCase{"no VTEP", {"--uplink", "0"}, "--vtep-ip"},
        BadCase{"queues 0", required_plus({"--queues", "0"}), "--queues"},
        BadCase{"queues 17", required_plus({"--queues", "17"}), "--queues"},
        BadCase{"queues not a number", required_plus({"--queues", "two"}), "--queues"},
        BadCase{"MTU too small", required_plus({"--mtu", "1279"}), "--mtu"},
        BadCase{"MTU too large", required_plus({"--mtu", "9601"}), "--mtu"},
        BadCase{"endpoint frames", required_plus({"--endpoint-frames", "8"}), "--endpoint-frames"},
        BadCase{"idle sleep 0", required_plus({"--idle-sleep-us", "0"}), "--idle-sleep-us"},
        BadCase{"idle wait", required_plus({"--idle-wait", "spin"}), "--idle-wait"},
        BadCase{"log level", required_plus({"--log-level", "verbose"}), "--log-level"},
        BadCase{"unknown option", required_plus({"--queue", "2"}), "--queue"},
        BadCase{"stray argument", required_plus({"extra"}), "extra"}),
    [](const auto& info) {
      std::string name = info.param.what;
      for (auto& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

TEST(DataplaneOptions, EndpointPortNeedsIfaceAndPortName) {
  for (const char* bad : {"veth-a", "=net_null1", "veth-a="}) {
    auto r = parse(required_plus({"--endpoint-port", bad}));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error(), std::string("--endpoint-port '") + bad + "': expected IFACE=PORTNAME");
  }
}

// The values behind the texts are checked at parse time (Options::parsed), so a start and
// `--check` refuse the same things.
TEST(DataplaneOptions, ValuesAreCheckedAndKept) {
  auto r = parse(required_plus({"--underlay-subnet", "198.18.0.0/24", "--underlay-gateway", "198.18.0.254",
                                "--underlay-route", "198.18.7.0/24=198.18.0.253", "--underlay-route",
                                "198.18.7.7=direct", "--static-neighbor", "198.18.0.254=02:00:00:00:00:fe",
                                "--check"}));
  ASSERT_TRUE(r.ok()) << r.error();
  const Options& o = r->options;
  EXPECT_TRUE(o.check);
  EXPECT_EQ(o.underlay_routes, (std::vector<std::string>{"198.18.7.0/24=198.18.0.253", "198.18.7.7=direct"}));
  EXPECT_EQ(o.parsed.vtep.str(), "198.18.0.1");
  EXPECT_EQ(o.parsed.underlay.next_hop(*net::Ipv4Addr::parse("198.18.7.1")).str(), "198.18.0.253");
  EXPECT_EQ(o.parsed.underlay.next_hop(*net::Ipv4Addr::parse("198.18.7.7")).str(), "198.18.7.7");
  EXPECT_EQ(o.parsed.underlay.next_hop(*net::Ipv4Addr::parse("198.18.9.1")).str(), "198.18.0.254");
  ASSERT_EQ(o.parsed.static_neighbors.size(), 1u);
  EXPECT_EQ(net::format_mac(o.parsed.static_neighbors[0].second), "02:00:00:00:00:fe");
  // A gateway no longer needs a static MAC: it is ARPed for.
  EXPECT_TRUE(parse(required_plus({"--underlay-gateway", "198.18.0.254"})).ok());

  const std::vector<std::pair<Args, const char*>> bad = {
      {{"--uplink", "0", "--vtep-ip", "198.18.0.01"}, "--vtep-ip: "},
      {required_plus({"--underlay-subnet", "198.18.0.0/24", "--underlay-gateway", "10.0.0.1"}), "is not on-link"},
      {required_plus({"--underlay-route", "198.18.7.0/24"}), "expected VTEP=NEXTHOP"},
      {required_plus({"--static-neighbor", "198.18.0.2"}), "expected IP=MAC"},
      {required_plus({"--static-neighbor", "198.18.0.2=02:00:00:00:00"}), "--static-neighbor '198.18.0.2=02:00:00:00:00': "},
      {required_plus({"--static-neighbor", "198.18.0.2=ff:ff:ff:ff:ff:ff"}), "must be unicast"},
      {required_plus({"--endpoint-port", "veth-a"}), "expected IFACE=PORTNAME"},
  };
  for (const auto& [args, expect] : bad) {
    auto e = parse(args);
    ASSERT_FALSE(e.ok()) << expect;
    EXPECT_NE(e.error().find(expect), std::string::npos) << e.error();
  }
}

TEST(DataplaneOptions, UnderlayVlanAndDscpPcp) {
  auto r = parse(required_plus({"--underlay-vlan", "100", "--dscp-pcp", "10=5", "--dscp-pcp", "46=6"}));
  ASSERT_TRUE(r.ok()) << r.error();
  const UnderlayTag& t = r->options.parsed.underlay_tag;
  EXPECT_NE(t.tx_flags, 0u);
  EXPECT_EQ(t.tci_of_tos[10 << 2], 5u << 13 | 100u);
  EXPECT_EQ(t.tci_of_tos[46 << 2], 6u << 13 | 100u);
  EXPECT_EQ(t.tci_of_tos[26 << 2], 3u << 13 | 100u) << "others keep their class selector";
  auto prio = parse(required_plus({"--underlay-vlan", "0"}));
  ASSERT_TRUE(prio.ok()) << prio.error();
  EXPECT_NE(prio->options.parsed.underlay_tag.tx_flags, 0u) << "VID 0: priority tags";

  const std::vector<std::pair<Args, const char*>> bad = {
      {required_plus({"--underlay-vlan", "4095"}), "--underlay-vlan"},
      {required_plus({"--underlay-vlan", "-2"}), "--underlay-vlan"},
      {required_plus({"--dscp-pcp", "10=5"}), "--dscp-pcp needs --underlay-vlan"},
      {required_plus({"--underlay-vlan", "0", "--dscp-pcp", "64=1"}), "--dscp-pcp '64=1': expected DSCP=PCP"},
      {required_plus({"--underlay-vlan", "0", "--dscp-pcp", "10=8"}), "--dscp-pcp '10=8'"},
      {required_plus({"--underlay-vlan", "0", "--dscp-pcp", "10"}), "--dscp-pcp '10'"},
      {required_plus({"--underlay-vlan", "0", "--dscp-pcp", " 1=1"}), "--dscp-pcp ' 1=1'"},
      {required_plus({"--underlay-vlan", "0", "--dscp-pcp", "1=+1"}), "--dscp-pcp '1=+1'"},
      {required_plus({"--underlay-vlan", "0", "--dscp-pcp", "=1"}), "--dscp-pcp '=1'"},
  };
  for (const auto& [args, expect] : bad) {
    auto e = parse(args);
    ASSERT_FALSE(e.ok()) << expect;
    EXPECT_NE(e.error().find(expect), std::string::npos) << e.error();
  }
}

// Real-time workers (worker_scheduling.hpp): 0 by default, 1..99 kept, and never with
// --busy-poll, where a SCHED_FIFO worker would never give its CPU back.
TEST(DataplaneOptions, WorkerRtPriority) {
  auto plain = parse(required_plus({}));
  ASSERT_TRUE(plain.ok()) << plain.error();
  EXPECT_EQ(plain->options.worker_rt_priority, 0u);
  auto rt = parse(required_plus({"--worker-rt-priority", "1"}));
  ASSERT_TRUE(rt.ok()) << rt.error();
  EXPECT_EQ(rt->options.worker_rt_priority, 1u);
  EXPECT_FALSE(parse(required_plus({"--worker-rt-priority", "100"})).ok());
  auto spinning = parse(required_plus({"--worker-rt-priority", "5", "--busy-poll"}));
  ASSERT_FALSE(spinning.ok());
  EXPECT_NE(spinning.error().find("--worker-rt-priority 5 with --busy-poll"), std::string::npos) << spinning.error();
}

}  // namespace
}  // namespace vxfed::dataplane
