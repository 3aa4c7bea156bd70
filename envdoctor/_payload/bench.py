"""The micro-kernels of `envdoctor bench` (matmul, memory bandwidth, copies, all-reduce, sustained load), stdlib only
at import: torch is passed in. bench_run.py runs them as the task `bench`; fleet/measure.py runs two in-process."""

# Timing follows NVIDIA's and PyTorch's guidance: GPU work is asynchronous, so each timed iteration is
# bracketed by CUDA events recorded on the stream that runs it, and read only after a synchronize
# (CUDA C++ Best Practices Guide, "Using CUDA GPU Timers"); each GPU is warmed up with large matmuls
# before its first timed kernel and every kernel has warm-up iterations of its own so that clocks, cuBLAS
# heuristics and allocator caches settle (torch.utils.benchmark docs, "warmup"); inputs are random, never
# zeros (power and therefore clocks depend on the data: mamf-finder notes); a 256 MiB buffer is written
# between timed matmul iterations so that no operand is served from L2 (mamf-finder's cache reset), and
# the output is re-randomised likewise.  Matmuls report the mean of the timed iterations at the best shape
# of a sweep that reaches the published maxima (squares up to 16384 where memory and time allow, and the
# fp8 best shapes of mamf-finder's table); --thorough runs mamf-finder's procedure (50 warm-up and 100
# timed iterations per shape, mean, its quick-run shape range).  Copies report the median (nvbandwidth's
# default statistic).  All-reduce times N iterations between events per size up to >= 1 GiB (nccl-tests)
# and reports the best bus bandwidth with its size.  CPU kernels are timed with time.perf_counter around
# synchronous calls.  Clocks are never locked or changed.

import os
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

from .common import pci_key

MATMUL_DTYPES = {"matmul_fp32": "float32", "matmul_tf32": "float32", "matmul_bf16": "bfloat16",
                 "matmul_fp16": "float16", "matmul_fp8": "float8_e4m3fn"}
# Square shapes around the sizes where cuBLAS reaches its peak on data-centre GPUs (mamf-finder's best
# shapes are 1024..20000 per side); CPUs reach theirs far earlier and would take seconds per 8192 matmul.
GPU_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (16384, 16384, 16384)]
# mamf-finder's best shapes (MxNxK) in its published tables: bf16 and fp8 on H100, H200, GH200, B200, GB200
BEST_SHAPES = {"matmul_fp8": [(1024, 9216, 14336), (1280, 4096, 12032), (1024, 14336, 14336), (15360, 4096, 3072),
                              (19456, 5120, 1536)],
               "matmul_bf16": [(2048, 2048, 13312), (1024, 15360, 4096), (1792, 16128, 3072), (4096, 9728, 2048)]}
L2_FLUSH_BYTES = 256 << 20  # mamf-finder: the largest L2/LLC of current accelerators
GPU_WARMUP_S = 2.0  # large bf16 matmuls before the first timed kernel of each GPU (clocks and power settle)
THOROUGH_WARMUP_ITERS, THOROUGH_ITERS = 50, 100  # mamf-finder's defaults
# the environment variables that change what a float32 matmul computes (PyTorch CUDA semantics, "TF32 on
# Ampere and later devices"; cuBLAS NVIDIA_TF32_OVERRIDE)
TF32_ENV = ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "NVIDIA_TF32_OVERRIDE")
CPU_SHAPES = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024)]
GPU_COPY_BYTES = 1 << 30
CPU_COPY_BYTES = 128 << 20  # 4x a large L3 (32 MiB): measures DRAM, not cache
H2D_BYTES = 256 << 20
MIN_ITERS = 3
MAX_ITERS = 200
# CPU matmul: the sweep's slices are sizing only; the chosen shape is timed again in two slices' worth of time,
# with no iteration cap (200 calls of a 256^3 product last 0.1 s: too short a window to see a shared machine)
CPU_FINAL_SLOTS, CPU_MAX_ITERS = 2, 1000000


def _exc(e: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(e), e)).strip()
    return text if len(text) < 500 else text[:497] + "..."


