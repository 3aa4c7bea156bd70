#!/usr/bin/env python3
"""Time `read_paste` (the readers, without judging) on multi-MB pastes: a report pasted many times, and an error-dense training log.

Both are built here, deterministically: a real pasted report (tests/fixtures/pastes/gpu-arch.txt, or
../shared/examples/reports/001.txt when present) repeated up to the size, and a log of distinct lines
(tracebacks, warnings, NCCL lines, OOM errors with varying numbers, an nvidia-smi table at the top and a
real error at the end). Prints size, best-of-N seconds, MB/s per case and the ratio to a plain line-by-line scan
of the same text (each line lower-cased and searched for "error" with one compiled regex), measured in the same run,
so the figure means the same on a loaded or a fast machine. Usage:

    python scripts/bench_diagnose.py [--sizes 1,5,10] [--runs 3]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path
from typing import Callable, List

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envdoctor.compat import load_compat  # noqa: E402
from envdoctor.diagnose import read_paste  # noqa: E402

_LOG_LINES = [
    "2024-06-01 12:{m:02d}:{s:02d},{ms:03d} [rank{r}] WARNING torch.distributed.elastic: step {n} took {f:.3f}s",
    "[rank{r}]: RuntimeError: CUDA error: an illegal memory access was encountered (step {n})",
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line {n}, in _call_impl',
    "    return forward_call(*args, **kwargs)",
    "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py:{n}: UserWarning: This DataLoader "
    "will create {r} worker processes in total.",
    "ERROR:root:batch {n} failed: CUDA out of memory. Tried to allocate {f:.2f} GiB (GPU {r}; 79.15 GiB total)",
    "node{r}:{n}:{m} [{r}] NCCL INFO Channel {m:02d}/32 : {r}[{n}] -> {m}[{s}] via P2P/IPC/read",
    "Exception in thread Thread-{n}: ValueError: expected {r} got {m}",
    '  warnings.warn(f"step {n} grad norm {f:.4f} is not finite")',
]


def repeated_report(size: int) -> str:
    shared = ROOT.parent / "shared" / "examples" / "reports" / "001.txt"
    src = shared if shared.exists() else ROOT / "tests" / "fixtures" / "pastes" / "gpu-arch.txt"
    one = src.read_text(encoding="utf-8") + "\n"
    return one * max(1, size // len(one))


def error_log(size: int) -> str:
    rnd = random.Random(4)
    head = (ROOT / "tests" / "fixtures" / "pastes" / "nvidia-smi-table" / "h100-x8_550.90.07.txt").read_text()
    out: List[str] = [head]
    total = len(head)
    while total < size:
        line = rnd.choice(_LOG_LINES).format(m=rnd.randrange(60), s=rnd.randrange(60), ms=rnd.randrange(1000),
                                             r=rnd.randrange(8), n=rnd.randrange(10**6), f=rnd.random() * 10)
        out.append(line)
        total += len(line) + 1
    out.append("RuntimeError: CUDA error: no kernel image is available for execution on the device")
    return "\n".join(out) + "\n"


_SCAN = re.compile(r"error|warning")


def plain_scan(text: str) -> int:
    """The peer: what any tool reading the paste must at least do, one pass over its lines."""
    return sum(1 for line in text.splitlines() if _SCAN.search(line.lower()))


def best_of(runs: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,5,10", help="sizes in MB (10^6 bytes), comma-separated")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    compat = load_compat()
    read_paste(["torch: 2.0.1"], compat)  # warm the signature cache
    print(f"{'paste':<18} {'MB':>6} {'seconds':>8} {'MB/s':>7} {'scan s':>7} {'x scan':>7}")
    for name, build in (("repeated report", repeated_report), ("error-dense log", error_log)):
        for mb in (float(x) for x in args.sizes.split(",")):
            text = build(int(mb * 1_000_000))
            secs = best_of(args.runs, lambda t=text: read_paste([t], compat))
            scan = best_of(args.runs, lambda t=text: plain_scan(t))
            size = len(text.encode("utf-8")) / 1e6
            print(f"{name:<18} {size:6.2f} {secs:8.3f} {size / secs:7.1f} {scan:7.3f} {secs / scan:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
