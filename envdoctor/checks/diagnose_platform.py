"""Paste checks about the platform: the WSL build, driver packages changed under the module, extension builds."""

from __future__ import annotations

import re
from typing import Any, List, Optional

from ..compat.signatures import signature_context
from ..domain.variants import local_tag, variant_kind
from ..domain.versions import base_version
from ..model.facts import ProbeStatus
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import hold_driver_packages, pip_install
from ._paste import paste_or_skip, signature_hits, wsl_kernel_too_old
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)


# GPU compute in WSL 2 needs Windows 11 or Windows 10 21H2 (build 19044) and later; before general availability
# it shipped in Windows Insider builds 20145+; WSL 1 never exposes the GPU.
# https://learn.microsoft.com/en-us/windows/wsl/tutorials/gpu-compute , https://docs.nvidia.com/cuda/wsl-user-guide/
WSL_GPU_MIN_BUILD = 19044


WSL_GPU_INSIDER_BUILD = 20145


WSL_DOC = "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"


WSL_GPU = Findings("diagnose.wsl-gpu", "WSL_SPECIFIC", kinds=("unsupported-build", "no-gpu"),
                   categories=("NO_GPU_VISIBLE",))


@check("diagnose.wsl-gpu", "The Windows build and WSL version expose the GPU to Linux",
       categories=("WSL_SPECIFIC", "NO_GPU_VISIBLE"), applies=PASTE_ONLY)
def check_wsl_gpu(ctx: CheckContext) -> List[Finding]:
    """A WSL paste on a Windows build without GPU paravirtualisation, or under WSL 1: the GPU is not exposed to
    Linux at all (and no Linux driver install can change that)."""
    paste = paste_or_skip(ctx)
    host = ctx.facts.host
    if not host.wsl:
        raise SkipCheck("not WSL (or not known to be)", not_applicable="not WSL")
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
        WSL_GPU.error("unsupported-build",
                      confidence="high" if build is not None or host.wsl_version == 1 else "medium",
                      summary=f"WSL: {why}", evidence=ev, fix=fix),
        WSL_GPU.error("no-gpu", category="NO_GPU_VISIBLE",
                      confidence="high" if build is not None or host.wsl_version == 1 else "medium",
                      summary="This Windows build does not expose the GPU to Linux: CUDA sees no device inside WSL",
                      evidence=ev, fix=fix),
    ]


WSL_KERNEL = Findings("diagnose.wsl-kernel", "WSL_SPECIFIC", kinds=("too-old",))


@check("diagnose.wsl-kernel", "The WSL kernel is new enough for GPU compute",
       categories=("WSL_SPECIFIC",), applies=PASTE_ONLY)
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
    return [WSL_KERNEL.error(
        "too-old", confidence="high",
        summary=f"WSL kernel {have} is older than {want}, the minimum for GPU compute in WSL 2",
        detail="Inside WSL the NVIDIA driver is the Windows one, reached through the WSL kernel's GPU "
               "paravirtualisation (/dev/dxg); an older kernel cannot reach it, so CUDA reports no driver.",
        evidence=[Evidence("host.kernel", kernel, expected=f">= {want}", source=source)],
        fix=Fix("Update the WSL kernel from Windows, then restart WSL; do not install a Linux NVIDIA driver "
                "inside WSL", ["wsl --update   # in Windows PowerShell", "wsl --shutdown   # then reopen",
                               "uname -r   # inside WSL: the new kernel"], WSL_DOC))]


DRIVER_PACKAGES = Findings("diagnose.driver-packages", "DRIVER_LIBRARY_MISMATCH",
                           kinds=("changed-under-module",))


@check("diagnose.driver-packages", "Driver packages did not change under the loaded kernel module",
       categories=("DRIVER_LIBRARY_MISMATCH",), applies=PASTE_ONLY)
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
    return [DRIVER_PACKAGES.error(
        "changed-under-module", confidence="high",
        summary=f"NVIDIA driver packages changed ({str(changed.get('value'))[:160]}) and the driver no longer "
                "answers: the loaded kernel module is still the previous version",
        detail=("A package manager (often unattended-upgrades) replaced the driver's userspace libraries; the "
                "kernel module loaded at boot stays the old version until it is reloaded, so NVML and CUDA refuse "
                "to talk to it."),
        evidence=[Evidence("paste.provenance.driver.packages_changed", changed.get("value"),
                           source=str(changed.get("reader"))),
                  Evidence("driver.status", d.status)],
        fix=Fix("Reboot (or unload and reload the nvidia kernel modules); keep automatic upgrades off the NVIDIA "
                "packages so it cannot happen during a job",
                ["sudo reboot"] + hold_driver_packages(ctx.facts)),
    )]


