"""Small pure helpers shared by the core checks: torch lookup, driver vs CUDA (concepts: envdoctor.domain)."""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

from ..domain.variants import is_linux_x86, local_tag, variant_tag
from ..domain.versions import base_version
from ..model.facts import Facts, Package, PythonEnv


def torch_envs(facts: Facts) -> Iterator[Tuple[int, PythonEnv]]:
    """Interpreters whose torch was inspected (or read from a paste)."""
    for i, py in enumerate(facts.pythons):
        if py.torch is not None and py.torch.version:
            yield i, py


def torch_builds(facts: Facts) -> Iterator[Tuple[int, PythonEnv]]:
    """Interpreters whose torch shows its version *or* its CUDA: a paste may give `torch.version.cuda` or
    collect_env's "CUDA used to build PyTorch" without `torch.__version__`. For checks that need only torch's
    CUDA (driver vs torch's CUDA, nvcc vs torch's CUDA, architectures)."""
    for i, py in enumerate(facts.pythons):
        if py.torch is not None and (py.torch.version or py.torch.cuda):
            yield i, py


def torch_label(t) -> str:
    """'torch 2.5.1+cu124', or 'torch (CUDA 12.4 build)' when the paste shows only its CUDA."""
    if t.version:
        return f"torch {t.version}"
    return f"torch (CUDA {t.cuda} build)" if t.cuda else "torch"


def package(py: PythonEnv, name: str) -> Optional[Package]:
    return py.package(name)


def py_path(i: int, attr: str) -> str:
    return f"pythons[{i}].{attr}"


def no_torch_reason(facts: Facts) -> str:
    """Why there is no torch to judge: not installed, or the interpreter could not be inspected."""
    failed = [py for py in facts.pythons if py.status not in ("ok",)]
    if not facts.pythons:
        return "no interpreter was inspected"
    if failed and len(failed) == len(facts.pythons):
        py = failed[0]
        return f"the interpreter could not be inspected ({py.status}: {py.reason or 'no reason given'})"
    from .base import Reason

    return Reason("torch is not installed in the inspected interpreter(s)", "torch not installed")


def torch_envs_or_skip(facts: Facts) -> List[Tuple[int, PythonEnv]]:
    """The interpreters with torch, or SkipCheck saying why there are none."""
    from .base import SkipCheck

    envs = list(torch_envs(facts))
    if not envs:
        raise SkipCheck(no_torch_reason(facts))
    return envs


def package_variant(ctx, py: PythonEnv, pkg: Package) -> Tuple[Optional[str], str, bool]:
    """(variant, evidence text, certain) of a torch-family package.

    Order: the local version tag; what the probe read from the package's compiled files; else, for a
    wheel with no local tag on Linux x86_64, PyPI's default variant for the torch release it pairs with
    (PyPI's Linux x86_64 torch/torchvision/torchaudio wheels are CUDA builds; README "Key facts").
    """
    tag = variant_tag(pkg.version)
    if tag:
        return tag, f"local version tag +{tag}", True
    if pkg.variant:
        return pkg.variant, pkg.variant_evidence or "read from the package's compiled files", True
    if local_tag(pkg.version):  # a source or vendor build (+git..., +nv24.04) is no PyPI wheel: no default
        return None, "", False
    torch_v = pkg.version if pkg.name == "torch" else ctx.compat.torch_for_companion(pkg.name, base_version(pkg.version) or "")
    rel = ctx.compat.torch_release(torch_v) if torch_v else None
    linux = is_linux_x86(py.platform)
    if rel and rel.default_variant and linux is not False:
        certain = bool(linux)
        where = "Linux x86_64" if linux else "Linux x86_64 (assumed: the platform is not in the facts)"
        return (rel.default_variant,
                f"no local version tag: the PyPI wheel, which on {where} is the {rel.default_variant} build",
                certain)
    return None, "", False
