"""A GPU-sharing layer in the way of CUDA, NCCL or NVML, read from its presence beside a failure (issue 42).

HAMi (and Volcano's vGPU mode, which uses HAMi-core) shares a GPU between pods by preloading libvgpu.so into every
process of the pod (/etc/ld.so.preload or LD_PRELOAD): each CUDA driver and NVML call goes through it, to count
memory and throttle SMs. A call it does not handle, or handles for another driver API, fails or crashes inside it:
NCCL's "unhandled cuda error", "operation not supported", a segfault in ``cuMemGetInfo_v2``, NVML's "Unknown Error"
(Project-HAMi/HAMi#27, #1055, #1520; Project-HAMi/HAMi-core#61, #234, #333). The layer's own ERROR lines and its
undefined symbols are catalogue rows (``hami-libvgpu-in-the-way``); this check reads the case they miss: the layer
seen only by its Msg/Info lines, its library or its resource names (readers/contexts.py, ``paste.sharing_layer``),
beside a CUDA/NCCL/NVML failure. The layer is then the first suspect, not the proof: a warning at medium
confidence whose settle command is the same run without it. An out-of-memory alone is left to the memory checks:
the layer enforcing the memory the pod asked for is its purpose, not its fault.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List

from ..model.findings import Evidence, Finding, Fix
from ._paste import paste_or_skip, signature_hits
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS, applies=PASTE_ONLY)

SHARING = Findings("diagnose.sharing-layer", "GPU_SHARING_LAYER_INTERCEPTS_CUDA", kinds=("layer-beside-failure",))
DOC = "https://github.com/Project-HAMi/HAMi#readme"

# a CUDA driver/runtime, NCCL or NVML call that failed, or a crash (the layer's hooks run in the process)
_FAILURE = re.compile(
    r"\bNCCL (?:error|WARN)\b|\bnccl(?:UnhandledCuda|System|Internal)Error\b|\bCUDA(?: driver)? error\b|"
    r"\bCuda failure\b|\bcudaError[A-Z]\w*|\bCUDA_ERROR_[A-Z_]+|\bCUBLAS_STATUS_[A-Z_]+|\bCUDNN_STATUS_[A-Z_]+|"
    r"\bFailed to initiali[sz]e NVML\b|\bNVML\w*Error\b|\bSegmentation fault\b|\bSIGSEGV\b|"
    r"\billegal memory access\b|\boperation not supported\b|\bsymbol lookup error\b|\bno CUDA-capable device\b|"
    r"\bCUDA driver initiali[sz]ation failed\b", re.I)
_MEMORY = re.compile(r"\bout of memory\b|\bOOM\b|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation", re.I)


@check(SHARING, "No GPU-sharing layer sits in the way of the failing CUDA calls")
def check_sharing_layer(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    prov: Dict[str, Any] = paste.provenance or {}
    layer = prov.get("paste.sharing_layer")
    if not layer or not layer.get("value"):
        raise SkipCheck("the paste shows no GPU-sharing layer (HAMi-core, libvgpu.so, its resources)",
                        not_applicable="no sharing layer")
    failures = [(i, m) for i, m in enumerate(paste.messages or []) if _FAILURE.search(m) and not _MEMORY.search(m)]
    if not failures:
        raise SkipCheck("the paste shows no CUDA, NCCL or NVML failure other than out-of-memory beside the layer")
    if any(h.category == SHARING.category for h in signature_hits(ctx.facts, ctx.compat)):
        return []  # the layer's own error line is a catalogue row: its finding says more
    return [SHARING.warning(
        "layer-beside-failure", confidence="medium",
        summary=(f"A GPU-sharing layer ({layer['value']}) is in every CUDA call of this process, and a CUDA/NCCL "
                 "call failed: the layer is the first suspect"),
        detail=("libvgpu.so is preloaded into every process of a shared-GPU pod and hooks its CUDA and NVML calls; "
                "calls it does not handle, or a libvgpu built for another driver, fail or crash inside it. The same "
                "command without the layer settles it."),
        evidence=[Evidence("paste.sharing_layer", layer["value"], source=str(layer.get("reader")))]
        + [Evidence(f"paste.messages[{i}]", m[:200]) for i, m in failures[:5]] + [
                  Evidence("paste.settle", "the same command in a pod that requests a whole GPU (no gpumem/gpucores)")],
        fix=Fix("Run the job once without the layer (a pod requesting a whole GPU, or without LD_PRELOAD of "
                "libvgpu.so); if that works, upgrade HAMi / HAMi-core to a release built for the node's driver, or "
                "keep that workload on unshared GPUs",
                ["cat /etc/ld.so.preload; echo \"$LD_PRELOAD\"", "nvidia-smi"], DOC))]
