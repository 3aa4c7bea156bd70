"""What each rank measures: its own matmul and host-to-device copy (the bench payload's kernels, imported, not
rewritten), and the all-reduce sweep over the ranks (torch.distributed, the job's own backend).

busbw = algbw * 2(n-1)/n for all-reduce, as nccl-tests define it (NVIDIA/nccl-tests doc/PERFORMANCE.md,
"Bus bandwidth"): algbw is bytes / time, and a ring all-reduce moves 2(n-1)/n of the buffer over each rank's
link, so busbw is comparable to the hardware's link bandwidth whatever the rank count. The time is the mean
per operation over a timed run of back-to-back calls (nccl-tests report "the average operation time"), taken
on every rank and the slowest kept: an all-reduce is done when its last rank is.
"""

from __future__ import annotations

import re
import time
from typing import Any, Dict, List, Optional, Sequence

# message sizes of the sweep (bytes); a job can pass its own with --sizes
DEFAULT_SIZES_GPU = [1 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30]
DEFAULT_SIZES_CPU = [64 << 10, 1 << 20, 4 << 20]
MIN_ITERS, MAX_ITERS = 3, 1000
WARM_ITERS = 5  # timed warm-up calls that set the iteration count


def rank_kernels(torch: Any, device: Any, budget_s: float) -> List[Dict[str, Any]]:
    """This rank's matmul (bf16 on a GPU, fp32 on a CPU) and, on a GPU, its pinned host-to-device copy, by the
    kernels of ``envdoctor bench`` (``_payload/bench.py``), each within ``budget_s``; BenchResult dicts."""
    from .._payload import bench as bp

    ctx = bp.Ctx(torch, None, 0.5)
    cuda = device.type == "cuda"
    plan = [("matmul_bf16" if cuda else "matmul_fp32", bp.k_matmul)]
    if cuda:
        plan.append(("h2d_pinned", bp.k_host_copy))
    out = []
    for name, kernel in plan:
        start = time.monotonic()
        try:
            if cuda:
                with torch.cuda.device(device):
                    res = kernel(ctx, name, device, start + budget_s)
            else:
                res = kernel(ctx, name, device, start + budget_s)
        except Exception as e:  # noqa: BLE001 - a kernel failure is a result, as in the bench payload
            res = bp._result(name, str(device), "failed", bp._exc(e))
        res["duration_s"] = round(time.monotonic() - start, 3)
        out.append(res)
    return out


def _sync(torch: Any, device: Any) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _barrier(torch: Any, dist: Any, group: Any, device: Any) -> None:
    """A one-element all-reduce as the barrier: the same call on gloo and NCCL (dist.barrier guesses the
    device on NCCL)."""
    dist.all_reduce(torch.zeros(1, device=device), group=group)
    _sync(torch, device)


def allreduce_sweep(torch: Any, dist: Any, group: Any, n: int, device: Any, sizes: Sequence[int],
                    budget_s: float) -> List[Dict[str, Any]]:
    """Time all-reduce (sum, float32) at each size on ``group`` (``n`` ranks; every rank of it calls this with
    the same arguments). The iteration count is agreed on first (the slowest rank's warm-up sets it), so every
    rank runs the same number of calls."""
    sweep = []
    per_size = budget_s / max(1, len(sizes))
    for size in sizes:
        count = max(1, size // 4)
        buf = torch.ones(count, dtype=torch.float32, device=device)
        dist.all_reduce(buf, group=group)  # warm-up: connections, buffers
        _sync(torch, device)
        t0 = time.perf_counter()
        for _ in range(WARM_ITERS):
            dist.all_reduce(buf, group=group)
        _sync(torch, device)
        probe = torch.tensor([(time.perf_counter() - t0) / WARM_ITERS], dtype=torch.float64, device=device)
        dist.all_reduce(probe, op=dist.ReduceOp.MAX, group=group)
        warm = max(float(probe.item()), 1e-6)
        iters = int(min(MAX_ITERS, max(MIN_ITERS, per_size / warm)))
        _barrier(torch, dist, group, device)  # start together (nccl-tests time after a barrier too)
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buf, group=group)
        _sync(torch, device)
        mine = (time.perf_counter() - t0) / iters
        slowest = torch.tensor([mine], dtype=torch.float64, device=device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX, group=group)
        secs = float(slowest.item())
        algbw = count * 4 / secs / 1e9
        sweep.append({"bytes": count * 4, "iters": iters, "time_us": round(secs * 1e6, 2),
                      "algbw_gbs": round(algbw, 4), "busbw_gbs": round(algbw * 2 * (n - 1) / n, 4)})
        del buf
    return sweep


# ------------------------------------------------------------------ the NCCL transport, from NCCL_DEBUG=INFO

_NET_USING = re.compile(r"NCCL INFO NET/(\w+)\s*:\s*Using\s+(.*)")
_USING_NETWORK = re.compile(r"NCCL INFO Using network (\w+)")
_VIA = re.compile(r"NCCL INFO Channel \d+/\d+ : .* via (\S+)")
_NVLS = re.compile(r"NCCL INFO .*NVLS multicast support is available", re.I)


def parse_nccl_log(text: str) -> Dict[str, Any]:
    """What NCCL said it chose (NCCL_DEBUG=INFO lines): the network ("IB", "Socket"; "Using network X", else the
    last "NET/X : Using ..."), the devices it named, the channel transports counted ("P2P/IPC", "NET/IB",
    "NET/Socket", "SHM"), and whether NVLS multicast is available. Empty dict: no NCCL INFO line."""
    network: Optional[str] = None
    devices: Dict[str, str] = {}
    via: Dict[str, int] = {}
    nvls = False
    seen = False
    for line in text.splitlines():
        if "NCCL INFO" not in line:
            continue
        seen = True
        m = _USING_NETWORK.search(line)
        if m:
            network = m.group(1)
            continue
        m = _NET_USING.search(line)
        if m and m.group(1) in ("IB", "Socket"):
            devices[m.group(1)] = m.group(2).strip()
            continue
        m = _VIA.search(line)
        if m:
            parts = m.group(1).split("/")
            kind = "/".join(parts[:2]) if parts[0] in ("NET", "P2P") else parts[0]
            if kind.startswith("NET/IB"):  # NET/IBext_v8 (a net plugin's IB) is IB too
                kind = "NET/IB"
            via[kind] = via.get(kind, 0) + 1
            continue
        if _NVLS.search(line):
            nvls = True
    if not seen:
        return {}
    if network is None and devices:
        network = "IB" if "IB" in devices else "Socket"
    return {"network": network, "devices": devices, "channels": via, "nvls": nvls}
