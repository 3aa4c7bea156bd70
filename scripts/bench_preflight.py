"""What preflight() adds beyond collecting: judge (every check + the requirement checks) and render, as a ratio.

    python scripts/bench_preflight.py [--python PATH] [--runs 3]

Prints the median collect time, the median judge+render time on the same facts, and their ratio; the goal is
that preflight() adds well under a second beyond collecting. Figures depend on the machine: nothing asserts them.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envdoctor.checks import all_checks, run_checks  # noqa: E402
from envdoctor.compat import load_compat  # noqa: E402
from envdoctor.model.facts import Targets  # noqa: E402
from envdoctor.model.findings import Report  # noqa: E402
from envdoctor.report import render_console  # noqa: E402
from envdoctor.services.collect import CollectOptions, collect  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    collects, judges = [], []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        facts = collect(CollectOptions(pythons=[args.python]))
        t1 = time.perf_counter()
        facts = dataclasses.replace(facts, targets=Targets(requirements=["torch>=2.4", "numpy"],
                                                           target_gpus=["H100"], source="bench"))
        compat = load_compat()
        report = Report(facts, run_checks(facts, compat, all_checks()), "bench", compat.as_of)
        render_console(report, color=False)
        t2 = time.perf_counter()
        collects.append(t1 - t0)
        judges.append(t2 - t1)
    c, j = statistics.median(collects), statistics.median(judges)
    print(f"collect {c:.3f} s, judge+render {j:.3f} s (median of {args.runs}); judge/collect = {j / c:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
