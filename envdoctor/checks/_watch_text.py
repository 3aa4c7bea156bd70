"""Text and evidence the watch checks share (a GPU line, its evidence, the local-copy commands), kept apart from
_watch.py for the check-module size limit."""

from __future__ import annotations

from typing import List

from ..domain.recording import GpuStats, pct
from ..model.facts import Watch
from ..model.findings import Evidence
from ..remedies.shell import command


def local_copy(w: Watch) -> List[str]:
    nvme = w.summary.get("local_nvme") if isinstance(w.summary, dict) else None
    src = (w.data_paths or ["/path/to/data"])[0]
    if isinstance(nvme, dict) and nvme.get("mount"):
        dest = nvme["mount"].rstrip("/") + "/data/"
        return [command("rsync", "-a", src.rstrip("/") + "/", dest,
                        comment=f"local NVMe {nvme.get('device', '')} with {nvme.get('free_gb', '?')} GB free")]
    return [command("rsync", "-a", src.rstrip("/") + "/", "/local_nvme/data/",
                    comment="no local NVMe was found here: pick the fastest local disk")]


def gpu_line(gs: List[GpuStats]) -> str:
    """Each GPU's p10/p50/p90 for one or two; for more, the median over them and the range of their p50s."""
    if len(gs) <= 2:
        return ", ".join(f"GPU {g.index} p10/p50/p90 {g.util_p10:g}/{g.util_p50:g}/{g.util_p90:g}%" for g in gs)
    med = [pct([getattr(g, k) for g in gs], 0.5) for k in ("util_p10", "util_p50", "util_p90")]
    p50s = [g.util_p50 for g in gs if g.util_p50 is not None]
    return (f"{len(gs)} GPUs at p10/p50/p90 {med[0]:g}/{med[1]:g}/{med[2]:g}% (median over GPUs; their p50 "
            f"{min(p50s):g}-{max(p50s):g}%)")


def gpu_evidence(gs: List[GpuStats]) -> List[Evidence]:
    return [Evidence(f"watch.summary.gpus[{g.index}].util_p50", g.util_p50) for g in gs[:8]]
