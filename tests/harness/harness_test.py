"""Unit: the harness's pure parts. The dataplane's command line is the one docs/dataplane.md
gives; vxfedd's config writer produces what `vxfedd --check-config` accepts (and the checker
refuses a broken one, so the check can fail); a Topology that fails prints its dumps and
logs and still removes what it owns; a script of another checkout refuses the package. No
root, no namespaces."""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import vxfed_harness as t
from vxfed_harness import protowire as pw
from vxfed_harness import vxfedd
from vxfed_harness.dataplane import DataplaneLaunch, af_packet_vdev, lcore_map
from vxfed_harness.frr import Frr
from vxfed_harness.topology import Namespace


class DataplaneLaunchTest(unittest.TestCase):
    def test_the_documented_command_line(self):
        # docs/dataplane.md, "Running it": the example the tests and the forwarder demo run.
        argv = DataplaneLaunch(file_prefix="node-a", api_socket=Path("/run/vxfed/dp.sock"), vtep_ip="198.18.0.1",
                               uplink_iface="up0").argv("vxfed-dataplane")
        self.assertEqual(argv, [
            "vxfed-dataplane", "--lcores", "0@0,1@1", "--no-huge", "-m", "1024", "--no-pci", "--file-prefix", "node-a",
            "--", "--uplink-iface", "up0", "--vtep-ip", "198.18.0.1", "--mtu", "9000", "--queues", "1",
            "--api-socket", "/run/vxfed/dp.sock"])

    def test_the_uplink_through_dpdks_af_packet(self):
        argv = DataplaneLaunch(file_prefix="node-a", api_socket=Path("/run/vxfed/dp.sock"), vtep_ip="198.18.0.1",
                               uplink_iface="up0", uplink_pmd=True).argv("vxfed-dataplane")
        eal, ours = argv[1:argv.index("--")], argv[argv.index("--") + 1:]
        self.assertEqual(eal[-2:], ["--vdev", "net_af_packet0,iface=up0,qpairs=1,framesz=9216,blocksz=36864,framecnt=512"])
        self.assertEqual(ours[:2], ["--uplink", "net_af_packet0"])

    def test_options_and_devices(self):
        launch = DataplaneLaunch(file_prefix="p", api_socket=Path("s"), vtep_ip="198.18.0.1",
                                 vdevs=["net_null0,no-rx=1", "net_null1,no-rx=1"], uplink="net_null0", queues=2,
                                 underlay_subnet="198.18.0.0/24", tables_file=Path("t.json"),
                                 endpoint_ports={"bench0": "net_null1"}, eal_extra=["--log-level", "lib.eal:error"],
                                 extra=["--busy-poll"])
        argv = launch.argv("dp")
        eal, ours = argv[1:argv.index("--")], argv[argv.index("--") + 1:]
        self.assertEqual(eal[eal.index("--lcores") + 1], lcore_map(2))
        self.assertEqual([eal[i + 1] for i, a in enumerate(eal) if a == "--vdev"], launch.vdevs)
        self.assertEqual(eal[-2:], ["--log-level", "lib.eal:error"])
        for pair in (["--uplink", "net_null0"], ["--queues", "2"], ["--underlay-subnet", "198.18.0.0/24"],
                     ["--tables-file", "t.json"], ["--endpoint-port", "bench0=net_null1"]):
            i = ours.index(pair[0])
            self.assertEqual(ours[i:i + 2], pair)
        self.assertEqual(ours[-1], "--busy-poll")
        self.assertEqual(launch.runtime_dir(), Path("/var/run/dpdk/p"))

    def test_lcores_and_frames(self):
        cpus = os.cpu_count() or 1
        self.assertEqual(lcore_map(1), f"0@0,1@{1 % cpus}")
        self.assertEqual(lcore_map(3).split(","), ["0@0"] + [f"{i}@{i % cpus}" for i in (1, 2, 3)])
        self.assertIn("framesz=2048,blocksz=8192", af_packet_vdev("ul0", mtu=1500))
        self.assertIn("qpairs=2", af_packet_vdev("ul0", queues=2))

    def test_shell_entry_point(self):
        out = subprocess.run([sys.executable, "-m", "vxfed_harness.dataplane", "--file-prefix", "node-a",
                              "--uplink-iface", "up0", "--vtep-ip", "198.18.0.1", "--api-socket", "/run/vxfed/dp.sock",
                              "--build-dir", "/b"], capture_output=True, text=True, check=True)
        self.assertEqual(out.stderr, "")
        self.assertEqual(out.stdout.splitlines(), DataplaneLaunch(
            file_prefix="node-a", api_socket=Path("/run/vxfed/dp.sock"), vtep_ip="198.18.0.1",
            uplink_iface="up0").argv("/b/dataplane/vxfed-dataplane"))


