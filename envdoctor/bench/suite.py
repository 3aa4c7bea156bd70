"""The benchmarks by name (the JSON contract), where each runs, its budget, and which form the quick suite."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from envdoctor.domain.fastclass import dataclass


@dataclass(frozen=True)
class Kernel:
    name: str
    kind: str  # "torch" (payload in the target interpreter), "disk" (envdoctor's process)
    devices: Tuple[str, ...]  # "cuda", "cpu": where it can run
    gpu_budget_s: float  # per GPU (per run for p2p, allreduce)
    cpu_budget_s: float
    quick: bool  # part of `envdoctor bench` with no names
    what: str
    multi_gpu: bool = False
    # quick only where a GPU of the run has at least this compute capability (fp8 tensor cores: 8.9, Ada and
    # Hopper on); with no GPU's capability known it stays in (the payload skips it, saying why, below 8.9)
    quick_min_cc: Optional[Tuple[int, int]] = None


# The quick suite on one GPU: a 2 s warm-up + 4 + 3 + 3 + 2 + 3 * 1.5 = 18.5 s per GPU (+ 2 s of fp8 where the GPU
# has fp8, compute capability >= 8.9), then p2p and all-reduce
# (3 + 5 s per run, 2+ GPUs), plus torch import and CUDA initialisation (a few seconds): under 30 s per GPU.
# On CPU (`--device cpu`) every torch code path runs, fp16 and the skipped fp8/tf32 included, in about 15 s.
# --thorough gives each matmul THOROUGH_MATMUL_S per GPU for mamf-finder's procedure (50 + 100 iterations
# per shape over its quick-run range and the best shapes) and doubles the copy and collective budgets.
KERNELS: Dict[str, Kernel] = {k.name: k for k in [
    Kernel("matmul_bf16", "torch", ("cuda", "cpu"), 4.0, 2.0, True, "bf16 matmul TFLOP/s (shape sweep)"),
    Kernel("matmul_fp16", "torch", ("cuda", "cpu"), 3.0, 1.5, False, "fp16 matmul TFLOP/s (shape sweep)"),
    Kernel("matmul_tf32", "torch", ("cuda", "cpu"), 3.0, 0.5, True, "fp32 inputs on TF32 tensor cores"),
    Kernel("matmul_fp32", "torch", ("cuda", "cpu"), 3.0, 3.0, True, "true fp32 matmul TFLOP/s"),
    Kernel("matmul_fp8", "torch", ("cuda", "cpu"), 2.0, 0.5, True,
           "fp8 e4m3 torch._scaled_mm, fast accumulation (cc >= 8.9)", quick_min_cc=(8, 9)),
    Kernel("membw_device", "torch", ("cuda", "cpu"), 2.0, 1.0, True, "device memory copy GB/s (read + write)"),
    Kernel("membw_host", "torch", ("cpu",), 2.0, 2.0, True, "host memory copy GB/s (read + write)"),
    Kernel("h2d_pinned", "torch", ("cuda",), 1.5, 0.5, True, "host->device, pinned memory, GB/s"),
    Kernel("h2d_pageable", "torch", ("cuda",), 1.5, 0.5, True, "host->device, pageable memory, GB/s"),
    Kernel("d2h_pinned", "torch", ("cuda",), 1.5, 0.5, True, "device->host, pinned memory, GB/s"),
    Kernel("p2p", "torch", ("cuda",), 3.0, 0.5, True, "GPU->GPU copy GB/s per ordered pair", multi_gpu=True),
    Kernel("allreduce", "torch", ("cuda",), 5.0, 0.5, True, "NCCL all-reduce bus bandwidth (sizes to >= 1 GiB)",
           multi_gpu=True),
    Kernel("disk_seq_read", "disk", ("cpu",), 2.0, 2.0, True, "sequential 1 MiB reads, MB/s, O_DIRECT"),
    Kernel("disk_rand_read", "disk", ("cpu",), 2.0, 2.0, True, "random 4 KiB reads at queue depth 1, IOPS"),
    Kernel("sustained", "torch", ("cuda", "cpu"), 0.0, 0.0, False,
           "--sustain N: bf16 matmuls on every GPU at once for N s, NVML sampled every 0.5 s", multi_gpu=True),
]}

NAMES = tuple(KERNELS)
THOROUGH_MATMUL_S = 90.0


@dataclass(frozen=True)
class PlanItem:
    name: str
    device: str  # "cpu" or "cuda" (every visible GPU)
    budget_s: float
    thorough: bool = False  # mamf-finder's procedure (matmuls), longer copies and collectives


class PlanError(ValueError):
    """A benchmark name that does not exist, or one that cannot run on the chosen device."""


def _quick(k: Kernel, gpu_ccs: Sequence[Tuple[int, int]]) -> bool:
    if not k.quick:
        return False
    if k.quick_min_cc is None or not gpu_ccs:
        return True
    return any(cc >= k.quick_min_cc for cc in gpu_ccs)


def expand_names(names: Sequence[str], gpu_ccs: Sequence[Tuple[int, int]] = ()) -> List[str]:
    """The names asked for ("all": every benchmark; nothing: the quick suite), validated, in catalogue order.
    ``gpu_ccs``: the compute capabilities of the run's GPUs where known (a kernel with ``quick_min_cc`` is in the
    quick suite only where one of them reaches it)."""
    if not names:
        return [k.name for k in KERNELS.values() if _quick(k, gpu_ccs)]
    wanted = set()
    for n in names:
        for part in (p.strip() for p in n.split(",")):
            if not part:
                continue
            if part == "all":
                wanted.update(k for k in KERNELS if k != "sustained")
            elif part == "quick":
                wanted.update(k.name for k in KERNELS.values() if _quick(k, gpu_ccs))
            elif part in KERNELS:
                wanted.add(part)
            else:
                raise PlanError(f"unknown benchmark {part!r} (`envdoctor bench --list` lists them)")
    return [k for k in KERNELS if k in wanted]


def plan(names: Sequence[str], device: str, budget_s: Optional[float] = None,
         sustain_s: Optional[float] = None, thorough: bool = False,
         gpu_ccs: Sequence[Tuple[int, int]] = ()) -> List[PlanItem]:
    """What to run where, with each item's budget; ``budget_s`` rescales the defaults to that total;
    ``gpu_ccs`` the compute capabilities of the GPUs (fp8 joins the quick suite where one has fp8)."""
    devices = {"cpu": ("cpu",), "cuda": ("cuda",), "all": ("cuda", "cpu")}[device]
    items: List[PlanItem] = []
    # --device cpu with no names: every torch code path, so that CI exercises what runs on GPUs
    chosen = expand_names(["all"] if device == "cpu" and not names else names, gpu_ccs)
    for name in chosen:
        k = KERNELS[name]
        if name == "sustained":
            continue
        for dev in devices:
            if k.kind == "disk" or name == "membw_host":
                if dev == devices[0]:  # host-side: once, whatever the device
                    items.append(PlanItem(name, "cpu", k.cpu_budget_s if device == "cpu" else k.gpu_budget_s))
                continue
            if dev == "cuda" and "cuda" in k.devices:
                items.append(PlanItem(name, "cuda", k.gpu_budget_s))
            elif dev == "cpu" and (device == "cpu" or "cuda" not in k.devices):
                # --device cpu runs every torch code path on the CPU (CI exercises the GPU code); on
                # --device all the CPU copies of GPU kernels are left out: nobody trains on those
                items.append(PlanItem(name, "cpu", k.cpu_budget_s))
    if thorough:
        items = [PlanItem(i.name, i.device, (THOROUGH_MATMUL_S if i.name.startswith("matmul_") and i.device == "cuda"
                                             else 2 * i.budget_s), True) for i in items]
    if budget_s is not None:
        total = sum(i.budget_s for i in items) or 1.0
        scale = budget_s / total
        items = [PlanItem(i.name, i.device, round(max(0.05, i.budget_s * scale), 3), i.thorough) for i in items]
    if sustain_s:
        for dev in devices:
            if dev == "cuda" or device == "cpu":
                items.append(PlanItem("sustained", dev, float(sustain_s)))
    return items


def describe(width: Optional[int] = None) -> List[str]:
    """`envdoctor bench --list`: one line per benchmark with its budgets; with ``width``, a longer "what" wraps
    at spaces under its own column."""
    import textwrap

    lines = [f"{'name':<15} {'quick':<6} {'GPU s':>6} {'CPU s':>6}  what"]
    what_at = len(lines[0]) - len("what")
    for k in KERNELS.values():
        host_side = k.kind == "disk" or k.name == "membw_host"  # run with either --device, on the host
        gpu = "--" if "cuda" not in k.devices and not host_side else (
            "N" if k.name == "sustained" else f"{k.gpu_budget_s:g}")
        cpu = "N" if k.name == "sustained" else f"{k.cpu_budget_s:g}"
        quick = ("yes" if k.quick_min_cc is None else f"{k.quick_min_cc[0]}.{k.quick_min_cc[1]}+") if k.quick else ""
        row = (f"{k.name:<15} {quick:<6} {gpu:>6} {cpu:>6}  {k.what}"
               + (" (2+ GPUs)" if k.multi_gpu and k.name != "sustained" else "")
               + (" (host side)" if host_side else ""))
        if width is None or len(row) <= width or width - what_at < 20:
            lines.append(row)
        else:
            lines += textwrap.wrap(row, width=width, subsequent_indent=" " * what_at, break_long_words=False,
                                   break_on_hyphens=False)
    lines.append("budgets are per GPU (p2p and allreduce: per run); --budget S rescales them to a total of S")
    return lines
