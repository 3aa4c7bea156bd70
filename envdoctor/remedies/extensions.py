"""The fix for a compiled torch extension built for another torch: a build that matches the installed torch, never
a plain reinstall that may fetch a build for another one.

Three ways out, chosen in this order:
1. The extension's metadata pins torch (xformers: Requires-Dist torch==2.5.1) and that pin excludes the installed
   torch: its release for this torch exists as a wheel, and pip's resolver finds it when the same command pins
   torch to the installed build (``pip install xformers torch==2.5.1+cu124``): no candidate that requires another
   torch can be chosen, and torch itself is left as it is.
2. Its pins accept the installed torch (or it pins none: flash-attn, apex and most source-built extensions bind to
   torch at build time, not in metadata): no wheel can be told to match, and reinstalling the same release would
   bring back the same binary. The build that matches is one made here, against the installed torch:
   ``--no-binary NAME`` (a source build), ``--no-build-isolation`` (pip's isolated build environment would install
   the newest torch from the index and build against that), ``--no-deps`` (leave torch alone).
3. Changing torch to the one the binary was built for is offered only as words (the torch its build metadata
   names), never as the command: torch is what every other package of the environment pairs with.
"""

from __future__ import annotations

import re
from typing import Optional

from ..domain.variants import local_tag, variant_kind
from ..domain.versions import base_version, parse_version
from ..model.facts import Facts, Package, PythonEnv
from ..model.findings import Fix
from .python import pip_install

# Extensions that publish a build per CUDA variant on PyTorch's index (the same index torch's own variant comes
# from): "pip3 install -U xformers --index-url https://download.pytorch.org/whl/cu126"
# (https://github.com/facebookresearch/xformers#installing-xformers). PyPI's wheel of these is built for the
# default variant only.
PYTORCH_INDEX_EXTENSIONS = ("xformers",)
_TORCH_REQ = re.compile(r"^\s*torch\s*(?:$|[\s<>=!~;(\[])", re.I)


def torch_pin_accepts(pkg: Package, torch_version: str) -> Optional[bool]:
    """Does ``pkg``'s Requires-Dist on torch accept ``torch_version``: True, False, or None when it has none with a
    version (no extra: an optional dependency binds nothing)."""
    from packaging.requirements import InvalidRequirement, Requirement

    have = parse_version(base_version(torch_version))
    verdict: Optional[bool] = None
    for line in pkg.requires or []:
        if not _TORCH_REQ.match(line) or re.search(r"extra\s*==", line):
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if not str(req.specifier) or have is None:
            continue
        if not req.specifier.contains(have, prereleases=True):
            return False
        verdict = True
    return verdict


def extension_fix(facts: Optional[Facts], py: PythonEnv, pkg: Package, built_for: Optional[str] = None) -> Fix:
    """Fix for ``pkg``, a compiled extension whose binary or metadata says it is not built for the installed
    torch (the module docstring says how the way out is chosen)."""
    torch_pkg = py.package("torch")
    tver = (torch_pkg.version if torch_pkg else None) or (py.torch.version if py.torch else None) or ""
    where = py.executable or "the interpreter"
    other = (f"; or, to keep this {pkg.name} build, install the torch it was built for ({built_for}) together with "
             "its companions" if built_for and base_version(built_for) != base_version(tver) else "")
    if tver and torch_pin_accepts(pkg, tver) is False:
        tag = local_tag(tver)
        variant = tag if pkg.name in PYTORCH_INDEX_EXTENSIONS and tag and variant_kind(tag) == "cuda" else None
        return Fix(f"Install the {pkg.name} release built for the installed torch {tver} into {where}: pinning "
                   "torch in the same command lets pip choose only a release that requires this torch, and keeps "
                   f"torch as it is{other}",
                   [pip_install(facts, py, [pkg.name, f"torch=={tver}"], variant)])
    version = pkg.version.split("+", 1)[0] if pkg.version else ""
    spec = f"{pkg.name}=={version}" if version else pkg.name
    return Fix(f"Rebuild {pkg.name} from source against the installed torch {tver or ''} in {where}: nothing in its "
               "metadata picks a wheel for this torch, and no build isolation, so that the build uses this torch "
               f"rather than the newest one from the index (a CUDA build needs nvcc of torch's CUDA){other}",
               [pip_install(facts, py, ["--no-binary", pkg.name, spec], force=True, no_deps=True,
                            no_build_isolation=True)])