EXTENSION_BUILD = Findings(
    "diagnose.extension-build", "CUDA_VARIANT_MIXED",
    kinds=("cpu-torch", "other-variant", "wheel-other-variant", "wheel-built-for-other-build"),
    categories=("TORCH_CPU_ONLY_BUILD", "THIRD_PARTY_EXTENSION_MISMATCH"))


@check("diagnose.extension-build", "What an extension says it was built for, against the torch it found",
       categories=("CUDA_VARIANT_MIXED", "TORCH_CPU_ONLY_BUILD", "THIRD_PARTY_EXTENSION_MISMATCH"), applies=PASTE_ONLY)
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
            out.append(EXTENSION_BUILD.error(
                "cpu-torch", category="TORCH_CPU_ONLY_BUILD", confidence="high",
                summary=f"The extension was built for CUDA torch {built}, but the torch found is a CPU build ({have})",
                evidence=ev, fix=Fix("Install the CUDA build of torch the extension was built for")))
        elif b_rel == h_rel and b_tag and h_tag and b_tag != h_tag:
            out.append(EXTENSION_BUILD.error(
                "other-variant", confidence="high",
                summary=f"The extension was built for torch {built}, the same release as torch {have} but another "
                        "CUDA variant",
                evidence=ev, fix=Fix("Install the extension and torch from one CUDA variant (one index)")))
    # the same from a wheel's local tag: flash_attn-2.7.4.post1+cu124torch2.6... beside torch 2.6.0+cu126
    for i, py in enumerate(ctx.facts.pythons):
        t = py.torch
        t_tag = local_tag(t.version) if t and t.version else None
        if not t_tag or not re.fullmatch(r"cu\d{3}", t_tag):
            continue
        t_mm = ".".join((base_version(t.version) or "").split(".")[:2])
        for pkg in py.packages:
            m = _EXT_TAG.search(local_tag(pkg.version) or "")
            if not m or pkg.name in ("torch", "torchvision", "torchaudio"):
                continue
            judged = True
            if m.group("torch") != t_mm or "cu" + m.group("cu") == t_tag:
                continue  # another torch release is packages.extensions' finding; the same variant is fine
            ev = [Evidence(f"pythons[{i}].packages.{pkg.name}", pkg.version, expected=f"+{t_tag}torch{t_mm}"),
                  Evidence(f"pythons[{i}].torch.version", t.version)]
            fix = Fix(f"Install the {pkg.name} wheel built for torch {t_mm} with {t_tag} (or rebuild it against "
                      "the installed torch), so torch and the extension share one CUDA variant",
                      [pip_install(ctx.facts, py, [pkg.name], None, force=True, no_deps=True,
                                   no_build_isolation=True)])
            what = f"{pkg.name} {pkg.version} was built for torch {t_mm} +cu{m.group('cu')}, torch is {t.version}"
            out.append(EXTENSION_BUILD.error("wheel-other-variant", confidence="high",
                                             summary=f"{what}: the same torch release, another CUDA variant",
                                             evidence=ev, fix=fix))
            out.append(EXTENSION_BUILD.error("wheel-built-for-other-build", category="THIRD_PARTY_EXTENSION_MISMATCH",
                                             confidence="high",
                                             summary=f"{what}: an extension built for another build of torch",
                                             evidence=ev, fix=fix))
    if not judged:  # evidence or no check mark
        raise SkipCheck("no \"built for torch X (you have Y)\" message or tagged extension wheel in the paste")
    return out


_EXT_TAG = re.compile(r"^cu(?P<cu>\d{3})torch(?P<torch>\d+\.\d+)", re.I)


