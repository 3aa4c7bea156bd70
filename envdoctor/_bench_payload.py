"""Stdlib-only micro-kernel script run inside the target interpreter by `envdoctor bench`; streams JSON lines."""

# Like _payload.py this runs under the *target* Python (3.8+), imports torch only inside the kernels,
# never imports envdoctor, and keeps to typing-module annotations.  envdoctor never imports it.
#
# Usage:  python _bench_payload.py --plan JSON [--mem-fraction F] [--busy PCI,...]
#   JSON: [{"name": "matmul_bf16", "device": "cuda", "budget_s": 4.0}, ...]  (device: "cpu" or "cuda")
#   --busy: PCI bus keys ("0000:3b:00") of GPUs another process uses: reported skipped, not measured
#   --skip NAME@DEVICE: already measured (a restart after a kernel was killed at its deadline)
#
# Every line it prints on the original stdout is one JSON object carrying "envdoctor_bench": 1:
#   {"event": "info", "torch": "2.5.1+cu124", "threads": 8, "devices": [{"device": "cuda:0", ...}]}
#   {"event": "start", "name": "matmul_bf16", "device": "cuda:0", "budget_s": 4.0, "t": <monotonic>}
#   {"event": "result", "result": {BenchResult fields}}
#   {"event": "done"}
# envdoctor kills this process when a kernel overruns its budget (a hung kernel), records that kernel
# as failed and starts a fresh process for the rest.
#
# Timing follows NVIDIA's and PyTorch's guidance: GPU work is asynchronous, so each timed iteration is
# bracketed by CUDA events recorded on the stream that runs it, and read only after a synchronize
# (CUDA C++ Best Practices Guide, "Using CUDA GPU Timers"); warm-up iterations run first so that clocks,
# cuBLAS heuristics and allocator caches settle (torch.utils.benchmark docs, "warmup"); inputs are random,
# never zeros (power and therefore clocks depend on the data: mamf-finder notes); the statistic is the
# median of the fastest half of the iterations at the best shape of a small sweep (the
# maximum-achievable-matmul approach, stas00/ml-engineering compute/accelerator/benchmarks).  CPU kernels
# are timed with time.perf_counter around synchronous calls.  Clocks are never locked or changed.

import os
import sys

if __name__ == "__main__" and sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(
    os.path.abspath(__file__)
):
    del sys.path[0]  # as in _payload.py: our folder must not shadow top-level modules (torch's imports)

import json  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from typing import Any, Callable, Dict, List, Optional, Tuple  # noqa: E402

BENCH_PROTOCOL = 1
MATMUL_DTYPES = {"matmul_fp32": "float32", "matmul_tf32": "float32", "matmul_bf16": "bfloat16",
                 "matmul_fp16": "float16", "matmul_fp8": "float8_e4m3fn"}
# Square shapes around the sizes where cuBLAS reaches its peak on data-centre GPUs (mamf-finder's best
# shapes are 1024..20000 per side); CPUs reach theirs far earlier and would take seconds per 8192 matmul.
GPU_SHAPES = [(4096, 4096, 4096), (6144, 6144, 6144), (8192, 8192, 8192)]
CPU_SHAPES = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024)]
GPU_COPY_BYTES = 1 << 30
CPU_COPY_BYTES = 128 << 20  # 4x a large L3 (32 MiB): measures DRAM, not cache
H2D_BYTES = 256 << 20
MIN_ITERS = 3
MAX_ITERS = 200


class Out:
    """One JSON object per line on the stdout we were given; everything else goes to stderr."""

    def __init__(self) -> None:
        sys.stdout.flush()
        self.fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        self.lock = threading.Lock()

    def emit(self, event: str, **fields: Any) -> None:
        obj = {"envdoctor_bench": BENCH_PROTOCOL, "event": event}
        obj.update(fields)
        data = (json.dumps(obj, default=str, sort_keys=True) + "\n").encode("ascii")
        with self.lock:
            while data:
                n = os.write(self.fd, data)
                data = data[n:]


