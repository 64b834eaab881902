// Golden tests of the TC programs through BPF_PROG_TEST_RUN (suite 'packet').
// Each fixture is data, {description, input frame, expected verdict, expected output frame}
// (docs/conventions.md: packet tests are data), plus the class counter and stats it must move. Rate decisions
// run with a test clock (the programs' vxfed_test_now_ns) so conforming and exceeding
// packets are decided at times the test chooses.
#include <gtest/gtest.h>
#include <linux/pkt_cls.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tests/bpf/packets.hpp"
#include "bpf/include/vxfed_bpf_abi.h"
#include "bpf/vxfed_tc.skel.h"

namespace vxfed::bpf::test {
namespace {

constexpr uint64_t kSec = 1'000'000'000ULL;

struct RunResult {
  int verdict = -1;
  Bytes out;
  __sk_buff ctx{};
};

struct SkelDeleter {
  void operator()(vxfed_tc* s) const { vxfed_tc__destroy(s); }
};

// Fails instead of skipping where every test must run (CI), as tests/meson.build says.
bool must_run() { return std::getenv("VXFED_REQUIRE_ALL") && std::string(std::getenv("VXFED_REQUIRE_ALL")) == "1"; }

class TcPrograms : public ::testing::Test {
 protected:
  void SetUp() override {
    libbpf_set_print(nullptr);
    skel_.reset(vxfed_tc__open_and_load());
    if (!skel_) {
      std::string why = "cannot load the BPF programs (needs root / CAP_BPF): " + std::string(strerror(errno));
      if (must_run()) FAIL() << why;
      GTEST_SKIP() << why;
    }
  }

  void set_config(uint32_t flags, uint64_t eg_rate = 0, uint64_t eg_burst = 0, uint64_t in_rate = 0,
                  uint64_t in_burst = 0) {
    vxfed_config c{};
    c.flags = flags;
    c.abi_version = VXFED_BPF_ABI_VERSION;
    c.egress_rate_bps = eg_rate;
    c.egress_burst_bytes = eg_burst;
    c.ingress_rate_bps = in_rate;
    c.ingress_burst_bytes = in_burst;
    uint32_t k = 0;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.config), &k, &c, BPF_ANY), 0);
  }

  void set_rule(uint32_t slot, vxfed_rule r) {
    r.in_use = 1;
    ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.rules), &slot, &r, BPF_ANY), 0);
  }

  // The default RoCEv2 rule and two more classes, as the loader would write them.
  void standard_rules() {
    set_rule(0, {.protocol = 17, .dscp = 26, .priority = 3, .flags = VXFED_RULE_SET_DSCP | VXFED_RULE_SET_PRIORITY,
                 .dport_lo = 4791, .dport_hi = 4791, .name = "roce"});
    set_rule(1, {.protocol = 6, .dscp = 10, .flags = VXFED_RULE_SET_DSCP, .dport_lo = 5000, .dport_hi = 5100,
                 .name = "bulk"});
    set_rule(2, {.protocol = 17, .priority = 5, .flags = VXFED_RULE_SET_PRIORITY, .sport_lo = 9000,
                 .sport_hi = 9000, .name = "ctrl"});
  }

  void set_now(uint64_t ns) { skel_->bss->vxfed_test_now_ns = ns; }

  RunResult run(bpf_program* prog, const Bytes& in, uint64_t tstamp = 0) {
    RunResult r;
    r.out.resize(in.size() + 256);
    __sk_buff ctx_in{};
    ctx_in.tstamp = tstamp;
    LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in.data(), .data_out = r.out.data(),
                .data_size_in = static_cast<__u32>(in.size()), .data_size_out = static_cast<__u32>(r.out.size()),
                .ctx_in = &ctx_in, .ctx_out = &r.ctx, .ctx_size_in = sizeof(ctx_in), .ctx_size_out = sizeof(r.ctx),
                .repeat = 1);
    int err = bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);
    EXPECT_EQ(err, 0) << "BPF_PROG_TEST_RUN failed: " << strerror(errno);
    r.out.resize(opts.data_size_out);
    r.verdict = static_cast<int>(opts.retval);
    return r;
  }

  vxfed_counter class_counter(uint32_t slot) {
    int ncpu = libbpf_num_possible_cpus();
    std::vector<vxfed_counter> v(static_cast<size_t>(ncpu));
    EXPECT_EQ(bpf_map_lookup_elem(bpf_map__fd(skel_->maps.class_counters), &slot, v.data()), 0);
    vxfed_counter sum{};
    for (auto& c : v) {
      sum.packets += c.packets;
      sum.bytes += c.bytes;
    }
    return sum;
  }

  uint64_t stat(uint32_t which) {
    int ncpu = libbpf_num_possible_cpus();
    std::vector<uint64_t> v(static_cast<size_t>(ncpu));
    EXPECT_EQ(bpf_map_lookup_elem(bpf_map__fd(skel_->maps.stats), &which, v.data()), 0);
    uint64_t sum = 0;
    for (auto x : v) sum += x;
    return sum;
  }

  std::unique_ptr<vxfed_tc, SkelDeleter> skel_;
};