# link types of `nvidia-smi topo -m` whose peer-to-peer traffic stays below the CPU's root complex, behind PCIe
# switches or one host bridge: PCIe ACS redirects it to the IOMMU, where P2P breaks; SYS/NODE pairs go through
# the CPU (NCCL does not use P2P across SYS by default) and keep working
# https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs
_P2P_BEHIND_SWITCH = ("PIX", "PXB", "PHB")
NCCL_TROUBLESHOOTING = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
NCCL_P2P_LEVEL_SOURCE = "https://github.com/NVIDIA/nccl/blob/master/src/graph/paths.cc (ncclTopoCheckP2p)"


P2P_HANG = Findings("diagnose.p2p-hang", "INTERCONNECT", kinds=("topology-unknown", "pcie-p2p-broken"))


@check("diagnose.p2p-hang", "Collectives do not hang between GPUs behind one PCIe switch",
       categories=("INTERCONNECT",), applies=PASTE_ONLY)
def check_p2p_hang(ctx: CheckContext) -> List[Finding]:
    """A topology matrix together with the report that collectives hang between some GPU pairs and not others:
    when the hanging pairs are the ones behind a PCIe switch (PIX/PXB/PHB) and the pairs across the CPU work, PCIe
    peer-to-peer is broken by IOMMU/ACS redirection. Without the matrix the report says what to paste next."""
    paste = paste_or_skip(ctx)
    prov = paste.provenance or {}
    raw = prov.get("paste.collective_hang")
    if not raw:
        raise SkipCheck("no report of a collective hanging between GPUs in the paste")

    def words(key: str) -> List[str]:
        return str((prov.get(f"paste.collective_hang.{key}") or {}).get("value") or "").split()

    def pairs(key: str) -> List[tuple]:
        return [tuple(int(x) for x in p.split("-")) for p in words(key) if re.fullmatch(r"\d+-\d+", p)]

    matrix = ctx.facts.topology.gpu_matrix if ctx.facts.topology else None
    said = str(raw.get("value") or "")[:300]
    settle = ["nvidia-smi topo -m", "sudo lspci -vvv | grep -i acsctl",
              "# rerun the same job with NCCL_DEBUG=INFO NCCL_P2P_DISABLE=1: it finishes when P2P is the problem"]
    if not matrix:
        return [P2P_HANG.info(
            "topology-unknown", confidence="low", about="INTERCONNECT",
            summary="A collective hangs between GPUs, but the paste has no GPU topology: it cannot tell whether "
                    "broken PCIe peer-to-peer (IOMMU/ACS) is the cause; paste `nvidia-smi topo -m`",
            evidence=[Evidence("paste.collective_hang", said)],
            fix=Fix("Paste the GPU topology and the ACS state", settle, NCCL_TROUBLESHOOTING))]

    def link(a: int, b: int) -> Optional[str]:
        try:
            return matrix[a][b]
        except (IndexError, TypeError):
            return None

    n = len(matrix)
    switch_pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if link(a, b) in _P2P_BEHIND_SWITCH]
    if not switch_pairs:
        return _two_gpus_across_the_cpu(ctx, matrix, said, settle, words("hang_links"))
    hang_pairs, ok_pairs = pairs("hang_pairs"), pairs("ok_pairs")
    hang_links = set(words("hang_links")) | {link(*p) for p in hang_pairs if link(*p)}
    ok_links = set(words("ok_links")) | {link(*p) for p in ok_pairs if link(*p)}
    behind = bool(hang_links) and hang_links <= set(_P2P_BEHIND_SWITCH)
    across_ok = bool(ok_links) and ok_links <= {"SYS", "NODE"}
    if hang_links and not behind:
        return []  # pairs across the CPU hang too: not the P2P/ACS pattern
    sure = behind and (across_ok or not ok_links)
    pairs_txt = ", ".join(f"GPU{a}-GPU{b} {link(a, b)}" for a, b in (hang_pairs or switch_pairs)[:6])
    return [P2P_HANG(
        "pcie-p2p-broken", Severity.ERROR if sure else Severity.WARNING,
        confidence="high" if sure and across_ok else "medium",
        summary=(f"Collectives hang between GPUs behind one PCIe switch ({pairs_txt})"
                 + (" while pairs across the CPU work" if across_ok else "")
                 + ": PCIe peer-to-peer is broken, typically by IOMMU/ACS redirection"),
        detail="NCCL uses direct PCIe peer-to-peer between GPUs that share a PCIe switch or host bridge. With ACS "
               "enabled (or the IOMMU translating), those transfers are redirected to the root complex and never "
               "complete, so the collective hangs; pairs across the CPU (SYS) do not use P2P and keep working.",
        evidence=[Evidence("topology.gpu_matrix", pairs_txt), Evidence("paste.collective_hang", said)],
        fix=Fix("Disable PCIe ACS on the switches (BIOS, or setpci per bridge) or put the IOMMU in passthrough "
                "(iommu=pt, or VT-d/AMD-Vi off); NCCL_P2P_DISABLE=1 is the slower stop-gap",
                ["sudo lspci -vvv | grep -i acsctl   # SrcValid+ means ACS is on",
                 "# kernel command line: iommu=pt (intel_iommu=on iommu=pt / amd_iommu=on iommu=pt), then reboot",
                 "export NCCL_P2P_DISABLE=1   # stop-gap"], NCCL_TROUBLESHOOTING))]


