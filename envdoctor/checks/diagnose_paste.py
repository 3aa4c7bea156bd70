"""Paste checks: what a pasted report says about torch, CUDA availability, the driver floor and NVIDIA wheels."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ..domain.variants import (
    CPU,
    cuda_of_variant,
    is_cpu_build,
    local_tag,
    package_variant,
    variant_tag,
)
from ..domain.versions import base_version, driver_branch, release
from ..model.catalogue import CATEGORIES
from ..model.facts import Facts, ProbeStatus
from ..model.findings import Evidence, Finding, Fix, Severity
from ._paste import no_nvidia_gpu_said, paste_or_skip
from ._paste_context import K8S_DOC, K8S_FIX
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

if TYPE_CHECKING:
    from ..compat.queries import Compat

CHECKS: List[Check] = []
check = registrar(CHECKS)


TORCH_CMD = 'python -c "import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())"'


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


CUDA_UNAVAILABLE = Findings("diagnose.cuda-unavailable", "TORCH_CPU_ONLY_BUILD",
                            kinds=("cpu-build", "build-unknown", "driver-unknown", "pod-runtime"),
                            categories=("NO_NVIDIA_DRIVER", "CONTAINER_NO_GPU_RUNTIME"))


@check("diagnose.cuda-unavailable", "CUDA unavailable with the cause not in the paste",
       categories=("TORCH_CPU_ONLY_BUILD", "NO_NVIDIA_DRIVER", "CONTAINER_NO_GPU_RUNTIME"), applies=PASTE_ONLY)
def check_cuda_unavailable(ctx: CheckContext) -> List[Finding]:
    """torch.cuda.is_available() is False and the paste shows neither torch's build nor a working driver: the
    two common causes, at low confidence (a warning at most), with the output that would settle it."""
    paste_or_skip(ctx)
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
        if no_nvidia_gpu_said(facts):
            return []  # a Mac, or a machine the reporter says has no NVIDIA GPU: the CPU build is the right one
        # a CPU build, and the paste asks why CUDA is unavailable: that is why, even with no GPU list
        t_ver = t.version or "(version not shown)"
        return [CUDA_UNAVAILABLE.warning(
            "cpu-build", confidence="medium",
            summary=f"torch {t_ver} is a CPU build, so torch.cuda.is_available() is False (the paste shows no GPU list)",
            # not the catalogue's "while NVIDIA GPUs are present": the paste shows none (issue 29)
            detail=("torch is a CPU build (+cpu, torch.version.cuda is None): it has no CUDA code, so it never uses "
                    "a GPU. The paste shows no GPU list, so whether this machine has an NVIDIA GPU is not known: "
                    "paste `nvidia-smi` to settle it."),
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
    return [CUDA_UNAVAILABLE.warning(
        "build-unknown" if build is None else "driver-unknown", category=category, confidence="low",
        summary=f"torch.cuda.is_available() is False; {why}: possibly {cat.title.lower()}",
        detail=f"{_meaning_without_gpus(category)} To settle it, paste the output of `{settle}`.",
        evidence=[Evidence("pythons[0].torch.cuda_available", False), Evidence("paste.settle", settle)],
        fix=Fix(f"Paste the output of `{settle}`", [settle]),
    )] + _pod_runtime(facts)


def _pod_runtime(facts: Facts) -> List[Finding]:
    """Inside a Kubernetes pod the other common cause: the node's container runtime gave the pod no GPU (the
    nvidia runtime is not containerd's or Docker's default and the pod names no runtimeClassName for it), as in
    kubeflow/notebooks#68, kubeflow/community-distribution#2683 (k3s) and mudler/LocalAI#2117 (k0s) (issue 42)."""
    c = facts.host.container
    if c is None or c.runtime != "kubernetes":
        return []
    settle = "nvidia-smi"
    return [CUDA_UNAVAILABLE.warning(
        "pod-runtime", category="CONTAINER_NO_GPU_RUNTIME", confidence="low",
        summary=("torch.cuda.is_available() is False inside a Kubernetes pod: possibly the pod was started "
                 "without the GPU (the nvidia runtime is not the node's default and the pod names no "
                 "runtimeClassName for it)"),
        detail=("Kubernetes starts a pod with the node's default container runtime; unless that is the nvidia "
                "runtime, or the pod spec names its RuntimeClass, the pod gets no GPU device and no driver "
                "libraries even when it asks for nvidia.com/gpu. nvidia-smi run inside the pod settles it (not "
                "found, or no device: the runtime; a GPU listed: look at torch's build instead)."),
        evidence=[Evidence("pythons[0].torch.cuda_available", False),
                  Evidence("host.container.runtime", "kubernetes"), Evidence("paste.settle", settle)],
        fix=Fix(K8S_FIX, [], K8S_DOC),
    )]