// ---------------------------------------------------------------- marking fixtures

struct MarkCase {
  const char* description;
  Bytes input;
  int verdict;
  Bytes output;
  int class_slot;             // counter that must count it; -1: none
  std::optional<uint32_t> stat;  // stats slot that must count it
  uint32_t priority;          // skb->priority afterwards
};

std::vector<MarkCase> mark_cases() {
  const int roce = 0, bulk = 1, ctrl = 2, none = VXFED_CLASS_UNMATCHED;
  return {
      {"RoCEv2 (UDP dst 4791) gets DSCP 26, checksum fixed", udp4(50000, 4791), TC_ACT_OK,
       udp4(50000, 4791, 32, {.tos = 26 << 2}), roce, VXFED_STAT_MARKED, 3},
      {"RoCEv2 keeps its ECN bits (CE) while the DSCP changes", udp4(50000, 4791, 32, {.tos = 0x03}), TC_ACT_OK,
       udp4(50000, 4791, 32, {.tos = (26 << 2) | 0x03}), roce, VXFED_STAT_MARKED, 3},
      {"RoCEv2 with an old DSCP 46 is re-marked to 26", udp4(50000, 4791, 64, {.tos = 46 << 2 | 0x02}), TC_ACT_OK,
       udp4(50000, 4791, 64, {.tos = 26 << 2 | 0x02}), roce, VXFED_STAT_MARKED, 3},
      {"RoCEv2 with IPv4 options (IHL 6): ports read after the options", udp4(50000, 4791, 32, {.ihl = 6}),
       TC_ACT_OK, udp4(50000, 4791, 32, {.tos = 26 << 2, .ihl = 6}), roce, VXFED_STAT_MARKED, 3},
      {"RoCEv2 already marked: bytes unchanged, priority still set", udp4(50000, 4791, 32, {.tos = 26 << 2}),
       TC_ACT_OK, udp4(50000, 4791, 32, {.tos = 26 << 2}), roce, VXFED_STAT_MARKED, 3},
      {"UDP *source* 4791 is not RoCEv2", udp4(4791, 4000), TC_ACT_OK, udp4(4791, 4000), none, std::nullopt, 0},
      {"TCP to 4791 is not RoCEv2", tcp4(40000, 4791), TC_ACT_OK, tcp4(40000, 4791), none, std::nullopt, 0},
      {"TCP dst 5050 is in the bulk range 5000-5100: DSCP 10", tcp4(40000, 5050), TC_ACT_OK,
       tcp4(40000, 5050, 32, {.tos = 10 << 2}), bulk, VXFED_STAT_MARKED, 0},
      {"TCP dst 5101 is outside the bulk range", tcp4(40000, 5101), TC_ACT_OK, tcp4(40000, 5101), none,
       std::nullopt, 0},
      {"UDP source 9000 (ctrl): priority 5, DSCP untouched", udp4(9000, 1234, 32, {.tos = 0x20}), TC_ACT_OK,
       udp4(9000, 1234, 32, {.tos = 0x20}), ctrl, VXFED_STAT_MARKED, 5},
      {"ICMP matches no port rule", eth(0x0800, ipv4(1, Bytes(16, 0))), TC_ACT_OK, eth(0x0800, ipv4(1, Bytes(16, 0))),
       none, std::nullopt, 0},
      // ---- bad input: passes unmarked and unharmed, counted by kind
      {"ARP (non-IP) passes untouched", arp_request(), TC_ACT_OK, arp_request(), -1, VXFED_STAT_NOT_IPV4, 0},
      {"IPv6 UDP to 4791 passes unmarked", ipv6_udp(50000, 4791, 32), TC_ACT_OK, ipv6_udp(50000, 4791, 32), -1,
       VXFED_STAT_NOT_IPV4, 0},
      {"in-band 802.1Q tagged RoCEv2 passes unmarked",
       eth_vlan(100, 0, 0x0800, ipv4(17, udp(50000, 4791, 32))), TC_ACT_OK,
       eth_vlan(100, 0, 0x0800, ipv4(17, udp(50000, 4791, 32))), -1, VXFED_STAT_NOT_IPV4, 0},
      {"first fragment (MF) of RoCEv2 passes unmarked", udp4(50000, 4791, 32, {.mf = true}), TC_ACT_OK,
       udp4(50000, 4791, 32, {.mf = true}), -1, VXFED_STAT_FRAGMENT, 0},
      {"later fragment (offset 185) passes unmarked", udp4(50000, 4791, 32, {.frag_offset = 185}), TC_ACT_OK,
       udp4(50000, 4791, 32, {.frag_offset = 185}), -1, VXFED_STAT_FRAGMENT, 0},
      // (An IPv4 header shorter than 20 bytes cannot be injected: BPF_PROG_TEST_RUN refuses it
      // with EINVAL before the program runs. The program's bounded loads cover it anyway.)
      {"IPv4 total length beyond the frame (truncated) passes unmarked",
       udp4(50000, 4791, 32, {.tot_len_delta = 100}), TC_ACT_OK, udp4(50000, 4791, 32, {.tot_len_delta = 100}), -1,
       VXFED_STAT_MALFORMED, 0},
      {"IPv4 IHL 4 (invalid) passes unmarked", udp4(50000, 4791, 32, {.ihl = 4}), TC_ACT_OK,
       udp4(50000, 4791, 32, {.ihl = 4}), -1, VXFED_STAT_MALFORMED, 0},
      {"version 6 in an IPv4 ethertype passes unmarked", udp4(50000, 4791, 32, {.version = 6}), TC_ACT_OK,
       udp4(50000, 4791, 32, {.version = 6}), -1, VXFED_STAT_MALFORMED, 0},
      {"UDP header cut off after the IPv4 header passes unmarked", eth(0x0800, ipv4(17, Bytes{0x13})), TC_ACT_OK,
       eth(0x0800, ipv4(17, Bytes{0x13})), -1, VXFED_STAT_MALFORMED, 0},
  };
}