def _cpu_vendor(facts: Any) -> Optional[str]:
    model = (getattr(facts.host, "cpu_model", None) if facts.host else None) or ""
    if re.search(r"\bAMD\b|EPYC|Ryzen|Threadripper", model, re.I):
        return "AMD"
    if re.search(r"\bIntel\b|Xeon", model, re.I):
        return "Intel"
    return "Arm" if re.search(r"\b(?:Neoverse|Grace|Ampere|ARM)\b", model, re.I) else None


def _two_gpus_across_the_cpu(ctx: CheckContext, matrix: Any, said: str, settle: List[str],
                             hang_links: List[str]) -> List[Finding]:
    """NCCL's default P2P level is PXB (a PCIe switch), except on AMD x86 hosts with at most two GPUs, where it is
    SYS: every pair uses PCIe peer-to-peer, through the CPU's root complex too (NVIDIA/nccl src/graph/paths.cc,
    ncclTopoCheckP2p: "Allow P2P between pairs of GPU devices on AMD systems"). So a collective that hangs between
    two GPUs linked NODE/SYS is the ACS/IOMMU story on AMD, and not on Intel or Arm, where NCCL keeps P2P off there.
    A CPU the paste does not name leaves it a hedged warning, with the test that settles it."""
    if len(matrix) != 2:
        return []
    try:
        pair = matrix[0][1]
    except (IndexError, TypeError):
        return []
    if pair not in ("NODE", "SYS") or (hang_links and set(hang_links) - {"NODE", "SYS"}):
        return []
    vendor = _cpu_vendor(ctx.facts)
    if vendor not in (None, "AMD"):
        return []  # NCCL does not use P2P across the CPU on this host: ACS is not the story
    cpu = "this AMD host" if vendor else "an AMD host (the paste does not name the CPU)"
    return [P2P_HANG.warning(
        "pcie-p2p-broken", confidence="medium" if vendor else "low",
        summary=(f"A collective hangs between the two GPUs (GPU0-GPU1 {pair}): on {cpu} NCCL uses PCIe "
                 "peer-to-peer between two GPUs even across the CPU, and IOMMU/ACS redirection breaks it"),
        detail="NCCL's default keeps PCIe peer-to-peer to GPUs behind one PCIe switch, but on AMD x86 hosts with "
               "at most two GPUs it allows it for every pair. With ACS enabled on the root-complex bridges (or the "
               "IOMMU translating) those transfers are redirected and never complete: the kernels spin at full SM "
               "utilisation with no memory traffic. If NCCL_P2P_DISABLE=1 makes the run finish, this is the cause.",
        evidence=[Evidence("topology.gpu_matrix", f"GPU0-GPU1 {pair}", source=NCCL_P2P_LEVEL_SOURCE),
                  Evidence("paste.collective_hang", said)],
        fix=Fix("Disable PCIe ACS on the bridges above the GPUs (BIOS, setpci at runtime, or pci=noacs on the "
                "kernel command line) or put the IOMMU in passthrough (amd_iommu=on iommu=pt); NCCL_P2P_DISABLE=1 "
                "is the slower stop-gap",
                ["lscpu | grep -i 'vendor id'   # AuthenticAMD: NCCL uses P2P between these two GPUs",
                 *settle[1:],
                 "# kernel command line: amd_iommu=on iommu=pt (or pci=noacs), then reboot",
                 "export NCCL_P2P_DISABLE=1   # stop-gap"], NCCL_TROUBLESHOOTING))]
