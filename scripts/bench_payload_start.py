#!/usr/bin/env python3
"""How much of envdoctor runs before it starts the target's inspect payload (whose `import torch` is the floor of a
run): two envdoctor installations, in interleaved pairs so that the load of a shared machine hits both alike.

Each run is `envdoctor --python TARGET --no-torch --format json` in a fresh interpreter of the installation, with
the payload's start (``probes.runner.Runner.start``) replaced by a stop that reports the CPU seconds and the wall
seconds since envdoctor's first import, then exits: what is measured is exactly the work done before the payload
starts (reading the command line, choosing the interpreter), not the interpreter's own start nor what follows.
CPU time is the figure to compare on a loaded machine (the wall time there is mostly waiting for a core). It
prints each side's medians, the median of the paired CPU differences (B - A) and the ratio of the CPU medians.
Usage (issue 40: the command line parsed once, before the payload starts):

    python scripts/bench_payload_start.py --a main-venv/bin/python --b branch-venv/bin/python [--pairs 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from typing import List, Tuple

PROBE = r'''
import os, sys, time
t0, w0 = time.process_time(), time.perf_counter()
import envdoctor.probes.runner as runner

def stop(self, argv, **kw):
    sys.stdout.write(f"{time.process_time() - t0:.6f} {time.perf_counter() - w0:.6f}\n")
    sys.stdout.flush()
    os._exit(0)

runner.Runner.start = stop
from envdoctor.__main__ import run
sys.argv = ["envdoctor", "--python", sys.argv[1], "--no-torch", "--format", "json"]
run()
sys.stdout.write("no payload was started\n")
'''


def one(python: str, target: str) -> Tuple[float, float]:
    """(CPU s, wall s) from envdoctor's first import to the payload's start, in a fresh ``python``."""
    proc = subprocess.run([python, "-c", PROBE, target], capture_output=True, text=True, timeout=300, cwd="/")
    try:
        cpu, wall = (float(x) for x in proc.stdout.split())
    except ValueError:
        raise SystemExit(f"{python}: {proc.stdout.strip() or proc.stderr.strip()[-500:]}") from None
    return cpu, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="the first installation's interpreter (e.g. main's venv)")
    ap.add_argument("--b", required=True, help="the second installation's interpreter")
    ap.add_argument("--target", default=sys.executable, help="the --python envdoctor is given (default: this one)")
    ap.add_argument("--pairs", type=int, default=20)
    args = ap.parse_args()
    a: List[Tuple[float, float]] = []
    b: List[Tuple[float, float]] = []
    for i in range(args.pairs):
        order = ((args.a, a), (args.b, b)) if i % 2 == 0 else ((args.b, b), (args.a, a))
        for python, out in order:
            out.append(one(python, args.target))
    print(f"envdoctor's first import -> the payload's start, {args.pairs} interleaved pairs")
    for name, python, runs in (("A", args.a, a), ("B", args.b, b)):
        cpu, wall = [c for c, _ in runs], [w for _, w in runs]
        print(f"  {name} {python}: CPU median {statistics.median(cpu) * 1000:6.1f} ms (min {min(cpu) * 1000:.1f}), "
              f"wall median {statistics.median(wall) * 1000:6.1f} ms (min {min(wall) * 1000:.1f})")
    diffs = [y[0] - x[0] for x, y in zip(a, b)]
    ratio = statistics.median(c for c, _ in b) / statistics.median(c for c, _ in a)
    print(f"  paired CPU difference B - A: median {statistics.median(diffs) * 1000:+.1f} ms; "
          f"ratio of CPU medians {ratio:.2f}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