TEST_F(TcPrograms, MarkingGoldenFixtures) {
  set_config(VXFED_CFG_MARK);
  standard_rules();
  for (const auto& c : mark_cases()) {
    SCOPED_TRACE(c.description);
    vxfed_counter before = c.class_slot >= 0 ? class_counter(static_cast<uint32_t>(c.class_slot)) : vxfed_counter{};
    uint64_t stat_before = c.stat ? stat(*c.stat) : 0;
    RunResult r = run(skel_->progs.vxfed_egress, c.input);
    EXPECT_EQ(r.verdict, c.verdict);
    EXPECT_EQ(r.out, c.output) << first_difference(c.output, r.out);
    EXPECT_EQ(r.ctx.priority, c.priority);
    if (c.output.size() >= 34 && c.output[12] == 0x08 && c.output[13] == 0x00 && c.stat != VXFED_STAT_MALFORMED) {
      EXPECT_TRUE(ipv4_checksum_ok(r.out)) << "IPv4 header checksum is wrong after marking";
    }
    if (c.class_slot >= 0) {
      vxfed_counter after = class_counter(static_cast<uint32_t>(c.class_slot));
      EXPECT_EQ(after.packets, before.packets + 1);
      EXPECT_EQ(after.bytes, before.bytes + c.input.size());
    }
    if (c.stat) {
      EXPECT_EQ(stat(*c.stat), stat_before + 1);
    }
  }
}

