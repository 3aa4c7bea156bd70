"""A pasted CUDA build failure with a host compiler newer than current nvcc releases accept, when the paste does
not show nvcc's version (issue 29: a CMake log on a distribution with a new gcc, batch4 309).

toolchain.host-compiler judges gcc against the nvcc the paste shows. A build log often shows only the host
compiler (`gcc --version`, CMake's "The CXX compiler identification is GNU 16.1.1") and nvcc failing; then the
question is whether the gcc is newer than what the nvcc of the CUDA current torch builds use accepts
(compat_data/host_compilers.json, read from each toolkit's crt/host_config.h). When it is, that is the likely
cause, at medium confidence, with `nvcc --version` to settle it.
"""

from __future__ import annotations

import re
from typing import List, Optional

from ..domain.variants import cuda_of_variant
from ..domain.versions import major_minor
from ..model.findings import Evidence, Finding, Fix
from ._errors import is_error_line
from ._paste import paste_or_skip
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS, applies=PASTE_ONLY)

LEAD = Findings("diagnose.host-compiler", "HOST_COMPILER_TOO_NEW", kinds=("gcc-newer-than-current-nvcc",))
_CUDA_BUILD = re.compile(r"\bnvcc\b|CUDA compiler|CMakeCUDA|\.cu\b|host_config\.h", re.I)
SETTLE = "nvcc --version"


def _current_cuda(compat) -> Optional[str]:
    """The CUDA of the newest torch release's default build: what a current environment's toolkit is."""
    releases = [r for r in compat.torch_releases() if r.default_variant and cuda_of_variant(r.default_variant)]
    if not releases:
        return None
    newest = max(releases, key=lambda r: tuple(int(x) for x in r.minor.split(".")))
    return cuda_of_variant(newest.default_variant)


@check(LEAD, "Host compiler vs current nvcc (nvcc's version not in the paste)")
def check_host_compiler_lead(ctx: CheckContext) -> List[Finding]:
    paste = paste_or_skip(ctx)
    facts = ctx.facts
    gcc = facts.host.gcc_version
    if not gcc:
        raise SkipCheck("host gcc version not in the paste")
    tk = facts.toolkits.on_path
    if tk is not None and tk.version:
        raise SkipCheck("nvcc's version is in the paste (toolchain.host-compiler judges it)")
    failures = [(i, m) for i, m in enumerate(paste.messages or []) if _CUDA_BUILD.search(m) and is_error_line(m)]
    if not failures:
        raise SkipCheck("the paste shows no failed CUDA compile")
    current = _current_cuda(ctx.compat)
    limit = ctx.compat.max_host_compiler(current, "gcc") if current else None
    gmm = major_minor(gcc)
    if limit is None or not gmm:
        raise SkipCheck("the host-compiler limit of current CUDA releases is not in this matrix")
    max_major, source = limit
    if gmm[0] <= max_major:
        return []
    least = ctx.compat.least_cuda_for_host_compiler(gmm[0], "gcc")
    accepts = (f"only CUDA {least[0]} or newer accepts gcc {gmm[0]}" if least
               else f"no CUDA release in the matrix accepts gcc {gmm[0]}")
    i, msg = failures[0]
    from ..remedies import host_compiler_install

    return [LEAD.warning(
        "gcc-newer-than-current-nvcc", confidence="medium",
        summary=(f"gcc {gcc} is newer than nvcc of CUDA {current} accepts (gcc <= {max_major}; {accepts}) and the "
                 "paste shows a CUDA compile failing; nvcc's version is not in the paste"),
        detail=("nvcc checks the host compiler in crt/host_config.h and stops with 'unsupported GNU version'; CMake "
                "then reports that it cannot identify or test the CUDA compiler. Unless the toolkit is new enough, "
                f"the host compiler is the cause. To settle it, paste the output of `{SETTLE}`."),
        evidence=[Evidence("host.gcc_version", gcc, expected=f"<= {max_major}", source=source),
                  Evidence(f"paste.messages[{i}]", msg[:500]),
                  Evidence("paste.settle", SETTLE)],
        fix=Fix(f"Install gcc {max_major} and point nvcc at it (or a CUDA toolkit that accepts gcc {gmm[0]})",
                host_compiler_install(facts, max_major)),
    )]
