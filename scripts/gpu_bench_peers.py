#!/usr/bin/env python3
"""On one NVIDIA GPU: `envdoctor bench` beside its peers measured in the same run, in under 5 minutes; one archive.

    python scripts/gpu_bench_peers.py --python /path/to/cuda-venv/bin/python [--out DIR] [--gpu 0] [--budget S]
        [--envdoctor-json BENCH.json]

--budget (default 290 s) bounds the whole run. Under THOROUGH_MIN_S the `--thorough` run is left out (and said
so in peers.md): that is how scripts/gpu_check.sh fits this stage into its 6-minute run; the quick suite, the
mamf-finder procedure and the copies still run, each within what is left. --envdoctor-json takes envdoctor's side
from a bench report already made (scripts/gpu_check.sh passes its bench step's JSON): neither envdoctor run is
repeated, and the peers are compared with the figures of GPU --gpu in that report.

What runs, on GPU --gpu (CUDA_VISIBLE_DEVICES), in this order, each with a timeout:
1. `envdoctor bench --thorough matmul_bf16 matmul_fp8 membw_device h2d_pinned d2h_pinned` (JSON), then the
   quick suite (JSON);
2. mamf-finder's procedure (ml-engineering compute/accelerator/benchmarks/mamf-finder.py) in a plain torch
   loop in the same interpreter: a 256 MiB buffer zeroed and the output re-randomised before every iteration,
   50 warm-up and 100 CUDA-event-timed iterations per shape, the mean; at envdoctor's best shape and at
   4096^3 / 8192^3, bf16 and (cc >= 8.9) fp8 via torch._scaled_mm with a bf16 output;
3. nvbandwidth-style copies in a plain torch loop: host->device and device->host from pinned memory on the
   copy engine (cudaMemcpyAsync), 8 copies of 256 MiB queued and timed with events, the median of 10; a
   device-local copy of 1 GiB; bytes counted as envdoctor counts them (one direction for host copies; read +
   write for the device copy); the nvbandwidth binary too when it is on PATH (its own counting, noted);
4. nccl-tests all_reduce_perf on every GPU when it is on PATH (8M..2G, the best busbw).
Writes DIR/peers.md (the table: envdoctor, peer, ratio, how) and every raw output, then DIR.tar.gz.
Without an NVIDIA GPU it prints why and exits 0 (nothing to measure).
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
import tarfile
import time

BUDGET_S = 290  # the whole run: a short rental
THOROUGH_MIN_S = 200  # the --thorough run's own timeout is 200 s: below this budget it is left out

MAMF = r'''
import json, sys, torch
shapes = json.loads(sys.argv[1])
out = []
cc = torch.cuda.get_device_capability()
l2 = torch.empty(256 * 2**20 // 4, dtype=torch.int, device="cuda")
for dtype_name, m, n, k in shapes:
    if dtype_name == "fp8" and (cc < (8, 9) or not hasattr(torch, "_scaled_mm")):
        out.append({"dtype": dtype_name, "shape": [m, n, k], "skipped": "no fp8 on this GPU or torch"}); continue
    dt = torch.bfloat16
    C = torch.empty(m, n, dtype=dt, device="cuda"); C_rand = torch.randn(m, n, device="cuda").to(dt)
    if dtype_name == "fp8":
        A = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        B = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device="cuda")
        def f():
            torch._scaled_mm(A, B, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, out=C)
    else:
        A = torch.randn(m, k, dtype=dt, device="cuda"); B = torch.randn(n, k, dtype=dt, device="cuda").t()
        def f():
            torch.mm(A, B, out=C)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(150)]
    for s, e in ev:
        l2.zero_(); C.copy_(C_rand)
        s.record(); f(); e.record()
    torch.cuda.synchronize()
    ts = [s.elapsed_time(e) / 1000 for s, e in ev][50:]
    flop = 2 * m * n * k
    out.append({"dtype": dtype_name, "shape": [m, n, k], "mean_tflops": flop / (sum(ts) / len(ts)) / 1e12,
                "max_tflops": flop / min(ts) / 1e12})
    del A, B, C, C_rand
    torch.cuda.empty_cache()
print(json.dumps(out))
'''

COPIES = r'''
import json, torch
def timed(dst, src, nbytes, batch=8, reps=10):
    stream = torch.cuda.Stream()
    rates = []
    with torch.cuda.stream(stream):
        for _ in range(2):
            dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
        for _ in range(reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if hasattr(torch.cuda, "_sleep"):
                torch.cuda._sleep(1_000_000)  # nvbandwidth queues its copies behind a spin kernel
            s.record()
            for _ in range(batch):
                dst.copy_(src, non_blocking=True)
            e.record(); e.synchronize()
            rates.append(batch * nbytes / (s.elapsed_time(e) / 1000) / 1e9)
    rates.sort()
    return rates[len(rates) // 2]
n = 256 << 20
host = torch.empty(n, dtype=torch.uint8).pin_memory(); dev = torch.empty(n, dtype=torch.uint8, device="cuda")
out = {"h2d_pinned": timed(dev, host, n), "d2h_pinned": timed(host, dev, n)}
g = 1 << 30
a = torch.empty(g, dtype=torch.uint8, device="cuda"); b = torch.empty_like(a)
out["membw_device"] = 2 * timed(b, a, g, batch=4)  # read + write, as envdoctor counts
print(json.dumps(out))
'''


def run(argv, timeout, env=None, cwd=None):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=max(5, timeout), env=env, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{type(e).__name__}: {e}"[:300]
    if p.returncode not in (0, 1):  # envdoctor exits 1 with findings and still prints its report
        return None, (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1][:300]
    return p.stdout, (p.stderr.strip().splitlines() or [""])[-1][:300]


def no_gpu_reason(python: str) -> str:
    if not shutil.which("nvidia-smi"):
        return "no nvidia-smi on PATH (no NVIDIA driver here)"
    out, err = run(["nvidia-smi", "-L"], 30)
    if not out or "GPU" not in out:
        return f"nvidia-smi -L lists no GPU ({err})"
    out, err = run([python, "-c", "import torch; print(torch.cuda.is_available())"], 120)
    if (out or "").strip().splitlines()[-1:] != ["True"]:
        return f"torch in {python} sees no CUDA device ({err or (out or '').strip()})"
    return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", required=True, help="the interpreter with a CUDA build of torch")
    ap.add_argument("--out", default="gpu-bench-peers", help="directory for the outputs (and DIR.tar.gz)")
    ap.add_argument("--gpu", default="0", help="the GPU to measure (CUDA_VISIBLE_DEVICES)")
    ap.add_argument("--budget", type=float, default=BUDGET_S,
                    help=f"seconds for the whole run (default {BUDGET_S}; under {THOROUGH_MIN_S} no --thorough run)")
    ap.add_argument("--envdoctor-json", default="",
                    help="envdoctor's side from this `envdoctor bench --format json` report (no envdoctor run here)")
    args = ap.parse_args()
    if not 30 <= args.budget <= 3600:
        ap.error(f"--budget {args.budget:g}: give 30 to 3600 seconds")
    why = no_gpu_reason(args.python)
    if why:
        print(f"gpu_bench_peers: skipped: {why}: nothing to measure")
        return 0
    t0 = time.monotonic()

    def left() -> float:
        return args.budget - (time.monotonic() - t0)

    os.makedirs(args.out, exist_ok=True)
    one = dict(os.environ, CUDA_VISIBLE_DEVICES=args.gpu)
    ed = [sys.executable, "-m", "envdoctor", "bench", "--python", args.python, "--format", "json", "--no-write"]
    notes = {}
    given = None
    if args.envdoctor_json:
        try:
            with open(args.envdoctor_json) as f:
                given = f.read()
            json.loads(given)["facts"]["bench"]["results"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            notes["--envdoctor-json"] = f"{args.envdoctor_json} unusable ({type(e).__name__}: {e}); ran the quick suite"
            given = None
    if given is not None:
        thorough, err = None, "not run: envdoctor's side is the given report"
    elif args.budget >= THOROUGH_MIN_S:
        thorough, err = run(ed + ["--thorough", "matmul_bf16", "matmul_fp8", "membw_device", "h2d_pinned",
                                  "d2h_pinned"], min(200, left()), env=one)
    else:
        thorough, err = None, f"not run: --budget {args.budget:g} s is under {THOROUGH_MIN_S} s"
    if thorough:
        open(os.path.join(args.out, "envdoctor-thorough.json"), "w").write(thorough)
    else:
        notes["envdoctor --thorough"] = err
    if given is not None:
        quick = given
        notes["envdoctor side"] = f"{args.envdoctor_json} (made before this run, on every GPU; GPU {args.gpu} compared)"
    else:
        quick, err = run(ed, min(60, left() * 0.45), env=one)
    if quick:
        open(os.path.join(args.out, "envdoctor-quick.json"), "w").write(quick)
    results = {}
    report = {}
    # a report of every GPU (the given one) names them cuda:N in CUDA's order, the order CUDA_VISIBLE_DEVICES uses:
    # the peers' GPU is cuda:<gpu> there; a run here saw that one GPU only, as cuda:0
    want = f"cuda:{args.gpu}" if given is not None else "cuda:0"
    for text in (quick, thorough):  # thorough figures win where both ran
        if text:
            report = json.loads(text)
            for r in report["facts"]["bench"]["results"]:
                if r["status"] == "ok" and str(r["device"]) in (want, "cuda"):
                    results[r["name"]] = r
    rows = []
    shapes = []
    for name, dt in (("matmul_bf16", "bf16"), ("matmul_fp8", "fp8")):
        best = results.get(name, {}).get("params", {}).get("shape")
        for shape in ([best] if best else []) + [[4096, 4096, 4096], [8192, 8192, 8192]]:
            if [dt] + shape not in shapes:
                shapes.append([dt] + shape)
    out, err = run([args.python, "-c", MAMF, json.dumps(shapes)], min(90, left() * 0.6), env=one)
    mamf = json.loads(out.strip().splitlines()[-1]) if out else []
    for m in mamf:
        r = results.get(f"matmul_{m['dtype']}")
        ours = None
        if r:
            sweep = {tuple(e["shape"]): e.get("tflops") for e in r["params"].get("sweep", [])}
            ours = sweep.get(tuple(m["shape"]))
        rows.append((f"matmul_{m['dtype']} TFLOP/s {'x'.join(map(str, m['shape']))}", ours,
                     "mamf-finder procedure, torch loop (mean of 100 after 50)", m.get("mean_tflops"),
                     m.get("skipped", "")))
    if not mamf:
        rows.append(("matmul (mamf-finder procedure)", None, "torch loop", None, err))
    out, err = run([args.python, "-c", COPIES], min(60, left()), env=one)
    copies = json.loads(out.strip().splitlines()[-1]) if out else {}
    for name in ("h2d_pinned", "d2h_pinned", "membw_device"):
        r = results.get(name)
        rows.append((f"{name} GB/s", r["value"] if r else None, "nvbandwidth-style copy, torch loop (median)",
                     copies.get(name), "" if copies else err))
    nvb = shutil.which("nvbandwidth")
    if nvb and left() > 20:
        out, err = run([nvb, "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce"], min(60, left()), env=one)
        if out:
            open(os.path.join(args.out, "nvbandwidth.txt"), "w").write(out)
            for test, name in (("host_to_device_memcpy_ce", "h2d_pinned"), ("device_to_host_memcpy_ce", "d2h_pinned")):
                m = re.search(rf"SUM\s+{re.escape(test)}\s+([\d.]+)", out)
                r = results.get(name)
                rows.append((f"{name} GB/s", r["value"] if r else None, f"nvbandwidth {test} (its own counting)",
                             float(m.group(1)) if m else None, "" if m else "no SUM line"))
    ar = shutil.which("all_reduce_perf")
    gpus = (report.get("facts") or {}).get("driver", {}).get("gpus") or []
    if ar and len(gpus) > 1 and left() > 30:
        out, err = run([ar, "-b", "8M", "-e", "2G", "-f", "2", "-g", str(len(gpus))], min(90, left()))
        if out:
            open(os.path.join(args.out, "all_reduce_perf.txt"), "w").write(out)
            busbw = [float(x.split()[-2]) for x in out.splitlines() if re.match(r"\s+\d+\s+\d+\s+float", x)]
            rows.append(("allreduce busbw GB/s (all GPUs)", None, "nccl-tests all_reduce_perf 8M..2G (best)",
                         max(busbw) if busbw else None, "envdoctor's all-reduce: `envdoctor bench allreduce`"))
    drv = (report.get("facts") or {}).get("driver", {})
    lines = [f"Measured {datetime.date.today().isoformat()} on GPU {args.gpu} of {len(gpus)}x "
             f"{gpus[0]['name'] if gpus else '?'} (driver {drv.get('driver_version')}), "
             f"{round(time.monotonic() - t0)} s", "",
             "| measurement | envdoctor | peer | peer value | envdoctor / peer | note |", "|---|---|---|---|---|---|"]
    for what, ours, peer_name, peer, note in rows:
        ratio = f"{ours / peer:.3f}" if ours and peer else "-"
        lines.append(f"| {what} | {round(ours, 2) if ours is not None else '-'} | {peer_name} | "
                     f"{round(peer, 2) if peer is not None else '-'} | {ratio} | {note or ''} |")
    for k, v in notes.items():
        lines.append(f"\n{k}: {v}")
    text = "\n".join(lines) + "\n"
    open(os.path.join(args.out, "peers.md"), "w").write(text)
    archive = args.out.rstrip("/") + ".tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(args.out, arcname=os.path.basename(args.out.rstrip("/")))
    print(text)
    print(f"gpu_bench_peers: {archive}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
