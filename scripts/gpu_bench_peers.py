#!/usr/bin/env python3
"""On an NVIDIA machine: `envdoctor bench` against peers measured in the same run; writes one Markdown table.

    python scripts/gpu_bench_peers.py --python /path/to/cuda-venv/bin/python [--out bench-peers.md]

Peers, each only where it can run here (a missing one is a row saying why, never a number):
- mamf-finder's approach, inline in the target interpreter with torch: for envdoctor's best matmul_bf16 shape,
  50 warm-up iterations then the mean of 100 CUDA-event-timed iterations (ml-engineering mamf-finder.py method);
- nvbandwidth (NVIDIA/nvbandwidth) host_to_device_memcpy_ce / device_to_host_memcpy_ce / device_local_copy,
  from PATH or built from $NVBANDWIDTH_SRC with cmake;
- nccl-tests all_reduce_perf (busbw at the largest size), from PATH or built from $NCCL_TESTS_SRC with make.
GPU figures in the README stay "unverified" until this table is recorded in docs/measurements.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys

MAMF = r'''
import json, sys, torch
m, n, k = (int(x) for x in sys.argv[1:4])
a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16); bt = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
for _ in range(50):
    torch.mm(a, bt, out=c)
torch.cuda.synchronize()
ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(100)]
for s, e in ev:
    s.record(); torch.mm(a, bt, out=c); e.record()
torch.cuda.synchronize()
ts = [s.elapsed_time(e) / 1000 for s, e in ev]
print(json.dumps({"mean_tflops": 2 * m * n * k / (sum(ts) / len(ts)) / 1e12, "max_tflops": 2 * m * n * k / min(ts) / 1e12}))
'''


def run(argv, timeout=600, cwd=None):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    return (p.stdout if p.returncode == 0 else None), (p.stderr.strip().splitlines() or [""])[-1][:200]


def nvbandwidth_bin():
    found = shutil.which("nvbandwidth")
    if found:
        return found, None
    src = os.environ.get("NVBANDWIDTH_SRC")
    if not src:
        return None, "nvbandwidth not on PATH and $NVBANDWIDTH_SRC not set"
    out, err = run(["bash", "-c", "cmake -S . -B build >/dev/null && cmake --build build -j >/dev/null"], cwd=src)
    exe = os.path.join(src, "build", "nvbandwidth")
    return (exe, None) if os.path.exists(exe) else (None, f"nvbandwidth build failed: {err}")


def nvbandwidth(exe, test):
    out, err = run([exe, "-t", test])
    if out is None:
        return None, err
    m = re.search(rf"SUM\s+{re.escape(test)}\s+([\d.]+)", out)
    return (float(m.group(1)), None) if m else (None, "no SUM line")


def nccl_allreduce(gpus: int):
    """nccl-tests' busbw at 128 MiB, the largest size envdoctor's allreduce sweeps."""
    exe = shutil.which("all_reduce_perf")
    src = os.environ.get("NCCL_TESTS_SRC")
    if exe is None and src:
        run(["make", "-j"], cwd=src, timeout=900)
        cand = os.path.join(src, "build", "all_reduce_perf")
        exe = cand if os.path.exists(cand) else None
    if exe is None:
        return None, "all_reduce_perf not on PATH and $NCCL_TESTS_SRC not set or not buildable"
    if gpus < 2:
        return None, "one GPU: no all-reduce"
    out, err = run([exe, "-b", "128M", "-e", "128M", "-g", str(gpus)])
    m = re.search(r"Avg bus bandwidth\s*:\s*([\d.]+)", out or "")
    return (float(m.group(1)), None) if m else (None, err or "no 'Avg bus bandwidth' line")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", required=True)
    ap.add_argument("--out", default="bench-peers.md")
    args = ap.parse_args()
    # exit code 1 (findings at error) still prints the JSON report on stdout
    p = subprocess.run([sys.executable, "-m", "envdoctor", "bench", "--python", args.python, "all", "--format", "json"],
                       capture_output=True, text=True, timeout=900)
    report = json.loads(p.stdout)
    results = report["facts"]["bench"]["results"]
    gpus = report["facts"]["driver"]["gpus"]
    rows = []

    def first(name):
        return next((r for r in results if r["name"] == name and r["status"] == "ok"
                     and str(r["device"]).startswith("cuda")), None)

    mm = first("matmul_bf16")
    if mm:
        shape = mm["params"]["shape"]
        o, e = run([args.python, "-c", MAMF, *map(str, shape)])
        peer = json.loads(o)["mean_tflops"] if o else None
        rows.append(("matmul_bf16 TFLOP/s " + "x".join(map(str, shape)), mm["value"], "mamf-finder method (mean)", peer, e))
    exe, why = nvbandwidth_bin()
    for name, test in (("h2d_pinned", "host_to_device_memcpy_ce"), ("d2h_pinned", "device_to_host_memcpy_ce"),
                       ("membw_device", "device_local_copy")):
        r = first(name)
        peer, e = nvbandwidth(exe, test) if exe else (None, why)
        if peer is not None and name == "membw_device":
            peer = peer / max(1, len(gpus))  # SUM over the GPUs -> one GPU
            e = "envdoctor counts bytes read + written; check how nvbandwidth counts before reading the ratio"
        rows.append((f"{name} GB/s", r["value"] if r else None, f"nvbandwidth {test}", peer, e))
    ar = next((r for r in results if r["name"] == "allreduce" and r["status"] == "ok"), None)
    peer, e = nccl_allreduce(len(gpus))
    rows.append(("allreduce busbw GB/s", ar["value"] if ar else None, "nccl-tests all_reduce_perf", peer, e))
    lines = [f"Measured {datetime.date.today().isoformat()} on {len(gpus)}x {gpus[0]['name'] if gpus else '?'} "
             f"(driver {report['facts']['driver'].get('driver_version')})", "",
             "| measurement | envdoctor | peer | peer value | envdoctor / peer | note |", "|---|---|---|---|---|---|"]
    for what, ours, peer_name, peer, note in rows:
        ratio = f"{ours / peer:.3f}" if ours and peer else "-"
        lines.append(f"| {what} | {ours if ours is not None else '-'} | {peer_name} | "
                     f"{round(peer, 3) if peer is not None else '-'} | {ratio} | {note or ''} |")
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as fh:
        fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
