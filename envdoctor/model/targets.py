"""Declared targets: PEP 508 requirements and target GPUs (model names or sm_XX), parsed and resolved once."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, List, Optional, Protocol, Sequence

from ..domain.fastclass import dataclass

if TYPE_CHECKING:  # packaging.requirements costs ~0.1 s to import: loaded when a requirement is parsed
    from packaging.requirements import Requirement

from ..domain.arch import arch_cc
from ..domain.gpus import TYPED_NAME_PREFIXES
from ..domain.versions import bare_driver_branch, driver_branch, parse_version

# Requirement names that are not distributions: the interpreter, the torch build's CUDA and cuDNN
PSEUDO_NAMES = ("python", "cuda", "cudnn")


class TargetError(ValueError):
    """A requirement or GPU name that cannot be understood; the message is one line."""


def parse_requirement(text: str) -> Requirement:
    """``"torch>=2.4"`` -> Requirement; a bad specifier is a TargetError quoting it."""
    raw = (text or "").strip()
    if not raw:
        raise TargetError("empty requirement")
    try:
        from packaging.requirements import InvalidRequirement, Requirement

        req = Requirement(raw)
    except InvalidRequirement as e:
        first = str(e).splitlines()[0] if str(e) else "invalid"
        raise TargetError(f"requirement {raw!r} is not a PEP 508 requirement ({first})") from None
    if req.marker is not None:
        raise TargetError(f"requirement {raw!r}: environment markers are not supported here")
    if req.url:
        raise TargetError(f"requirement {raw!r}: URL requirements are not supported here")
    return req


def parse_requirements(texts: Sequence[str]) -> List[str]:
    """Validate every requirement (raising on the first bad one) and return them stripped, in order."""
    out = []
    for t in texts:
        parse_requirement(t)
        out.append(t.strip())
    return out


def split_list(values: Any) -> List[str]:
    """``["H100,A100", "L4"]`` or ``"H100, A100"`` -> ``["H100", "A100", "L4"]``."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    return [p.strip() for v in values for p in str(v).split(",") if p.strip()]


# NVIDIA opens roughly 2-4 driver branches a year, 5-15 numbers apart (R535 in 2023, R595 in 2026): a branch
# more than this far past the newest the matrix knows is not a driver that exists, even for a stale matrix
IMPLAUSIBLE_BRANCH_GAP = 100


class GpuMatrix(Protocol):
    """What the targets read of the compat matrix. ``compat.queries.Compat`` is one; the model sits below compat,
    so it names the methods it calls rather than the class (the rows come back as compat's records)."""

    as_of: str

    def cuda_releases(self) -> List[Any]: ...

    def arch_support(self, cc: str) -> Any: ...

    def gpu_candidates(self, name: str) -> List[Any]: ...


def check_driver_version(text: Optional[str], compat: Optional[GpuMatrix] = None) -> Optional[str]:
    """A driver version as NVIDIA writes it ("535.104.05"); a TargetError otherwise.

    A bare branch ("580", "R580") is refused, saying so: judged as 580.0 it would be older than every 580
    release. With ``compat``, a branch far past every branch the matrix knows (R999) is refused too."""
    if text is None:
        return None
    raw = str(text).strip()
    if not raw:
        raise TargetError("target driver is empty: give the fleet's driver version, such as 535.104.05")
    branch = bare_driver_branch(raw)
    if branch is not None:
        raise TargetError(f"target driver {raw!r} is a driver branch (R{branch}), not a driver version: give the "
                          f"version nvidia-smi prints as 'Driver Version' ({branch}.xx.yy); a branch alone cannot "
                          "be compared with a CUDA release's minimum driver")
    if not re.fullmatch(r"\d{3}(\.\d{1,3}){0,2}", raw):
        raise TargetError(f"target driver {raw!r} is not an NVIDIA driver version such as 535.104.05")
    if parse_version(raw, strict=True) is None:  # pragma: no cover - the pattern above only admits versions
        raise TargetError(f"target driver {raw!r} is not a version")
    newest = _newest_known_branch(compat) if compat is not None else None
    if newest is not None and (driver_branch(raw) or 0) > newest + IMPLAUSIBLE_BRANCH_GAP:
        raise TargetError(f"target driver {raw!r} is not a released NVIDIA driver: the newest branch the matrix "
                          f"knows (as of {getattr(compat, 'as_of', '?')}) is R{newest}")
    return raw


def _newest_known_branch(compat: GpuMatrix) -> Optional[int]:
    try:
        branches = [driver_branch(r.linux_min_driver) for r in compat.cuda_releases() if r.linux_min_driver]
    except Exception:  # noqa: BLE001 - a matrix without CUDA rows: the plausibility bound is not applied
        return None
    return max((b for b in branches if b), default=None)


@dataclass(frozen=True)
class GpuTarget:
    given: str  # "H100", "sm_90"
    label: str  # what findings call it: "H100 (compute capability 9.0)"
    cc: str  # "9.0"
    model: Optional[str]  # the matrix row name when it is one model ("L40S"), None for a family or sm_XX
    how: str  # "sm_XX", "model", "family"
    source: Optional[str] = None


def resolve_gpu(compat: GpuMatrix, text: str) -> GpuTarget:
    """A target GPU by model name ("H100", "RTX 5090", "Tesla K80") or architecture ("sm_90", "9.0").

    A name fitting several models is fine when they share one compute capability ("H100": SXM, PCIe and
    NVL are all 9.0); otherwise it is a TargetError naming the candidates.
    """
    raw = (text or "").strip()
    if not raw:
        raise TargetError("empty GPU name")
    cc = arch_cc(raw)
    if cc:
        arch = compat.arch_support(cc)
        if arch is None:
            raise TargetError(f"target GPU {raw!r}: compute capability {cc} is not in the matrix "
                              "(`envdoctor matrix arch` lists them)")
        return GpuTarget(raw, f"{raw} (compute capability {cc})", cc, None, "sm_XX", arch.source)
    tried = []
    for suffix in ("", "..."):
        for prefix in TYPED_NAME_PREFIXES:
            name = f"{prefix}{raw}{suffix}"
            candidates = compat.gpu_candidates(name)
            if not candidates:
                continue
            ccs = sorted({c.compute_capability for c in candidates if c.compute_capability})
            if len(ccs) == 1:
                model = candidates[0].name if len(candidates) == 1 else None
                label = f"{model or raw} (compute capability {ccs[0]})"
                return GpuTarget(raw, label, ccs[0], model, "model" if model else "family", candidates[0].source)
            tried = [c.name for c in candidates]
            if len(ccs) > 1:
                raise TargetError(f"target GPU {raw!r} can mean models of different compute capabilities "
                                  f"({', '.join(tried[:6])}): name one, or give sm_XX")
    raise TargetError(f"target GPU {raw!r} is not in the matrix: give a model name (`envdoctor matrix gpu "
                      "NAME` looks one up) or sm_XX")


def resolve_gpus(compat: GpuMatrix, texts: Sequence[str]) -> List[GpuTarget]:
    return [resolve_gpu(compat, t) for t in split_list(list(texts))]
