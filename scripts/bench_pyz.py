"""envdoctor.pyz against the installed command: its size, and start-up time of the same commands, in one run.

    python scripts/bench_pyz.py [--runs 5] [--pyz PATH]

Builds the zip (scripts/build_pyz.py) unless --pyz names one, then times, alternating the two so that load on a
shared box falls on both alike, `envdoctor <args>` (the console script of the interpreter running this script)
and `python -I envdoctor.pyz <args>` for: --version, explain (imports + the matrix), recommend --format json
(the matrix and the resolver), node-health (probes). Prints medians of the wall time and of the CPU time (user +
system, which a loaded shared box disturbs less) and the ratios pyz / installed; the numbers are this box's,
never asserted.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Tuple

HERE = Path(__file__).resolve().parent
COMMANDS = [
    ["--version"],
    ["explain", "driver.cuda-compat"],
    ["recommend", "--format", "json", "--gpu", "H100", "--driver", "535.104.05", "--python", "3.11"],
    ["node-health"],
]


def _time(argv: List[str], cwd: str) -> Tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the command and the children it waited for). On a loaded
    shared box the CPU time moves much less than the wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--pyz", help="an envdoctor.pyz to time (default: build one into a temporary directory)")
    args = p.parse_args()
    installed = str(Path(sys.executable).parent / "envdoctor")
    with tempfile.TemporaryDirectory(prefix="bench-pyz-") as tmp:
        pyz = args.pyz
        if pyz is None:
            pyz = os.path.join(tmp, "envdoctor.pyz")
            subprocess.run([sys.executable, str(HERE / "build_pyz.py"), "-o", pyz], check=True,
                           stdout=subprocess.DEVNULL)
        size = os.path.getsize(pyz)
        print(f"envdoctor.pyz: {size:,} bytes ({size / 2**20:.1f} MiB); Python {sys.version.split()[0]}, "
              f"{args.runs} runs each, medians")
        print(f"{'command':<34} {'wall: installed':>15} {'pyz':>6} {'ratio':>6}   {'CPU: installed':>14} {'pyz':>6} "
              f"{'ratio':>6}")
        for cmd in COMMANDS:
            a: List[Tuple[float, float]] = []
            b: List[Tuple[float, float]] = []
            for _ in range(args.runs):
                a.append(_time([installed, *cmd], tmp))
                b.append(_time([sys.executable, "-I", pyz, *cmd], tmp))
            wa, wb = (statistics.median(x[0] for x in v) for v in (a, b))
            ca, cb = (statistics.median(x[1] for x in v) for v in (a, b))
            print(f"{' '.join(cmd)[:34]:<34} {wa:>15.3f} {wb:>6.3f} {wb / wa:>6.2f}   {ca:>14.3f} {cb:>6.3f} "
                  f"{cb / ca:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
