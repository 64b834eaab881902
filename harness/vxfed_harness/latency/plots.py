"""PNG plots with gnuplot (gnuplot-nox): latency CDFs of every variant, throughput bars.

Data files and the gnuplot script are written beside the PNGs, so a plot can be redrawn or
restyled without measuring again.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

COLORS = {"ours": "#1f77b4", "kernel": "#d62728", "underlay": "#2ca02c"}
DASH = {"udp": 1, "tcp": 2}


def _write_cdf(path: Path, cdf: list) -> None:
    path.write_text("# latency_us fraction_le\n" + "".join(f"{x} {f}\n" for x, f in cdf))


def render(doc: dict, stem: Path) -> list[Path]:
    """Writes <stem>-latency-cdf.png and <stem>-throughput.png; returns the PNGs written.
    Raises RuntimeError if gnuplot is missing or fails (the caller reports it)."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        raise RuntimeError("gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)")
    stem.parent.mkdir(parents=True, exist_ok=True)
    pngs: list[Path] = []
    script: list[str] = ["set terminal pngcairo size 1200,500 noenhanced font ',10'"]

    # Latency: CDF (linear) and tail (1 - CDF, log) side by side.
    series = []
    for variant, dists in doc.get("distributions", {}).items():
        for proto, dist in dists.items():
            if dist.get("cdf"):
                dat = stem.parent / f"{stem.name}-cdf-{variant}-{proto}.dat"
                _write_cdf(dat, dist["cdf"])
                series.append((variant, proto, dat))
    if series:
        cdf_png = stem.parent / f"{stem.name}-latency-cdf.png"
        def plots(expr: str) -> str:
            return ", ".join(f"'{dat}' using 1:{expr} with lines lw 2 dt {DASH[proto]} "
                             f"lc rgb '{COLORS[variant]}' title '{variant} {proto}'"
                             for variant, proto, dat in series)
        script += [
            f"set output '{cdf_png}'",
            "set multiplot layout 1,2 title 'sockperf ping-pong latency between a pod in A and a pod in B (RTT/2)'",
            "set logscale x", "set xlabel 'latency (us)'", "set grid",
            "set ylabel 'fraction of messages <= x'", "set yrange [0:1]", "set key bottom right",
            f"plot {plots('2')}",
            "set ylabel 'fraction of messages > x (tail)'", "set logscale y", "set yrange [1e-5:1]",
            "set key top right",
            f"plot {plots('(1-$2 > 0 ? 1-$2 : 1e-6)')}",
            "unset multiplot", "unset logscale", "unset yrange", "unset xlabel", "unset ylabel",
        ]
        pngs.append(cdf_png)

    # Throughput: TCP 1 and 4 streams, one bar per variant that was measured.
    variants = [v for v in ("ours", "kernel", "underlay")
                if any(doc.get(v, {}).get(k) is not None for k in ("tcp_gbps_1", "tcp_gbps_4"))]
    if variants:
        bars = stem.parent / f"{stem.name}-throughput.dat"
        rows = []
        for key, label in (("tcp_gbps_1", "TCP 1 stream"), ("tcp_gbps_4", "TCP 4 streams")):
            vals = [doc[v].get(key) for v in variants]
            rows.append(f"\"{label}\" " + " ".join("0" if x is None else f"{x:.4f}" for x in vals))
        bars.write_text(f"# label {' '.join(variants)} (Gbit/s)\n" + "\n".join(rows) + "\n")
        tp_png = stem.parent / f"{stem.name}-throughput.png"
        cols = ", ".join(f"'{bars}' using {i + 2}{':xtic(1)' if i == 0 else ''} title '{v}' "
                         f"lc rgb '{COLORS[v]}'" for i, v in enumerate(variants))
        script += [
            "set terminal pngcairo size 800,500 noenhanced font ',10'",
            f"set output '{tp_png}'",
            "set title 'iperf3 TCP goodput, pod in A -> pod in B'",
            "set style data histograms", "set style histogram clustered gap 1",
            "set style fill solid 0.8 border -1", "set ylabel 'Gbit/s'", "set yrange [0:*]",
            "set grid ytics", "set key top left",
            f"plot {cols}",
        ]
        pngs.append(tp_png)

    if not pngs:
        return []
    gp = stem.parent / f"{stem.name}-plots.gp"
    gp.write_text("\n".join(script) + "\n")
    res = subprocess.run([gnuplot, str(gp)], capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise RuntimeError(f"gnuplot failed: {res.stderr.strip()[:500]}")
    return [p for p in pngs if p.exists()]