def _stat(times: List[float]) -> Tuple[float, float, float]:
    """(fastest, mean, median) of per-iteration seconds."""
    s = sorted(t for t in times if t > 0)
    if not s:
        return 0.0, 0.0, 0.0
    return s[0], sum(s) / len(s), s[len(s) // 2]


def mamf_m_range() -> List[Tuple[int, int, int]]:
    """mamf-finder's quick run: --m_range 0 20480 256 --n 4096 --k 4096 (its README: 80-90% of the maximum)."""
    return [(m, 4096, 4096) for m in range(256, 20480, 256)]


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

    def run(self, fn: Callable[[], Any], deadline: float, warmup_s: float, max_iters: int = MAX_ITERS,
            between: Optional[Callable[[], Any]] = None, warmup_iters: int = 0, iters: int = 0) -> List[float]:
        """Warm up for ``warmup_s`` (at least one call, or ``warmup_iters``), then time single calls until the
        deadline (or exactly ``iters``). ``between`` runs before every timed call, outside the events (the
        L2 flush)."""
        t_end = time.monotonic() + warmup_s
        fn()
        self.sync()
        done = 1
        while time.monotonic() < t_end or done < warmup_iters:
            if between is not None:
                between()
            fn()
            self.sync()
            done += 1
        times: List[float] = []
        if iters:
            max_iters = iters
        while len(times) < max_iters and (len(times) < MIN_ITERS or iters or time.monotonic() < deadline):
            if self.cuda:
                batch = []
                # enqueue a few timed calls before waiting, so that the GPU is never idle between them
                for _ in range(min(8, max_iters - len(times))):
                    s = self.torch.cuda.Event(enable_timing=True)
                    e = self.torch.cuda.Event(enable_timing=True)
                    if between is not None:
                        between()
                    s.record()
                    fn()
                    e.record()
                    batch.append((s, e))
                self.torch.cuda.synchronize(self.dev)
                times.extend(s.elapsed_time(e) / 1000.0 for s, e in batch)
            else:
                if between is not None:
                    between()
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            if time.monotonic() > deadline + (30.0 if iters else 1.0):
                break
        return times


class Ctx:
    def __init__(self, torch: Any, out: Any, mem_fraction: float, thorough: bool = False) -> None:
        self.torch = torch
        self.out = out
        self.mem_fraction = mem_fraction
        self.thorough = thorough
        self.warmed: set = set()  # GPUs already warmed up

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


def _env_overrides() -> Dict[str, str]:
    return {k: os.environ[k] for k in TF32_ENV if k in os.environ}


# fp8 runs with fast accumulation, as the figures it is judged against were measured: Azure's cuBLASLt fp8 GEMM
# (superbench cublaslt_gemm) sets CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1; torch._scaled_mm's use_fast_accum sets the same
# cuBLASLt attribute (aten/src/ATen/cuda/CUDABlas.cpp scaled_gemm)
FP8_FAST_ACCUM = True


def _scaled_mm(torch: Any, a8: Any, b8: Any, one: Any, c: Any) -> Any:
    try:
        return torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, out=c,
                                use_fast_accum=FP8_FAST_ACCUM)
    except TypeError:  # an older signature without out=
        return torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                use_fast_accum=FP8_FAST_ACCUM)


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
    cuda = dev.type == "cuda"
    fp8 = name == "matmul_fp8"
    elsize = 1 if fp8 else torch.tensor([], dtype=dtype).element_size()
    out_dtype = torch.bfloat16 if fp8 else dtype
    out_size = 2 if fp8 else elsize
    if cuda:
        shapes = (mamf_m_range() if ctx.thorough else []) + list(GPU_SHAPES) + list(BEST_SHAPES.get(name, []))
    else:
        shapes = list(CPU_SHAPES)
    limit = ctx.budget_bytes(dev)
    flush = None
    if cuda and (limit is None or limit > 4 * L2_FLUSH_BYTES):
        flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=dev)
        limit = None if limit is None else limit - L2_FLUSH_BYTES
    prev_tf32 = None
    if cuda:
        prev_tf32 = torch.backends.cuda.matmul.allow_tf32
        # fp32 must be true fp32 and tf32 must be allowed to use tensor cores: set, never assume
        torch.backends.cuda.matmul.allow_tf32 = name == "matmul_tf32"
    sweep: List[Dict[str, Any]] = []
    best: Optional[Dict[str, Any]] = None
    start = time.monotonic()
    best_fn: Optional[Callable[[], Any]] = None
    per_flop: Optional[float] = None  # seconds per flop of the last shape: to skip a shape that cannot finish
    try:
        for i, (m, n, k) in enumerate(shapes):
            # inputs (and the float32 randn they are drawn from), the output, its random copy and that copy's source
            need = (m * k + k * n) * (elsize + 4) + 2 * m * n * max(out_size, 2) + 4 * m * n
            if limit is not None and need > limit:
                sweep.append({"shape": [m, n, k], "skipped": f"needs {need >> 20} MiB, over "
                              f"{ctx.mem_fraction:.0%} of free memory"})
                continue
            now = time.monotonic()
            left = deadline - now
            if left <= 0.05:
                sweep.append({"shape": [m, n, k], "skipped": "budget spent"})
                continue
            # CPU: the sweep only sizes; two slots stay for timing the chosen shape again (see below)
            slice_s = left / max(1, len(shapes) - i + (0 if cuda else CPU_FINAL_SLOTS))
            flop = 2.0 * m * n * k
            runs = (THOROUGH_WARMUP_ITERS + THOROUGH_ITERS) if ctx.thorough else MIN_ITERS + 1
            if per_flop is not None and per_flop * flop * runs > (left if ctx.thorough else slice_s * 1.5):
                sweep.append({"shape": [m, n, k], "skipped": f"about {per_flop * flop:.2f} s per call: over the "
                              "time left"})
                continue
            a = torch.randn(m, k, device=dev, dtype=torch.float32)
            b = torch.randn(n, k, device=dev, dtype=torch.float32)
            c = torch.empty(m, n, device=dev, dtype=out_dtype)
            c_rand = torch.randn(m, n, device=dev, dtype=torch.float32).to(out_dtype)
            if fp8:
                a8 = a.to(dtype)
                b8 = b.to(dtype).t()  # _scaled_mm wants the second operand column-major
                one = torch.ones((), device=dev, dtype=torch.float32)
                del a, b

                def fn(a8=a8, b8=b8, one=one, c=c) -> Any:
                    return _scaled_mm(torch, a8, b8, one, c)
            else:
                a = a.to(dtype)
                bt = b.to(dtype).t()
                del b

                # (one name for both variants: `del fn` below frees the operands its defaults hold)
                def fn(a=a, bt=bt, c=c) -> Any:  # type: ignore[misc]
                    return torch.mm(a, bt, out=c)

            def gpu_between(c=c, c_rand=c_rand) -> None:
                if flush is not None:
                    flush.zero_()  # evict the operands from L2 (mamf-finder)
                c.copy_(c_rand)  # the output is written for real each time

            # on a CPU nothing runs between calls: a gap would hide preemption from the timed calls
            between = gpu_between if cuda else None
            timer = Timer(torch, dev)
            t0 = time.monotonic()
            if ctx.thorough and cuda:
                times = timer.run(fn, deadline, 0.0, between=between, warmup_iters=THOROUGH_WARMUP_ITERS,
                                  iters=THOROUGH_ITERS)
            else:
                times = timer.run(fn, now + slice_s, warmup_s=min(0.5, slice_s * 0.2), between=between)
            fastest, mean, med = _stat(times)
            if mean <= 0:
                continue
            per_flop = mean / flop
            entry = {"shape": [m, n, k], "iters": len(times), "tflops": round(flop / mean / 1e12, 4),
                     "best_tflops": round(flop / fastest / 1e12, 4), "median_tflops": round(flop / med / 1e12, 4),
                     "seconds": round(time.monotonic() - t0, 3)}
            sweep.append(entry)
            if best is None or entry["tflops"] > best["tflops"]:
                best = entry
                best_fn = None if cuda else fn  # kept for the final timing of the chosen shape
            del fn, c, c_rand
            if mean > slice_s and not cuda:
                for (m2, n2, k2) in shapes[i + 1:]:
                    sweep.append({"shape": [m2, n2, k2], "skipped": "one call would exceed the budget"})
                break
        if best is not None and best_fn is not None and not cuda:  # (best_fn is set with best off CUDA)
            # The best of a noisy sweep reads high (the shape that won had the luckiest slice): the figure is a
            # fresh timing of the chosen shape for the rest of the budget, independent of the choice, as
            # torch.utils.benchmark times one statement for its whole run
            times = Timer(torch, dev).run(best_fn, deadline, warmup_s=0.0, max_iters=CPU_MAX_ITERS)
            best_fn = None
            fastest, mean, med = _stat(times)
            if mean > 0:
                flop = 2.0 * best["shape"][0] * best["shape"][1] * best["shape"][2]
                best = dict(best, sizing_tflops=best["tflops"], iters=len(times),
                            tflops=round(flop / mean / 1e12, 4), best_tflops=round(flop / fastest / 1e12, 4),
                            median_tflops=round(flop / med / 1e12, 4))
    finally:
        if prev_tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32 = prev_tf32
    if best is None:
        return _result(name, label, "skipped", "no shape fitted in memory or time", params={"sweep": sweep})
    square = [e for e in sweep if "tflops" in e and len(set(e["shape"])) == 1]
    params = {"shape": best["shape"], "n": best["shape"][0], "dtype": dtype_name, "best_tflops": best["best_tflops"],
              "median_tflops": best["median_tflops"], "iters": best["iters"], "sweep": sweep,
              "best_square_tflops": max((e["tflops"] for e in square), default=None),
              "statistic": "mean of the timed iterations at the best shape of the sweep"
                           + ("" if cuda else ", timed again after the sweep for the rest of the budget")
                           + (" (mamf-finder: 50 warm-up, 100 timed per shape)" if ctx.thorough and cuda else ""),
              "l2_flush": flush is not None, "output_dtype": str(out_dtype).replace("torch.", ""),
              "procedure": "thorough" if ctx.thorough and cuda else "quick",
              "timer": "cuda events" if cuda else "time.perf_counter",
              "threads": torch.get_num_threads(), "seconds": round(time.monotonic() - start, 3)}
    if "sizing_tflops" in best:
        params["sizing_tflops"] = best["sizing_tflops"]
    env = _env_overrides()
    if env:
        params["env_overrides"] = env
    if cuda:
        params["allow_tf32"] = name == "matmul_tf32"
    if fp8:
        params["fast_accum"] = FP8_FAST_ACCUM
    return _result(name, label, value=best["tflops"], unit="TFLOP/s", params=params)