class VxfeddConfigTest(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="vxfed-harness-test-"))
        self.vxfedd = t.require_binary("control/vxfedd")

    def tearDown(self):
        subprocess.run(["rm", "-rf", str(self.dir)], check=False)

    def check(self, cfg: dict) -> subprocess.CompletedProcess:
        path = self.dir / "vxfedd.yaml"
        path.write_text(json.dumps(cfg))
        return subprocess.run([str(self.vxfedd), "--check-config", str(path)], capture_output=True, text=True)

    def node_config(self) -> dict:
        frr = Frr(Namespace(None, None), self.dir / "frr")
        bgp = vxfedd.bgp_section(65001, "198.18.0.1",
                                 peers=[{"address": "198.18.0.2", "remote_asn": 65002, "cluster": "cluster-b",
                                         "network": "fed", "keepalive": 1, "hold": 3}],
                                 clusters={"cluster-b": ["10.245.0.0/16"]}, frr=frr.adapter_section(),
                                 graceful_restart=False, fpm={"resync_settle_ms": 1000, "resync_min_ms": 2000})
        return vxfedd.config("node-a", "198.18.0.1", "cluster-a", ["10.244.0.0/16"], self.dir / "dp.sock",
                             socket=self.dir / "vxfedd.sock", state_dir=self.dir / "state", asn=65001,
                             networks=[{"name": "fed", "vni": 1001, "subnet": "10.244.0.0/16"}], bgp=bgp)

    def test_a_node_config_is_valid(self):
        res = self.check(self.node_config())
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("valid (1 networks", res.stdout)

    def test_a_broken_config_is_refused(self):
        cfg = self.node_config()
        cfg["bgp"]["peers"][0]["remote_asn"] = "x"
        res = self.check(cfg)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("bgp.peers[0].remote_asn", res.stderr)

    def test_unset_fields_are_left_out(self):
        cfg = vxfedd.config("n", "198.18.0.1", "c", ["10.244.0.0/16"], Path("/dp.sock"), underlay_mtu=None,
                            log_level=None, bpf={"grace_seconds": 3})
        self.assertEqual(cfg["daemon"], {"metrics_listen": ""})
        self.assertNotIn("underlay_mtu", cfg["node"])
        self.assertNotIn("asn", cfg["cluster"])
        self.assertEqual(cfg["bpf"], {"grace_seconds": 3})


class ProtowireTest(unittest.TestCase):
    def test_varints_and_frames(self):
        for n in (0, 1, 127, 128, 300, 1 << 30, (1 << 64) - 1):
            self.assertEqual(pw.read_varint(pw.varint(n) + b"x", 0), (n, len(pw.varint(n))))
        self.assertEqual(pw.varint(300), bytes([0xAC, 0x02]))
        msg = pw.field_varint(1, 7) + pw.field_bytes(3, b"skipped") + pw.field_varint(2, 5)
        self.assertEqual(pw.varint_fields(msg), {1: 7, 2: 5})
        frame = pw.delimited(msg)
        self.assertIsNone(pw.split_delimited(frame[:-1]))
        self.assertEqual(pw.split_delimited(frame + b"next"), (msg, b"next"))


class TopologyTest(unittest.TestCase):
    def test_a_failure_prints_dumps_and_logs_then_tears_down(self):
        order, err = [], io.StringIO()
        leftover = Path(tempfile.mkdtemp(prefix="vxfed-harness-test-"))
        with contextlib.redirect_stderr(err), self.assertRaisesRegex(RuntimeError, "boom"):
            with t.Topology("htest") as topo:
                workdir = topo.workdir
                topo.remove_at_close(leftover)
                topo.on_close("first", lambda: order.append("first"))
                topo.on_close("second", lambda: order.append("second"))
                topo.on_failure("x", lambda: print("DUMP-X", file=sys.stderr))
                sleeper = topo.host.spawn(["sh", "-c", "echo hello-log; exec sleep 60"], name="sleeper")
                t.wait_for(lambda: "hello-log" in topo.log_of_process(sleeper), 10, "the log line")
                raise RuntimeError("boom")
        self.assertIn("DUMP-X", err.getvalue())
        self.assertIn("hello-log", err.getvalue())
        self.assertEqual(order, ["second", "first"])
        self.assertIsNotNone(sleeper.poll(), "the process was not stopped")
        self.assertFalse(workdir.exists() or leftover.exists())

    def test_success_prints_nothing(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), t.Topology("htest") as topo:
            topo.on_failure("x", lambda: print("DUMP-X", file=sys.stderr))
        self.assertEqual(err.getvalue(), "")


class CheckoutGuardTest(unittest.TestCase):
    def test_a_script_of_another_checkout_is_refused(self):
        with tempfile.TemporaryDirectory() as other:
            pkg = Path(other) / "harness" / "vxfed_harness"
            pkg.mkdir(parents=True)
            (pkg / "__init__.py").write_text("")
            script = Path(other) / "perf" / "s.py"
            script.parent.mkdir()
            script.write_text("import vxfed_harness\n")
            res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                                 env=dict(os.environ, PYTHONPATH=str(t.SOURCE_DIR / "harness")))
            self.assertNotEqual(res.returncode, 0)
            self.assertIn(f"belongs to the checkout {Path(other).resolve()}", res.stderr)
            self.assertIn(f"PYTHONPATH={Path(other).resolve()}/harness", res.stderr)


if __name__ == "__main__":
    unittest.main()