TEST_F(TcPrograms, BadInputNeverCountsInAClass) {
  set_config(VXFED_CFG_MARK);
  // A catch-all rule: even it must not touch packets the parser refuses.
  set_rule(0, {.protocol = 0, .dscp = 46, .priority = 6, .flags = VXFED_RULE_SET_DSCP | VXFED_RULE_SET_PRIORITY,
               .name = "all"});
  const Bytes bad[] = {arp_request(), ipv6_udp(1, 4791, 8), udp4(1, 4791, 8, {.mf = true}),
                       eth_vlan(7, 3, 0x0800, ipv4(17, udp(1, 4791, 8))), eth(0x0800, ipv4(17, Bytes{0x12, 0xb7}))};
  for (const auto& in : bad) {
    RunResult r = run(skel_->progs.vxfed_egress, in);
    EXPECT_EQ(r.verdict, TC_ACT_OK);
    EXPECT_EQ(r.out, in) << first_difference(in, r.out);
    EXPECT_EQ(r.ctx.priority, 0u);
  }
  for (uint32_t s = 0; s < VXFED_CLASS_SLOTS; s++) EXPECT_EQ(class_counter(s).packets, 0u) << "slot " << s;
  // And the catch-all does mark a good packet, keeping ECN.
  RunResult r = run(skel_->progs.vxfed_egress, udp4(1, 2, 8, {.tos = 0x01}));
  EXPECT_EQ(r.out, udp4(1, 2, 8, {.tos = 46 << 2 | 0x01}));
  EXPECT_TRUE(ipv4_checksum_ok(r.out));
  EXPECT_EQ(r.ctx.priority, 6u);
}

TEST_F(TcPrograms, MarkingOffLeavesEverythingAlone) {
  set_config(0);
  standard_rules();
  Bytes in = udp4(50000, 4791);
  RunResult r = run(skel_->progs.vxfed_egress, in);
  EXPECT_EQ(r.verdict, TC_ACT_OK);
  EXPECT_EQ(r.out, in);
  EXPECT_EQ(class_counter(0).packets, 0u);
}

// ---------------------------------------------------------------- rate decisions

struct RateStep {
  const char* description;
  uint64_t at_ns;      // test clock
  size_t frame_len;    // bytes (skb->len)
  int verdict;
};

Bytes frame_of(size_t len) { return udp4(1000, 2000, len - 14 - 20 - 8); }