def gpu_warmup(ctx: Ctx, dev: Any, seconds: float) -> float:
    """Large bf16 matmuls until ``seconds`` pass, so that the first timed kernel meets settled clocks."""
    torch = ctx.torch
    t0 = time.monotonic()
    side = 8192
    limit = ctx.budget_bytes(dev)
    while limit is not None and 3 * side * side * 2 > limit and side > 1024:
        side //= 2
    dtype = torch.bfloat16 if torch.cuda.get_device_capability(dev) >= (8, 0) else torch.float16
    a = torch.randn(side, side, device=dev, dtype=dtype)
    c = torch.empty_like(a)
    while time.monotonic() - t0 < seconds:
        for _ in range(4):
            torch.mm(a, a, out=c)
        torch.cuda.synchronize(dev)
    del a, c
    return round(time.monotonic() - t0, 3)


def _copy_bench(ctx: Ctx, name: str, label: str, dst: Any, src: Any, timer: Timer, deadline: float, nbytes: int,
                moved_per_call: int, extra: Dict[str, Any]) -> Dict[str, Any]:
    def fn() -> Any:
        return dst.copy_(src, non_blocking=True)

    start = time.monotonic()
    times = timer.run(fn, deadline, warmup_s=min(0.3, (deadline - start) * 0.2))
    fastest, mean, med = _stat(times)
    # GPU: the median, nvbandwidth's default; CPU: the mean, as torch.utils.benchmark's Measurement reports it (on
    # a shared machine a median of single calls drops the preempted ones and reads high)
    stat = med if timer.cuda else mean
    params = {"n": nbytes, "bytes_per_call": moved_per_call, "iters": len(times),
              "best_gbs": round(moved_per_call / fastest / 1e9, 3), "mean_gbs": round(moved_per_call / mean / 1e9, 3),
              "median_gbs": round(moved_per_call / med / 1e9, 3),
              "statistic": "median of the timed copies (nvbandwidth's default)" if timer.cuda else
                           "mean of the timed copies (torch.utils.benchmark's)",
              "threads": ctx.torch.get_num_threads(), "timer": "cuda events" if timer.cuda else "time.perf_counter"}
    params.update(extra)
    return _result(name, label, value=round(moved_per_call / stat / 1e9, 3), unit="GB/s", params=params)


