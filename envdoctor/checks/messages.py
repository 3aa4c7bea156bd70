"""Checks over pasted messages (facts.paste.messages): known error signatures mapped to categories."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from ..catalogue import CATEGORIES
from ..compat.signatures import Signature, normalise, signatures_from
from ..domain.variants import (
    CPU,
    cuda_of_variant,
    is_cpu_build,
    local_tag,
    nvidia_wheel,
    package_variant,
    variant_kind,
    variant_tag,
)
from ..domain.versions import base_version, driver_branch, major_minor, release
from ..facts import Facts, ProbeStatus
from ..findings import Evidence, Finding, Fix, Severity
from .base import Check, CheckContext, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)

_RANK = {"high": 3, "medium": 2, "low": 1}


@dataclass(frozen=True)
class Hit:
    signature: Signature
    index: int  # into facts.paste.messages
    message: str
    matched: str
    groups: Dict[str, Optional[str]]
    category: str
    confidence: str


def _pkg_variant(facts: Facts, compat: Any, name: str) -> Optional[str]:
    """Variant of a torch-family package: local tag, the package's own record, else PyPI's default."""
    if not facts.pythons:
        return None
    py = facts.pythons[0]
    pkg = py.package(name)
    version = pkg.version if pkg else (py.torch.version if name == "torch" and py.torch else None)
    if version is None:
        return None
    known = package_variant(version, pkg.variant if pkg else None, py.platform, None)
    if known:
        return known
    if name == "torch" and is_cpu_build(py.torch):
        return CPU
    if compat is None:
        return None
    try:  # no local tag: the PyPI wheel, whose Linux x86_64 build is the release's default variant
        torch_v = version if name == "torch" else compat.torch_for_companion(name, version)
        rel = compat.torch_release(torch_v) if torch_v else None
    except Exception:  # noqa: BLE001 - compat lookups on odd versions must not break the check
        return None
    return package_variant(version, None, py.platform, rel.default_variant if rel else None)


def _python_outside(facts: Facts, compat: Any, version: Optional[str]) -> bool:
    if not version or compat is None or not facts.pythons or not facts.pythons[0].python_version:
        return False
    try:
        rel = compat.torch_release(base_version(version) or "")
    except Exception:  # noqa: BLE001
        return False
    if rel is None:
        return False
    py = major_minor(facts.pythons[0].python_version)
    lo, hi = major_minor(rel.python_min), major_minor(rel.python_max)
    return bool((lo and py < lo) or (hi and py > hi))


def _nvidia_two_majors(facts: Facts) -> List[str]:
    """NVIDIA library wheels installed for two CUDA majors at once (nvidia-cublas-cu11 and -cu12): both
    unpack into site-packages/nvidia/<lib>/lib, and the last installed wins."""
    seen: Dict[str, set] = {}
    for py in facts.pythons:
        for p in py.packages:
            w = nvidia_wheel(p.name)
            if w:
                seen.setdefault(w[0], set()).add(w[1])
    return sorted(lib for lib, majors in seen.items() if len(majors) > 1)


def holds(when: str, facts: Facts, compat: Any, groups: Dict[str, Optional[str]]) -> bool:
    """The named conditions a catalogue row's alternatives may use."""
    host = facts.host
    if when == "wsl":
        return bool(host.wsl)
    if when == "in_container":
        return bool(host.container and host.container.runtime)
    if when == "in_container_no_gpu":
        return bool(host.container and host.container.runtime and host.container.gpu_device_nodes == [])
    if when == "variants_differ":
        t = variant_kind(_pkg_variant(facts, compat, "torch"))
        if t is None:
            return False
        return any(variant_kind(_pkg_variant(facts, compat, c)) not in (None, t) for c in ("torchvision", "torchaudio"))
    if when == "not_torch_import":
        msgs = facts.paste.messages if facts.paste else []
        return not any("torch/__init__" in m or "torch._C" in m for m in msgs)
    if when == "driver_packages_changed":
        return bool(facts.paste and "driver.packages_changed" in (facts.paste.provenance or {}))
    if when == "mig_enabled":
        return any(g.mig_mode_current for g in facts.driver.gpus)
    if when == "nvidia_wheels_two_majors":
        return bool(_nvidia_two_majors(facts))
    if when == "python_outside_requested_torch":
        return _python_outside(facts, compat, groups.get("version"))
    if when.startswith("capture:") and "~" in when:
        name, pattern = when[len("capture:"):].split("~", 1)
        value = groups.get(name) or ""
        return bool(re.search(pattern, value))
    return False


