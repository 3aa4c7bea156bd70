#!/usr/bin/env python3
"""What the speed readers (envdoctor/diagnose/readers/speed.py, issue 42) cost `envdoctor diagnose`: a long
synthetic training log holding every speed symptom they read (tqdm updates, MMDetection's time/data_time lines,
nvidia-smi tables with their date lines, a sentence about speed) judged with them and, as the peer in the same run,
with them switched off (the reader replaced by a no-op). Prints CPU seconds (best of N) and the ratio, so the figure
means the same on a loaded or a fast machine. Usage:
    python scripts/bench_diagnose_speed_readers.py [--updates 60000] [--runs 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TABLE = (ROOT / "tests" / "fixtures" / "nvidia-smi-table" / "geforce-24gb_525.125.06_fan-err.txt").read_text()


def log(updates: int) -> str:
    table = TABLE.replace("|   2021MiB / 23028MiB |      0%", "|  21500MiB / 23028MiB |      0%")
    lines = ["training is slow"]
    for k in range(updates):
        lines.append(f"Epoch 3:  {k % 100:3d}%|####      | {k % 1000}/1000 [{(k // 60) % 60:02d}:{k % 60:02d}<00:10,  "
                     "1.00it/s, loss=0.5]")
        if k % 500 == 0:
            lines.append(f"2023-05-10 10:0{k % 9}:12,345 - mmdet - INFO - Epoch [1][{k}/7330]\tlr: 1.0e-02, time: 0.5, "
                         "data_time: 0.1, loss: 1.9")
        if k % 2000 == 0:
            lines.append(f"Mon Dec  7 08:{(k // 2000) % 60:02d}:10 2026\n{table}")
    lines.append("RuntimeError: CUDA error: out of memory")
    return "\n".join(lines) + "\n"


def best(fn, runs: int) -> float:
    out = float("inf")
    for _ in range(runs):
        t = time.process_time()
        fn()
        out = min(out, time.process_time() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--updates", type=int, default=60000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from envdoctor.compat import load_compat
    from envdoctor.diagnose.readers import speed
    from envdoctor.services.diagnose import diagnose_report

    compat = load_compat()
    text = log(args.updates)
    with_readers = best(lambda: diagnose_report([text], compat), args.runs)
    real = speed.read_speed
    speed.read_speed = lambda paste, acc: None  # the peer: the same judge without the speed readers
    try:
        without = best(lambda: diagnose_report([text], compat), args.runs)
    finally:
        speed.read_speed = real
    print(f"log: {len(text) / 2**20:.1f} MiB, {args.updates} tqdm updates")
    print(f"diagnose with the speed readers:    {with_readers:.2f} s CPU (best of {args.runs})")
    print(f"diagnose without them (same run):   {without:.2f} s CPU")
    print(f"ratio: {with_readers / without:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
