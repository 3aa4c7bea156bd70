#!/usr/bin/env python3
"""envdoctor's matmul_fp32 and membw_host against torch.utils.benchmark.Timer (and numpy) in the same run.

    python scripts/bench_vs_torch_timer.py --python /path/to/venv/bin/python [--runs 3]

Runs `envdoctor bench --device cpu matmul_fp32 membw_host`, reads the shape and thread count it used from the
results' params (`n`, `threads`), then times the same operation in the same interpreter with PyTorch's own
Timer (blocked_autorange; its block times summarised with envdoctor's statistic: the mean for matmuls, as
mamf-finder reports, and for CPU copies, where envdoctor reports the mean too (a median of single calls on a
shared machine drops the preempted ones); the median printed beside it) and with numpy (another BLAS: context, not a target). Prints each figure
and envdoctor / Timer; the target is within 10%. Runs are interleaved so that load on a shared machine hits
both sides alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

PEER = r'''
import json, sys, timeit
import torch
from torch.utils.benchmark import Timer
n_mm, n_bytes, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
out = {}
# the statistic envdoctor reports on a CPU, the mean, applied to Timer's own block times
a = torch.randn(n_mm, n_mm); bt = torch.randn(n_mm, n_mm).t(); c = torch.empty(n_mm, n_mm)
m = Timer("torch.mm(a, bt, out=c)", globals={"torch": torch, "a": a, "bt": bt, "c": c},
          num_threads=threads).blocked_autorange(min_run_time=1.5)
out["torch_mm_tflops"] = 2.0 * n_mm ** 3 / m.mean / 1e12
out["torch_mm_tflops_median"] = 2.0 * n_mm ** 3 / m.median / 1e12
src = torch.rand(n_bytes // 4); dst = torch.empty_like(src)
m = Timer("dst.copy_(src)", globals={"src": src, "dst": dst}, num_threads=threads).blocked_autorange(min_run_time=1.5)
out["torch_copy_gbs"] = 2.0 * n_bytes / m.mean / 1e9
out["torch_copy_gbs_median"] = 2.0 * n_bytes / m.median / 1e9
try:
    import numpy as np
    an, bn, cn = a.numpy(), bt.numpy(), c.numpy()
    t = min(timeit.repeat(lambda: np.matmul(an, bn, out=cn), number=3, repeat=5)) / 3
    out["numpy_mm_tflops"] = 2.0 * n_mm ** 3 / t / 1e12
    s, d = src.numpy(), dst.numpy()
    t = min(timeit.repeat(lambda: np.copyto(d, s), number=3, repeat=5)) / 3
    out["numpy_copy_gbs"] = 2.0 * n_bytes / t / 1e9
except ImportError:
    pass
print(json.dumps(out))
'''


def envdoctor_run(python: str) -> dict:
    p = subprocess.run([sys.executable, "-m", "envdoctor", "bench", "--python", python, "--device", "cpu",
                        "matmul_fp32", "membw_host", "--format", "json", "--no-write"],
                       capture_output=True, text=True, timeout=300)
    if p.returncode not in (0, 1):
        raise SystemExit(f"envdoctor bench failed ({p.returncode}): {p.stderr.strip()[-300:]}")
    results = {r["name"]: r for r in json.loads(p.stdout)["facts"]["bench"]["results"]}
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", required=True, help="interpreter with torch (CPU build is fine)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for i in range(args.runs):
        ours = envdoctor_run(args.python)
        mm, cp = ours["matmul_fp32"], ours["membw_host"]
        n_mm, n_bytes, threads = mm["params"]["n"], cp["params"]["n"], mm["params"]["threads"]
        p = subprocess.run([args.python, "-c", PEER, str(n_mm), str(n_bytes), str(threads)], capture_output=True,
                           text=True, timeout=300)
        if p.returncode != 0:
            raise SystemExit(f"peer failed: {p.stderr.strip()[-300:]}")
        peer = json.loads(p.stdout.strip().splitlines()[-1])
        rows.append((mm["value"], peer["torch_mm_tflops"], peer.get("numpy_mm_tflops"), cp["value"],
                     peer["torch_copy_gbs"], peer.get("numpy_copy_gbs")))
        print(f"run {i + 1}: n={n_mm} ({n_bytes >> 20} MiB copy), threads={threads}  "
              f"matmul_fp32 envdoctor {mm['value']:.4f} vs Timer {peer['torch_mm_tflops']:.4f} TFLOP/s "
              f"[Timer median {peer['torch_mm_tflops_median']:.4f}] (ratio {mm['value'] / peer['torch_mm_tflops']:.3f}; numpy {peer.get('numpy_mm_tflops', 0):.4f})  "
              f"membw_host envdoctor {cp['value']:.2f} vs Timer {peer['torch_copy_gbs']:.2f} GB/s "
              f"[Timer median {peer['torch_copy_gbs_median']:.2f}] (ratio {cp['value'] / peer['torch_copy_gbs']:.3f}; numpy {peer.get('numpy_copy_gbs', 0):.2f})")
    mm_ratio = statistics.median(r[0] / r[1] for r in rows)
    cp_ratio = statistics.median(r[3] / r[4] for r in rows)
    print(f"\nmedian over {len(rows)} runs (load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs):")
    def ctx(i: int, j: int) -> str:  # numpy is context only, and may be absent from the target interpreter
        vals = [r[i] / r[j] for r in rows if r[j]]
        return f"{statistics.median(vals):.2f}" if vals else "- (no numpy)"

    print(f"  matmul_fp32  envdoctor/Timer = {mm_ratio:.3f}   torch/numpy = {ctx(1, 2)}")
    print(f"  membw_host   envdoctor/Timer = {cp_ratio:.3f}   torch/numpy = {ctx(4, 5)}")
    ok = abs(mm_ratio - 1) <= 0.10 and abs(cp_ratio - 1) <= 0.10
    print("within 10%: " + ("yes" if ok else "NO"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
