"""Does following `envdoctor watch`'s worker advice make the run faster on this box? (issue 41)

Runs a real CPU training loop that loads in its training process (num_workers=0, a pure-Python decode per
sample) under `envdoctor watch` with the step timer, reads the num_workers its DATALOADER_IN_MAIN_PROCESS fix
proposes, then times the same loop as it was and as advised, alternating, REPS times each, and prints the ratio
of the medians (steps per second as advised / as it was; above 1 the advice helped). Where the advice proposes no
worker count, it says so and times nothing. A ratio, never a bare time: the box is shared.

    python scripts/watch41b_advice_ratio.py --python /work/cpuvenv/bin/python [--reps 3] [--burn 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

LOOP = r"""
import json, os, sys, time, warnings
warnings.simplefilter("ignore")
import torch
from torch.utils.data import DataLoader, Dataset
BURN, WORKERS, STEPS = int(os.environ["BURN"]), int(os.environ["WORKERS"]), int(os.environ["STEPS"])
TIMED = os.environ.get("TIMED") == "1"
torch.set_num_threads(1)
class DS(Dataset):
    def __len__(self):
        return 10 ** 6
    def __getitem__(self, i):
        acc = 0
        for k in range(BURN):
            acc += k * k % 7
        return torch.randn(32), torch.randint(0, 4, ())
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
loader = DataLoader(DS(), batch_size=16, num_workers=WORKERS)
if TIMED:
    from envdoctor.watch import timed
    loader = timed(loader)
t0 = None
for step, (x, y) in enumerate(loader):
    if step == 5:
        t0 = time.perf_counter()  # after the workers' start
    loss = torch.nn.functional.cross_entropy(model(x), y)
    model.zero_grad()
    loss.backward()
    if step == STEPS + 5:
        break
if not TIMED:  # under the watch, its JSON is the only output
    print(json.dumps({"steps_per_s": STEPS / (time.perf_counter() - t0)}))
"""


def run_loop(python: str, workers: int, burn: int, steps: int) -> float:
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "loop.py"
        script.write_text(LOOP)
        env = dict(os.environ, BURN=str(burn), WORKERS=str(workers), STEPS=str(steps), PYTHONPATH=str(REPO))
        p = subprocess.run([python, str(script)], capture_output=True, text=True, env=env, timeout=600)
        if p.returncode != 0:
            sys.exit(p.stderr[-2000:])
        return float(json.loads(p.stdout.strip().splitlines()[-1])["steps_per_s"])


def advised_workers(python: str, burn: int, steps: int) -> tuple:
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "loop.py"
        script.write_text(LOOP)
        env = dict(os.environ, BURN=str(burn), WORKERS="0", STEPS=str(steps), TIMED="1", PYTHONPATH=str(REPO),
                   NO_COLOR="1")
        p = subprocess.run([sys.executable, "-m", "envdoctor", "watch", "--format", "json", "--", python,
                            str(script)], capture_output=True, text=True, env=env, timeout=600, cwd=str(REPO))
        out = json.loads(p.stdout)
    f = next((f for f in out["findings"] if (f.get("about") or f["category"]) == "DATALOADER_IN_MAIN_PROCESS"), None)
    if f is None:
        return None, "no DATALOADER_IN_MAIN_PROCESS finding"
    m = re.search(r"num_workers=(\d+)", " ".join(f["fix"].get("commands") or []))
    return (int(m.group(1)) if m else None), f["fix"].get("commands")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", required=True, help="an interpreter with torch (the CPU venv)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--burn", type=int, default=20000, help="pure-Python loop iterations per sample")
    ap.add_argument("--steps", type=int, default=150)
    args = ap.parse_args()
    n, said = advised_workers(args.python, args.burn, args.steps)
    print(f"advice: {said}")
    if not n:
        print("no worker count proposed: nothing to time")
        return 0
    base, advised = [], []
    for _ in range(args.reps):  # alternating, so that the box's load drifts over both alike
        base.append(run_loop(args.python, 0, args.burn, args.steps))
        advised.append(run_loop(args.python, n, args.burn, args.steps))
    ratio = statistics.median(advised) / statistics.median(base)
    print(f"cpus {len(os.sched_getaffinity(0))}, num_workers 0 -> {n}: steps/s ratio (advised / as it was) "
          f"{ratio:.2f} (medians of {args.reps}; per run: as it was {[round(b, 1) for b in base]}, advised "
          f"{[round(a, 1) for a in advised]})")
    return 0


if __name__ == "__main__":
    t = time.time()
    rc = main()
    print(f"({time.time() - t:.0f} s)")
    sys.exit(rc)
