"""Paste checks about the platform: the WSL build, driver packages changed under the module, extension builds."""

from __future__ import annotations

import re
from typing import List

from ..compat.signatures import signature_context
from ..domain.variants import local_tag, variant_kind
from ..domain.versions import base_version
from ..facts import ProbeStatus
from ..findings import Evidence, Finding, Fix, Severity
from ._paste import paste_or_skip, signature_hits, wsl_kernel_too_old
from .base import Check, CheckContext, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)


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
    paste = paste_or_skip(ctx)
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


@check("diagnose.wsl-kernel", "The WSL kernel is new enough for GPU compute",
       categories=("WSL_SPECIFIC",))
def check_wsl_kernel(ctx: CheckContext) -> List[Finding]:
    """The WSL 2 kernel printed in the paste (uname -r, /proc/version, "Linux version ...-microsoft-standard-WSL2")
    against the minimum GPU compute needs: an older kernel cannot reach the Windows driver, so CUDA finds none."""
    paste_or_skip(ctx)
    kernel = ctx.facts.host.kernel or ""
    if "microsoft" not in kernel.lower():
        raise SkipCheck("no WSL kernel version in the paste")
    old = wsl_kernel_too_old(ctx.facts, ctx.compat)
    minimum = (signature_context(ctx.compat, "wsl_min_kernel") or {}).get("value")
    if minimum is None:
        raise SkipCheck("minimum WSL kernel for GPU compute unknown (error_signatures.json context)")
    if old is None:
        return []
    have, want, source = old
    return [Finding(
        code="diagnose.wsl-kernel/too-old", category="WSL_SPECIFIC", severity=Severity.ERROR, confidence="high",
        summary=f"WSL kernel {have} is older than {want}, the minimum for GPU compute in WSL 2",
        detail="Inside WSL the NVIDIA driver is the Windows one, reached through the WSL kernel's GPU "
               "paravirtualisation (/dev/dxg); an older kernel cannot reach it, so CUDA reports no driver.",
        evidence=[Evidence("host.kernel", kernel, expected=f">= {want}", source=source)],
        fix=Fix("Update the WSL kernel from Windows, then restart WSL; do not install a Linux NVIDIA driver "
                "inside WSL", ["wsl --update   # in Windows PowerShell", "wsl --shutdown   # then reopen",
                               "uname -r   # inside WSL: the new kernel"], WSL_DOC))]


@check("diagnose.driver-packages", "Driver packages did not change under the loaded kernel module",
       categories=("DRIVER_LIBRARY_MISMATCH",))
def check_driver_packages(ctx: CheckContext) -> List[Finding]:
    """A package-manager log in the paste shows NVIDIA driver packages upgraded, installed or removed, and the
    driver no longer answers (nvidia-smi or NVML fails): the userspace libraries are a new version while the
    loaded kernel module is the old one until a reboot."""
    paste = paste_or_skip(ctx)
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
    paste_or_skip(ctx)
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
