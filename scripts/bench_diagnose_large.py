#!/usr/bin/env python3
"""Time `envdoctor diagnose` on a long training log (default 50 MB): the bounded read (head, tail and the
middle's error lines, diagnose/bounded_read.py) plus judging what it kept, against the peer measured in the same
run: judging the log's first 8 MiB, which is all diagnose read before. Prints seconds (best of N, CPU time of this
process) and the ratio, so the figure means the same on a loaded or a fast machine. Usage:

    python scripts/bench_diagnose_large.py [--mb 50] [--runs 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envdoctor.compat import load_compat  # noqa: E402
from envdoctor.diagnose import decode_text, diagnose_report  # noqa: E402
from envdoctor.diagnose.bounded_read import MiB, read_bounded, trigger_keywords  # noqa: E402

HEADER = ("PyTorch version: 2.5.1+cu124\nIs CUDA available: True\nCUDA runtime version: 12.4.131\n"
          "GPU models and configuration: GPU 0: NVIDIA H100 80GB HBM3\nNvidia driver version: 550.54.15\n")
END = ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
       "(shm).\n")


def _best(fn, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    compat = load_compat()
    keywords = trigger_keywords(compat)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.log"
        with open(path, "w") as fh:
            fh.write(HEADER)
            n = 0
            while fh.tell() < a.mb * MiB:
                n += 1
                fh.write(f"[2026-11-30 12:00:{n % 60:02d}] epoch {n // 10000} step {n} loss {n % 977 / 977:.4f} "
                         f"lr 3.0e-04 grad_norm {n % 313 / 100:.3f} tokens/s 51234\n")
            fh.write(END)

        def bounded() -> None:
            with open(path, "rb") as f:
                data, note = read_bounded(f, "train.log", keywords)
            report = diagnose_report([decode_text(data)], compat, read_notes=[note] if note else [])
            assert any(x.category == "SHM_TOO_SMALL" for x in report.findings)

        def first_8_mib() -> None:
            with open(path, "rb") as f:
                diagnose_report([decode_text(f.read(8 * MiB))], compat)

        def read_only() -> None:
            with open(path, "rb") as f:
                read_bounded(f, "train.log", keywords)

        t_read = _best(read_only, a.runs)
        t_new = _best(bounded, a.runs)
        t_old = _best(first_8_mib, a.runs)
    print(f"{a.mb} MB log: bounded read alone {t_read:.2f} s; read + judge {t_new:.2f} s; "
          f"peer (judge the first 8 MiB, the old read) {t_old:.2f} s; ratio {t_new / t_old:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