def k_membw(ctx: Ctx, name: str, dev: Any, deadline: float) -> Dict[str, Any]:
    """Copy one buffer into another: bytes read plus bytes written per second (as STREAM's Copy and the
    diagonal of cuda-samples' p2pBandwidthLatencyTest count them; nvbandwidth's device_local_copy counts the
    bytes once, so its figure is half of this one for the same copy)."""
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


def _parse_cpulist(text: str) -> List[int]:
    out: List[int] = []
    for part in text.strip().split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            out.extend(range(int(lo), int(hi) + 1))
        elif part.strip():
            out.append(int(part))
    return out


def pin_to_gpu_node(torch: Any, dev: Any) -> Tuple[Optional[set], Dict[str, Any]]:
    """Run this thread on the CPUs local to the GPU (sysfs local_cpulist), so that pages first touched here
    come from the GPU's NUMA node (Linux first-touch), as nvbandwidth binds by default. (previous affinity,
    what was done)."""
    key = _pci_key(torch, dev.index)
    if not key or not hasattr(os, "sched_setaffinity"):
        return None, {"numa": "not pinned: no PCI address or no sched_setaffinity"}
    base = f"/sys/bus/pci/devices/{key}.0"
    try:
        with open(base + "/numa_node") as fh:
            node = int(fh.read().strip())
        with open(base + "/local_cpulist") as fh:
            cpus = set(_parse_cpulist(fh.read()))
    except (OSError, ValueError) as e:
        return None, {"numa": f"not pinned: {e.__class__.__name__} reading {base}"}
    prev = os.sched_getaffinity(0)
    usable = cpus & prev
    if node < 0 or not usable:
        return None, {"numa": f"not pinned: numa_node {node}, local CPUs outside this process's affinity"
                      if node >= 0 else "not pinned: the platform reports no NUMA node for this GPU"}
    if usable == prev:
        return None, {"numa": f"already on the GPU's node {node}", "numa_node": node}
    os.sched_setaffinity(0, usable)
    return prev, {"numa": f"pinned to the GPU's NUMA node {node} ({len(usable)} CPUs; host buffers first touched "
                          "there)", "numa_node": node}