_HITS_MEMO: Dict[str, Any] = {}


def signature_hits(facts: Facts, compat: Any) -> List[Hit]:
    """Every (message, signature) match, with the category the facts make most likely.

    Several checks ask for the hits of one paste: the last answer is kept (keyed by the facts object, which
    checks never change), and each message is whitespace-normalised once, not once per signature.
    """
    if facts.paste is None:
        return []
    sigs = signatures_from(compat)
    memo = _HITS_MEMO.get("last")
    if memo is not None and memo[0] is facts and memo[1] is sigs:
        return list(memo[2])
    hits: List[Hit] = []
    for i, message in enumerate(facts.paste.messages):
        norm = normalise(message)
        for sig in sigs:
            m = sig.regex.search(norm)
            if not m:
                continue
            groups = m.groupdict()
            category, confidence = sig.category, sig.confidence
            for alt in sig.alternatives:
                if holds(alt.when, facts, compat, groups):
                    category, confidence = alt.category, alt.confidence
                    break
            hits.append(Hit(sig, i, message, m.group(0), groups, category, confidence))
    _HITS_MEMO["last"] = (facts, sigs, tuple(hits))
    return hits


def _finding(hits: List[Hit]) -> Finding:
    best = max(hits, key=lambda h: _RANK.get(h.confidence, 0))
    sig = best.signature
    title = CATEGORIES[best.category].title
    excerpt = best.matched if len(best.matched) <= 160 else best.matched[:157] + "..."
    numbers = [f"{sig.captures.get(k, k)} = {v}" for k, v in best.groups.items() if v and k in sig.captures]
    summary = f"{title}: the paste shows \u201c{excerpt}\u201d"
    detail = sig.explanation
    if numbers:
        detail += " Read from the message: " + "; ".join(numbers) + "."
    if sig.settle:
        detail += f" To confirm, paste the output of `{sig.settle}`."
    evidence = []
    for h in sorted(hits, key=lambda h: -_RANK.get(h.confidence, 0)):
        evidence.append(Evidence(f"paste.messages[{h.index}]", h.message[:500], source=h.signature.source))
        for k, v in h.groups.items():
            if v and k in h.signature.captures:
                evidence.append(Evidence(f"paste.messages[{h.index}].{k}", v, expected=h.signature.captures[k]))
    severity = sig.severity
    if best.confidence == "low" and severity == Severity.ERROR:
        severity = Severity.WARNING  # a low-confidence match is a lead, never an error
    if sig.settle:
        evidence.append(Evidence("paste.settle", sig.settle))
    return Finding(
        code=f"messages.signature/{sig.id}", category=best.category, severity=severity,
        summary=summary, detail=detail, evidence=evidence, fix=Fix(sig.fix, [], sig.source),
        confidence=best.confidence,
    )


@check("messages.signatures", "Known error messages in the paste",
       categories=tuple(sorted(c for c in CATEGORIES)))
def check_signatures(ctx: CheckContext) -> List[Finding]:
    paste = ctx.facts.paste
    if paste is None:
        raise SkipCheck("no pasted text (messages are read only by `envdoctor diagnose`)")
    if not paste.messages:
        raise SkipCheck("the paste holds no error or warning message to match")
    by_category: Dict[str, List[Hit]] = {}
    for h in signature_hits(ctx.facts, ctx.compat):
        by_category.setdefault(h.category, []).append(h)
    return [_finding(hits) for hits in by_category.values()]


# ---- checks that judge what a paste shows when its facts are thin (diagnose only: a live probe always knows
# torch's build and the driver, so these skip there). Each reads facts and their provenance, never prose.

TORCH_CMD = 'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"'


def _paste_or_skip(ctx: CheckContext) -> Any:
    paste = ctx.facts.paste
    if paste is None:
        raise SkipCheck("judges pasted reports only (`envdoctor diagnose`); a live probe reads these facts itself")
    return paste


def _torch_cuda_known(facts: Facts) -> Optional[bool]:
    """True: torch is a CUDA build; False: a CPU build; None: the paste does not say."""
    py = facts.pythons[0] if facts.pythons else None
    t = py.torch if py else None
    if t is None:
        return None
    cpu = is_cpu_build(t)
    if cpu is None:
        pkg = py.package("torch") if py else None
        cpu = pkg.variant == CPU if pkg is not None and pkg.variant else None
    return None if cpu is None else not cpu


