"""Library checks: the CUDA libraries torch loads are the ones it ships, not a preloaded, conda or system copy."""

from __future__ import annotations

from typing import List

from ..model.findings import Finding
from ._shadowing import shadow_finding, shadows
from ._util import torch_envs
from .base import EVERYWHERE, CheckContext, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)



@check("libraries.shadowing", "torch loads its own CUDA libraries", categories=("SYSTEM_LIB_SHADOWING",), applies=EVERYWHERE)
def check_shadowing(ctx: CheckContext) -> List[Finding]:
    envs = [(i, py) for i, py in torch_envs(ctx.facts) if py.torch and py.torch.cuda]
    if not envs:
        raise SkipCheck("no CUDA build of torch to judge", not_applicable="no CUDA build of torch")
    findings = []
    judged = False
    for i, py in envs:
        t = py.torch
        # judged: the loaded libraries were read after the import, or the preload / search-path copies were
        # looked for (payloads that read torch's files also read those)
        if py.loaded_libraries or t.build_files is not None:
            judged = True
        for s in shadows(py, ctx.facts.system_libraries.libraries):
            findings.append(shadow_finding(i, py, s))
    if not judged:
        for _i, py in envs:
            err = (py.torch.cuda_init_error or "") + " ".join(py.torch.warnings or [])
            if "undefined symbol" in err or "version incompatibility" in err:
                judged = True
        if not judged:
            raise SkipCheck("the libraries torch loads were not read (torch import or /proc/self/maps unavailable)")
    return findings
