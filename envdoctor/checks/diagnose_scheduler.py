"""A pasted job step that asked the scheduler for no GPU and saw none (issue 29: `srun python -c "...
is_available()"` printing False on the compute node while the login node prints True).

Slurm exposes to a job step only the GPUs it requested (`--gres=gpu:N`, `--gpus`, `-G`, `#SBATCH` lines): without a
request the step's cgroup holds no GPU device, and inside it torch and nvidia-smi see none, whatever the node has
(https://slurm.schedmd.com/gres.html). The reader (diagnose/readers/scheduler.py) records the launch, its request
and what ran under it; this check names the missing request. With the same command seeing a GPU outside the job
in the same paste, the environment is known to work, so the request is the cause (high confidence); otherwise a
driver problem on the compute node is still possible (medium).
"""

from __future__ import annotations

from typing import Any, Dict, List

from ..model.findings import Evidence, Finding, Fix
from ..remedies import command, placeholder_flag
from ._paste import paste_or_skip
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS, applies=PASTE_ONLY)

JOB_GPUS = Findings("diagnose.job-gpus", "NO_GPU_VISIBLE", kinds=("not-requested",))
GRES_DOC = "https://slurm.schedmd.com/gres.html"


def _signal(prov: Dict[str, Any], key: str) -> Any:
    hit = prov.get(key)
    return None if hit is None else hit.get("value")


@check(JOB_GPUS, "A job step that saw no GPU asked the scheduler for one")
def check_job_gpus(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    prov = paste.provenance or {}
    if _signal(prov, "paste.job.scheduler") is None:
        raise SkipCheck("the paste shows no scheduler launch (srun, salloc, sbatch)")
    requested = _signal(prov, "paste.job.gpus_requested")
    if requested:
        return []
    inside = _signal(prov, "paste.job.cuda_available")
    if inside is None:
        raise SkipCheck("the paste shows no GPU check (is_available(), nvidia-smi) run under the launcher")
    if inside:
        return []
    outside = _signal(prov, "paste.job.outside_cuda_available")
    launch = prov["paste.job.gpus_requested"]
    evidence = [Evidence("paste.job.gpus_requested", False, expected="--gres=gpu:N, --gpus=N or -G N",
                         source=launch.get("reader")),
                Evidence("paste.job.cuda_available", False, source=prov["paste.job.cuda_available"].get("reader"))]
    sure = outside is True
    if sure:
        evidence.append(Evidence("paste.job.outside_cuda_available", True,
                                 source=prov["paste.job.outside_cuda_available"].get("reader")))
    summary = ("The job step asked Slurm for no GPU, and no GPU is visible under it"
               + (" (outside the job the same command sees one)" if sure else ""))
    fix = Fix("Request GPUs for the job (and its steps)",
              [command("srun", placeholder_flag("--gpus", "<N>"), "...",
                       comment="or #SBATCH --gres=gpu:<N> in the batch script")], GRES_DOC)
    if sure:
        return [JOB_GPUS.error(
            "not-requested", summary, confidence="high", evidence=evidence, fix=fix,
            detail=("Slurm exposes to a job step only the GPUs it requested; without --gres=gpu:N, --gpus or -G (on "
                    "srun, salloc or an #SBATCH line) the step's cgroup holds no GPU device, so "
                    "torch.cuda.is_available() is False and nvidia-smi finds none on a node that has GPUs."))]
    return [JOB_GPUS.warning(
        "not-requested", summary, confidence="medium", evidence=evidence, fix=fix,
        detail=("Slurm exposes to a job step only the GPUs it requested; without --gres=gpu:N, --gpus or -G the "
                "step sees no GPU. The paste does not show the command working outside the job, so a driver "
                "problem on the compute node is not ruled out."))]
