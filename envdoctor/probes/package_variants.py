"""The CUDA variant of an installed distribution, judged from the raw evidence the payload reads in the target.

The payload (envdoctor/_payload/) reports what the files say: the version, torch's version.py, Requires-Dist and
the libraries the compiled files link (DT_NEEDED). The rule that turns them into "cu124", "cuda13", "cpu" or
"rocm" lives here, in envdoctor's own process, where it is tested like any other code.
"""

# ruff: noqa: UP045 - Python 3.9 target: typing.Optional, as in facts.py (ruff >= 0.8 split UP045 from UP007)

from __future__ import annotations

import os
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from envdoctor.domain.variants import variant_of_cuda, variant_tag

# auditwheel renames vendored copies (libcudart.faf08d9a.so.13), hence the optional hash
_CUDART = re.compile(r"^libcudart(?:\.[0-9a-f]{8}|-[0-9a-f]{8})?\.so\.(\d+)(?:\.(\d+))?")
_NVIDIA_REQ = re.compile(r"^nvidia-cuda-runtime(?:-cu(\d+))?\s*(?:\(\s*)?==\s*(\d+)\.(\d+)", re.I)
_CUDA_TOOLKIT_REQ = re.compile(r"^cuda-toolkit(?:\[[^\]]*\])?\s*(?:\(\s*)?==\s*(\d+)\.(\d+)", re.I)
# distributions whose pinned CUDA runtime requirement says which CUDA they were built for (pip torch wheels pin it)
_PINNED_RUNTIME = ("torch", "xformers", "vllm")


def variant_from_libs(libs: Iterable[str]) -> Tuple[Optional[str], List[str]]:
    """(variant, the library names that decided it) from the libraries compiled files link to.

    libcudart.so.13 gives the CUDA major only ("cuda13"). Linking libtorch_cuda/libc10_cuda
    without cudart still says "a CUDA build"; linking only CPU torch libraries says "cpu".
    """
    majors = set()
    minors = set()
    evidence = []
    cuda_torch = False
    rocm = False
    torch_linked = False
    for name in libs:
        base = os.path.basename(name)
        m = _CUDART.match(base)
        if m:
            majors.add(m.group(1))
            if m.group(2):
                minors.add((m.group(1), m.group(2)))
            evidence.append(base)
        elif base.startswith(("libtorch_cuda", "libc10_cuda")):
            cuda_torch = True
            evidence.append(base)
        elif base.startswith(("libtorch_hip", "libc10_hip", "libamdhip64")):
            rocm = True
            evidence.append(base)
        elif base.startswith(("libtorch", "libc10")):
            torch_linked = True
    evidence = sorted(set(evidence))
    if rocm:
        return "rocm", evidence
    if len(minors) == 1 and len(majors) == 1:
        major, minor = next(iter(minors))
        return variant_of_cuda(f"{major}.{minor}"), evidence
    if len(majors) == 1:
        return f"cuda{next(iter(majors))}", evidence
    if len(majors) > 1:
        return "cuda" + "+".join(sorted(majors)), evidence
    if cuda_torch:
        return "cuda", evidence
    if torch_linked:
        return "cpu", ["libtorch/libc10 without CUDA libraries"]
    return None, []


def variant_from_version(version: str) -> Optional[str]:
    """The CUDA variant in a version's local tag: "2.5.1+cu124" -> "cu124" (envdoctor.domain.variants)."""
    return variant_tag(version)


def variant_from_requires(requires: Optional[List[str]]) -> Tuple[Optional[str], Optional[str]]:
    """CUDA variant from pinned CUDA runtime requirements (pip torch wheels pin them)."""
    for req in requires or []:
        if "extra ==" in req:
            continue
        m = _NVIDIA_REQ.match(req.strip())
        if m:
            return variant_of_cuda(f"{m.group(2)}.{m.group(3)}"), req.split(";")[0].strip()
        m = _CUDA_TOOLKIT_REQ.match(req.strip())
        if m:
            return variant_of_cuda(f"{m.group(1)}.{m.group(2)}"), req.split(";")[0].strip()
    return None, None


def variant_from_linked(linked: Mapping[str, str]) -> Tuple[Optional[str], Optional[str]]:
    """Variant and evidence from the payload's "linked" map (library -> the first compiled file linking it)."""
    variant, names = variant_from_libs(linked)
    if variant is None:
        return None, None
    if variant == "cpu":
        return "cpu", "compiled files link libtorch/libc10 but no CUDA or ROCm library"
    parts = ["{} ({})".format(n, linked.get(n, "?")) for n in names[:6]]
    note = ""
    if variant.startswith("cuda") and variant != "cuda":
        note = f": CUDA {variant[4:]}, major version only"
    return variant, "compiled files link " + ", ".join(parts) + note


def package_variant(name: str, version: str, requires: Optional[List[str]],
                    inputs: Optional[Mapping[str, Any]]) -> Tuple[Optional[str], Optional[str]]:
    """(variant, evidence) of one distribution: its version's local tag first and alone; else version.py, the
    pinned CUDA runtime, and the linkage of its compiled files (which also adds its evidence)."""
    variant = variant_from_version(version)
    if variant:
        return variant, f"version local tag: {version}"
    inputs = inputs or {}
    evidence = []
    vp: Dict[str, Any] = dict(inputs.get("version_py") or {})
    where = inputs.get("version_py_file") or f"{name}/version.py"
    if vp:
        variant = variant_from_version(vp.get("__version__") or "")
        if variant:
            evidence.append(f"{where}: __version__ = {vp['__version__']!r}")
        elif vp.get("cuda"):
            m = re.match(r"^(\d+)\.(\d+)", vp["cuda"] or "")
            if m:
                variant = "cu{}{}".format(*m.groups())
                evidence.append("{}: cuda = {!r}".format(where, vp["cuda"]))
    if not variant and name in _PINNED_RUNTIME:
        variant, req = variant_from_requires(requires)
        if variant:
            evidence.append(f"requires {req}")
    linked = inputs.get("linked")
    if isinstance(linked, dict):
        scanned, scan_evidence = variant_from_linked(linked)
        if scanned:
            if not variant:
                variant = scanned
            if scan_evidence:
                evidence.append(scan_evidence)
    return variant, ("; ".join(evidence) or None)


def with_variant(record: Dict[str, Any]) -> Dict[str, Any]:
    """A payload package record with its variant judged: the raw inputs replaced by Package.variant/_evidence.

    A record that already carries a variant (a snapshot from an older payload) keeps it."""
    rec = dict(record)
    inputs = rec.pop("variant_inputs", None)
    if "variant" in rec or not isinstance(rec.get("version"), str) or not isinstance(rec.get("name"), str):
        return rec
    if "location" not in rec:
        return rec  # a name + version record: not one the payload looked into
    requires = rec.get("requires") if isinstance(rec.get("requires"), list) else None
    rec["variant"], rec["variant_evidence"] = package_variant(
        rec["name"], rec["version"], requires, inputs if isinstance(inputs, dict) else None)
    return rec