// Ingress policer: 1,000,000 B/s, burst 3000 B. A packet conforms when the bucket holds its
// whole length; non-conforming packets are dropped and take no tokens.
TEST_F(TcPrograms, IngressTokenBucketDecisions) {
  set_config(VXFED_CFG_INGRESS_LIMIT, 0, 0, 1'000'000, 3000);
  const RateStep steps[] = {
      {"full bucket: 1st 1000 B conforms", 1 * kSec, 1000, TC_ACT_OK},
      {"2nd 1000 B at the same instant conforms", 1 * kSec, 1000, TC_ACT_OK},
      {"3rd 1000 B empties the bucket exactly", 1 * kSec, 1000, TC_ACT_OK},
      {"4th exceeds: dropped", 1 * kSec, 1000, TC_ACT_SHOT},
      {"500 us later only 500 B refilled: 1000 B still exceeds", 1 * kSec + 500'000, 1000, TC_ACT_SHOT},
      {"1 ms after emptying, 1000 B refilled: conforms", 1 * kSec + 1'000'000, 1000, TC_ACT_OK},
      {"a 100 B packet right after: bucket empty, dropped", 1 * kSec + 1'000'000, 100, TC_ACT_SHOT},
      {"100 us later 100 B conform", 1 * kSec + 1'100'000, 100, TC_ACT_OK},
      {"10 s idle refills only up to the burst: 3000 B conforms", 11 * kSec, 3000, TC_ACT_OK},
      {"... and nothing is left", 11 * kSec, 100, TC_ACT_SHOT},
      {"a frame larger than the burst never conforms", 20 * kSec, 3001 + 14 + 28, TC_ACT_SHOT},
  };
  uint64_t passed = 0, dropped = 0;
  for (const auto& s : steps) {
    SCOPED_TRACE(s.description);
    set_now(s.at_ns);
    Bytes in = frame_of(s.frame_len);
    RunResult r = run(skel_->progs.vxfed_ingress, in);
    EXPECT_EQ(r.verdict, s.verdict);
    (s.verdict == TC_ACT_OK ? passed : dropped)++;
    if (s.verdict == TC_ACT_OK) {
      EXPECT_EQ(r.out, in) << "a passing packet must be unchanged";
    }
  }
  EXPECT_EQ(stat(VXFED_STAT_INGRESS_PASSED), passed);
  EXPECT_EQ(stat(VXFED_STAT_INGRESS_DROPPED), dropped);
}

// Egress policer (kernels without fq): the same bucket, its own state, and marking still runs.
TEST_F(TcPrograms, EgressPolicerDecisionsAndMarking) {
  set_config(VXFED_CFG_EGRESS_LIMIT | VXFED_CFG_EGRESS_POLICE | VXFED_CFG_MARK, 1'000'000, 2000,
             /*ingress, must stay independent*/ 1'000'000, 1000);
  standard_rules();
  set_now(5 * kSec);
  Bytes roce = udp4(1, 4791, 1000 - 42);
  RunResult a = run(skel_->progs.vxfed_egress, roce);
  RunResult b = run(skel_->progs.vxfed_egress, roce);
  RunResult c = run(skel_->progs.vxfed_egress, roce);
  EXPECT_EQ(a.verdict, TC_ACT_OK);
  EXPECT_EQ(b.verdict, TC_ACT_OK);
  EXPECT_EQ(c.verdict, TC_ACT_SHOT);
  EXPECT_EQ(a.out, udp4(1, 4791, 1000 - 42, {.tos = 26 << 2}));
  EXPECT_EQ(stat(VXFED_STAT_EGRESS_POLICED), 1u);
  EXPECT_EQ(class_counter(0).packets, 3u) << "dropped packets are still classified";
  // The ingress bucket was not spent by egress traffic.
  EXPECT_EQ(run(skel_->progs.vxfed_ingress, frame_of(1000)).verdict, TC_ACT_OK);
  set_now(5 * kSec + 1'000'000);
  EXPECT_EQ(run(skel_->progs.vxfed_egress, roce).verdict, TC_ACT_OK) << "1 ms refills 1000 B";
}

// EDT: 1,000,000 B/s (1 us per byte), burst 2000 B. A packet within the burst leaves now
// (tstamp untouched); later ones get skb->tstamp = the time their bytes are paid for.
TEST_F(TcPrograms, EgressEarliestDepartureTimes) {
  set_config(VXFED_CFG_EGRESS_LIMIT, 1'000'000, 2000);
  const uint64_t t0 = 7 * kSec;
  set_now(t0);
  struct Step {
    const char* description;
    uint64_t tstamp_in;
    int verdict;
    uint64_t tstamp_out;
  };
  const Step steps[] = {
      {"1st 1000 B inside the burst: leaves now", 0, TC_ACT_OK, 0},
      {"2nd 1000 B uses up the burst: leaves now", 0, TC_ACT_OK, 0},
      {"3rd 1000 B departs 1 ms later", 0, TC_ACT_OK, t0 + 1'000'000},
      {"4th departs 2 ms later", 0, TC_ACT_OK, t0 + 2'000'000},
      {"a socket's own later tstamp (TCP pacing) is kept when it is later", t0 + 50'000'000, TC_ACT_OK,
       t0 + 50'000'000},
  };
  for (const auto& s : steps) {
    SCOPED_TRACE(s.description);
    Bytes in = frame_of(1000);
    RunResult r = run(skel_->progs.vxfed_egress, in, s.tstamp_in);
    EXPECT_EQ(r.verdict, s.verdict);
    EXPECT_EQ(r.ctx.tstamp, s.tstamp_out);
    EXPECT_EQ(r.out, in);
  }
  EXPECT_EQ(stat(VXFED_STAT_EGRESS_PASSED), 3u);
  EXPECT_EQ(stat(VXFED_STAT_EGRESS_DELAYED), 2u);
}

TEST_F(TcPrograms, EgressBeyondTheHorizonIsDropped) {
  // 1000 B/s: a 1500-byte frame takes 1.5 s; the third would wait beyond the 2 s horizon.
  set_config(VXFED_CFG_EGRESS_LIMIT, 1000, 1500);
  const uint64_t t0 = 9 * kSec;
  set_now(t0);
  Bytes in = frame_of(1500);
  RunResult a = run(skel_->progs.vxfed_egress, in);
  RunResult b = run(skel_->progs.vxfed_egress, in);
  RunResult c = run(skel_->progs.vxfed_egress, in);
  EXPECT_EQ(a.verdict, TC_ACT_OK);
  EXPECT_EQ(a.ctx.tstamp, 0u);
  EXPECT_EQ(b.verdict, TC_ACT_OK);
  EXPECT_EQ(b.ctx.tstamp, t0 + 1'500'000'000);
  EXPECT_EQ(c.verdict, TC_ACT_SHOT);
  EXPECT_EQ(stat(VXFED_STAT_EGRESS_DROPPED), 1u);
  // The dropped packet did not push the schedule: 1.5 s later the next one fits again.
  set_now(t0 + 1'500'000'000);
  RunResult d = run(skel_->progs.vxfed_egress, in);
  EXPECT_EQ(d.verdict, TC_ACT_OK);
  EXPECT_EQ(d.ctx.tstamp, t0 + 3'000'000'000);
}

// The default limits queue rather than drop (docs/bpf.md, "Rate limits"): egress passes to
// the interface's tbf however far past the burst; ingress is redirected to the pod's ifb.
// 1000 B/s with a 1500 B burst: a policer would drop the second frame.
TEST_F(TcPrograms, ShapedLimitsQueueInsteadOfDropping) {
  vxfed_config c{};
  c.flags = VXFED_CFG_EGRESS_LIMIT | VXFED_CFG_EGRESS_QDISC | VXFED_CFG_INGRESS_LIMIT | VXFED_CFG_INGRESS_SHAPE |
            VXFED_CFG_MARK;
  c.abi_version = VXFED_BPF_ABI_VERSION;
  c.egress_rate_bps = c.ingress_rate_bps = 1000;
  c.egress_burst_bytes = c.ingress_burst_bytes = 1500;
  c.ingress_ifindex = 1;
  uint32_t k = 0;
  ASSERT_EQ(bpf_map_update_elem(bpf_map__fd(skel_->maps.config), &k, &c, BPF_ANY), 0);
  standard_rules();
  set_now(3 * kSec);
  Bytes roce = udp4(1, 4791, 1500 - 42);
  for (int i = 0; i < 5; i++) {
    SCOPED_TRACE(i);
    RunResult e = run(skel_->progs.vxfed_egress, roce);
    EXPECT_EQ(e.verdict, TC_ACT_OK);
    EXPECT_EQ(e.ctx.tstamp, 0u) << "no departure time: the tbf holds the packet";
    EXPECT_EQ(e.out, udp4(1, 4791, 1500 - 42, {.tos = 26 << 2})) << "marking still runs";
    EXPECT_EQ(run(skel_->progs.vxfed_ingress, frame_of(1500)).verdict, TC_ACT_REDIRECT);
  }
  EXPECT_EQ(stat(VXFED_STAT_EGRESS_PASSED), 5u);
  EXPECT_EQ(stat(VXFED_STAT_EGRESS_POLICED), 0u);
  EXPECT_EQ(stat(VXFED_STAT_INGRESS_SHAPED), 5u);
  EXPECT_EQ(stat(VXFED_STAT_INGRESS_DROPPED), 0u);
  EXPECT_EQ(stat(VXFED_STAT_INGRESS_PASSED), 0u);
}

TEST_F(TcPrograms, NoLimitsConfiguredPassesEverything) {
  set_config(0);
  set_now(kSec);
  for (int i = 0; i < 50; i++) {
    EXPECT_EQ(run(skel_->progs.vxfed_egress, frame_of(1500)).verdict, TC_ACT_OK);
    EXPECT_EQ(run(skel_->progs.vxfed_ingress, frame_of(1500)).verdict, TC_ACT_OK);
  }
  EXPECT_EQ(stat(VXFED_STAT_INGRESS_PASSED), 50u);
  EXPECT_EQ(stat(VXFED_STAT_EGRESS_PASSED), 50u);
}

}  // namespace
}  // namespace vxfed::bpf::test
