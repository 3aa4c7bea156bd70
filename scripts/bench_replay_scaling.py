"""How `envdoctor watch --replay` grows with the recording: the same kind of text at N and at 4N lines, each
replayed in a fresh process, in the same run.

    python scripts/bench_replay_scaling.py [--lines 100000] [--rounds 3]

The recording is half `nvidia-smi dmon` (one GPU, a row a second) and half `vmstat 1` pasted after it, the shape
of a paste that holds two terminals; its values are pseudo-random with a fixed seed, so each run replays the same
text. Each size is replayed ``--rounds`` times (the best time kept) by `python -c "replay(text)"`, which reads the
file, parses both series, aligns the host reports with the GPU ticks and summarises. Printed per size: seconds,
peak RSS, and the ratios of the 4N replay to the N one. Linear in the recording's length means about 4x in time and
under 4x in memory (the interpreter's own ~20 MB is shared); quadratic would be about 16x in time (before the
alignment used bisection, 400k lines took 384 s and 530 MB, issue 41).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import resource, sys, time
sys.path.insert(0, sys.argv[2])
from envdoctor.watch.replay import replay
text = open(sys.argv[1], encoding="utf-8").read()
t0 = time.perf_counter()
w = replay(text)
dt = time.perf_counter() - t0
print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(w.samples))
"""


def recording(lines: int, seed: int = 1) -> str:
    rnd = random.Random(seed)
    half = lines // 2
    out = ["# gpu    sm   mem   enc   dec  mclk  pclk", "# Idx     %     %     %     %   MHz   MHz"]
    out += [f"    0   {rnd.randint(0, 100):3d}  {rnd.randint(0, 60):3d}     0     0  9501  2520" for _ in range(half)]
    out += ["procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----",
            " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st"]
    for _ in range(half):
        us = rnd.randint(0, 90)
        sy = rnd.randint(0, 100 - us)
        out.append(f" 2  0      0 978456 1641496 18436400    0    0   298     0 8715 33153 {us} {sy} {100 - us - sy}  0  0")
    return "\n".join(out) + "\n"


def measure(path: Path, rounds: int):
    best = None
    for _ in range(rounds):
        out = subprocess.run([sys.executable, "-c", CHILD, str(path), str(ROOT)], capture_output=True, text=True,
                             timeout=3600, check=True).stdout.split()
        dt, rss_kb, samples = float(out[0]), int(out[1]), int(out[2])
        if best is None or dt < best[0]:
            best = (dt, rss_kb, samples)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=100_000, help="N: the smaller recording's lines (default 100000)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (args.lines, 4 * args.lines):
            path = Path(tmp) / f"rec{n}.txt"
            path.write_text(recording(n), encoding="utf-8")
            t0 = time.perf_counter()
            dt, rss, samples = measure(path, args.rounds)
            rows.append((n, dt, rss, samples))
            print(f"{n:>9} lines  {dt:8.2f} s  {rss / 1024:8.0f} MB peak  {samples} samples  "
                  f"(measured in {time.perf_counter() - t0:.0f} s)")
    (n1, t1, m1, _), (n4, t4, m4, _) = rows
    print(f"4x the lines: {t4 / t1:.2f}x the time, {m4 / m1:.2f}x the peak memory "
          "(linear: about 4x and under 4x; quadratic: about 16x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
