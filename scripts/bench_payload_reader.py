#!/usr/bin/env python3
"""The payload's files read beside `import torch` (its forked reader) against the same payload reading them first
(``--sequential``), in paired, interleaved runs in the target interpreter, with a bare `import torch` as the floor.

Each pair runs `python <envdoctor/_payload> --task inspect --smoke TIER` with and without ``--sequential``, the order
alternating from pair to pair, then `python -c "import torch; os._exit(0)"`. It prints each side's median wall time,
the median of the paired differences (reader - sequential), each side's median over the bare import of its pair,
and the medians of what the payload's envelope says of itself (`duration_s`, its task's start to its answer, and
torch's `import_seconds`). Usage:

    python scripts/bench_payload_reader.py --python /path/to/venv/bin/python [--pairs 9] [--smoke quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

PAYLOAD = Path(__file__).resolve().parent.parent / "envdoctor" / "_payload"


def timed(argv: List[str]) -> tuple:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    wall = time.perf_counter() - t0
    env: Optional[Dict] = None
    for line in reversed(proc.stdout.splitlines()):
        try:
            env = json.loads(line)
            break
        except ValueError:
            continue
    return wall, env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", required=True, help="target interpreter (with torch installed)")
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--smoke", default="quick", choices=("quick", "off"))
    opts = ap.parse_args()
    base = [opts.python, str(PAYLOAD), "--task", "inspect", "--smoke", opts.smoke, "--deadline-s", "120"]
    walls: Dict[str, List[float]] = {"reader": [], "sequential": [], "import": []}
    durations: Dict[str, List[float]] = {"reader": [], "sequential": []}
    imports: Dict[str, List[float]] = {"reader": [], "sequential": []}
    print(f"target {opts.python}; payload {PAYLOAD}; {opts.pairs} pairs; --smoke {opts.smoke}; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    timed(base)  # warm the page cache and the payload's own byte code once
    for i in range(opts.pairs):
        order = ["reader", "sequential"] if i % 2 == 0 else ["sequential", "reader"]
        for side in order:
            wall, env = timed(base + (["--sequential"] if side == "sequential" else []))
            if not env or not env.get("ok"):
                print(f"  {side}: the payload did not answer ok: {str(env)[:200]}")
                return 1
            walls[side].append(wall)
            durations[side].append(env["duration_s"])
            imports[side].append(env["result"]["torch"]["import_seconds"])
        wall, _ = timed([opts.python, "-c", "import torch, os; os._exit(0)"])
        walls["import"].append(wall)
    med = {k: statistics.median(v) for k, v in walls.items()}
    for side in ("import", "sequential", "reader"):
        print(f"  {side:<11} wall median {med[side]:.3f} s (min {min(walls[side]):.3f}, max {max(walls[side]):.3f})")
    diff = [r - s for r, s in zip(walls["reader"], walls["sequential"])]
    print(f"  reader - sequential, paired: median {statistics.median(diff):+.3f} s "
          f"({sum(d < 0 for d in diff)} of {len(diff)} pairs faster with the reader)")
    for side in ("sequential", "reader"):
        over = [w - b for w, b in zip(walls[side], walls["import"])]
        print(f"  {side:<11} over the bare import (same pair): median {statistics.median(over):+.3f} s; "
              f"its duration_s median {statistics.median(durations[side]):.3f}, "
              f"its import_seconds median {statistics.median(imports[side]):.3f}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
