"""torch's own requirements, checked: every CUDA library wheel torch (and each companion) pins in its metadata,
against what is installed. `pip check` for the CUDA libraries, with the reason in CUDA terms.

A `--no-deps` install, another package's pin or a hand-upgraded wheel leaves e.g. nvidia-cudnn-cu13 9.13 next
to a torch that pins 9.24.0.43: pip says nothing, `import torch` works, and the first convolution raises
"cuDNN version incompatibility". The pins are read from the installed distributions' Requires-Dist (torch pins
cuda-toolkit[cublas,...]==13.0.3, which in turn pins nvidia-cublas==13.1.1.3.*), evaluated with the judged
interpreter's markers, and followed through the CUDA packages' own requirements and extras.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple

from packaging.utils import canonicalize_name

from ..domain.fastclass import dataclass
from ..domain.versions import parse_version
from ..model.facts import Package, PythonEnv
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import pip_install
from ._markers import marker_environment  # noqa: F401  (imported from here by others)
from ._shadowing import WHEELS, label
from .base import CheckContext, Findings, SkipCheck, registrar

if TYPE_CHECKING:  # packaging.requirements costs ~0.1 s to import: loaded when a requirement is parsed
    from packaging.requirements import Requirement

CHECKS: list = []
check = registrar(CHECKS)

CATEGORY = "CUDA_LIBRARY_VERSION_MISMATCH"
ROOTS = ("torch", "torchvision", "torchaudio", "triton", "pytorch-triton")
# torch/backends/cudnn/__init__.py (_init): a runtime cuDNN of another major, or an older minor than torch was
# compiled against, raises "cuDNN version incompatibility: PyTorch was compiled against ... but found runtime
# version ..." at first use; a newer minor of the same major is accepted
CUDNN_RULE = "torch/backends/cudnn/__init__.py: same major, runtime minor >= compiled minor"


def _is_cuda_library(name: str) -> bool:
    return name.startswith(("nvidia-", "cuda-"))


def _family(name: str) -> Optional[str]:
    """nvidia-cudnn-cu13 -> "cudnn", nvidia-cuda-runtime -> "cudart" (the _shadowing family names)."""
    stem = re.sub(r"-cu\d+$", "", name)
    for family, wheel in WHEELS.items():
        if stem == wheel:
            return family
    return None


def _cuda_major(name: str) -> Optional[int]:
    m = re.search(r"-cu(\d+)$", name)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Pin:
    """One CUDA-library requirement of a torch-family distribution, after markers and extras."""

    req: Requirement
    line: str  # the Requires-Dist line as written
    by: Package  # the distribution that declares it
    via: Tuple[str, ...]  # the chain from the root: ("torch", "cuda-toolkit")


_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]|[A-Za-z0-9])")  # PEP 508 names


def _extras_to_try(marker_text: str, extras: Set[str]) -> List[str]:
    """The extras whose evaluation can differ: in a marker that compares ``extra`` only with == and != (no
    <, >, ~=, in), every extra named nowhere in it answers alike, so one of them stands for all. cuda-toolkit's
    59 lines, each tried with torch's 11 extras, were 86% of a judge's time (packaging evaluates slowly)."""
    if len(extras) < 2 or any(op in marker_text for op in ("<", ">", "~", " in ", "===")):
        return sorted(extras)
    text = canonicalize_name(marker_text)  # extras compare normalised (packaging >= 22), as names do
    named = sorted(e for e in extras if canonicalize_name(e) in text)
    rest = sorted(e for e in extras if e not in named)
    return named + rest[:1]


def _applies(req: Requirement, env: Dict[str, str], extras: Set[str]) -> bool:
    if req.marker is None:
        return True
    try:
        tries = _extras_to_try(str(req.marker), extras) if extras else [""]
        return any(req.marker.evaluate(dict(env, extra=e)) for e in tries)
    except Exception:  # an unknown marker variable in a hand-edited snapshot: not judged
        return False


def torch_pins(py: PythonEnv, machine: Optional[str] = None) -> Tuple[List[Pin], List[str]]:
    """(the CUDA-library pins of torch and its companions, the roots read)."""
    from packaging.requirements import InvalidRequirement, Requirement

    env = marker_environment(py, machine)
    pins: List[Pin] = []
    roots = [p for p in (py.package(n) for n in ROOTS) if p is not None and p.requires is not None]
    queue: List[Tuple[Package, Set[str], Tuple[str, ...]]] = [(p, set(), (p.name,)) for p in roots]
    seen: Set[Tuple[str, frozenset]] = set()
    while queue:
        pkg, extras, via = queue.pop(0)
        key = (pkg.name, frozenset(extras))
        if key in seen:
            continue
        seen.add(key)
        for line in pkg.requires or []:
            lead = _NAME.match(line)  # the requirement's name, read before the (slow) parse: most are no CUDA library
            if lead is not None and not _is_cuda_library(canonicalize_name(lead.group(1))):
                continue
            try:
                req = Requirement(line)
            except InvalidRequirement:
                continue
            name = canonicalize_name(req.name)
            if not _is_cuda_library(name) or not _applies(req, env, extras):
                continue
            pins.append(Pin(req, line, pkg, via))
            dep = py.package(name)
            if dep is not None and dep.requires:
                queue.append((dep, set(req.extras), via + (name,)))
    return pins, [p.name for p in roots]


def _cudnn_error(py: PythonEnv) -> Optional[str]:
    for note in py.notes or []:
        if "cuDNN version incompatibility" in note:
            return note
    return None


def _explain(family: Optional[str], name: str, have: str, spec: str, older: Optional[bool],
             other_major: bool, t_label: str) -> Tuple[str, str]:
    """(severity, what breaks) for one unmet pin."""
    lib = label(family) if family else name
    if other_major:
        return Severity.ERROR, (f"{lib} {have} is another major version than the {lib} {t_label} was built "
                                "against: its libraries have other file names and symbols, so torch either "
                                "fails to load them or loads another copy")
    if family == "cudnn":
        if older:
            return Severity.ERROR, ("torch checks cuDNN at first use and refuses a runtime older than the one it "
                                    "was compiled against: every cuDNN operation (convolutions, RNNs, cuDNN "
                                    "attention) raises 'cuDNN version incompatibility'")
        return Severity.WARNING, ("a newer cuDNN minor is accepted by torch's check, but this combination was not "
                                  "built or tested together")
    if older:
        return Severity.ERROR, (f"torch's libraries are linked against {lib} {spec.lstrip('=<>~!')} and may use "
                                f"its newer entry points: an older {lib} fails with 'undefined symbol' at import "
                                "or at the first kernel that needs it")
    return Severity.WARNING, (f"not the {lib} torch was built and tested with; NVIDIA keeps minor releases "
                              "compatible, so this usually works, but `pip check` reports it")


# wheels missing, a wheel at another version than torch pins (a kind per wheel), or one overwritten by another
TORCH_REQUIRES = Findings("packages.torch-requires", CATEGORY, kinds=("missing", "{package}", "{package}-overwritten"))


@check("packages.torch-requires", "Installed CUDA libraries are the versions torch pins",
       categories=(CATEGORY,))
def check_torch_requires(ctx: CheckContext) -> List[Finding]:
    from ._shadowing import shadows

    findings: List[Finding] = []
    judged = 0
    for i, py in enumerate(ctx.facts.pythons):
        if py.package("torch") is None:
            continue
        pins, _roots = torch_pins(py, ctx.facts.host.machine)
        if not pins:
            continue
        fallback = {s.wheel for s in shadows(py, ctx.facts.system_libraries.libraries) if s.how == "fallback"}
        t_label = f"torch {(py.torch.version if py.torch else None) or py.package('torch').version}"
        done: Set[Tuple[str, str]] = set()
        missing: List[Tuple[str, str, Pin]] = []  # (name, spec, pin)
        for pin in pins:
            name = canonicalize_name(pin.req.name)
            spec = str(pin.req.specifier)
            if not spec or (name, spec) in done:
                continue  # an unpinned requirement (nvidia-cudnn's nvidia-cublas): any version is torch's
            done.add((name, spec))
            judged += 1
            installed = py.package(name)
            if installed is None:
                if name not in fallback:  # (else libraries.shadowing names the copy loaded instead, same fix)
                    missing.append((name, spec, pin))
                continue
            found = _mismatch(ctx, i, py, pin, installed, t_label)
            if found is not None:
                findings.append(found)
        if missing:
            findings.append(_missing(ctx, i, py, missing))
        pinned = {canonicalize_name(p.req.name): p for p in pins if str(p.req.specifier)}
        for shared in py.shared_library_files or []:
            found = _overwritten(ctx, i, py, shared, pinned)
            if found is not None:
                findings.append(found)
    if not judged and not findings:
        raise SkipCheck("no installed torch (or companion) pins a CUDA library wheel in its metadata (a CPU, "
                        "conda or source build, or facts without Requires-Dist)", not_applicable="no CUDA library pins")
    return findings


def _source(pin: Pin, name: str) -> str:
    chain = " -> ".join(pin.via + (name,))
    return f"Requires-Dist of {pin.by.name} {pin.by.version}: {pin.line}" + (
        f" (via {chain})" if len(pin.via) > 1 else "")


def _lib(name: str) -> str:
    family = _family(name)
    return label(family) if family else name


def _missing(ctx: CheckContext, i: int, py: PythonEnv, missing: List[Tuple[str, str, Pin]]) -> Finding:
    where = py.executable or "the interpreter"
    pins = [f"{name}{spec}" for name, spec, _ in missing]
    libs = ", ".join(dict.fromkeys(_lib(name) for name, _, _ in missing))
    first = missing[0][2]
    return TORCH_REQUIRES.error(
        "missing",
        summary=(f"{len(missing)} CUDA library wheel(s) that {first.via[0]} requires are not installed in {where}: "
                 + ", ".join(pins)),
        detail=(f"torch loads {libs} from those wheels' directories (RPATH); without them `import torch` fails "
                "with 'cannot open shared object file', or the loader takes whatever copy LD_LIBRARY_PATH or the "
                "system holds. A `--no-deps` install of torch leaves them out."),
        evidence=[Evidence(f"pythons[{i}].packages.{name}", None, expected=spec, source=_source(pin, name))
                  for name, spec, pin in missing],
        fix=Fix(f"Install the pinned CUDA libraries into {where} (one pinned install; torch itself is left as it is)",
                [pip_install(ctx.facts, py, pins)]),
    )


def _mismatch(ctx: CheckContext, i: int, py: PythonEnv, pin: Pin, installed: Package, t_label: str
              ) -> Optional[Finding]:
    name = canonicalize_name(pin.req.name)
    spec = str(pin.req.specifier)
    have = parse_version(installed.version)
    if have is None or pin.req.specifier.contains(have, prereleases=True):
        return None
    family = _family(name)
    lib = _lib(name)
    exact = [s for s in pin.req.specifier if s.operator in ("==", "===", "~=", ">=")]
    pinned = [v for v in (parse_version(s.version.rstrip(".*")) for s in exact) if v is not None]
    older = bool(pinned) and all(have < v for v in pinned)
    other_major = bool(pinned) and have.release[0] != pinned[0].release[0]
    severity, breaks = _explain(family, name, installed.version, spec, older, other_major, t_label)
    evidence = [Evidence(f"pythons[{i}].packages.{name}", installed.version, expected=spec, source=_source(pin, name)),
                Evidence(f"pythons[{i}].packages.{pin.by.name}.requires", pin.line)]
    t = py.torch
    if family == "cudnn" and t is not None and t.cudnn_version:
        evidence.append(Evidence(f"pythons[{i}].torch.cudnn_version", t.cudnn_version,
                                 source="torch.backends.cudnn.version()"))
    err = _cudnn_error(py) if family == "cudnn" else None
    if err:
        severity = Severity.ERROR
        evidence.append(Evidence(f"pythons[{i}].notes", err, source="torch.backends.cudnn.version()"))
    for copy in py.loaded_libraries:
        if family and copy.name == family and copy.version:
            evidence.append(Evidence(f"pythons[{i}].loaded_libraries.{family}", copy.path,
                                     source=f"version {copy.version} ({copy.version_source})"))
            break
    want = str(pinned[0]) if len(exact) == 1 and exact[0].operator == "==" and pinned else spec
    by = f"{pin.by.name} {pin.by.version}"
    built = (f"{t_label} was built against {lib} {want}" if pin.via[0] == "torch"
             else f"{by} was built against {lib} {want}")
    if other_major:
        direction = "another major version than"
    else:
        direction = "older than" if older else "not"
    where = py.executable or "the interpreter"
    return TORCH_REQUIRES(
        name, severity,
        summary=(f"{name} {installed.version} is {direction} the version {by} pins ({name}{spec}): {built}"
                 + ("; `torch.backends.cudnn.version()` already fails on it" if err else "")),
        detail=(f"{breaks}. pip installs the pinned version with torch; a `--no-deps` "
                "install, another package's requirement or a manual upgrade replaces it without a word."),
        evidence=evidence,
        fix=Fix(f"Install {lib} {want} into {where}: one pinned install, torch stays importable",
                [pip_install(ctx.facts, py, [f"{name}{spec}"])]),
    )


def _overwritten(ctx: CheckContext, i: int, py: PythonEnv, shared, pinned: Dict[str, Pin]) -> Optional[Finding]:
    """A library file torch's pinned wheel installed, overwritten by a wheel for another CUDA major."""
    owner = next((c for c in shared.claimants if c.name == shared.owner), None)
    ours = next((c for c in shared.claimants if c.name in pinned), None)
    if owner is None or ours is None or owner.name == ours.name:
        return None
    major, want = _cuda_major(owner.name), _cuda_major(ours.name)
    if major is None or want is None or major == want:
        return None
    pin = pinned[ours.name]
    lib = _lib(ours.name)
    where = py.executable or "the interpreter"
    return TORCH_REQUIRES.error(
        f"{ours.name}-overwritten",
        summary=(f"{shared.path} on disk is the CUDA {major} build from {owner.name} {owner.version}, not the CUDA "
                 f"{want} {lib} of {ours.name} {ours.version} that torch pins ({pin.line.split(';')[0].strip()}): "
                 f"the {owner.name} install overwrote it"),
        detail=(f"Wheels of one NVIDIA library for two CUDA majors unpack into the same site-packages/nvidia "
                f"folder; the one installed last owns the files. pip's metadata still lists {ours.name} "
                f"{ours.version}, so `pip check` and the version pins look right, but torch (built for CUDA {want}) "
                f"loads a {lib} built for CUDA {major}: missing symbols, 'cuDNN version incompatibility' or "
                "CUDA errors at the first call."),
        evidence=[Evidence(f"pythons[{i}].shared_library_files", shared.path,
                           expected=f"{ours.name} {ours.version} ({ours.size} bytes in its RECORD)",
                           source=f"{shared.size} bytes on disk = {owner.name} {owner.version}'s RECORD"),
                  Evidence(f"pythons[{i}].packages.{ours.name}.requires", pin.line)],
        fix=Fix(f"Reinstall {ours.name} {ours.version} over those files in {where} (one pinned install; torch stays "
                f"importable; {owner.name} is left installed, its files under it replaced)",
                [pip_install(ctx.facts, py, [f"{ours.name}=={ours.version}"], force=True, no_deps=True)]),
    )
