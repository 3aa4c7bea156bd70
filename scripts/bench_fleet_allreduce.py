#!/usr/bin/env python3
"""envdoctor fleet's all-reduce figures against a plain torch.distributed.all_reduce loop, in the same run.

    python scripts/bench_fleet_allreduce.py --python /path/to/venv/bin/python [--ranks 2] [--reps 5]
        [--sizes 64K,1M,4M] [--backend gloo]

Re-launches itself under torchrun (``python -m torch.distributed.run --nproc-per-node RANKS``) in that
interpreter, with envdoctor from this checkout on PYTHONPATH. Every rank then runs, for each size and each
repetition, envdoctor's sweep (``envdoctor.fleet.measure.allreduce_sweep``, the code `envdoctor fleet --bench`
runs) and the peer: the loop anyone would write (barrier, perf_counter, ``dist.all_reduce(buf)`` N times,
perf_counter on rank 0), with the same N and the same buffer size. Which one goes first alternates between
repetitions, so load on a shared machine hits both alike. Prints each pair's algbw, the median ratio
envdoctor / plain per size, and whether it is within 10%.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _sizes(text: str):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return [int(float(p[:-1]) * scale[p[-1].upper()]) if p[-1].upper() in scale else int(p) for p in text.split(",")]


def launch(args) -> int:
    from importlib.util import find_spec

    deps = []
    for name in ("rich", "packaging", "distro", "pynvml", "pygments", "markdown_it", "mdurl"):
        spec = find_spec(name)
        if spec is not None and spec.origin:
            top = os.path.dirname(spec.origin) if spec.origin.endswith("__init__.py") else spec.origin
            deps.append(os.path.dirname(top))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO] + sorted(set(deps))), OMP_NUM_THREADS="1")
    argv = [args.python, "-m", "torch.distributed.run", "--nproc-per-node", str(args.ranks),
            "--master-port", str(args.port), os.path.abspath(__file__), "--worker", "--reps", str(args.reps),
            "--sizes", args.sizes, "--backend", args.backend, "--budget", str(args.budget)]
    return subprocess.call(argv, env=env)


def worker(args) -> int:
    import datetime

    import torch
    import torch.distributed as dist

    from envdoctor.fleet.measure import allreduce_sweep

    dist.init_process_group(args.backend, timeout=datetime.timedelta(seconds=60))
    n = dist.get_world_size()
    rank = dist.get_rank()
    device = torch.device("cpu")
    sizes = _sizes(args.sizes)
    rows = {s: [] for s in sizes}
    for rep in range(args.reps):
        for size in sizes:
            pair = {}
            for side in (("envdoctor", "plain") if rep % 2 == 0 else ("plain", "envdoctor")):
                if side == "envdoctor":
                    (entry,) = allreduce_sweep(torch, dist, None, n, device, [size], args.budget)
                    pair["envdoctor"] = entry["algbw_gbs"]
                    pair["iters"] = entry["iters"]
                else:
                    iters = pair.get("iters") or max(3, int(args.budget / 0.01))
                    buf = torch.ones(size // 4, dtype=torch.float32)
                    dist.all_reduce(buf)
                    dist.barrier()
                    t0 = time.perf_counter()
                    for _ in range(iters):
                        dist.all_reduce(buf)
                    secs = (time.perf_counter() - t0) / iters
                    pair["plain"] = size / secs / 1e9
            rows[size].append(pair)
    if rank == 0:
        print(f"all-reduce, {args.backend}, {n} ranks, {args.reps} interleaved repetitions per size "
              f"(torch {torch.__version__})")
        print(f"{'size':>10} {'iters':>6} {'envdoctor algbw':>16} {'plain algbw':>12} {'ratio':>7}")
        worst = 0.0
        for size, pairs in rows.items():
            for p in pairs:
                print(f"{size:>10} {p['iters']:>6} {p['envdoctor']:>16.4f} {p['plain']:>12.4f} "
                      f"{p['envdoctor'] / p['plain']:>7.3f}")
            med = statistics.median(p["envdoctor"] / p["plain"] for p in pairs)
            worst = max(worst, abs(med - 1))
            print(f"{size:>10} median ratio envdoctor / plain: {med:.3f}")
        overall = statistics.median(p["envdoctor"] / p["plain"] for pairs in rows.values() for p in pairs)
        print(f"median ratio over every pair: {overall:.3f}")
        print(f"largest deviation of a per-size median ratio from 1: {worst:.1%} "
              f"({'within' if worst <= 0.10 else 'NOT within'} 10%); load average at the end "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    dist.destroy_process_group()
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--python", default=sys.executable, help="an interpreter with torch (default: this one)")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--sizes", default="64K,1M,4M")
    p.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    p.add_argument("--budget", type=float, default=1.0, help="seconds of envdoctor's sweep per size")
    p.add_argument("--port", type=int, default=29531)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    return worker(args) if args.worker else launch(args)


if __name__ == "__main__":
    sys.exit(main())
