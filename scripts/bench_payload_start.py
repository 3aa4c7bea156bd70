#!/usr/bin/env python3
"""How soon `envdoctor` starts the target's inspect payload (the floor of a run is the target's `import torch`,
which starts then): two envdoctor installations in interleaved pairs, so that the load of a shared machine hits
both alike. The target is a wrapper of PYTHON that notes the moment it is started, then runs PYTHON; each run is
`envdoctor --python WRAPPER --no-torch --smoke off --format json`, and what is timed is the launch of envdoctor to
the start of the payload. It prints each side's median, the median of the paired differences (B - A) and the
ratio of the medians. Usage (issue 40: the command line parsed before the payload starts):

    python scripts/bench_payload_start.py --python /path/to/python --a main/bin/envdoctor --b branch/bin/envdoctor
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List


def one(envdoctor: str, wrapper: Path, log: Path) -> float:
    """Seconds from envdoctor's launch to the payload's start (the wrapper's first line)."""
    log.write_text("")
    start = time.time()
    subprocess.run([envdoctor, "--python", str(wrapper), "--no-torch", "--smoke", "off", "--format", "json"],
                   capture_output=True, timeout=300)
    stamps = log.read_text().split()
    if not stamps:
        raise SystemExit(f"{envdoctor} never started the payload")
    return float(stamps[0]) - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=sys.executable, help="the interpreter the wrapper runs")
    ap.add_argument("--a", required=True, help="the first envdoctor (e.g. main's)")
    ap.add_argument("--b", required=True, help="the second envdoctor")
    ap.add_argument("--pairs", type=int, default=15)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "starts"
        wrapper = Path(tmp) / "python"
        # the wall clock at the wrapper's start, in the same clock as time.time() here
        wrapper.write_text(f"#!/bin/sh\ndate +%s.%N >> {log}\n"
                           f"exec {args.python} \"$@\"\n")
        wrapper.chmod(0o755)
        a: List[float] = []
        b: List[float] = []
        for i in range(args.pairs):
            first, second = ((args.a, a), (args.b, b)) if i % 2 == 0 else ((args.b, b), (args.a, a))
            first[1].append(one(first[0], wrapper, log))
            second[1].append(one(second[0], wrapper, log))
    diffs = [y - x for x, y in zip(a, b)]
    print(f"launch -> payload start, {args.pairs} interleaved pairs")
    print(f"  A {args.a}: median {statistics.median(a) * 1000:7.1f} ms (min {min(a) * 1000:.1f})")
    print(f"  B {args.b}: median {statistics.median(b) * 1000:7.1f} ms (min {min(b) * 1000:.1f})")
    print(f"  paired difference B - A: median {statistics.median(diffs) * 1000:+.1f} ms; "
          f"ratio of medians {statistics.median(b) / statistics.median(a):.2f}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
