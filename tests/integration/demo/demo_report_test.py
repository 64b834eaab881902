"""Unit: the latency suite's parsers and report logic, on tool output recorded from real
iperf3 3.12 and sockperf 3.7 runs (trimmed). No root, no namespaces."""

import json
import unittest
from unittest import mock

from vxfed_harness.latency import cpu_use, measure, parsers, report
from vxfed_harness.twocluster.plan import df_ping_payload, make_plan

SOCKPERF_OUT = """sockperf: == version #3.7-no.git ==
sockperf: [Total Run] RunTime=1.001 sec; Warm up time=400 msec; SentMessages=31223; ReceivedMessages=31222
sockperf: ========= Printing statistics for Server No: 0
sockperf: [Valid Duration] RunTime=0.542 sec; SentMessages=16660; ReceivedMessages=16660
sockperf: \x1b[2;35m====> avg-latency=16.260 (std-dev=19.010)\x1b[0m
sockperf: # dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0
sockperf: Summary: Latency is 16.260 usec
sockperf: \x1b[2;35mTotal 16660 observations\x1b[0m; each percentile contains 166.60 observations
sockperf: ---> <MAX> observation = 2042.874
sockperf: ---> percentile 99.999 = 2042.874
sockperf: ---> percentile 99.990 =  412.514
sockperf: ---> percentile 99.900 =   63.595
sockperf: ---> percentile 99.000 =   42.365
sockperf: ---> percentile 90.000 =   15.188
sockperf: ---> percentile 75.000 =   14.913
sockperf: ---> percentile 50.000 =   14.748
sockperf: ---> percentile 25.000 =   14.617
sockperf: ---> <MIN> observation =    9.698
"""

FULL_LOG = SOCKPERF_OUT + """------------------------------
packet, txTime(sec), rxTime(sec), latency(usec)
0, 2.479140638, 2.479159504, 9.433
1, 2.479159524, 2.479178581, 9.528
2, 2.479178601, 2.479197637, 30.5
------------------------------
"""

IPERF_TCP = {"start": {}, "intervals": [], "end": {
    "streams": [{}, {}, {}, {}],
    "sum_sent": {"seconds": 4.0, "bytes": 4044773006, "bits_per_second": 8.1e9, "retransmits": 425},
    "sum_received": {"seconds": 4.0, "bytes": 4040000000, "bits_per_second": 8.07e9}}}

IPERF_UDP_312 = {"start": {}, "intervals": [], "end": {
    "streams": [{"udp": {}}],
    "sum": {"seconds": 2.0, "bytes": 125000000, "bits_per_second": 4.99e8, "jitter_ms": 0.0273,
            "lost_packets": 3, "packets": 89000, "lost_percent": 0.00337, "sender": True}}}


class Parsers(unittest.TestCase):
    def test_sockperf_summary(self):
        s = parsers.parse_sockperf_summary(SOCKPERF_OUT)
        self.assertEqual(s["observations"], 16660)
        self.assertAlmostEqual(s["percentiles"][99.0], 42.365)
        self.assertAlmostEqual(s["percentiles"][99.9], 63.595)
        self.assertAlmostEqual(s["percentiles"][50.0], 14.748)
        self.assertEqual(s["dropped"], 0)
        self.assertAlmostEqual(s["max"], 2042.874)

    def test_sockperf_without_results_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "no latency percentiles"):
            parsers.parse_sockperf_summary("sockperf: ERROR: connect() failed\n")

    def test_full_log(self):
        self.assertEqual(parsers.parse_sockperf_full_log(FULL_LOG), [9.433, 9.528, 30.5])
        with self.assertRaises(ValueError):
            parsers.parse_sockperf_full_log(SOCKPERF_OUT)

    def test_iperf3_tcp(self):
        r = parsers.parse_iperf3_tcp(json.dumps(IPERF_TCP))
        self.assertAlmostEqual(r["gbps"], 8.07)
        self.assertEqual(r["retransmits"], 425)
        self.assertEqual(r["streams"], 4)

    def test_iperf3_udp_312_and_newer(self):
        r = parsers.parse_iperf3_udp(json.dumps(IPERF_UDP_312))
        self.assertAlmostEqual(r["loss_pct"], 0.00337)
        self.assertEqual(r["lost_packets"], 3)
        newer = json.loads(json.dumps(IPERF_UDP_312))
        newer["end"]["sum_received"] = dict(newer["end"]["sum"], lost_percent=1.5)
        self.assertAlmostEqual(parsers.parse_iperf3_udp(json.dumps(newer))["loss_pct"], 1.5)

    def test_iperf3_errors(self):
        with self.assertRaisesRegex(ValueError, "unable to connect"):
            parsers.parse_iperf3_tcp('{"start": {}, "error": "unable to connect to server"}')
        with self.assertRaisesRegex(ValueError, "did not print JSON"):
            parsers.parse_iperf3_tcp("iperf3: error")
        no_packets = json.loads(json.dumps(IPERF_UDP_312))
        no_packets["end"]["sum"]["packets"] = 0
        with self.assertRaisesRegex(ValueError, "no datagrams"):
            parsers.parse_iperf3_udp(json.dumps(no_packets))

    def test_percentile_and_cdf(self):
        xs = [float(i) for i in range(1, 1001)]
        self.assertEqual(parsers.percentile(xs, 50), 500.0)
        self.assertEqual(parsers.percentile(xs, 99.9), 999.0)
        cdf = parsers.cdf_points(xs, max_points=100)
        self.assertEqual(cdf[-1], (1000.0, 1.0))
        self.assertLess(len(cdf), 130)
        self.assertTrue(all(b[1] > a[1] for a, b in zip(cdf, cdf[1:])))
        self.assertEqual(parsers.histogram([1, 2, 6, 11], 5.0), [(0.0, 2), (5.0, 1), (10.0, 1)])

    def test_nstat(self):
        self.assertEqual(parsers.parse_nstat("#kernel\nUdpRcvbufErrors  19  0.0\n"), {"UdpRcvbufErrors": 19})