def _meaning_without_gpus(category: str) -> str:
    """The catalogue's meaning, without a claim the paste does not support: these findings are made where the
    paste shows no GPU list, so a CPU build is not "on a machine with NVIDIA GPUs" here."""
    if category == "TORCH_CPU_ONLY_BUILD":
        return ("torch may be a CPU build (+cpu, torch.version.cuda is None), which never uses a GPU; the paste "
                "shows neither its build nor a GPU list.")
    return CATEGORIES[category].meaning


def _oldest_floor(compat: Compat) -> Optional[tuple]:
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


DRIVER_FLOOR = Findings("diagnose.driver-floor", "DRIVER_TOO_OLD_FOR_TORCH_CUDA",
                        kinds=("below-every-build",))


@check("diagnose.driver-floor", "Driver runs some CUDA build of torch (torch's CUDA not in the paste)",
       categories=("DRIVER_TOO_OLD_FOR_TORCH_CUDA",), applies=PASTE_ONLY)
def check_driver_floor(ctx: CheckContext) -> List[Finding]:
    """When the paste shows torch but not its CUDA, a driver older than what the oldest CUDA build of torch in
    the matrix needs runs none of them (driver.cuda-compat judges the case where torch's CUDA is known)."""
    from ..domain.versions import version_ge

    paste_or_skip(ctx)
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
    return [DRIVER_FLOOR.warning(
        "below-every-build", confidence="medium",
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
    # one pinned --force-reinstall replaces the files and the metadata in place: no uninstall first, which would
    # leave the environment without torch if the install then failed (issue 17)
    return [pip_install(ctx.facts, py, [f"torch=={kept.split('+')[0]}"], variant, force=True),
            pip_command(installer_for(ctx.facts, py), "check")]


SOURCES = Findings("diagnose.sources", "CUDA_VARIANT_MIXED", kinds=("two-torch-installs",),
                   categories=("COMPANION_VERSION_MISMATCH",))


@check("diagnose.sources", "One torch per interpreter (module and package metadata agree)",
       categories=("CUDA_VARIANT_MIXED", "COMPANION_VERSION_MISMATCH"), applies=PASTE_ONLY)
def check_sources(ctx: CheckContext) -> List[Finding]:
    """A fact the paste shows twice from sources of different authority (the torch that imports vs pip or conda
    metadata): the authoritative value was kept for the other checks; the disagreement is judged here."""
    paste = paste_or_skip(ctx)
    if not paste.disagreements:  # evidence or no check mark: one source, nothing to compare
        raise SkipCheck("the paste gives torch's version from one source only: nothing to compare")
    out: List[Finding] = []
    for d in paste.disagreements or []:
        kept, other = str(d.get("kept")), str(d.get("other"))
        kt, ot = local_tag(kept) or "", local_tag(other) or ""
        variant = bool(kt and ot and kt != ot) or (kt == "cpu") != (ot == "cpu") and bool(kt or ot)
        out.append(SOURCES.warning(
            "two-torch-installs", category="CUDA_VARIANT_MIXED" if variant else "COMPANION_VERSION_MISMATCH",
            confidence="medium",
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


CPU_BUILD_INTENT = Findings("diagnose.cpu-build-intent", "TORCH_CPU_ONLY_BUILD", kinds=("cpu-resolved", "cpuonly-pinned"))


@check("diagnose.cpu-build-intent", "A CPU build of torch where the paste asks for CUDA",
       categories=("TORCH_CPU_ONLY_BUILD",), applies=PASTE_ONLY)
def check_cpu_build_intent(ctx: CheckContext) -> List[Finding]:
    """The paste shows a CPU build resolved (+cpu, a conda `_cpu_` build, the `cpuonly` package) next to a clear
    intent to use CUDA (a `pytorch-cuda=`/`cudatoolkit=` spec, a /whl/cuXXX index): the install went wrong even
    when the paste has no GPU list (torch.cuda-build judges the case with GPUs)."""
    paste = paste_or_skip(ctx)
    prov = paste.provenance or {}
    intent = prov.get("intent.cuda")
    if not intent:
        return _cpuonly_pinned(ctx, prov)
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
    return [CPU_BUILD_INTENT(
        "cpu-resolved", Severity.ERROR if explicit else Severity.WARNING, confidence="high" if explicit else "medium",
        summary=(f"A CPU build of torch was installed ({cpu_why}) although the paste asks for CUDA "
                 f"({intent.get('value')}, {intent.get('where')})"),
        detail=("pip or conda resolved the CPU variant: a `cpuonly` package left in the environment, the CPU "
                "index, a channel order that prefers the CPU build, or a platform without CUDA wheels."),
        evidence=[Evidence("pythons[0].packages.torch", pkg.version if pkg else None, source=cpu_why),
                  Evidence("paste.provenance.intent.cuda", intent.get("value"), source=str(intent.get("reader")))],
        fix=_cpu_intent_fix(ctx, py, pkg, intent, "torch.conda_cpuonly" in prov),
    )]


def _cpuonly_pinned(ctx: CheckContext, prov: Dict[str, Any]) -> List[Finding]:
    """No CUDA asked for in the paste, but conda's `cpuonly` package (or the pytorch mutex's cpu build) sits in
    the environment beside a CPU build of torch: conda keeps every pytorch-channel package on its CPU build while
    it is there, also when a later install asks for CUDA (meta-pytorch/data#315: adding torchdata pulled it in).
    A lead at low confidence: the paste does not show that this machine has an NVIDIA GPU, or that CUDA was
    wanted; with GPUs shown torch.cuda-build judges the CPU build."""
    facts = ctx.facts
    py = facts.pythons[0] if facts.pythons else None
    pkg = py.package("torch") if py else None
    if "torch.conda_cpuonly" not in prov or pkg is None or \
            package_variant(pkg.version, pkg.variant, None, None) != CPU:
        raise SkipCheck("the paste shows no intent to use CUDA (no CUDA spec or index)")
    if facts.driver.gpus or facts.driver.status == ProbeStatus.OK or no_nvidia_gpu_said(facts):
        return []  # torch.cuda-build judges a CPU build beside GPUs; without an NVIDIA GPU it is the right one
    pinned = str(prov["torch.conda_cpuonly"].get("reader"))
    return [CPU_BUILD_INTENT.warning(
        "cpuonly-pinned", confidence="low",
        summary=(f"torch {pkg.version} is conda's CPU build, pinned by the CPU mutex ({pinned}): it never uses a "
                 "GPU (the paste shows no GPU list)"),
        detail=("conda's `cpuonly` package (pytorch-mutex's cpu build) keeps every pytorch-channel package on its "
                "CPU build while it is installed, also when a later install asks for cudatoolkit or pytorch-cuda; "
                "a package added afterwards can pull it in. Whether this machine has an NVIDIA GPU is not in the "
                "paste: paste `nvidia-smi` to settle it."),
        evidence=[Evidence("pythons[0].packages.torch", pkg.version, expected="a CUDA build",
                           source=pkg.variant_evidence or pinned),
                  Evidence("torch.conda_cpuonly", True, source=pinned), Evidence("paste.settle", "nvidia-smi")],
        fix=_cpu_intent_fix(ctx, py, pkg, {"value": "pytorch-cuda", "reader": "conda"}, True),
    )]


def _cpu_intent_fix(ctx: CheckContext, py: Any, pkg: Any, intent: Dict[str, Any], cpuonly: bool) -> Fix:
    from ..remedies import command, pip_install

    value = str(intent.get("value") or "")
    if "conda" in str(intent.get("reader")) or cpuonly:
        spec = value if "=" in value else "pytorch-cuda"
        version = base_version(pkg.version) if pkg is not None else None
        torch_spec = f"pytorch={version}" if version else "pytorch"  # the same release, its CUDA build
        return Fix("Remove conda's cpuonly package and install the CUDA variant explicitly (channel order as shown)",
                   [command("conda", "remove", "-y", "cpuonly"),
                    command("conda", "install", "-y", torch_spec, spec, "-c", "pytorch", "-c", "nvidia")])
    variant = value if cuda_of_variant(value) else None
    version = base_version(pkg.version) if pkg is not None else None
    if not version:  # never an unpinned torch: recommend names the build and its pinned command
        return Fix("Install a CUDA build of torch in place of the CPU one (`envdoctor recommend` names the build "
                   "and its pinned command)", [command("envdoctor", "recommend")])
    return Fix(f"Reinstall torch from the {variant or 'CUDA'} index, replacing the CPU build",
               [pip_install(ctx.facts, py, [f"torch=={version}"], variant, force=True)])
