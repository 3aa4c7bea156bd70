"""gpu.ecc-mode: an ECC mode change that waits for a reboot.

NVML keeps two ECC modes per GPU: the current one and the pending one, "the target mode following the next
reboot" (nvmlDeviceGetEccMode; `nvidia-smi -q` prints them as "ECC Mode: Current / Pending"). They differ after
someone ran `nvidia-smi -e 0|1` and the machine has not rebooted since. Two cases, not alike:
- ECC off now, on after the reboot: until then the GPU's memory errors go uncorrected (and unreported as ECC
  errors), so a run started now can be silently corrupted. A warning: reboot before training.
- ECC on now, off after the reboot: the GPU is protected today and will not be after the next reboot, which
  nobody may expect. Information: say so, with the command that keeps it on.
A GPU without ECC support (GeForce) reports neither mode: the check then has nothing to judge.
Source: NVML API reference, nvmlDeviceGetEccMode / nvmlDeviceSetEccMode ("Changing ECC modes requires a
reboot"), https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html
"""

from __future__ import annotations

from typing import List

from ..model.findings import Evidence, Finding, Fix
from ._gpus import gpu_list, gpu_path, require_gpus
from .base import Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)

NVML_ECC_DOC = "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html"

ECC_MODE = Findings("gpu.ecc-mode", "GPU_MEMORY_ERRORS", kinds=("off-until-reboot", "off-after-reboot"))


@check(ECC_MODE, "No ECC mode change waits for a reboot")
def ecc_mode(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "the ECC mode")
    known = [g for g in gpus if g.ecc_mode_current is not None and g.ecc_mode_pending is not None]
    if not known:
        raise SkipCheck("nothing to judge: no GPU here reports a current and pending ECC mode (a GPU without "
                        "ECC, such as a GeForce, has neither; or the driver did not say)", not_applicable="nothing of the kind here")
    out: List[Finding] = []
    turning_on = [g for g in known if g.ecc_mode_current is False and g.ecc_mode_pending is True]
    turning_off = [g for g in known if g.ecc_mode_current is True and g.ecc_mode_pending is False]
    if turning_on:
        out.append(ECC_MODE.warning(
            "off-until-reboot",
            f"ECC is off on {gpu_list(turning_on)} until the next reboot (it was turned on, the reboot has not "
            "happened): memory errors go uncorrected meanwhile",
            detail="NVML applies an ECC mode change at the next reboot; until then the GPU runs without ECC, so a "
                   "bit flip in its memory corrupts a result silently instead of being corrected or reported.",
            evidence=[e for g in turning_on for e in (Evidence(gpu_path(g, "ecc_mode_current"), False),
                                                       Evidence(gpu_path(g, "ecc_mode_pending"), True))],
            fix=Fix("Reboot before training so that ECC is on", ["sudo reboot"], url=NVML_ECC_DOC),
        ))
    if turning_off:
        out.append(ECC_MODE.info(
            "off-after-reboot",
            f"ECC turns off on {gpu_list(turning_off)} at the next reboot (`nvidia-smi -e 0` was run)",
            detail="ECC is on now; after the next reboot the GPU runs without it (a little more memory and "
                   "bandwidth, no correction of memory errors). Keep it on unless that was the intent.",
            evidence=[e for g in turning_off for e in (Evidence(gpu_path(g, "ecc_mode_current"), True),
                                                        Evidence(gpu_path(g, "ecc_mode_pending"), False))],
            fix=Fix("Keep ECC on after the reboot", [f"sudo nvidia-smi -i {g.index} -e 1" for g in turning_off],
                    url=NVML_ECC_DOC),
        ))
    return out
