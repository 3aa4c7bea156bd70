"""The bench task: runs the kernels of bench.py in the target interpreter for `envdoctor bench`; streams JSON lines."""

# Like every module of this folder it runs under the *target* Python (3.8+), imports torch only inside the
# kernels and never imports envdoctor (see __init__.py).
#
# Usage:  python <envdoctor/_payload> --task bench --plan JSON [--mem-fraction F] [--busy PCI,...]
#   JSON: [{"name": "matmul_bf16", "device": "cuda", "budget_s": 4.0}, ...]  (device: "cpu" or "cuda")
#   --busy: PCI bus keys ("0000:3b:00") of GPUs, or bare MIG device UUIDs of slices, another process uses:
#           reported skipped, not measured
#   --skip NAME@DEVICE: already measured (a restart after a kernel was killed at its deadline)
#
# Every line it prints on the original stdout is one JSON object carrying "envdoctor_bench": 1:
#   {"event": "info", "torch": "2.5.1+cu124", "threads": 8, "devices": [{"device": "cuda:0", ...}]}
#   {"event": "start", "name": "matmul_bf16", "device": "cuda:0", "budget_s": 4.0, "t": <monotonic>}
#   {"event": "result", "result": {BenchResult fields}}
#   {"event": "done"}
# envdoctor kills this process when a kernel overruns its budget (a hung kernel), records that kernel
# as failed and starts a fresh process for the rest.
# How the kernels time their work: bench.py.

import functools
import json
import os
import sys
import threading
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple  # noqa: F401  (Tuple: in type comments)

from .bench import (
    ALL_DEVICES,
    GPU_WARMUP_S,
    PER_DEVICE,
    Ctx,
    _exc,
    _pci_key,
    _result,
    gpu_warmup,
)

BENCH_PROTOCOL = 1


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




def run(plan: List[Dict[str, Any]], out: Out, mem_fraction: float, busy: List[str], skip: List[str]) -> None:
    try:
        import torch
    except Exception as e:
        for item in plan:
            out.emit("result", result=_result(item["name"], item.get("device") or "cpu", "skipped",
                                              "import torch failed: " + _exc(e)))
        return
    ctx = Ctx(torch, out, mem_fraction, thorough=any(bool(i.get("thorough")) for i in plan))
    cuda_ok = False
    cuda_reason = None
    try:
        cuda_ok = bool(torch.cuda.is_available())
        if not cuda_ok:
            cuda_reason = "torch.cuda.is_available() is False (torch {}, built for CUDA {})".format(
                torch.__version__, getattr(torch.version, "cuda", None))
    except Exception as e:
        cuda_reason = "CUDA initialisation failed: " + _exc(e)
    gpus = []  # type: List[Tuple[Any, Any]]  # (device, its facts); the CPU target has None
    infos = []
    if cuda_ok:
        for i in range(torch.cuda.device_count()):
            key = _pci_key(torch, i)
            info = {"device": f"cuda:{i}", "name": torch.cuda.get_device_name(i), "pci_bus_id": key}
            info.update(_device_size(torch, i))
            # busy: the whole GPU (its PCI key), or on MIG the slice CUDA gives this device (its UUID, bare)
            uuid = str(info.get("uuid") or "").lower()
            info["busy"] = key in busy or (uuid[4:] if uuid.startswith(("mig-", "gpu-")) else uuid) in busy
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
            _one(out, name, kind, budget, lambda d, n=name, ds=devs: ALL_DEVICES[n](ctx, n, ds, d))  # type: ignore
            continue
        targets = [(torch.device("cpu"), None)] if kind == "cpu" else gpus  # type: List[Tuple[Any, Any]]
        for dev, info in targets:
            label = str(dev)
            if f"{name}@{label}" in skip:
                continue
            if info is not None and info["busy"]:
                busy_params = {"pci_bus_id": info["pci_bus_id"]}
                if info.get("uuid"):
                    busy_params["uuid"] = info["uuid"]
                out.emit("result", result=_result(name, label, "skipped", "another process is using this GPU "
                                                  "(--force measures it anyway)", params=busy_params))
                continue
            warm: Optional[Callable[[], float]] = None
            if dev.type == "cuda" and label not in ctx.warmed and item.get("warmup_s", GPU_WARMUP_S):
                ctx.warmed.add(label)
                warm = functools.partial(gpu_warmup, ctx, dev, float(item.get("warmup_s", GPU_WARMUP_S)))
            # (type: ignore: mypy cannot type a lambda's default arguments)
            _one(out, name, label, budget,
                 lambda d, n=name, dv=dev, inf=info: _tag(PER_DEVICE[n](ctx, n, dv, d), inf),  # type: ignore[misc]
                 torch=torch, dev=dev, warm=warm)


def _device_size(torch: Any, i: int) -> Dict[str, Any]:
    """The SMs, memory and UUID CUDA gives this device: on a MIG slice they are the slice's (a 1g.10gb of an H100
    has 16 SMs), which is how envdoctor tells a slice from the board it shares a PCI bus with."""
    out: Dict[str, Any] = {}
    try:
        props = torch.cuda.get_device_properties(i)
    except Exception:
        return out
    sms, mem, uuid = (getattr(props, a, None) for a in ("multi_processor_count", "total_memory", "uuid"))
    if isinstance(sms, int):
        out["sm_count"] = sms
    if isinstance(mem, int):
        out["memory_total_bytes"] = mem
    if uuid is not None:
        out["uuid"] = str(uuid)
    return out


def _tag(res: Dict[str, Any], info: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    if info is not None:
        res["params"].setdefault("pci_bus_id", info["pci_bus_id"])
        res["params"].setdefault("gpu_name", info["name"])
        for k in ("sm_count", "memory_total_bytes", "uuid"):
            if k in info:
                res["params"].setdefault(k, info[k])
    return res


def _one(out: Out, name: str, label: str, budget: float, fn: Callable[[float], Any], torch: Any = None,
         dev: Any = None, warm: Optional[Callable[[], float]] = None) -> None:
    start = time.monotonic()
    out.emit("start", name=name, device=label, budget_s=budget, t=start)
    warmed = None
    try:
        if torch is not None and dev is not None and dev.type == "cuda":
            # CUDA events record on the *current* device's stream: it must be the GPU being measured
            with torch.cuda.device(dev):
                if warm is not None:  # the GPU's first kernel: warm it up first, on top of the budget
                    warmed = warm()
                res = fn(time.monotonic() + budget)
        else:
            res = fn(start + budget)
        results = res if isinstance(res, list) else [res]
        if warmed is not None:
            for r in results:
                r.setdefault("params", {})["gpu_warmup_s"] = warmed
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

    parser = argparse.ArgumentParser(prog="_payload --task bench")
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

