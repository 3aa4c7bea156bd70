#!/usr/bin/env python3
"""Time `envdoctor node-health` (the scheduler preset, issue 33's target: at most 2 s on a CPU box) against peers
measured in the same run, alternated A-B-C so that drift on a shared machine hits all alike:

- ``envdoctor --version``: the interpreter's and envdoctor's own start-up, the floor of any envdoctor command;
- ``envdoctor check --no-torch``: the full check without importing torch (what node-health trims down);
- ``nvidia-smi -L``: what a hand-written health check would call, where nvidia-smi exists.

Prints each command's median wall time over ``--runs`` and node-health's ratio to each peer. A benchmark, not a
test: the CI machine is shared and noisy, so no test asserts these seconds. Usage:

    python scripts/bench_node_health.py [--runs 9] [--envdoctor PATH]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from typing import Dict, List

TARGET_S = 2.0


def wall(argv: List[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=False)
    return time.perf_counter() - start


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--envdoctor", default=None, help="the envdoctor command (default: this Python's -m envdoctor)")
    opts = ap.parse_args(argv)
    ed = [opts.envdoctor] if opts.envdoctor else [sys.executable, "-m", "envdoctor"]
    cmds: Dict[str, List[str]] = {
        "node-health": ed + ["node-health"],
        "--version": ed + ["--version"],
        "check --no-torch": ed + ["check", "--no-torch", "--format", "json"],
    }
    if shutil.which("nvidia-smi"):
        cmds["nvidia-smi -L"] = ["nvidia-smi", "-L"]
    for argv_ in cmds.values():  # warm the page cache and the compiled-bytecode cache once
        wall(argv_)
    times: Dict[str, List[float]] = {k: [] for k in cmds}
    for _ in range(opts.runs):
        for name, argv_ in cmds.items():
            times[name].append(wall(argv_))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{'command':<20} {'median s':>9} {'min s':>7} {'max s':>7}")
    for name in cmds:
        print(f"{name:<20} {med[name]:>9.3f} {min(times[name]):>7.3f} {max(times[name]):>7.3f}")
    print()
    for name in cmds:
        if name != "node-health":
            print(f"node-health / {name:<18} {med['node-health'] / med[name]:.2f}")
    verdict = "within" if med["node-health"] <= TARGET_S else "NOT within"
    print(f"node-health median {med['node-health']:.3f} s: {verdict} the {TARGET_S:g} s target "
          f"({opts.runs} runs, {len(cmds)} commands alternated)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
