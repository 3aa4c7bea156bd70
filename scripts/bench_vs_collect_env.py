#!/usr/bin/env python3
"""Wall time of `envdoctor --format json` next to `python -m torch.utils.collect_env` and `python -c "import torch"`.

All three run against the same target interpreter, in the same run, interleaved, several times; the script
prints medians and the ratios to collect_env. Usage:

    python scripts/bench_vs_collect_env.py --python /path/to/venv/bin/python [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def timed(argv, env=None, timeout=300):
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, timeout=timeout)
    return time.perf_counter() - start, proc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", required=True, help="target interpreter (with torch installed)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--envdoctor", default=None,
                    help="envdoctor command (default: this interpreter's `-m envdoctor`)")
    args = ap.parse_args()

    envdoctor = args.envdoctor.split() if args.envdoctor else [sys.executable, "-m", "envdoctor"]
    commands = {
        "import torch": [args.python, "-c", "import torch"],
        "torch.utils.collect_env": [args.python, "-m", "torch.utils.collect_env"],
        "envdoctor --format json": envdoctor + ["--format", "json", "--python", args.python],
    }
    env = dict(os.environ)
    times = {name: [] for name in commands}
    # warm the page cache once so the first measured run is not a cold-disk outlier
    for argv in commands.values():
        timed(argv, env)
    for _ in range(args.runs):
        for name, argv in commands.items():  # interleaved: drift hits all three alike
            t, proc = timed(argv, env)
            if name.startswith("envdoctor"):
                if proc.returncode not in (0, 1):
                    print(f"envdoctor failed (exit {proc.returncode}): {proc.stderr.decode()[-500:]}",
                          file=sys.stderr)
                    return 1
                json.loads(proc.stdout)  # the output must be a whole report
            elif proc.returncode != 0:
                print(f"{name} failed (exit {proc.returncode}): {proc.stderr.decode()[-500:]}", file=sys.stderr)
                return 1
            times[name].append(t)

    base = statistics.median(times["torch.utils.collect_env"])
    print(f"target: {args.python}  runs: {args.runs}  (median wall seconds; ratio to collect_env)")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"  {name:<26} {med:7.3f} s   min {min(ts):6.3f}   ratio {med / base:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
