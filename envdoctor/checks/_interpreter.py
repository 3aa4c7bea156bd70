"""What several checks ask of the interpreter's layout: which torch a companion pairs with, and the companions a venv
takes from another site-packages (the base's, with include-system-site-packages) than the torch it imports."""

from __future__ import annotations

import posixpath
from typing import List, Optional, Sequence

from ..domain.fastclass import dataclass
from ..domain.versions import base_version, mm_str, parse_version
from ..model.facts import Package, PackageCopy, PythonEnv

SPLIT_COMPANIONS = ("torchvision", "torchaudio", "triton", "pytorch-triton")


def _torch_pin(requires: Optional[Sequence[str]]) -> Optional[str]:
    """The exact torch a companion's Requires-Dist names ("torch==2.5.1"), else None."""
    for line in requires or ():
        head = line.split(";", 1)[0].replace(" ", "")
        if head.lower().startswith("torch==") and "extra" not in line.split(";", 1)[-1]:
            return head.split("==", 1)[1]
    return None


def _triton_pin(torch_requires: Optional[Sequence[str]]) -> Optional[str]:
    """The triton a torch wheel pins in its own Requires-Dist ("triton==3.1.0; platform_system == 'Linux'...")."""
    for line in torch_requires or ():
        head = line.split(";", 1)[0].replace(" ", "")
        for name in ("triton==", "pytorch-triton=="):
            if head.lower().startswith(name):
                return head.split("==", 1)[1]
    return None


def wanted_companion(compat, torch_pkg: Package, name: str) -> Optional[str]:
    """The version of companion ``name`` that pairs with ``torch_pkg``: the companion table, else (triton) torch's
    own pin."""
    tver = base_version(torch_pkg.version) or ""
    comp = compat.companions(tver) if tver else None
    triton = name in ("triton", "pytorch-triton")
    want = (comp.triton if triton else getattr(comp, name, None)) if comp is not None else None
    if want is None and triton:
        want = _triton_pin(torch_pkg.requires)
    return want


def pairs_with(compat, torch_pkg: Package, name: str, version: Optional[str],
               requires: Optional[Sequence[str]] = None) -> Optional[bool]:
    """Whether companion ``name`` at ``version`` pairs with ``torch_pkg``: its own Requires-Dist pin of torch,
    else the companion table; None when neither says."""
    tver = base_version(torch_pkg.version)
    if not tver or not version:
        return None
    pin = _torch_pin(requires)
    if pin is not None:
        return parse_version(base_version(pin)) == parse_version(tver)
    want = wanted_companion(compat, torch_pkg, name)
    if want is not None:
        return parse_version(base_version(version)) == parse_version(want)
    if name in ("triton", "pytorch-triton"):
        return None
    built_for = compat.torch_for_companion(name, base_version(version) or "")
    return None if built_for is None else mm_str(built_for) == mm_str(tver)


def _same_dir(a: Optional[str], b: Optional[str]) -> bool:
    return bool(a and b) and posixpath.normpath(a) == posixpath.normpath(b)


def in_own_site(py: PythonEnv, location: Optional[str]) -> Optional[bool]:
    """Whether ``location`` is one of the interpreter's own site-packages; None when they are not known."""
    own = py.site_packages if py.site_packages is not None else (
        py.torch_origin.site_packages if py.torch_origin is not None else None)
    if own is None or not location:
        return None
    return any(_same_dir(location, d) for d in own)


@dataclass(frozen=True)
class SplitCompanion:
    """A companion imported from another sys.path entry than torch that does not pair with that torch."""

    package: Package  # the copy imported
    torch: Package  # the torch imported
    match: Optional[PackageCopy]  # a later (shadowed) copy of the companion that does pair with that torch
    want: Optional[str]  # the version that pairs, when known


def split_companions(compat, py: PythonEnv) -> List[SplitCompanion]:
    """Companions a venv takes from another site-packages than its torch, built for another torch (the base's
    torchvision next to the venv's own torch): the import mixes two sets."""
    torch_pkg = py.package("torch")
    if torch_pkg is None or not torch_pkg.location:
        return []
    out = []
    for name in SPLIT_COMPANIONS:
        pkg = py.package(name)
        if pkg is None or not pkg.location or _same_dir(pkg.location, torch_pkg.location):
            continue
        if name in ("triton", "pytorch-triton") and not (py.torch and py.torch.cuda) and \
                _triton_pin(torch_pkg.requires) is None:
            continue  # a CPU torch does not use triton
        if pairs_with(compat, torch_pkg, name, pkg.version, pkg.requires) is not False:
            continue
        match = next((c for c in pkg.shadowed or [] if pairs_with(compat, torch_pkg, name, c.version, c.requires)),
                     None)
        out.append(SplitCompanion(pkg, torch_pkg, match, wanted_companion(compat, torch_pkg, name)))
    return out


def venv_other_minor(py: PythonEnv) -> bool:
    """Whether the venv's python now starts another minor than its pyvenv.cfg names (packages.metadata/venv-python):
    then everything installed for it, pip included, sits in a lib/pythonX.Y it does not read."""
    import re

    made = re.match(r"(\d+\.\d+)", (py.venv.version if py.venv is not None else None) or "")
    runs = re.match(r"(\d+\.\d+)", py.python_version or "")
    return bool(made and runs and made.group(1) != runs.group(1))