def _exc(e: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(e), e)).strip()
    return text if len(text) < 500 else text[:497] + "..."


def _stat(times: List[float]) -> Tuple[float, float, float]:
    """(fastest, median of the fastest half, median of all) of per-iteration seconds."""
    s = sorted(t for t in times if t > 0)
    if not s:
        return 0.0, 0.0, 0.0
    half = s[: max(1, (len(s) + 1) // 2)]
    return s[0], half[len(half) // 2], s[len(s) // 2]


def _host_available_bytes() -> Optional[int]:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


class Timer:
    """Per-iteration timing: CUDA events on the device's current stream, perf_counter on the CPU."""

    def __init__(self, torch: Any, dev: Any) -> None:
        self.torch = torch
        self.cuda = dev.type == "cuda"
        self.dev = dev

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.dev)

    def run(self, fn: Callable[[], Any], deadline: float, warmup_s: float, max_iters: int = MAX_ITERS
            ) -> List[float]:
        """Warm up for ``warmup_s`` (at least one call), then time single calls until the deadline."""
        t_end = time.monotonic() + warmup_s
        fn()
        self.sync()
        while time.monotonic() < t_end:
            fn()
            self.sync()
        times: List[float] = []
        while len(times) < max_iters and (len(times) < MIN_ITERS or time.monotonic() < deadline):
            if self.cuda:
                batch = []
                # enqueue a few timed calls before waiting, so that the GPU is never idle between them
                for _ in range(min(8, max_iters - len(times))):
                    s = self.torch.cuda.Event(enable_timing=True)
                    e = self.torch.cuda.Event(enable_timing=True)
                    s.record()
                    fn()
                    e.record()
                    batch.append((s, e))
                self.torch.cuda.synchronize(self.dev)
                times.extend(s.elapsed_time(e) / 1000.0 for s, e in batch)
            else:
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            if time.monotonic() > deadline + 1.0:
                break
        return times


class Ctx:
    def __init__(self, torch: Any, out: Out, mem_fraction: float) -> None:
        self.torch = torch
        self.out = out
        self.mem_fraction = mem_fraction

    def free_bytes(self, dev: Any) -> Optional[int]:
        if dev.type == "cuda":
            try:
                free, _total = self.torch.cuda.mem_get_info(dev)
                return int(free)
            except Exception:
                return None
        return _host_available_bytes()

    def budget_bytes(self, dev: Any) -> Optional[int]:
        free = self.free_bytes(dev)
        return int(free * self.mem_fraction) if free is not None else None


def _result(name: str, device: str, status: str = "ok", reason: Optional[str] = None, value: Optional[float] = None,
            unit: Optional[str] = None, params: Optional[Dict[str, Any]] = None,
            samples: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    return {"name": name, "device": device, "status": status, "reason": reason, "value": value, "unit": unit,
            "params": params or {}, "samples": samples}


# --------------------------------------------------------------------------- kernels


def k_matmul(ctx: Ctx, name: str, dev: Any, deadline: float) -> Dict[str, Any]:
    torch = ctx.torch
    label = str(dev)
    dtype_name = MATMUL_DTYPES[name]
    if dev.type == "cpu" and name == "matmul_tf32":
        return _result(name, label, "skipped", "TF32 is a tensor-core mode of NVIDIA GPUs (compute capability "
                       ">= 8.0); on a CPU it would time fp32 again")
    if name == "matmul_fp8":
        if dev.type != "cuda":
            return _result(name, label, "skipped", "fp8 matmul (torch._scaled_mm) runs on NVIDIA GPUs only")
        cc = torch.cuda.get_device_capability(dev)
        if cc < (8, 9) or not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
            return _result(name, label, "skipped", "fp8 matmul needs compute capability >= 8.9 and a torch "
                           f"with torch._scaled_mm (cc {cc[0]}.{cc[1]}, torch {torch.__version__})")
    dtype = getattr(torch, dtype_name, None)
    if dtype is None:
        return _result(name, label, "skipped", f"torch {torch.__version__} has no {dtype_name}")
    elsize = 1 if name == "matmul_fp8" else torch.tensor([], dtype=dtype).element_size()
    shapes = GPU_SHAPES if dev.type == "cuda" else CPU_SHAPES
    limit = ctx.budget_bytes(dev)
    prev_tf32 = None
    if dev.type == "cuda":
        prev_tf32 = torch.backends.cuda.matmul.allow_tf32
        # fp32 must be true fp32 and tf32 must be allowed to use tensor cores: set, never assume
        torch.backends.cuda.matmul.allow_tf32 = name == "matmul_tf32"
    sweep = []
    best: Optional[Dict[str, Any]] = None
    start = time.monotonic()
    try:
        for i, (m, n, k) in enumerate(shapes):
            # inputs, output, and the float32 randn the inputs are drawn from before conversion
            need = (m * k + k * n) * (elsize + 4) + m * n * max(elsize, 2)
            if limit is not None and need > limit:
                sweep.append({"shape": [m, n, k], "skipped": f"needs {need >> 20} MiB, over {ctx.mem_fraction:.0%} of free memory"})
                continue
            now = time.monotonic()
            left = deadline - now
            slice_s = left / max(1, len(shapes) - i)
            if left <= 0.05:
                sweep.append({"shape": [m, n, k], "skipped": "budget spent"})
                continue
            a = torch.randn(m, k, device=dev, dtype=torch.float32)
            b = torch.randn(n, k, device=dev, dtype=torch.float32)
            if name == "matmul_fp8":
                a8 = a.to(dtype)
                b8 = b.to(dtype).t()  # _scaled_mm wants the second operand column-major
                one = torch.ones((), device=dev, dtype=torch.float32)

                def fn(a8=a8, b8=b8, one=one) -> Any:
                    return torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            else:
                a = a.to(dtype)
                bt = b.to(dtype).t()
                c = torch.empty(m, n, device=dev, dtype=dtype)

                def fn(a=a, bt=bt, c=c) -> Any:
                    return torch.mm(a, bt, out=c)
            timer = Timer(torch, dev)
            t0 = time.monotonic()
            times = timer.run(fn, now + slice_s, warmup_s=min(0.5, slice_s * 0.2))
            fastest, med_fast, med_all = _stat(times)
            flop = 2.0 * m * n * k
            entry = {"shape": [m, n, k], "iters": len(times), "tflops": round(flop / med_fast / 1e12, 4),
                     "best_tflops": round(flop / fastest / 1e12, 4), "median_tflops": round(flop / med_all / 1e12, 4),
                     "seconds": round(time.monotonic() - t0, 3)}
            sweep.append(entry)
            if best is None or entry["tflops"] > best["tflops"]:
                best = entry
            del a, b
            # a single call over the whole slice: a bigger shape would not fit in what is left
            if med_all > slice_s and dev.type == "cpu":
                for (m2, n2, k2) in shapes[i + 1:]:
                    sweep.append({"shape": [m2, n2, k2], "skipped": "one call would exceed the budget"})
                break
    finally:
        if prev_tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    if best is None:
        return _result(name, label, "skipped", "no shape fitted in memory or time", params={"sweep": sweep})
    params = {"shape": best["shape"], "n": best["shape"][0], "dtype": dtype_name, "best_tflops": best["best_tflops"],
              "median_tflops": best["median_tflops"], "iters": best["iters"], "sweep": sweep,
              "statistic": "median of the fastest half of the timed iterations at the best shape",
              "timer": "cuda events" if dev.type == "cuda" else "time.perf_counter",
              "threads": torch.get_num_threads(), "seconds": round(time.monotonic() - start, 3)}
    if dev.type == "cuda":
        params["allow_tf32"] = name == "matmul_tf32"
    return _result(name, label, value=best["tflops"], unit="TFLOP/s", params=params)


def _copy_bench(ctx: Ctx, name: str, label: str, dst: Any, src: Any, timer: Timer, deadline: float, nbytes: int,
                moved_per_call: int, extra: Dict[str, Any]) -> Dict[str, Any]:
    def fn() -> Any:
        return dst.copy_(src, non_blocking=True)

    start = time.monotonic()
    times = timer.run(fn, deadline, warmup_s=min(0.3, (deadline - start) * 0.2))
    fastest, med_fast, med_all = _stat(times)
    params = {"n": nbytes, "bytes_per_call": moved_per_call, "iters": len(times),
              "best_gbs": round(moved_per_call / fastest / 1e9, 3), "median_gbs": round(moved_per_call / med_all / 1e9, 3),
              "statistic": "median of the fastest half", "threads": ctx.torch.get_num_threads(),
              "timer": "cuda events" if timer.cuda else "time.perf_counter"}
    params.update(extra)
    return _result(name, label, value=round(moved_per_call / med_fast / 1e9, 3), unit="GB/s", params=params)


def k_membw(ctx: Ctx, name: str, dev: Any, deadline: float) -> Dict[str, Any]:
    """Copy one buffer into another: bytes read plus bytes written per second (as nvbandwidth's
    device_local_copy and STREAM's Copy count them)."""
    torch = ctx.torch
    cap = GPU_COPY_BYTES if dev.type == "cuda" else CPU_COPY_BYTES
    limit = ctx.budget_bytes(dev)
    nbytes = cap if limit is None else min(cap, limit // 2)
    nbytes -= nbytes % 4096
    if nbytes < (16 << 20):
        return _result(name, str(dev), "skipped", f"under 32 MiB free for two buffers within {ctx.mem_fraction:.0%} of free "
                       "memory")
    src = torch.rand(nbytes // 4, device=dev, dtype=torch.float32)
    dst = torch.empty_like(src)
    extra = {"note": "on a CPU this is host memory"} if dev.type == "cpu" and name == "membw_device" else {}
    return _copy_bench(ctx, name, str(dev), dst, src, Timer(torch, dev), deadline, nbytes, 2 * nbytes, extra)


def k_host_copy(ctx: Ctx, name: str, dev: Any, deadline: float) -> Dict[str, Any]:
    """h2d_pinned, h2d_pageable, d2h_pinned: one direction over PCIe (or C2C), bytes per second."""
    torch = ctx.torch
    if dev.type != "cuda":
        return _result(name, str(dev), "skipped", "host<->device copies need a CUDA device")
    host_free = _host_available_bytes()
    nbytes = H2D_BYTES
    limit = ctx.budget_bytes(dev)
    if limit is not None:
        nbytes = min(nbytes, limit)
    if host_free is not None:
        nbytes = min(nbytes, int(host_free * ctx.mem_fraction))
    nbytes -= nbytes % 4096
    if nbytes < (16 << 20):
        return _result(name, str(dev), "skipped", "under 16 MiB of memory for the buffers")
    pinned = name != "h2d_pageable"
    host = torch.empty(nbytes, dtype=torch.uint8)
    host.fill_(0x5A)  # the content does not matter on a copy (nothing compresses it); touching the pages does
    if pinned:
        host = host.pin_memory()
    devbuf = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    src, dst = (devbuf, host) if name.startswith("d2h") else (host, devbuf)
    stream = torch.cuda.Stream(device=dev)
    with torch.cuda.stream(stream):
        return _copy_bench(ctx, name, str(dev), dst, src, Timer(torch, dev), deadline, nbytes, nbytes,
                           {"pinned": pinned, "direction": "d2h" if name.startswith("d2h") else "h2d"})


def k_p2p(ctx: Ctx, name: str, devs: List[Any], deadline: float) -> List[Dict[str, Any]]:
    torch = ctx.torch
    if len(devs) < 2:
        return [_result(name, "cuda", "skipped", f"needs two or more GPUs ({len(devs)} visible)")]
    pairs = [(a, b) for a in devs for b in devs if a != b]
    out = []
    nbytes = 64 << 20
    for i, (a, b) in enumerate(pairs):
        left = deadline - time.monotonic()
        label = f"{a}->{b}"
        if left < 0.05:
            out.append(_result(name, label, "skipped", "budget spent"))
            continue
        slice_s = left / (len(pairs) - i)
        can = bool(torch.cuda.can_device_access_peer(a.index, b.index))
        src = torch.rand(nbytes // 4, device=a)
        dst = torch.empty(nbytes // 4, device=b)
        dst.copy_(src)
        torch.cuda.synchronize(a)
        torch.cuda.synchronize(b)
        # one copy crosses two devices: time a batch with perf_counter after synchronising both
        count = 0
        t0 = time.perf_counter()
        while True:
            for _ in range(4):
                dst.copy_(src, non_blocking=True)
            count += 4
            torch.cuda.synchronize(a)
            torch.cuda.synchronize(b)
            if time.perf_counter() - t0 > slice_s * 0.8:
                break
        secs = time.perf_counter() - t0
        out.append(_result(name, label, value=round(count * nbytes / secs / 1e9, 3), unit="GB/s",
                           params={"src": str(a), "dst": str(b), "p2p_access": can, "n": nbytes, "iters": count,
                                   "timer": "time.perf_counter after synchronize"}))
        del src, dst
    return out


def k_allreduce(ctx: Ctx, name: str, devs: List[Any], deadline: float) -> List[Dict[str, Any]]:
    """Single-process NCCL all-reduce over every visible GPU; busbw = algbw * 2(n-1)/n
    (nccl-tests doc/PERFORMANCE.md)."""
    torch = ctx.torch
    n = len(devs)
    if n < 2:
        return [_result(name, "cuda", "skipped", f"needs two or more GPUs ({n} visible)")]
    try:
        import torch.cuda.nccl as nccl
        if not nccl.is_available([torch.empty(1, device=d) for d in devs]):
            return [_result(name, "cuda", "skipped", "NCCL is not available in this torch build")]
    except Exception as e:
        return [_result(name, "cuda", "skipped", "NCCL unavailable: " + _exc(e))]
    sizes = [1 << 20, 16 << 20, 128 << 20]
    limit = min(filter(None, [ctx.budget_bytes(d) for d in devs]), default=None)
    sweep = []
    for i, size in enumerate(sizes):
        if limit is not None and size > limit:
            continue
        left = deadline - time.monotonic()
        if left < 0.05:
            break
        slice_s = left / (len(sizes) - i)
        bufs = [torch.rand(size // 4, device=d) for d in devs]
        nccl.all_reduce(bufs)
        for d in devs:
            torch.cuda.synchronize(d)
        count = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < slice_s * 0.8 or count < 2:
            nccl.all_reduce(bufs)
            count += 1
            for d in devs:
                torch.cuda.synchronize(d)
        secs = (time.perf_counter() - t0) / count
        algbw = size / secs / 1e9
        sweep.append({"bytes": size, "iters": count, "algbw_gbs": round(algbw, 3),
                      "busbw_gbs": round(algbw * 2 * (n - 1) / n, 3)})
        del bufs
    if not sweep:
        return [_result(name, "cuda", "skipped", "no message size fitted in memory or time")]
    top = sweep[-1]
    return [_result(name, "cuda", value=top["busbw_gbs"], unit="GB/s",
                    params={"gpus": n, "sweep": sweep, "n": top["bytes"], "algbw_gbs": top["algbw_gbs"],
                            "busbw": "algbw * 2(n-1)/n (nccl-tests)", "api": "torch.cuda.nccl.all_reduce"})]


def k_sustained(ctx: Ctx, name: str, devs: List[Any], deadline: float) -> List[Dict[str, Any]]:
    """Large matmuls on every device at once until the deadline; per-device throughput per batch.

    One thread per GPU so that each GPU's queue stays full; a thread waits on its own event, which
    releases the GIL, so the others keep launching.  Timestamps are time.monotonic(), the clock
    envdoctor's NVML sampler uses too (CLOCK_MONOTONIC is system-wide on Linux).
    """
    torch = ctx.torch
    results: List[Dict[str, Any]] = []
    lock = threading.Lock()

    def work(dev: Any) -> None:
        label = str(dev)
        if dev.type == "cuda":
            # a new thread's current device is cuda:0: events and streams must be this GPU's
            torch.cuda.set_device(dev)
        try:
            cuda = dev.type == "cuda"
            side = 8192 if cuda else 512
            dtype = torch.bfloat16 if cuda else torch.float32
            limit = ctx.budget_bytes(dev)
            while limit is not None and 3 * side * side * 2 > limit and side > 1024:
                side //= 2
            a = torch.randn(side, side, device=dev, dtype=dtype)
            b = torch.randn(side, side, device=dev, dtype=dtype)
            c = torch.empty(side, side, device=dev, dtype=dtype)
            flop = 2.0 * side ** 3
            samples = []
            per_batch = 8 if cuda else 1
            torch.mm(a, b, out=c)
            if cuda:
                torch.cuda.synchronize(dev)
            t_prev = time.monotonic()
            while t_prev < deadline:
                for _ in range(per_batch):
                    torch.mm(a, b, out=c)
                if cuda:
                    ev = torch.cuda.Event()
                    ev.record()
                    ev.synchronize()
                t = time.monotonic()
                samples.append({"t": round(t, 4), "tflops": round(per_batch * flop / (t - t_prev) / 1e12, 4)})
                t_prev = t
            rates = sorted(s["tflops"] for s in samples)
            params = {"shape": [side, side, side], "dtype": str(dtype).replace("torch.", ""),
                      "batches": len(samples), "threads": torch.get_num_threads()}
            if cuda:
                params["pci_bus_id"] = _pci_key(torch, dev.index)
                params["gpu_name"] = torch.cuda.get_device_name(dev)
            res = _result(name, label, value=rates[len(rates) // 2] if rates else None, unit="TFLOP/s",
                          params=params, samples=samples)
        except Exception as e:
            res = _result(name, label, "failed", _exc(e))
        with lock:
            results.append(res)

    threads = [threading.Thread(target=work, args=(d,), daemon=True) for d in devs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()) + 30.0)
    return sorted(results, key=lambda r: r["device"])


PER_DEVICE = {"matmul_fp32": k_matmul, "matmul_tf32": k_matmul, "matmul_bf16": k_matmul,
              "matmul_fp16": k_matmul, "matmul_fp8": k_matmul, "membw_device": k_membw, "membw_host": k_membw,
              "h2d_pinned": k_host_copy, "h2d_pageable": k_host_copy, "d2h_pinned": k_host_copy}
ALL_DEVICES = {"p2p": k_p2p, "allreduce": k_allreduce, "sustained": k_sustained}


# a stdlib copy of envdoctor.domain.pci.bus_key's form (this script runs without the package); envdoctor re-keys it with bus_key
def _pci_key(torch: Any, i: int) -> Optional[str]:
    try:
        p = torch.cuda.get_device_properties(i)
        return f"{p.pci_domain_id:04x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}"
    except Exception:
        return None


def run(plan: List[Dict[str, Any]], out: Out, mem_fraction: float, busy: List[str], skip: List[str]) -> None:
    try:
        import torch
    except Exception as e:
        for item in plan:
            out.emit("result", result=_result(item["name"], item.get("device") or "cpu", "skipped",
                                              "import torch failed: " + _exc(e)))
        return
    ctx = Ctx(torch, out, mem_fraction)
    cuda_ok = False
    cuda_reason = None
    try:
        cuda_ok = bool(torch.cuda.is_available())
        if not cuda_ok:
            cuda_reason = "torch.cuda.is_available() is False (torch {}, built for CUDA {})".format(
                torch.__version__, getattr(torch.version, "cuda", None))
    except Exception as e:
        cuda_reason = "CUDA initialisation failed: " + _exc(e)
    gpus = []
    infos = []
    if cuda_ok:
        for i in range(torch.cuda.device_count()):
            key = _pci_key(torch, i)
            info = {"device": f"cuda:{i}", "name": torch.cuda.get_device_name(i), "pci_bus_id": key,
                    "busy": key in busy}
            infos.append(info)
            gpus.append((torch.device("cuda", i), info))
    out.emit("info", torch=torch.__version__, cuda=getattr(torch.version, "cuda", None), threads=torch.get_num_threads(),
             devices=infos, cuda_reason=cuda_reason, t=time.monotonic())
    free_gpus = [d for d, info in gpus if not info["busy"]]
    for item in plan:
        name, kind, budget = item["name"], item.get("device") or "cpu", float(item.get("budget_s") or 1.0)
        if kind == "cuda" and not cuda_ok:
            out.emit("result", result=_result(name, "cuda", "skipped", f"no CUDA device: {cuda_reason}"))
            continue
        if name in ALL_DEVICES:
            devs = free_gpus if kind == "cuda" else [torch.device("cpu")]
            if name in ("p2p", "allreduce") and kind == "cpu":
                out.emit("result", result=_result(name, "cpu", "skipped", f"{name} measures GPU-to-GPU traffic"))
                continue
            if f"{name}@{kind}" in skip:
                continue
            _one(out, name, kind, budget, lambda d, n=name, ds=devs: ALL_DEVICES[n](ctx, n, ds, d))
            continue
        targets = [(torch.device("cpu"), None)] if kind == "cpu" else gpus
        for dev, info in targets:
            label = str(dev)
            if f"{name}@{label}" in skip:
                continue
            if info is not None and info["busy"]:
                out.emit("result", result=_result(name, label, "skipped", "another process is using this GPU "
                                                  "(--force measures it anyway)", params={"pci_bus_id": info["pci_bus_id"]}))
                continue
            _one(out, name, label, budget, lambda d, n=name, dv=dev, inf=info: _tag(PER_DEVICE[n](ctx, n, dv, d), inf),
                 torch=torch, dev=dev)


def _tag(res: Dict[str, Any], info: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    if info is not None:
        res["params"].setdefault("pci_bus_id", info["pci_bus_id"])
        res["params"].setdefault("gpu_name", info["name"])
    return res


def _one(out: Out, name: str, label: str, budget: float, fn: Callable[[float], Any], torch: Any = None,
         dev: Any = None) -> None:
    start = time.monotonic()
    out.emit("start", name=name, device=label, budget_s=budget, t=start)
    try:
        if torch is not None and dev is not None and dev.type == "cuda":
            # CUDA events record on the *current* device's stream: it must be the GPU being measured
            with torch.cuda.device(dev):
                res = fn(start + budget)
        else:
            res = fn(start + budget)
        results = res if isinstance(res, list) else [res]
    except Exception as e:
        results = [_result(name, label, "failed", _exc(e))]
    finally:
        if torch is not None and dev is not None and dev.type == "cuda":
            try:
                torch.cuda.empty_cache()  # give the memory back before the next kernel sizes itself
            except Exception:
                pass
    took = round(time.monotonic() - start, 3)
    for r in results:
        r.setdefault("duration_s", took)
        r["duration_s"] = took
        out.emit("result", result=r)


def main(argv: Optional[List[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="_bench_payload.py")
    parser.add_argument("--plan", required=True)
    parser.add_argument("--mem-fraction", type=float, default=0.5)
    parser.add_argument("--busy", default="")
    parser.add_argument("--skip", action="append", default=[])
    opts = parser.parse_args(argv)
    out = Out()
    try:
        plan = json.loads(opts.plan)
        run(plan, out, max(0.01, min(0.9, opts.mem_fraction)), [b for b in opts.busy.split(",") if b], opts.skip)
    except BaseException as e:
        out.emit("error", error=_exc(e))
        traceback.print_exc()
        return 1
    out.emit("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
