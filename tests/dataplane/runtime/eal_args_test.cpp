// The dry-run reading of EAL arguments (dataplane/runtime/eal_args.cpp) behind
// `vxfed-dataplane --check`: lcore counting, unknown options, and the forwarder's own rules
// (lcores for --queues, the uplink's device, af_packet qpairs).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "dataplane/runtime/eal_args.hpp"

namespace vxfed::dataplane {
namespace {

using Args = std::vector<std::string>;

Options options(unsigned queues, const std::string& uplink = "net_af_packet0") {
  Options o;
  o.queues = queues;
  o.uplink = uplink;
  return o;
}

// A machine with every CPU EAL can name: only the rules about the arguments themselves count.
std::set<unsigned> every_cpu() {
  std::set<unsigned> all;
  for (unsigned c = 0; c < 1024; ++c) all.insert(c);
  return all;
}

std::string verdict(const Args& eal, const Options& o, const std::set<unsigned>& cpus = every_cpu()) {
  auto s = parse_eal_args(eal);
  if (!s) return s.error();
  auto st = check_eal_for_options(*s, o, cpus);
  return st ? "ok" : st.error();
}

TEST(EalArgs, CountsLcores) {
  EXPECT_EQ(*count_corelist("2,3"), 2u);
  EXPECT_EQ(*count_corelist("0-3,5"), 5u);
  EXPECT_EQ(*count_corelist("1,1,2"), 2u);
  EXPECT_FALSE(count_corelist("3-1").ok());
  EXPECT_FALSE(count_corelist("a").ok());
  EXPECT_FALSE(count_corelist("").ok());
  EXPECT_EQ(*count_lcore_map("0@0,1@1,2@1"), 3u);
  EXPECT_EQ(*count_lcore_map("(0-2)@(0,1)"), 3u);
  EXPECT_EQ(*count_lcore_map("0-3"), 4u);
  EXPECT_EQ(*count_lcore_map("(0,4)@1,2"), 3u);
  EXPECT_FALSE(count_lcore_map("(0-2@1").ok());
  EXPECT_FALSE(count_lcore_map("0@0,").ok());
  EXPECT_FALSE(count_lcore_map("x").ok());
  auto mask = parse_eal_args({"-c", "0x7"});
  ASSERT_TRUE(mask.ok()) << mask.error();
  EXPECT_EQ(*mask->lcores, 3u);
  auto joined = parse_eal_args({"-l1-2"});
  ASSERT_TRUE(joined.ok()) << joined.error();
  EXPECT_EQ(*joined->lcores, 2u);
  auto none = parse_eal_args({"--in-memory"});
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_FALSE(none->lcores.has_value());  // EAL takes the cpuset
}

TEST(EalArgs, ReadsDevicesAndFlags) {
  auto s = parse_eal_args({"--no-huge", "-m", "1024", "--no-pci", "--file-prefix=node-a",
                           "--vdev", "net_af_packet0,iface=up0,qpairs=2", "--vdev=net_null1", "--log-level", "lib.eal:debug"});
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_TRUE(s->no_huge);
  EXPECT_TRUE(s->no_pci);
  EXPECT_EQ(s->file_prefix, "node-a");
  ASSERT_EQ(s->vdevs.size(), 2u);
  EXPECT_EQ(s->vdevs[0].name, "net_af_packet0");
  EXPECT_EQ(s->vdevs[0].kvargs.at("iface"), "up0");
  EXPECT_EQ(s->vdevs[0].kvargs.at("qpairs"), "2");
  EXPECT_EQ(s->vdevs[1].name, "net_null1");
}

TEST(EalArgs, RefusesWhatEalRefuses) {
  EXPECT_EQ(parse_eal_args({"--bogus"}).error(), "EAL option --bogus is not an option of DPDK 22.11's EAL");
  EXPECT_EQ(parse_eal_args({"-x", "1"}).error(), "EAL option -x is not an option of DPDK 22.11's EAL");
  EXPECT_EQ(parse_eal_args({"--vdev"}).error(), "EAL option --vdev needs a value");
  EXPECT_EQ(parse_eal_args({"--no-huge=1"}).error(), "EAL option --no-huge takes no value");
  EXPECT_EQ(parse_eal_args({"eth0"}).error(),
            "'eth0' before `--` is not an EAL option (the forwarder's options follow `--`)");
  EXPECT_NE(parse_eal_args({"-l", "0-1", "-c", "3"}).error().find("already given by -l"), std::string::npos);
  EXPECT_NE(parse_eal_args({"-m", "lots"}).error().find("is not a number"), std::string::npos);
  EXPECT_NE(parse_eal_args({"--iova-mode", "io"}).error().find("expected pa or va"), std::string::npos);
  EXPECT_NE(parse_eal_args({"-a", "0000:03:00.0", "-b", "0000:04:00.0"}).error().find("cannot be used together"),
            std::string::npos);
  EXPECT_NE(parse_eal_args({"--in-memory", "--no-huge"}).error().find("without hugepages"), std::string::npos);
}

TEST(EalArgs, TheForwardersOwnRules) {
  const Args af2{"-l", "2,3", "--vdev", "net_af_packet0,iface=eth1,qpairs=2"};
  EXPECT_EQ(verdict(af2, options(2)),
            "--queues 2 needs 3 EAL lcores (the control thread + one per worker), -l '2,3' gives 2: e.g. -l 1-3");
  EXPECT_EQ(verdict({"-l", "1-3", "--vdev", "net_af_packet0,iface=eth1,qpairs=2"}, options(2)), "ok");
  EXPECT_EQ(verdict({"--vdev", "net_af_packet0,iface=eth1,qpairs=2"}, options(2)), "ok");  // cpuset decides
  EXPECT_EQ(verdict({"-l", "0-2", "--vdev", "net_af_packet0,iface=eth1"}, options(2)),
            "uplink net_af_packet0 is an af_packet port with qpairs=1 but --queues is 2: give qpairs=2 "
            "(every af_packet queue must have a worker)");
  EXPECT_EQ(verdict({"-l", "0-1", "--vdev", "net_af_packet0,qpairs=1"}, options(1)),
            "--vdev net_af_packet0: an af_packet port needs iface=INTERFACE");
  EXPECT_EQ(verdict({"-l", "0-1", "--vdev", "net_null0"}, options(1, "net_null1")),
            "--uplink net_null1: no EAL option creates this device (give it with --vdev net_null1,... or -a net_null1)");
  EXPECT_EQ(verdict({"-l", "0-1"}, options(1, "0000:03:00.0")), "ok");  // probed from the PCI bus
  EXPECT_NE(verdict({"-l", "0-1", "--no-pci"}, options(1, "0000:03:00.0")), "ok");
  EXPECT_EQ(verdict({"-l", "0-1", "-a", "0000:03:00.0"}, options(1, "0000:03:00.0")), "ok");
  EXPECT_EQ(verdict({"-l", "0-1"}, options(1, "0")), "ok");  // a port index
  // --uplink-iface: the dataplane's own sockets, no EAL device; lcores still count.
  Options sockets = options(2, "");
  sockets.uplink_iface = "up0";
  EXPECT_EQ(verdict({"-l", "0-2", "--no-pci"}, sockets), "ok");
  EXPECT_NE(verdict({"-l", "0-1", "--no-pci"}, sockets), "ok");
}

// The lcore list against the CPUs the process may run on (a container's cpuset, taskset): the
// count alone said "valid" for -l 0-2 with --queues 2 on a 2-CPU set, which EAL cannot start.
TEST(EalArgs, LcoresOnCpusOfTheAffinity) {
  const std::set<unsigned> two{0, 1};
  const std::string af2 = "net_af_packet0,iface=eth1,qpairs=2";
  EXPECT_EQ(verdict({"-l", "0-2", "--vdev", af2}, options(2), two),
            "-l '0-2': CPU 2 is not in this process's CPU affinity (0-1), so EAL cannot start an lcore there; "
            "name CPUs of 0-1, or leave out -l and EAL takes the affinity's CPUs");
  EXPECT_EQ(verdict({"-l", "0-2", "--vdev", af2}, options(2), {0, 1, 2, 3}), "ok");
  EXPECT_EQ(verdict({"-l", "4,6-7", "--vdev", af2}, options(2), {4, 5, 7}).substr(0, 31),
            "-l '4,6-7': CPU 6 is not in thi");
  EXPECT_NE(verdict({"-c", "0x7", "--vdev", af2}, options(2), two).find("-c '0x7': CPU 2 "), std::string::npos);
  EXPECT_EQ(verdict({"-c", "0x13", "--vdev", af2}, options(2), {0, 1, 4}), "ok");
  // --lcores: the CPUs after '@' count, not the lcore numbers (the harness runs 3 lcores on 2 CPUs).
  EXPECT_EQ(verdict({"--lcores", "0@0,1@1,2@1", "--vdev", af2}, options(2), two), "ok");
  EXPECT_NE(verdict({"--lcores", "0@0,1@1,2@2", "--vdev", af2}, options(2), two).find("--lcores '0@0,1@1,2@2': CPU 2 "),
            std::string::npos);
  EXPECT_NE(verdict({"--lcores", "(0-2)@(0-3)", "--vdev", af2}, options(2), two).find("CPU 2-3 "), std::string::npos);
  // No lcore list: EAL takes the affinity's CPUs, whatever the machine it is checked on.
  EXPECT_EQ(verdict({"--vdev", af2}, options(2), {0}), "ok");
  // The process's own affinity is what the default reads.
  EXPECT_FALSE(process_cpus().empty());
}

}  // namespace
}  // namespace vxfed::dataplane