@check("diagnose.cuda-unavailable", "CUDA unavailable with the cause not in the paste",
       categories=("TORCH_CPU_ONLY_BUILD", "NO_NVIDIA_DRIVER"))
def check_cuda_unavailable(ctx: CheckContext) -> List[Finding]:
    """torch.cuda.is_available() is False and the paste shows neither torch's build nor a working driver: the
    two common causes, at low confidence (a warning at most), with the output that would settle it."""
    _paste_or_skip(ctx)
    facts = ctx.facts
    py = facts.pythons[0] if facts.pythons else None
    t = py.torch if py else None
    if t is None or t.cuda_available is not False:
        raise SkipCheck("the paste does not show torch.cuda.is_available() returning False")
    build = _torch_cuda_known(facts)
    d = facts.driver
    if build is False:
        if d.gpus or d.status == ProbeStatus.OK:
            return []  # torch.cuda-build judges a CPU build on a machine with GPUs
        # a CPU build, and the paste asks why CUDA is unavailable: that is why, even with no GPU list
        t_ver = t.version or "(version not shown)"
        return [Finding(
            code="diagnose.cuda-unavailable/cpu-build", category="TORCH_CPU_ONLY_BUILD",
            severity=Severity.WARNING, confidence="medium",
            summary=f"torch {t_ver} is a CPU build, so torch.cuda.is_available() is False (the paste shows no GPU list)",
            detail=CATEGORIES["TORCH_CPU_ONLY_BUILD"].meaning,
            evidence=[Evidence("pythons[0].torch.cuda_available", False),
                      Evidence("pythons[0].torch.version", t.version, expected="a CUDA build (+cuXXX)"),
                      Evidence("paste.settle", "nvidia-smi")],
            fix=Fix(CATEGORIES["TORCH_CPU_ONLY_BUILD"].fix),
        )]
    if build is True and d.status != ProbeStatus.SKIPPED:
        return []  # the driver checks judge it from facts
    if build is None:
        category, settle = "TORCH_CPU_ONLY_BUILD", TORCH_CMD
        why = "torch's build (CUDA or CPU) is not in the paste"
    else:
        category, settle = "NO_NVIDIA_DRIVER", "nvidia-smi"
        why = f"torch is a CUDA {t.cuda or ''} build and the paste shows no driver".replace("  ", " ")
    cat = CATEGORIES[category]
    return [Finding(
        code=f"diagnose.cuda-unavailable/{'build-unknown' if build is None else 'driver-unknown'}",
        category=category, severity=Severity.WARNING, confidence="low",
        summary=f"torch.cuda.is_available() is False; {why}: possibly {cat.title.lower()}",
        detail=f"{cat.meaning} To settle it, paste the output of `{settle}`.",
        evidence=[Evidence("pythons[0].torch.cuda_available", False), Evidence("paste.settle", settle)],
        fix=Fix(f"Paste the output of `{settle}`", [settle]),
    )]


def _oldest_floor(compat: Any) -> Optional[tuple]:
    """(cuda, driver): the oldest CUDA any torch build in the matrix uses, and the least driver it runs on."""
    variants = [v for r in compat.torch_releases() for v in r.cuda_variants]
    cudas = sorted({c for c in map(cuda_of_variant, variants) if c}, key=release)
    if not cudas:
        return None
    req = compat.cuda_requirement(cudas[0])
    if req is None:
        return None
    # minor-version compatibility lets a CUDA 11.x build run on the 11.0 driver floor
    # (https://docs.nvidia.com/deploy/cuda-compatibility/)
    floor = req.minor_compat_min_driver or req.min_driver
    return (cudas[0], floor) if floor else None


@check("diagnose.driver-floor", "Driver runs some CUDA build of torch (torch's CUDA not in the paste)",
       categories=("DRIVER_TOO_OLD_FOR_TORCH_CUDA",))
