"""envdoctor.pyz against the installed command: its size, and start-up time of the same commands, in one run.

    python scripts/bench_pyz.py [--runs 5] [--pyz PATH]

Builds the zip (scripts/build_pyz.py) unless --pyz names one, then times, alternating the two so that load on a
shared box falls on both alike, `envdoctor <args>` (the console script of the interpreter running this script)
and `python -I envdoctor.pyz <args>` for: --version, explain (imports + the matrix), recommend --format json
(the matrix and the resolver), node-health (probes). Prints medians and the ratio pyz / installed; the numbers
are this box's, never asserted.
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

HERE = Path(__file__).resolve().parent
COMMANDS = [
    ["--version"],
    ["explain", "driver.cuda-compat"],
    ["recommend", "--format", "json", "--gpu", "H100", "--driver", "535.104.05", "--python", "3.11"],
    ["node-health"],
]


def _time(argv: List[str], cwd: str) -> float:
    t = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    return time.perf_counter() - t


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
        print(f"{'command':<40} {'installed s':>11} {'pyz s':>8} {'pyz/installed':>14}")
        for cmd in COMMANDS:
            a: List[float] = []
            b: List[float] = []
            for _ in range(args.runs):
                a.append(_time([installed, *cmd], tmp))
                b.append(_time([sys.executable, "-I", pyz, *cmd], tmp))
            ma, mb = statistics.median(a), statistics.median(b)
            print(f"{' '.join(cmd)[:40]:<40} {ma:>11.3f} {mb:>8.3f} {mb / ma:>14.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
