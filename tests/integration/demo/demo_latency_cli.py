"""Integration: perf/latency/latency_suite.py end to end on the kernel and underlay variants,
as a user runs it: exit status, the JSON's shape (ours / kernel / underlay / ratio with every
key, the kernel's overhead against the underlay with every key and the figures measured; the
same-cluster path between two nodes and the nodes the measured pods sit on), the loss SLO
verdict (the kernel's; the underlay is not judged), the overhead columns in the printed table,
and that the run left nothing behind. Timings are recorded, never asserted."""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import vxfed_harness as tl
from vxfed_harness.latency import report

import demo_common as dc


def main() -> None:
    dc.require_tools()
    with tempfile.TemporaryDirectory(prefix="vxfed-demo-cli-") as tmp:
        out = Path(tmp) / "latency.json"
        cmd = [sys.executable, str(tl.SOURCE_DIR / "perf/latency/latency_suite.py"), "--variants", "underlay,kernel",
               "--suites", "udp,pp_udp", "--same-cluster-suites", "pp_udp", "--duration", "1", "--udp-rate", dc.UDP_RATE, "--out", str(out)]
        tl.log("running " + " ".join(cmd))
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        print(res.stdout[-4000:])
        print(res.stderr[-2000:], file=sys.stderr)
        # 0: every SLO met; 1: an SLO missed (p99 depends on the machine's load: not asserted here).
        assert res.returncode in (0, 1), f"latency_suite exited {res.returncode}"
        doc = json.loads(out.read_text())
        for obj in ("ours", "kernel", "underlay", "ratio"):
            assert set(doc[obj]) == set(report.KEY_NAMES), f"{obj} keys: {sorted(doc[obj])}"
        assert set(doc["overhead"]) == {"kernel", "ours"}, sorted(doc["overhead"])
        assert set(doc["overhead"]["kernel"]) == set(report.KEY_NAMES), sorted(doc["overhead"]["kernel"])
        for name in ("kernel", "underlay"):
            assert doc["variants"][name]["status"] == "measured", doc["variants"]
        u = doc["underlay"]
        for key in ("udp_p50_us", "udp_p99_us"):
            assert isinstance(u[key], (int, float)) and u[key] > 0, f"underlay.{key} not measured: {u[key]}"
            expected = doc["kernel"][key] / u[key] - 1
            assert abs(doc["overhead"]["kernel"][key] - expected) < 1e-9, (key, doc["overhead"]["kernel"][key])
        assert all(v is None for v in doc["overhead"]["ours"].values()), "ours' overhead without ours"
        assert set(doc["slo"]) == {"kernel"}, f"SLOs judged for {sorted(doc['slo'])}: only the overlays have SLOs"
        assert "kernel overhead" in res.stdout and "ours overhead" in res.stdout, "no overhead columns printed"
        assert doc["paths"]["same_cluster"]["overhead"]["kernel"]["udp_p50_us"] is not None, doc["paths"]["same_cluster"]
        k = doc["kernel"]
        for key in ("udp_loss_pct", "udp_jitter_ms", "udp_p50_us", "udp_p99_us", "udp_p999_us"):
            assert isinstance(k[key], (int, float)), f"kernel.{key} not measured: {k[key]}"
        for key in ("tcp_gbps_1", "tcp_p99_us"):
            assert k[key] is None, f"kernel.{key} measured although its suite was not selected"
        assert all(v is None for v in doc["ours"].values()), "ours measured although not selected"
        # Two nodes per cluster by default: the same figures between pods on two nodes of cluster A.
        same = doc["paths"]["same_cluster"]
        pods = same["pods"]["kernel"]
        assert pods["client"]["node"] == "node-a1" and pods["server"]["node"] == "node-a2", pods
        assert isinstance(same["kernel"]["udp_p50_us"], (int, float)) and same["kernel"]["udp_loss_pct"] is None, same
        cross = doc["paths"]["cross_cluster"]["pods"]["kernel"]
        assert cross["client"]["node"] == "node-a1" and cross["server"]["node"] == "node-b1", cross
        loss = [s for s in doc["slo"]["kernel"] if s["key"] == "udp_loss_pct"][0]
        assert loss["pass"] is True, f"loss SLO at {dc.UDP_RATE}bit/s: {loss}"
        dist = doc["distributions"]["kernel"]["udp"]
        assert dist["samples"] > 100 and dist["histogram_us"] and dist["cdf"], "no latency distribution"
        assert not any(doc["teardown_leftovers"].values()), doc["teardown_leftovers"]
        assert "after teardown: 0 namespaces, 0 host links, 0 mounts, 0 processes, 0 temp dirs" in res.stdout
        for png in doc.get("plots", []):
            assert Path(png).stat().st_size > 1000, f"plot {png} is empty"
        assert any(p.endswith("latency-cdf.png") for p in doc.get("plots", [])), doc.get("plots")
        tl.log(f"kernel: loss {k['udp_loss_pct']:.4f}%, UDP p99 {k['udp_p99_us']:.1f} us; underlay UDP p99 "
               f"{u['udp_p99_us']:.1f} us (recorded, not asserted)")


if __name__ == "__main__":
    tl.main_wrapper(main)
