"""Does narrowing a training process's thread pool to the cores (watch.oversubscribed's advice) make it faster on
this box? (issue 41)

Runs the real CPU loop of tests/integration/test_watch_advice.py (a torch pool of --given threads, a matmul per
step spread over it) as given and with --advised threads (torch.set_num_threads and OMP_NUM_THREADS), alternating,
--reps times each, and prints the ratio of the medians (steps per second as advised / as given; above 1 the advice
helped) with the box's load and the other processes' runnable threads beside it. A ratio, never a bare time: the
box is shared, and on a shared box the scheduler shares the cores by thread.

    python scripts/watch41c_threads_ratio.py --python /work/cpuvenv/bin/python [--given 16] [--advised 2] [--reps 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", required=True, help="an interpreter with torch")
    ap.add_argument("--given", type=int, default=8 * len(os.sched_getaffinity(0)))
    ap.add_argument("--advised", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from tests.integration.test_watch_advice import LOOP, _rate  # the test's own loop and measurement

    with TemporaryDirectory() as d:
        script = Path(d) / "loop.py"
        script.write_text(LOOP)
        given, advised = [], []
        for _ in range(args.reps):  # alternating: a change in the box's load falls on both
            given.append(_rate(args.python, script, str(args.given), args.steps))
            advised.append(_rate(args.python, script, str(args.advised), args.steps))
    ratio = statistics.median(advised) / statistics.median(given)
    print(f"load (1 min): {os.getloadavg()[0]:.1f} on {len(os.sched_getaffinity(0))} CPUs")
    print(f"steps/s with {args.given} threads: {', '.join(f'{x:.1f}' for x in given)}")
    print(f"steps/s with {args.advised} threads: {', '.join(f'{x:.1f}' for x in advised)}")
    print(f"ratio (advised / given, medians): {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
