#!/usr/bin/env python3
"""The soak's growth verdicts (harness/vxfed_harness/soak/growth.py) and restart schedule
(schedule.py) on made-up series: flat with noise, a slow leak, a leak reset by restarts, too
few samples, fds. No root, no network."""

from __future__ import annotations

from vxfed_harness.soak import growth, report, schedule
from vxfed_harness.soak.growth import Sample, Tolerance

RSS = Tolerance(abs=2048, rel=0.05)
FDS = Tolerance(abs=2, rel=0.0)


def series(values, pid=100, t0=1000.0, step=10.0):
    return [Sample(t0 + i * step, pid, v) for i, v in enumerate(values)]


def test_flat_with_noise_and_warmup() -> None:
    # Warm-up climb (dropped), then 50 MiB with +-1 MiB noise and one 40 MiB spike: flat.
    values = [20000 + i * 5000 for i in range(6)] + [51200 + (1024 if i % 2 else -1024) for i in range(30)]
    values[20] = 92160
    j = growth.judge(series(values), RSS, warmup_s=60)
    assert j["verdict"] == growth.FLAT, j
    seg = j["segments"][0]
    assert seg["judged_samples"] == 30 and seg["window_samples"] == 6, seg
    assert abs(seg["growth"]) <= 2048, seg


def test_slow_leak_grows() -> None:
    # +200 KiB per sample from 50 MiB: ~5.6 MiB between the first and last fifth.
    j = growth.judge(series([51200 + 200 * i for i in range(40)]), RSS, warmup_s=60)
    assert j["verdict"] == growth.GROWS, j
    seg = j["segments"][0]
    assert seg["growth"] > seg["allowed"] == max(2048, 0.05 * seg["first_median"]), seg
    assert abs(seg["slope_per_hour"] - 200 * 360) < 1, seg      # 200 KiB per 10 s sample


def test_relative_tolerance_for_a_big_process() -> None:
    # 1 GiB resident (a DPDK heap): 3 MiB more is within 5 %, 60 MiB is not.
    base = 1 << 20
    assert growth.judge(series([base] * 20 + [base + 3072] * 20), RSS, 0)["verdict"] == growth.FLAT
    assert growth.judge(series([base] * 20 + [base + 61440] * 20), RSS, 0)["verdict"] == growth.GROWS


def test_restarts_cut_segments() -> None:
    # A leak that each restart resets: every segment is judged on its own. Two pids, a gap
    # between them (the sample taken while the daemon was down).
    first = series([50000 + 50 * i for i in range(15)], pid=1)
    down = [Sample(first[-1].t + 10, None, None)]
    second = series([50000 + 50 * i for i in range(15)], pid=2, t0=down[0].t + 10)
    j = growth.judge(first + down + second, RSS, warmup_s=30)
    assert j["restarts"] == 1 and len(j["segments"]) == 2, j
    assert [s["pid"] for s in j["segments"]] == [1, 2]
    assert j["verdict"] == growth.FLAT, j          # 50 KiB/sample over ~11 samples: < 2 MiB
    # The same leak, fast: both segments grow.
    fast = series([50000 + 2000 * i for i in range(15)], pid=1) + series([50000 + 2000 * i for i in range(15)], pid=2,
                                                                        t0=2000)
    assert growth.judge(fast, RSS, warmup_s=30)["verdict"] == growth.GROWS


def test_too_short_is_not_a_pass() -> None:
    j = growth.judge(series([50000] * 8), RSS, warmup_s=60)     # 2 samples after the warm-up
    assert j["verdict"] == growth.NOT_JUDGED, j
    assert "2 sample(s)" in j["segments"][0]["reason"]
    assert growth.judge([], RSS, 60)["verdict"] == growth.NOT_JUDGED
    assert growth.judge([Sample(1.0, None, None)] * 10, RSS, 0)["verdict"] == growth.NOT_JUDGED
    # One short segment (not judged) and one long flat one: flat.
    mixed = series([50000] * 3, pid=1) + series([50000] * 20, pid=2, t0=2000)
    assert growth.judge(mixed, RSS, warmup_s=0)["verdict"] == growth.FLAT


def test_fds() -> None:
    # An API connection open at some samples: flat. One fd more every 3 samples: grows.
    assert growth.judge(series([20, 21, 20, 20, 22, 20] * 5), FDS, 0)["verdict"] == growth.FLAT
    assert growth.judge(series([20 + i // 3 for i in range(30)]), FDS, 0)["verdict"] == growth.GROWS


def test_report_checks() -> None:
    grow = {"a/vxfedd": {"rss": growth.judge(series([50000] * 20), RSS, 0),
                         "fds": growth.judge(series([20 + i for i in range(20)]), FDS, 0)}}
    leaks = {"a": {"links": {"start": 3, "end": 4, "added": ["veth1"], "gone": []}},
             "b": {"links": {"start": 3, "end": 3, "added": [], "gone": []}}}
    churn = {"a": {"added": 10, "deleted": 10, "pods_per_s": 1.0, "left": [],
                   "errors": [{"t": 5.0, "op": "ADD", "pod": "ka1", "error": "vxfedd down"}]}}
    rows = report.checks(0, leaks, grow, churn, lambda t: 4.0 <= t <= 6.0, {"reloads": 3, "errors": []}, [])
    verdict = {r["check"]: r["pass"] for r in rows}
    assert verdict == {"misdelivered": True, "leaks node a": False, "leaks node b": True,
                       "rss a/vxfedd": True, "fds a/vxfedd": False, "pod churn node a": True,
                       "route churn": True, "restarts": True}, verdict
    churn["a"]["errors"][0]["t"] = 9.0          # the same failure outside a restart's window
    rows = report.checks(1, leaks, grow, churn, lambda t: 4.0 <= t <= 6.0, {"reloads": 3, "errors": []}, [])
    verdict = {r["check"]: r["pass"] for r in rows}
    assert not verdict["pod churn node a"] and not verdict["misdelivered"]


def test_restart_schedule() -> None:
    # An hour: vxfedd every 4 min from 4 min, none in the last 30 s.
    hour = schedule.restart_times(3600, 240, 1 / 3)
    assert hour[0] == 240 and hour[-1] == 3360 and len(hour) == 14
    # Five minutes: each kind at least once, inside the run.
    assert schedule.restart_times(300, 240, 1 / 3) == [100.0]
    assert schedule.restart_times(300, 900, 2 / 3) == [200.0]
    assert schedule.restart_times(20, 240, 1 / 3) == []           # too short to restart anything


def main() -> None:
    for name, fn in list(globals().items()):
        if name.startswith("test_") and callable(fn):
            fn()
            print(f"ok {name}")


if __name__ == "__main__":
    main()