class Report(unittest.TestCase):
    def test_ratio(self):
        self.assertAlmostEqual(report.ratio(2.0, 4.0), 0.5)
        self.assertIsNone(report.ratio(1.0, 0.0))
        self.assertIsNone(report.ratio(None, 1.0))

    def test_slo(self):
        v = {k: None for k in report.KEY_NAMES}
        v.update(udp_p99_us=999.0, tcp_p99_us=1000.0, udp_loss_pct=0.0)
        verdicts = {s["key"]: s["pass"] for s in report.slo_verdicts(v, "500M")}
        self.assertEqual(verdicts, {"udp_p99_us": True, "tcp_p99_us": False, "udp_loss_pct": True})
        v["udp_loss_pct"] = 0.01
        self.assertFalse([s for s in report.slo_verdicts(v, "500M") if s["key"] == "udp_loss_pct"][0]["pass"])
        self.assertIsNone(report.slo_verdicts({}, "1G")[0]["pass"])
        v["udp_loss_pct"] = 0.0
        starved = [s for s in report.slo_verdicts(v, "500M", udp_sent_mbps=318.0) if s["key"] == "udp_loss_pct"][0]
        self.assertFalse(starved["pass"])
        self.assertIn("inconclusive", starved["note"])
        ok = [s for s in report.slo_verdicts(v, "500M", udp_sent_mbps=499.9) if s["key"] == "udp_loss_pct"][0]
        self.assertTrue(ok["pass"])

    def test_rate(self):
        self.assertEqual(report.rate_mbps("500M"), 500.0)
        self.assertEqual(report.rate_mbps("1G"), 1000.0)
        self.assertEqual(report.rate_mbps("2000000"), 2.0)
        with self.assertRaisesRegex(ValueError, "not a number"):
            report.rate_mbps("fast")

    def test_suites_and_variants(self):
        self.assertEqual(report.parse_suites("latency,tcp1"), ["pp_udp", "pp_tcp", "tcp1"])
        self.assertEqual(report.parse_suites("all"), report.SUITES)
        with self.assertRaisesRegex(ValueError, "unknown suite"):
            report.parse_suites("tcp9")
        self.assertEqual(report.parse_variants("ours,kernel"), ["kernel", "ours"])
        self.assertEqual(report.parse_variants("ours,underlay,kernel"), ["underlay", "kernel", "ours"])
        with self.assertRaisesRegex(ValueError, "unknown variant"):
            report.parse_variants("calico")

    def test_figures(self):
        f = report.figures_from("pp_tcp", {"summary": parsers.parse_sockperf_summary(SOCKPERF_OUT)})
        self.assertEqual(f, {"tcp_p50_us": 14.748, "tcp_p99_us": 42.365, "tcp_p999_us": 63.595})

    def test_tcp_figures_say_what_the_throughput_cost(self):
        f = report.figures_from("tcp1", {"gbps": 6.0, "busy_cpus": 1.5})
        self.assertEqual(f, {"tcp_gbps_1": 6.0, "tcp_cpus_1": 1.5, "tcp_gbps_per_cpu_1": 4.0})
        # Results without the CPU figure (recorded before it existed) still give the rate.
        self.assertEqual(report.figures_from("tcp4", {"gbps": 2.0}), {"tcp_gbps_4": 2.0})

    def test_table_lists_every_key(self):
        doc = {"ours": {k: None for k in report.KEY_NAMES}, "kernel": {k: 1.0 for k in report.KEY_NAMES},
               "ratio": {k: None for k in report.KEY_NAMES}, "spread": {}}
        text = report.table(doc)
        for _, label, _ in report.KEYS:
            self.assertIn(label, text)