def check_driver_floor(ctx: CheckContext) -> List[Finding]:
    """When the paste shows torch but not its CUDA, a driver older than what the oldest CUDA build of torch in
    the matrix needs runs none of them (driver.cuda-compat judges the case where torch's CUDA is known)."""
    from ..domain.versions import version_ge

    _paste_or_skip(ctx)
    facts = ctx.facts
    py = facts.pythons[0] if facts.pythons else None
    t = py.torch if py else None
    d = facts.driver
    if t is None:
        raise SkipCheck("no torch in the paste")
    if t.cuda or _torch_cuda_known(facts) is not None or variant_tag(t.version):
        raise SkipCheck("torch's build is in the paste (driver.cuda-compat judges it)")
    if not d.version:
        raise SkipCheck("driver version not in the paste")
    if (driver_branch(d.version) or 100) < 100 or \
            (facts.host.os or "").lower().startswith("windows"):
        raise SkipCheck("a Windows driver number is not comparable with the Linux minimum")
    floor = _oldest_floor(ctx.compat)
    if floor is None or version_ge(d.version, floor[1]) is not False:
        return []
    settle = 'python -c "import torch; print(torch.version.cuda)"'
    return [Finding(
        code="diagnose.driver-floor/below-every-build", category="DRIVER_TOO_OLD_FOR_TORCH_CUDA",
        severity=Severity.WARNING, confidence="medium",
        summary=(f"Driver {d.version} is older than {floor[1]}, the least any CUDA build of torch in the matrix "
                 f"needs (CUDA {floor[0]}); torch {t.version or ''}'s CUDA is not in the paste").replace("  ", " "),
        detail=CATEGORIES["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].meaning,
        evidence=[Evidence("driver.version", d.version, expected=f">= {floor[1]}"),
                  Evidence("pythons[0].torch.cuda", None, expected="paste it to settle the exact minimum"),
                  Evidence("paste.settle", settle)],
        fix=Fix(CATEGORIES["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].fix),
    )]


def _reinstall_one_torch(ctx: CheckContext, kept: str) -> List[str]:
    from ..remedies import pip_command, pip_install
    from ..remedies.python import installer_for

    py = ctx.facts.pythons[0] if ctx.facts.pythons else None
    variant = variant_tag(kept)
    return [pip_command(installer_for(ctx.facts, py), "uninstall", "-y", "torch"),
            pip_install(ctx.facts, py, [f"torch=={kept.split('+')[0]}"], variant, force=True)]


@check("diagnose.sources", "One torch per interpreter (module and package metadata agree)",
       categories=("CUDA_VARIANT_MIXED", "COMPANION_VERSION_MISMATCH"))
def check_sources(ctx: CheckContext) -> List[Finding]:
    """A fact the paste shows twice from sources of different authority (the torch that imports vs pip or conda
    metadata): the authoritative value was kept for the other checks; the disagreement is judged here."""
    paste = _paste_or_skip(ctx)
    if not paste.disagreements:  # evidence or no check mark: one source, nothing to compare
        raise SkipCheck("the paste gives torch's version from one source only: nothing to compare")
    out: List[Finding] = []
    for d in paste.disagreements or []:
        kept, other = str(d.get("kept")), str(d.get("other"))
        kt, ot = local_tag(kept) or "", local_tag(other) or ""
        variant = bool(kt and ot and kt != ot) or (kt == "cpu") != (ot == "cpu") and bool(kt or ot)
        out.append(Finding(
            code="diagnose.sources/two-torch-installs",
            category="CUDA_VARIANT_MIXED" if variant else "COMPANION_VERSION_MISMATCH",
            severity=Severity.WARNING, confidence="medium",
            summary=(f"Package metadata lists torch {other} but the interpreter imports torch {kept}: two installs "
                     "of torch, or stale metadata"),
            detail=("The imported module's version is what runs; pip/conda records describe an install, which may "
                    "be a second copy (pip and conda both, a ~/.local site-packages) or a stale dist-info. "
                    "Companions resolved against the other copy pair with the wrong torch."),
            evidence=[Evidence(str(d.get("fact")), kept, source=str(d.get("kept_source"))),
                      Evidence("pythons[0].packages.torch", other, expected=kept, source=str(d.get("other_source")))],
            fix=Fix("Remove the extra copy and reinstall one torch",
                    _reinstall_one_torch(ctx, kept)),
        ))
    return out


@check("diagnose.cpu-build-intent", "A CPU build of torch where the paste asks for CUDA",
       categories=("TORCH_CPU_ONLY_BUILD",))
def check_cpu_build_intent(ctx: CheckContext) -> List[Finding]:
    """The paste shows a CPU build resolved (+cpu, a conda `_cpu_` build, the `cpuonly` package) next to a clear
    intent to use CUDA (a `pytorch-cuda=`/`cudatoolkit=` spec, a /whl/cuXXX index): the install went wrong even
    when the paste has no GPU list (torch.cuda-build judges the case with GPUs)."""
    paste = _paste_or_skip(ctx)
    prov = paste.provenance or {}
    intent = prov.get("intent.cuda")
    if not intent:
        raise SkipCheck("the paste shows no intent to use CUDA (no CUDA spec or index)")
    py = ctx.facts.pythons[0] if ctx.facts.pythons else None
    pkg = py.package("torch") if py else None
    cpu_why = None
    if pkg is not None and package_variant(pkg.version, pkg.variant, None, None) == CPU:
        cpu_why = pkg.variant_evidence or f"torch {pkg.version}"
    elif "torch.conda_cpuonly" in prov:
        cpu_why = str(prov["torch.conda_cpuonly"].get("reader"))
    if cpu_why is None:
        return []
    explicit = str(intent.get("reader", "")).startswith(("conda spec", "conda plan", "a CUDA index"))
    return [Finding(
        code="diagnose.cpu-build-intent/cpu-resolved", category="TORCH_CPU_ONLY_BUILD",
        severity=Severity.ERROR if explicit else Severity.WARNING, confidence="high" if explicit else "medium",
        summary=(f"A CPU build of torch was installed ({cpu_why}) although the paste asks for CUDA "
                 f"({intent.get('value')}, {intent.get('where')})"),
        detail=("pip or conda resolved the CPU variant: a `cpuonly` package left in the environment, the CPU "
                "index, a channel order that prefers the CPU build, or a platform without CUDA wheels."),
        evidence=[Evidence("pythons[0].packages.torch", pkg.version if pkg else None, source=cpu_why),
                  Evidence("paste.provenance.intent.cuda", intent.get("value"), source=str(intent.get("reader")))],
        fix=_cpu_intent_fix(ctx, py, pkg, intent, "torch.conda_cpuonly" in prov),
    )]


def _cpu_intent_fix(ctx: CheckContext, py: Any, pkg: Any, intent: Dict[str, Any], cpuonly: bool) -> Fix:
    from ..remedies import command, pip_install

    value = str(intent.get("value") or "")
    if "conda" in str(intent.get("reader")) or cpuonly:
        spec = value if "=" in value else "pytorch-cuda"
        return Fix("Remove conda's cpuonly package and install the CUDA variant explicitly (channel order as shown)",
                   [command("conda", "remove", "-y", "cpuonly"),
                    command("conda", "install", "-y", "pytorch", spec, "-c", "pytorch", "-c", "nvidia")])
    variant = value if cuda_of_variant(value) else None
    version = base_version(pkg.version) if pkg is not None else None
    return Fix(f"Reinstall torch from the {variant or 'CUDA'} index, replacing the CPU build",
               [pip_install(ctx.facts, py, [f"torch=={version}" if version else "torch"], variant, force=True)])


def _majors_fix(ctx: CheckContext, names: List[str]) -> List[str]:
    from ..remedies import pip_command, pip_install
    from ..remedies.python import installer_for

    py = ctx.facts.pythons[0] if ctx.facts.pythons else None
    return [pip_command(installer_for(ctx.facts, py), "uninstall", "-y", *names),
            pip_install(ctx.facts, py, ["torch"], None, force=True)]


@check("packages.nvidia-majors", "Each NVIDIA library wheel installed for one CUDA major",
       categories=("CUDA_VARIANT_MIXED",))
def check_nvidia_majors(ctx: CheckContext) -> List[Finding]:
    """nvidia-X-cu11 and nvidia-X-cu12 both unpack into site-packages/nvidia/X/lib: the last installed wins and
    torch may load a copy that lacks symbols its build needs. An error when a message names that library."""
    if not ctx.facts.pythons or not any(py.packages for py in ctx.facts.pythons):
        raise SkipCheck("no package list")
    libs = _nvidia_two_majors(ctx.facts)
    if not libs:
        return []
    msgs = ctx.facts.paste.messages if ctx.facts.paste else []
    named = [lib for lib in libs if any(re.search(rf"lib{re.escape(lib.split('-')[0])}|{re.escape(lib)}", m, re.I)
                                        and ("undefined symbol" in m or "ImportError" in m or "cannot open" in m)
                                        for m in msgs)]
    out = []
    for lib in libs:
        names = sorted(p.name for py in ctx.facts.pythons for p in py.packages
                       if p.name.lower().replace("_", "-").startswith(f"nvidia-{lib}-cu"))
        out.append(Finding(
            code="packages.nvidia-majors/two-majors", category="CUDA_VARIANT_MIXED",
            severity=Severity.ERROR if lib in named else Severity.WARNING, confidence="high",
            summary=f"NVIDIA library {lib} is installed for two CUDA majors ({', '.join(names)}): one overwrites the "
                    "other in site-packages/nvidia/" + lib.split("-")[0] + "/lib",
            evidence=[Evidence("pythons[0].packages", names, expected="one CUDA major per NVIDIA library")],
            fix=Fix("Uninstall the wheels of the CUDA major torch does not use, then reinstall torch (which brings "
                    "back its own)", _majors_fix(ctx, names)),
        ))
    return out


# GPU compute in WSL 2 needs Windows 11 or Windows 10 21H2 (build 19044) and later; before general availability
# it shipped in Windows Insider builds 20145+; WSL 1 never exposes the GPU.
# https://learn.microsoft.com/en-us/windows/wsl/tutorials/gpu-compute , https://docs.nvidia.com/cuda/wsl-user-guide/
WSL_GPU_MIN_BUILD = 19044
WSL_GPU_INSIDER_BUILD = 20145
WSL_DOC = "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"


@check("diagnose.wsl-gpu", "The Windows build and WSL version expose the GPU to Linux",
       categories=("WSL_SPECIFIC", "NO_GPU_VISIBLE"))
def check_wsl_gpu(ctx: CheckContext) -> List[Finding]:
    """A WSL paste on a Windows build without GPU paravirtualisation, or under WSL 1: the GPU is not exposed to
    Linux at all (and no Linux driver install can change that)."""
    paste = _paste_or_skip(ctx)
    host = ctx.facts.host
    if not host.wsl:
        raise SkipCheck("not WSL (or not known to be)")
    prov = paste.provenance or {}
    build_raw = str((prov.get("host.windows_build") or {}).get("value") or "")
    m = re.search(r"(?:^|\.)(\d{5})(?:\.|$)", build_raw) or re.search(r"(\d{5})", build_raw)
    build = int(m.group(1)) if m else None
    why = None
    if host.wsl_version == 1:
        why = "WSL 1 has no GPU support (GPU compute needs WSL 2)"
    elif build is not None and build < WSL_GPU_MIN_BUILD:
        why = (f"Windows build {build} predates GPU compute in WSL (Windows 10 21H2 build {WSL_GPU_MIN_BUILD}, "
               f"Windows 11, or Insider builds {WSL_GPU_INSIDER_BUILD}+)")
    if why is None:
        if build is None and host.wsl_version is None:
            raise SkipCheck("Windows build and WSL version not in the paste")
        return []
    ev = [Evidence("host.wsl", True, source=str((prov.get("host.wsl") or {}).get("reader")))]
    if build is not None:
        ev.append(Evidence("paste.provenance.host.windows_build", build, expected=f">= {WSL_GPU_MIN_BUILD}"))
    if host.wsl_version:
        ev.append(Evidence("host.wsl_version", host.wsl_version, expected=2))
    fix = Fix("Update Windows (Windows 11, or Windows 10 21H2 or later), use WSL 2 (`wsl --set-version` with the "
              "distribution's name and 2), and install the NVIDIA driver on Windows only; do not install a Linux "
              "NVIDIA driver inside WSL",
              ["wsl --update   # in Windows PowerShell", "wsl --list --verbose   # in Windows PowerShell",
               "winver   # in Windows: the build number"], WSL_DOC)
    return [
        Finding(code="diagnose.wsl-gpu/unsupported-build", category="WSL_SPECIFIC", severity=Severity.ERROR,
                confidence="high" if build is not None or host.wsl_version == 1 else "medium",
                summary=f"WSL: {why}", evidence=ev, fix=fix),
        Finding(code="diagnose.wsl-gpu/no-gpu", category="NO_GPU_VISIBLE", severity=Severity.ERROR,
                confidence="high" if build is not None or host.wsl_version == 1 else "medium",
                summary="This Windows build does not expose the GPU to Linux: CUDA sees no device inside WSL",
                evidence=ev, fix=fix),
    ]


@check("diagnose.driver-packages", "Driver packages did not change under the loaded kernel module",
       categories=("DRIVER_LIBRARY_MISMATCH",))
def check_driver_packages(ctx: CheckContext) -> List[Finding]:
    """A package-manager log in the paste shows NVIDIA driver packages upgraded, installed or removed, and the
    driver no longer answers (nvidia-smi or NVML fails): the userspace libraries are a new version while the
    loaded kernel module is the old one until a reboot."""
    paste = _paste_or_skip(ctx)
    changed = (paste.provenance or {}).get("driver.packages_changed")
    if not changed:
        raise SkipCheck("no package-manager log with NVIDIA driver packages in the paste")
    d = ctx.facts.driver
    failing = d.status in (ProbeStatus.FAILED, ProbeStatus.ABSENT) or bool(d.nvml_error or d.nvidia_smi_error) or any(
        re.search(r"couldn'?t communicate with the NVIDIA driver|Driver/library version mismatch|"
                  r"Failed to initialize NVML", m) for m in paste.messages)
    if not failing:
        return []
    return [Finding(
        code="diagnose.driver-packages/changed-under-module", category="DRIVER_LIBRARY_MISMATCH",
        severity=Severity.ERROR, confidence="high",
        summary=f"NVIDIA driver packages changed ({str(changed.get('value'))[:160]}) and the driver no longer "
                "answers: the loaded kernel module is still the previous version",
        detail=("A package manager (often unattended-upgrades) replaced the driver's userspace libraries; the "
                "kernel module loaded at boot stays the old version until it is reloaded, so NVML and CUDA refuse "
                "to talk to it."),
        evidence=[Evidence("paste.provenance.driver.packages_changed", changed.get("value"),
                           source=str(changed.get("reader"))),
                  Evidence("driver.status", d.status)],
        fix=Fix("Reboot (or unload and reload the nvidia kernel modules); keep unattended-upgrades off the NVIDIA "
                "packages so it cannot happen during a job",
                ["sudo reboot",
                 "echo 'Unattended-Upgrade::Package-Blacklist { \"nvidia-\"; \"libnvidia-\"; };' | "
                 "sudo tee /etc/apt/apt.conf.d/51nvidia-blacklist"]),
    )]


@check("diagnose.extension-build", "What an extension says it was built for, against the torch it found",
       categories=("CUDA_VARIANT_MIXED", "TORCH_CPU_ONLY_BUILD"))
def check_extension_build(ctx: CheckContext) -> List[Finding]:
    """A message "built for PyTorch X ... (you have Y)" proves more than the extension mismatch its signature
    names: the same torch release with another CUDA variant is also mixed variants, and a CUDA-built extension
    beside a +cpu torch is also a CPU build of torch."""
    _paste_or_skip(ctx)
    out: List[Finding] = []
    judged = False
    for h in signature_hits(ctx.facts, ctx.compat):
        built, have = h.groups.get("built"), h.groups.get("have")
        if not built or not have:
            continue
        judged = True
        b_rel, b_tag = base_version(built) or built, local_tag(built) or ""
        h_rel, h_tag = base_version(have) or have, local_tag(have) or ""
        ev = [Evidence(f"paste.messages[{h.index}]", h.message[:300], source=h.signature.source)]
        if h_tag == "cpu" and (variant_kind(b_tag) == "cuda" or h.groups.get("built_cuda")):
            out.append(Finding(
                code="diagnose.extension-build/cpu-torch", category="TORCH_CPU_ONLY_BUILD",
                severity=Severity.ERROR, confidence="high",
                summary=f"The extension was built for CUDA torch {built}, but the torch found is a CPU build ({have})",
                evidence=ev, fix=Fix("Install the CUDA build of torch the extension was built for")))
        elif b_rel == h_rel and b_tag and h_tag and b_tag != h_tag:
            out.append(Finding(
                code="diagnose.extension-build/other-variant", category="CUDA_VARIANT_MIXED",
                severity=Severity.ERROR, confidence="high",
                summary=f"The extension was built for torch {built}, the same release as torch {have} but another "
                        "CUDA variant",
                evidence=ev, fix=Fix("Install the extension and torch from one CUDA variant (one index)")))
    if not judged:  # evidence or no check mark
        raise SkipCheck("no \"built for torch X (you have Y)\" message in the paste: nothing to judge")
    return out
