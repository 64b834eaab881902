"""A timeline per fault (gnuplot, PNG): datagrams that arrived per 50 ms of send time, per
stream, from the injection to the end of the window; a gap is a dip to 0. The .dat files and
the gnuplot script are kept beside the PNGs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def render(timelines: dict[str, dict], stem: Path, rate: float) -> list[Path]:
    """timelines: fault -> {"bucket_s": b, "streams": {name: [counts]}}. Writes
    <stem>-<fault>.png for each; returns them. RuntimeError if gnuplot is missing or fails."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        raise RuntimeError("gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)")
    stem.parent.mkdir(parents=True, exist_ok=True)
    script = ["set terminal pngcairo size 1100,420 noenhanced font ',10'", "set grid",
              "set xlabel 'seconds since the fault was injected (send time)'", "set key outside right"]
    pngs = []
    for fault, tl in timelines.items():
        bucket = tl["bucket_s"]
        names = list(tl["streams"])
        dat = stem.parent / f"{stem.name}-{fault}.dat"
        rows = zip(*[tl["streams"][n] for n in names])
        dat.write_text("# t_s " + " ".join(n.replace(" ", "_") for n in names) + "\n"
                       + "".join(f"{i * bucket:.3f} " + " ".join(map(str, r)) + "\n" for i, r in enumerate(rows)))
        png = stem.parent / f"{stem.name}-{fault}.png"
        plots = ", ".join(f"'{dat}' using 1:{i + 2} with steps lw 1.5 title '{n}'" for i, n in enumerate(names))
        script += [f"set output '{png}'",
                   f"set title '{fault}: datagrams arrived per {int(bucket * 1000)} ms (sent: {rate * bucket:.0f} per stream)'",
                   f"set ylabel 'datagrams / {int(bucket * 1000)} ms'", f"set yrange [0:{rate * bucket * 1.6:.0f}]",
                   f"plot {plots}"]
        pngs.append(png)
    gp = stem.parent / f"{stem.name}-timelines.gp"
    gp.write_text("\n".join(script) + "\n")
    res = subprocess.run([gnuplot, str(gp)], capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise RuntimeError(f"gnuplot failed: {res.stderr.strip()[-400:]}")
    return pngs