class Overhead(unittest.TestCase):
    """Each overlay against no overlay (issue 35): the share of the underlay's throughput an
    overlay loses, the share of its latency (or CPUs, jitter) it adds."""

    def test_throughput_is_the_share_lost(self):
        self.assertAlmostEqual(report.overhead("tcp_gbps_1", 8.0, 10.0), 0.2)
        self.assertAlmostEqual(report.overhead("tcp_gbps_per_cpu_4", 12.0, 10.0), -0.2)   # overlay faster: negative

    def test_latency_and_cpu_are_the_share_added(self):
        self.assertAlmostEqual(report.overhead("udp_p99_us", 30.0, 20.0), 0.5)
        self.assertAlmostEqual(report.overhead("tcp_cpus_1", 1.5, 2.0), -0.25)
        self.assertAlmostEqual(report.overhead("tcp_p50_us", 10.0, 10.0), 0.0)

    def test_missing_side_or_zero_underlay_is_none(self):
        self.assertIsNone(report.overhead("udp_p50_us", None, 5.0))
        self.assertIsNone(report.overhead("udp_p50_us", 5.0, None))
        self.assertIsNone(report.overhead("udp_loss_pct", 0.1, 0.0))

    def test_overheads_per_overlay_and_key(self):
        medians = {"underlay": {k: None for k in report.KEY_NAMES}, "kernel": {k: None for k in report.KEY_NAMES},
                   "ours": {k: None for k in report.KEY_NAMES}}
        medians["underlay"].update(tcp_gbps_4=20.0, udp_p50_us=10.0)
        medians["kernel"].update(tcp_gbps_4=18.0, udp_p50_us=11.0)
        medians["ours"].update(tcp_gbps_4=9.0, udp_p50_us=25.0)
        o = report.overheads(medians)
        self.assertEqual(set(o), {"kernel", "ours"})
        self.assertEqual(set(o["ours"]), set(report.KEY_NAMES))
        self.assertAlmostEqual(o["kernel"]["tcp_gbps_4"], 0.1)
        self.assertAlmostEqual(o["ours"]["tcp_gbps_4"], 0.55)
        self.assertAlmostEqual(o["kernel"]["udp_p50_us"], 0.1)
        self.assertAlmostEqual(o["ours"]["udp_p50_us"], 1.5)
        self.assertIsNone(o["ours"]["tcp_gbps_1"])
        # Without the underlay nothing has an overhead.
        self.assertTrue(all(v is None for v in report.overheads({"ours": medians["ours"]})["ours"].values()))
        claims = {c["key"]: c for c in report.overhead_claim_verdicts(o)}
        self.assertFalse(claims["tcp_gbps_4"]["met"])
        self.assertIsNone(claims["tcp_gbps_1"]["met"])
        o["ours"]["tcp_p99_us"] = 0.049
        self.assertTrue(report.overhead_claim_verdicts(o)[-1]["met"])

    def test_table_shows_the_underlay_and_both_overheads_only_when_measured(self):
        none = {k: None for k in report.KEY_NAMES}
        doc = {"ours": dict(none, tcp_gbps_1=5.0), "kernel": dict(none, tcp_gbps_1=15.0),
               "underlay": dict(none, tcp_gbps_1=20.0), "ratio": dict(none, tcp_gbps_1=1 / 3), "spread": {}}
        doc["overhead"] = report.overheads(doc)
        lines = report.table(doc).splitlines()
        self.assertIn("kernel overhead", lines[0])
        self.assertIn("ours overhead", lines[0])
        row = next(l.split() for l in lines if l.startswith("TCP 1 stream (Gbit/s)"))
        self.assertEqual(row[-6:], ["5.00", "15.00", "0.33", "20.00", "+25%", "+75%"])
        doc["underlay"] = dict(none)
        self.assertNotIn("overhead", report.table(doc))
        claim_doc = {"slo": {}, "goals": [], "overhead_claims": report.overhead_claim_verdicts(doc["overhead"])}
        claim = [l for l in report.slo_lines(claim_doc) if l.startswith("claim")]
        self.assertEqual(len(claim), 1)
        self.assertIn("+75%  not met", claim[0])


