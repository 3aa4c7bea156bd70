"""Library checks: the CUDA libraries torch loads are the ones it ships, not a system copy."""

from __future__ import annotations

import re
from typing import List, Optional

from ..findings import Evidence, Finding, Fix, Severity
from ..remedies import drop_path_entry
from ._util import parse_version, torch_envs
from .base import CheckContext, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)

# library -> the nvidia-* wheel that ships it next to a pip-installed torch
_WHEELS = {
    "cudnn": "nvidia-cudnn", "cublas": "nvidia-cublas", "nccl": "nvidia-nccl",
    "nvjitlink": "nvidia-nvjitlink", "cudart": "nvidia-cuda-runtime",
}


def _wheel_version(py, lib: str) -> Optional[str]:
    prefix = _WHEELS.get(lib)
    if not prefix:
        return None
    for p in py.packages:
        if p.name == prefix or re.fullmatch(re.escape(prefix) + r"-cu\d+", p.name):
            return p.version
    return None


def _ld_dirs(py) -> List[str]:
    value = (py.env or {}).get("LD_LIBRARY_PATH") or ""
    return [d for d in value.split(":") if d]


@check("libraries.shadowing", "torch loads its own CUDA libraries", categories=("SYSTEM_LIB_SHADOWING",))
def check_shadowing(ctx: CheckContext) -> List[Finding]:
    envs = [(i, py) for i, py in torch_envs(ctx.facts) if py.torch and py.torch.cuda]
    if not envs:
        raise SkipCheck("no CUDA build of torch to judge")
    findings = []
    inspected = False
    for i, py in envs:
        if py.loaded_libraries:
            inspected = True
        for lib in py.loaded_libraries:
            if lib.name not in _WHEELS or lib.origin not in ("system", "conda"):
                continue
            wheel_version = _wheel_version(py, lib.name)
            if wheel_version is None:
                continue  # torch does not ship this library as a wheel here (conda or a system build)
            ld_hit = next((d for d in _ld_dirs(py) if lib.path and lib.path.startswith(d.rstrip("/") + "/")), None)
            differs = None
            if lib.version and wheel_version:
                lv, wv = parse_version(lib.version), parse_version(wheel_version)
                differs = bool(lv and wv and lv.release[: len(lv.release)] != wv.release[: len(lv.release)])
            ev = [Evidence(f"pythons[{i}].loaded_libraries.{lib.name}", lib.path,
                           expected=f"the {_WHEELS[lib.name]} wheel's copy in site-packages"),
                  Evidence(f"pythons[{i}].packages.{_WHEELS[lib.name]}", wheel_version)]
            if lib.version:
                ev.append(Evidence(f"pythons[{i}].loaded_libraries.{lib.name}.version", lib.version))
            cmds = []
            if ld_hit:
                ev.append(Evidence(f"pythons[{i}].env.LD_LIBRARY_PATH", py.env.get("LD_LIBRARY_PATH")))
                cmds.append(drop_path_entry(ctx.facts, "LD_LIBRARY_PATH", py.env.get("LD_LIBRARY_PATH") or "", ld_hit))
            findings.append(Finding(
                code=f"libraries.shadowing/{lib.name}",
                category="SYSTEM_LIB_SHADOWING",
                severity=Severity.ERROR if differs else Severity.WARNING,
                summary=(f"torch loaded {lib.name} from {lib.path}"
                         + (f" (version {lib.version})" if lib.version else "")
                         + f" instead of its {_WHEELS[lib.name]} wheel ({wheel_version})"
                         + (f", found through LD_LIBRARY_PATH entry {ld_hit}" if ld_hit else "")),
                detail=("A library directory earlier on LD_LIBRARY_PATH (or in the system linker path) wins over "
                        "the copy torch was built and tested with. Version skew shows up as 'cuDNN version "
                        "incompatibility', undefined symbols such as __nvJitLinkAddData_12_1, or silent "
                        "slowdowns."),
                evidence=ev,
                fix=Fix(f"Remove {ld_hit or 'the system library directory'} from the library path so torch loads "
                        "its own copy", cmds),
            ))
    if not inspected:
        for _i, py in envs:
            err = (py.torch.cuda_init_error or "") + " ".join(py.torch.warnings or [])
            if "undefined symbol" in err or "version incompatibility" in err:
                inspected = True
        if not inspected:
            raise SkipCheck("the libraries torch loads were not read (torch import or /proc/self/maps unavailable)")
    return findings
