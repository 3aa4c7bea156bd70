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

Two pairings (``--mode``): ``cli`` runs the whole `envdoctor bench` command against a fresh Timer process, so the
two figures of a pair lie ~10 s apart; ``kernel`` loads envdoctor's own payload file (the installed
``envdoctor/_payload/bench.py``, the code `bench` runs) into the target interpreter and alternates its kernel with
Timer in one process, A-B-B-A, with the budget `envdoctor bench` gives the kernel, so a pair lies ~3 s apart.
On a shared 2-CPU machine whose speed drifts by tens of percent within seconds, the kernel pairing is the one that
can resolve a 10% method difference; the CLI pairing checks that the command adds nothing of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

KERNEL_PEER = r'''
import json, sys, time
payload_dir, pairs, mm_budget, copy_budget = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
sys.path.insert(0, payload_dir)
import torch
from torch.utils.benchmark import Timer
from _payload import bench as B

ctx = B.Ctx(torch, None, 0.5)
cpu = torch.device("cpu")
threads = torch.get_num_threads()


def ours_mm():
    r = B.k_matmul(ctx, "matmul_fp32", cpu, time.monotonic() + mm_budget)
    return r["value"], r["params"]["n"]


def timer_mm(n):
    a = torch.randn(n, n); bt = torch.randn(n, n).t(); c = torch.empty(n, n)
    m = Timer("torch.mm(a, bt, out=c)", globals={"torch": torch, "a": a, "bt": bt, "c": c},
              num_threads=threads).blocked_autorange(min_run_time=mm_budget / 2)
    return 2.0 * n ** 3 / m.mean / 1e12


def ours_copy():
    r = B.k_membw(ctx, "membw_host", cpu, time.monotonic() + copy_budget)
    return r["value"], r["params"]["n"]


def timer_copy(nbytes):
    # fresh buffers, as the kernel allocates its own each time
    src = torch.rand(nbytes // 4); dst = torch.empty_like(src)
    m = Timer("dst.copy_(src)", globals={"src": src, "dst": dst}, num_threads=threads).blocked_autorange(
        min_run_time=copy_budget * 0.7)
    return 2.0 * nbytes / m.mean / 1e9


n_mm, n_copy = 512, 128 << 20
for i in range(pairs):
    for what, ours, peer in (("matmul_fp32", ours_mm, timer_mm), ("membw_host", ours_copy, timer_copy)):
        order = (0, 1) if i % 2 == 0 else (1, 0)  # A-B, then B-A: a drift in machine speed cancels
        got = {}
        for side in order:
            if side == 0:
                got["ours"], size = ours()
                if what == "matmul_fp32":
                    n_mm = size
                else:
                    n_copy = size
            else:
                got["timer"] = peer(n_mm if what == "matmul_fp32" else n_copy)
                got["timer_size"] = n_mm if what == "matmul_fp32" else n_copy
        if got["timer_size"] != (n_mm if what == "matmul_fp32" else n_copy):
            # Timer went first at the last pair's size and the kernel chose another: time the same size again
            got["timer"] = peer(n_mm if what == "matmul_fp32" else n_copy)
            got["retimed"] = True
        print(json.dumps({"pair": i, "kernel": what, "size": n_mm if what == "matmul_fp32" else n_copy,
                          "ours_first": order[0] == 0, "threads": threads, **got}), flush=True)
'''

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


def kernel_pairs(python: str, pairs: int) -> list:
    """envdoctor's payload kernels and Timer alternated in one target process (see the module docstring)."""
    import envdoctor
    from envdoctor.bench.suite import plan

    budgets = {i.name: i.budget_s for i in plan(["matmul_fp32", "membw_host"], "cpu")}
    payload_dir = os.path.dirname(os.path.abspath(envdoctor.__file__))
    p = subprocess.run([python, "-c", KERNEL_PEER, payload_dir, str(pairs), str(budgets["matmul_fp32"]),
                        str(budgets["membw_host"])], capture_output=True, text=True, timeout=60 + pairs * 30)
    if p.returncode != 0:
        raise SystemExit(f"kernel pairing failed: {p.stderr.strip()[-300:]}")
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    print(f"kernel pairing: envdoctor's payload kernels ({payload_dir}/_payload/bench.py) and Timer in one "
          f"process, budgets {budgets['matmul_fp32']} s / {budgets['membw_host']} s, A-B-B-A")
    for r in rows:
        unit = "TFLOP/s" if r["kernel"] == "matmul_fp32" else "GB/s"
        print(f"  pair {r['pair'] + 1} {r['kernel']:<11} size {r['size']:>9} {'ours first' if r['ours_first'] else 'Timer first'}"
              f"  envdoctor {r['ours']:.4g} vs Timer {r['timer']:.4g} {unit}  ratio {r['ours'] / r['timer']:.3f}"
              + ("  (Timer re-timed at the kernel's size)" if r.get("retimed") else ""))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", required=True, help="interpreter with torch (CPU build is fine)")
    ap.add_argument("--runs", type=int, default=3, help="CLI pairs (--mode cli/both)")
    ap.add_argument("--pairs", type=int, default=10, help="in-process pairs per kernel (--mode kernel/both)")
    ap.add_argument("--mode", choices=("cli", "kernel", "both"), default="both")
    args = ap.parse_args()
    verdicts = []
    if args.mode in ("kernel", "both"):
        krows = kernel_pairs(args.python, args.pairs)
        for kernel in ("matmul_fp32", "membw_host"):
            ratios = [r["ours"] / r["timer"] for r in krows if r["kernel"] == kernel and r["timer"]]
            if ratios:
                q = statistics.quantiles(ratios, n=4) if len(ratios) >= 4 else [min(ratios), 0, max(ratios)]
                med = statistics.median(ratios)
                print(f"  {kernel:<11} envdoctor/Timer, median of {len(ratios)} pairs = {med:.3f} "
                      f"(quartiles {q[0]:.3f}-{q[2]:.3f})")
                verdicts.append(abs(med - 1) <= 0.10)
        if args.mode == "kernel":
            print(f"(load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs)")
            ok = all(verdicts) and bool(verdicts)
            print("within 10%: " + ("yes" if ok else "NO"))
            return 0 if ok else 1
        print()
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
    ok = abs(mm_ratio - 1) <= 0.10 and abs(cp_ratio - 1) <= 0.10 and all(verdicts)
    print("within 10%: " + ("yes" if ok else "NO"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