class CpuUse(unittest.TestCase):
    # /proc/stat's aggregate line: user nice system idle iowait irq softirq steal guest guest_nice
    BEFORE = "cpu  1000 10 500 9000 40 5 100 700 0 0\ncpu0 ...\n"
    AFTER = "cpu  1300 10 650 9100 45 10 140 900 0 0\ncpu0 ...\n"

    def test_busy_counts_user_system_irq_softirq_not_idle_iowait_steal(self):
        before = cpu_use.CpuSnapshot(cpu_use.parse_cpu_line(self.BEFORE.splitlines()[0]), at=10.0)
        after = cpu_use.CpuSnapshot(cpu_use.parse_cpu_line(self.AFTER.splitlines()[0]), at=12.0)
        # 300 user + 150 system + 5 irq + 40 softirq = 495 ticks in 2 s at 100 Hz
        self.assertAlmostEqual(cpu_use.busy_cpus(before, after, ticks_per_second=100), 2.475)
        self.assertIsNone(cpu_use.busy_cpus(after, after, ticks_per_second=100))

    def test_refuses_a_line_that_is_not_the_aggregate(self):
        with self.assertRaisesRegex(ValueError, "aggregate cpu line"):
            cpu_use.parse_cpu_line("cpu0 1 2 3 4 5 6 7")

    def test_snapshot_of_this_machine(self):
        a = cpu_use.snapshot()
        sum(range(2_000_000))  # some CPU, so the busy count moves
        b = cpu_use.snapshot()
        self.assertGreaterEqual(b.busy_ticks, a.busy_ticks)
        self.assertGreater(b.at, a.at)


class Plan(unittest.TestCase):
    def test_plan(self):
        p = make_plan(9000, 2)
        self.assertEqual(p.pod_mtu, 8950)
        self.assertEqual(p.a.gateway, "10.244.0.1")
        self.assertEqual([x.ip for x in p.b.pods], ["10.245.0.10", "10.245.0.11"])
        self.assertEqual((p.a.asn, p.b.asn), (65001, 65002))
        self.assertEqual(df_ping_payload(8950), 8922)
        self.assertEqual(make_plan(1500).pod_mtu, 1450)
        with self.assertRaisesRegex(ValueError, "not supported"):
            make_plan(4000)

    def test_nodes_per_cluster(self):
        p = make_plan(9000, 2, nodes_per_cluster=3)
        self.assertEqual([n.short for n in p.a.nodes], ["a1", "a2", "a3"])
        self.assertEqual([n.underlay_ip for n in p.b.nodes], ["198.18.0.21", "198.18.0.22", "198.18.0.23"])
        self.assertEqual((p.a.reflector_ip, p.b.reflector_ip), ("198.18.0.10", "198.18.0.20"))
        self.assertEqual([n.block for n in p.a.nodes], ["10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"])
        self.assertEqual(p.a.nodes[1].gateway, "10.244.1.1")
        # pods numbered across the cluster, node by node
        self.assertEqual([(x.short, x.node, x.ip) for x in p.b.pods][2:4],
                         [("podB2", "b2", "10.245.1.10"), ("podB3", "b2", "10.245.1.11")])
        self.assertEqual(len({n.vtep_mac for n in p.nodes}), 6)
        with self.assertRaisesRegex(ValueError, "nodes per cluster"):
            make_plan(9000, 1, nodes_per_cluster=6)


class SockperfRetry(unittest.TestCase):
    """sockperf's clock jumped (seen once in CI): that run is taken again, once; anything else
    is a measurement failure at once."""
    CLOCK = measure.MeasurementError("sockperf ping-pong UDP: sockperf printed no latency "
                                     "percentiles (exit 0) (No valid observations found)")
    GOOD = {"summary": {"percentiles": {99.0: 42.0}, "observations": 3}, "samples": [1.0, 2.0]}

    def pingpong(self, outcomes):
        with mock.patch.object(measure, "_sockperf_pingpong_once", side_effect=outcomes) as once:
            try:
                return measure.sockperf_pingpong(None, None, measure.SuiteOptions(), None, tcp=False)
            finally:
                self.calls = once.call_count

    def test_clock_anomaly_is_taken_again_once_and_recorded(self):
        result = self.pingpong([self.CLOCK, dict(self.GOOD)])
        self.assertEqual(self.calls, 2)
        self.assertIn("No valid observations found", result["retried_after"])
        self.assertEqual(result["samples"], [1.0, 2.0])

    def test_clock_anomaly_twice_fails(self):
        with self.assertRaisesRegex(measure.MeasurementError, "No valid observations"):
            self.pingpong([self.CLOCK, self.CLOCK])
        self.assertEqual(self.calls, 2)

    def test_other_failures_are_not_retried(self):
        with self.assertRaisesRegex(measure.MeasurementError, "did not listen"):
            self.pingpong([measure.MeasurementError("sockperf server in podB1 did not listen"), self.GOOD])
        self.assertEqual(self.calls, 1)

    def test_a_clean_run_is_not_marked(self):
        self.assertNotIn("retried_after", self.pingpong([dict(self.GOOD)]))


if __name__ == "__main__":
    unittest.main()