def k_host_copy(ctx: Ctx, name: str, dev: Any, deadline: float) -> Dict[str, Any]:
    """h2d_pinned, h2d_pageable, d2h_pinned: one direction over PCIe (or C2C), bytes per second, run on the
    GPU's NUMA node."""
    torch = ctx.torch
    if dev.type != "cuda":
        return _result(name, str(dev), "skipped", "host<->device copies need a CUDA device")
    prev, numa = pin_to_gpu_node(torch, dev)
    try:
        res = _host_copy(ctx, name, dev, deadline)
    finally:
        if prev is not None:
            os.sched_setaffinity(0, prev)
    res["params"].update(numa)
    return res


def _host_copy(ctx: Ctx, name: str, dev: Any, deadline: float) -> Dict[str, Any]:
    torch = ctx.torch
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
    """GPU->GPU copies per ordered pair, nvbandwidth-style: a batch of copies is queued on the source's stream
    behind a spin kernel (so that launches are not timed) and timed with events around the batch."""
    torch = ctx.torch
    if len(devs) < 2:
        return [_result(name, "cuda", "skipped", f"needs two or more GPUs ({len(devs)} visible)")]
    pairs = [(a, b) for a in devs for b in devs if a != b]
    out = []
    nbytes = 64 << 20
    batch = 8
    for i, (a, b) in enumerate(pairs):
        left = deadline - time.monotonic()
        label = f"{a}->{b}"
        if left < 0.05:
            out.append(_result(name, label, "skipped", "budget spent"))
            continue
        slice_s = left / (len(pairs) - i)
        can = bool(torch.cuda.can_device_access_peer(a.index, b.index))
        with torch.cuda.device(a):
            src = torch.rand(nbytes // 4, device=a)
            dst = torch.empty(nbytes // 4, device=b)
            dst.copy_(src)
            torch.cuda.synchronize(a)
            torch.cuda.synchronize(b)
            rates = []  # type: List[float]
            t0 = time.monotonic()
            while not rates or (time.monotonic() - t0 < slice_s * 0.8 and len(rates) < 20):
                s_ev = torch.cuda.Event(enable_timing=True)
                e_ev = torch.cuda.Event(enable_timing=True)
                if hasattr(torch.cuda, "_sleep"):
                    torch.cuda._sleep(1_000_000)  # hold the stream while the batch is queued
                s_ev.record()
                for _ in range(batch):
                    dst.copy_(src, non_blocking=True)
                e_ev.record()
                e_ev.synchronize()
                torch.cuda.synchronize(b)
                ms = s_ev.elapsed_time(e_ev)
                if ms > 0:
                    rates.append(batch * nbytes / (ms / 1000.0) / 1e9)
        rates.sort()
        out.append(_result(name, label, value=round(rates[len(rates) // 2], 3), unit="GB/s",
                           params={"src": str(a), "dst": str(b), "p2p_access": can, "n": nbytes, "batches": len(rates),
                                   "copies_per_batch": batch, "best_gbs": round(rates[-1], 3),
                                   "src_pci_bus_id": _pci_key(torch, a.index),
                                   "dst_pci_bus_id": _pci_key(torch, b.index),
                                   "statistic": "median over batches, one direction",
                                   "timer": "cuda events around a queued batch on the source's stream"}))
        del src, dst
    return out


def k_allreduce(ctx: Ctx, name: str, devs: List[Any], deadline: float) -> List[Dict[str, Any]]:
    """Single-process NCCL all-reduce over every visible GPU, as nccl-tests times it: per size, warm-up calls,
    then N calls between events on every GPU's stream; busbw = algbw * 2(n-1)/n (nccl-tests
    doc/PERFORMANCE.md); the best busbw over sizes up to >= 1 GiB where memory allows, with its size."""
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
    sizes = [1 << 20, 16 << 20, 128 << 20, 512 << 20, 1 << 30, 2 << 30]
    limit = min(filter(None, [ctx.budget_bytes(d) for d in devs]), default=None)
    sweep: List[Dict[str, Any]] = []
    for i, size in enumerate(sizes):
        if limit is not None and size > limit:
            sweep.append({"bytes": size, "skipped": f"over {ctx.mem_fraction:.0%} of free memory"})
            continue
        left = deadline - time.monotonic()
        if left < 0.05:
            sweep.append({"bytes": size, "skipped": "budget spent"})
            continue
        slice_s = left / (len(sizes) - i)
        bufs = [torch.rand(size // 4, device=d) for d in devs]
        nccl.all_reduce(bufs)  # warm-up (communicator setup)
        for d in devs:
            torch.cuda.synchronize(d)
        t0 = time.perf_counter()
        nccl.all_reduce(bufs)
        for d in devs:
            torch.cuda.synchronize(d)
        one = max(1e-6, time.perf_counter() - t0)
        iters = int(max(2, min(20, slice_s * 0.8 / one)))
        evs = []
        for d in devs:
            with torch.cuda.device(d):
                s_ev, e_ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s_ev.record()
                evs.append((d, s_ev, e_ev))
        for _ in range(iters):
            nccl.all_reduce(bufs)
        for d, _s, e_ev in evs:
            with torch.cuda.device(d):
                e_ev.record()
        for d in devs:
            torch.cuda.synchronize(d)
        secs = max(s_ev.elapsed_time(e_ev) for _d, s_ev, e_ev in evs) / 1000.0 / iters  # the slowest GPU
        algbw = size / secs / 1e9
        sweep.append({"bytes": size, "iters": iters, "algbw_gbs": round(algbw, 3),
                      "busbw_gbs": round(algbw * 2 * (n - 1) / n, 3)})
        del bufs
    done = [e for e in sweep if "busbw_gbs" in e]
    if not done:
        return [_result(name, "cuda", "skipped", "no message size fitted in memory or time", params={"sweep": sweep})]
    top = max(done, key=lambda e: e["busbw_gbs"])
    return [_result(name, "cuda", value=top["busbw_gbs"], unit="GB/s",
                    params={"gpus": n, "sweep": sweep, "n": top["bytes"], "algbw_gbs": top["algbw_gbs"],
                            "largest_bytes": max(e["bytes"] for e in done),
                            "pci_bus_ids": [_pci_key(torch, d.index) for d in devs],
                            "statistic": "best busbw over sizes; per size the mean of N calls between events",
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
            ref = c.clone()  # the reference product: every later product of the same inputs must agree (gpu-burn)
            if cuda:
                torch.cuda.synchronize(dev)
            faulty = checked = checks = 0
            t_prev = time.monotonic()
            t_check = t_prev
            while t_prev < deadline:
                for _ in range(per_batch):
                    torch.mm(a, b, out=c)
                if cuda:
                    ev = torch.cuda.Event()
                    ev.record()
                    ev.synchronize()
                t = time.monotonic()
                samples.append({"t": round(t, 4), "tflops": round(per_batch * flop / (t - t_prev) / 1e12, 4)})
                if t - t_check >= 2.0 or t >= deadline:  # compare element-wise every ~2 s, outside the timing
                    faulty += count_faulty(torch, c, ref)
                    checked += c.numel()
                    checks += 1
                    t_check = time.monotonic()
                    t = t_check
                t_prev = t
            rates = sorted(s["tflops"] for s in samples)
            params = {"shape": [side, side, side], "dtype": str(dtype).replace("torch.", ""),
                      "batches": len(samples), "threads": torch.get_num_threads(),
                      "faulty_elements": faulty, "checked_elements": checked, "result_checks": checks,
                      "verify": "each check compares the product element-wise with the first one (|d| > "
                                f"{FAULT_RTOL:g} x (|ref| + 1) is faulty)"}
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


FAULT_RTOL = 1e-3


def count_faulty(torch: Any, c: Any, ref: Any) -> int:
    """Elements of ``c`` that differ from ``ref`` beyond a relative tolerance (NaN and Inf count as faulty)."""
    diff = (c.float() - ref.float()).abs()
    bad = (diff > FAULT_RTOL * (ref.float().abs() + 1.0)) | ~torch.isfinite(c.float())
    return int(bad.sum().item())


PER_DEVICE = {"matmul_fp32": k_matmul, "matmul_tf32": k_matmul, "matmul_bf16": k_matmul,
              "matmul_fp16": k_matmul, "matmul_fp8": k_matmul, "membw_device": k_membw, "membw_host": k_membw,
              "h2d_pinned": k_host_copy, "h2d_pageable": k_host_copy, "d2h_pinned": k_host_copy}
ALL_DEVICES = {"p2p": k_p2p, "allreduce": k_allreduce, "sustained": k_sustained}


def _pci_key(torch: Any, i: int) -> Optional[str]:
    """The PCI key of CUDA device ``i`` (common.pci_key: envdoctor re-keys it with domain.pci.bus_key)."""
    try:
        return pci_key(torch.cuda.get_device_properties(i))
    except Exception:
        return None
