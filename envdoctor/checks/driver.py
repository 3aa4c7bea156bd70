"""Driver checks: is there a driver, does it match its libraries, does it see GPUs, is it new enough."""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Tuple

from ..domain.arch import sm_name
from ..domain.variants import local_tag
from ..domain.versions import driver_branch, major_minor, mm_str, parse_version, version_ge
from ..facts import Facts, Package, ProbeStatus
from ..findings import Evidence, Finding, Fix, Severity
from ..remedies import command, driver_install, pip_install, set_env, unset_env
from ._util import (
    driver_runs_cuda,
    is_nvidia_gpu_description,
    torch_builds,
    torch_envs,
    torch_label,
)
from .base import CheckContext, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)

COMPAT_DOC = "https://docs.nvidia.com/deploy/cuda-compatibility/"
DRIVER_DOWNLOAD = "https://www.nvidia.com/Download/index.aspx"


def _gpu_expected(facts: Facts) -> bool:
    """Is there any sign this machine is meant to use NVIDIA GPUs?"""
    if facts.toolkits.on_path is not None or facts.toolkits.installed:
        return True
    for _, py in torch_envs(facts):
        if py.torch and py.torch.cuda:
            return True
    for link in facts.topology.pcie_links:
        if is_nvidia_gpu_description(link.description):
            return True
    return False


def nvidia_hardware(facts: Facts) -> Optional[bool]:
    """Is there NVIDIA hardware on this machine's PCI bus? None when nothing says (a snapshot without sysfs)."""
    devices = facts.topology.nvidia_pci_devices
    if devices or facts.driver.gpus:
        return True
    if any(is_nvidia_gpu_description(link.description) for link in facts.topology.pcie_links):
        return True
    return False if devices == [] else None


def container_without_gpus(facts: Facts) -> bool:
    """A container on a host with NVIDIA GPUs that was started without them (no /dev/nvidia* passed in)."""
    c = facts.host.container
    return bool(c and c.runtime and not c.gpu_device_nodes and facts.driver.status != ProbeStatus.OK
                and nvidia_hardware(facts))


def _no_hardware(ctx: CheckContext) -> List[Finding]:
    """No PCI device of vendor 0x10de: not a driver problem. Fine for CPU work unless GPUs are expected."""
    facts = ctx.facts
    evidence = [Evidence("topology.nvidia_pci_devices", [], expected="an NVIDIA (vendor 0x10de) PCI device"
                         if ctx.expect_gpu else None, source="/sys/bus/pci/devices")]
    if ctx.expect_gpu:
        return [Finding(
            code="driver.hardware/none-expected",
            category="NO_GPU_VISIBLE",
            severity=Severity.ERROR,
            summary="GPUs are expected here, but this machine has no NVIDIA hardware: no PCI device of vendor "
                    "0x10de under /sys/bus/pci/devices",
            detail="No driver can help: the machine (or VM) has no NVIDIA GPU attached. On a cloud VM the "
                   "instance type decides; a VM needs the GPU passed through.",
            evidence=evidence,
            fix=Fix("Run on a machine or instance type with NVIDIA GPUs (or pass the GPU through to this VM)",
                    ["lspci -nn | grep -i 10de   # should list the GPU"]),
        )]
    parts = []
    for i, py in torch_envs(facts):
        t = py.torch
        if t and t.version:
            kind = f"a CUDA {t.cuda} build, running on the CPU here" if t.cuda else "a CPU build"
            parts.append(f"torch {t.version} ({kind})")
            evidence.append(Evidence(f"pythons[{i}].torch.version", t.version))
    return [Finding(
        code="driver.hardware/none",
        category="HEALTHY",
        severity=Severity.INFO,
        summary="No NVIDIA hardware on this machine (no PCI device of vendor 0x10de): CPU work is fine"
                + (f"; {', '.join(parts)}" if parts else "") + ". Pass --expect-gpu if GPUs should be here",
        evidence=evidence,
    )]


_NO_HARDWARE_SKIP = "no NVIDIA hardware on the PCI bus (driver.hardware): there is no GPU for a driver to serve"


@check("driver.hardware", "NVIDIA hardware is here, or not needed", categories=("NO_GPU_VISIBLE", "HEALTHY"))
def check_hardware(ctx: CheckContext) -> List[Finding]:
    hardware = nvidia_hardware(ctx.facts)
    if hardware is None:
        raise SkipCheck("whether this machine has NVIDIA hardware is unknown: /sys/bus/pci/devices was not read "
                        "(a snapshot or paste without it)")
    if hardware:
        return []
    return _no_hardware(ctx)


@check("driver.present", "NVIDIA driver installed", categories=("NO_NVIDIA_DRIVER",))
def check_driver_present(ctx: CheckContext) -> List[Finding]:
    d = ctx.facts.driver
    if d.status == ProbeStatus.OK:
        return []
    if d.status != ProbeStatus.ABSENT:
        raise SkipCheck(f"driver state unknown (probe {d.status}: {d.reason or 'no reason given'})")
    hardware = nvidia_hardware(ctx.facts)
    if hardware is False:
        raise SkipCheck(_NO_HARDWARE_SKIP)
    if container_without_gpus(ctx.facts):
        # one root cause, one error: platform.container-gpu reports the container started without its GPUs
        raise SkipCheck("the container was started without the host's GPUs (platform.container-gpu): the "
                        "driver comes in with them")
    host = ctx.facts.host
    in_container = bool(host.container and host.container.runtime)
    wsl = bool(host.wsl)
    evidence = [Evidence("driver.status", d.status), Evidence("driver.reason", d.reason)]
    if d.nvml_error:
        evidence.append(Evidence("driver.nvml_error", d.nvml_error))
    if ctx.facts.toolkits.on_path is not None:
        tk = ctx.facts.toolkits.on_path
        evidence.append(Evidence("toolkits.on_path.version", tk.version,
                                 expected="a CUDA toolkit is not a driver: nvcc compiles, the driver runs"))
    commands: List[str] = []
    if wsl:
        summary_fix = ("Install the NVIDIA driver on Windows (not inside WSL); WSL exposes it through "
                       "/usr/lib/wsl/lib")
    elif in_container:
        summary_fix = ("Run the container with GPU access on a host that has the NVIDIA driver: install the "
                       "NVIDIA Container Toolkit on the host, then start it with --gpus all")
        commands = [command("docker", "run", "--gpus", "all", "...",
                            comment="or: nvidia.com/gpu resource limits on Kubernetes")]
    else:
        plan = driver_install(ctx.facts, None)
        summary_fix = "Install the NVIDIA driver for your GPU, then reboot"
        if plan.note:
            summary_fix += f" ({plan.note})"
        commands = plan.commands + ([command("nvidia-smi", comment="after the reboot: should list your GPUs")]
                                    if plan.commands else [])
    # A CPU-only machine with nothing CUDA on it has no driver by design: a fact, not a fault.
    severity = Severity.ERROR if hardware or ctx.expect_gpu or _gpu_expected(ctx.facts) else Severity.INFO
    where = " in this container" if in_container else (" in WSL" if wsl else "")
    summary = f"No NVIDIA driver found{where}: {d.reason or 'NVML and nvidia-smi are unavailable'}"
    for i, py in torch_envs(ctx.facts):
        t = py.torch
        if t and t.cuda and t.cuda_available is False:
            # the missing driver is why this CUDA build cannot use the GPU: say so next to torch's own words
            summary += f"; this is why torch {t.version} (CUDA {t.cuda}) reports CUDA unavailable"
            evidence.append(Evidence(f"pythons[{i}].torch.cuda_init_error", t.cuda_init_error))
            severity = Severity.ERROR
            break
    finding = Finding(
        code="driver.present/absent",
        category="NO_NVIDIA_DRIVER",
        severity=severity,
        summary=summary,
        detail=("Nothing runs on an NVIDIA GPU without the kernel driver and its user-space libraries "
                "(libcuda, libnvidia-ml). torch.cuda.is_available() will be False."),
        evidence=evidence,
        fix=Fix(summary_fix, commands, DRIVER_DOWNLOAD),
    )
    if severity == Severity.INFO:  # no driver and nothing that needs one: no check mark for "driver installed"
        raise SkipCheck("no NVIDIA driver, and nothing here needs one", notes=[finding])
    return [finding]


_MISMATCH_TEXTS = ("driver/library version mismatch", "forward compatibility was attempted on non supported hw")


@check("driver.library-match", "Driver kernel module matches its libraries", categories=("DRIVER_LIBRARY_MISMATCH",))
def check_library_mismatch(ctx: CheckContext) -> List[Finding]:
    d = ctx.facts.driver
    evidence: List[Evidence] = []
    if d.nvml_error == "LIB_RM_VERSION_MISMATCH":
        evidence.append(Evidence("driver.nvml_error", d.nvml_error, expected="NVML initialises"))
    if d.nvidia_smi_error and any(t in d.nvidia_smi_error.lower() for t in _MISMATCH_TEXTS):
        evidence.append(Evidence("driver.nvidia_smi_error", d.nvidia_smi_error))
    if d.kernel_module_version and d.version and d.kernel_module_version != d.version:
        evidence.append(Evidence("driver.kernel_module_version", d.kernel_module_version,
                                 expected=f"== user-space driver {d.version}"))
    for i, py in enumerate(ctx.facts.pythons):
        err = (py.torch.cuda_init_error if py.torch else None) or ""
        if any(t in err.lower() for t in _MISMATCH_TEXTS):
            evidence.append(Evidence(f"pythons[{i}].torch.cuda_init_error", err))
    if not evidence:
        if d.status in (ProbeStatus.SKIPPED,) and not ctx.facts.pythons:
            raise SkipCheck("driver state unknown (not probed)")
        # a pass needs something that would have shown a mismatch: both versions read, NVML started
        # (it refuses with LIB_RM_VERSION_MISMATCH), or CUDA initialised in torch
        compared = (bool(d.kernel_module_version and d.version)
                    or (d.status == ProbeStatus.OK and d.nvml_error is None)
                    or any(py.torch is not None and py.torch.cuda_available for py in ctx.facts.pythons))
        if not compared:
            raise SkipCheck(f"nothing to compare: driver {d.status}" + (f" ({d.reason})" if d.reason else "")
                            + "; neither the kernel module's and the libraries' versions nor a working "
                              "NVML/CUDA were seen")
        return []
    versions = ""
    if d.kernel_module_version and d.version and d.kernel_module_version != d.version:
        versions = f" (kernel module {d.kernel_module_version}, libraries {d.version})"
    forward = any("forward compatibility" in str(e.value).lower() for e in evidence)
    detail = ("The loaded nvidia kernel module and the user-space driver libraries (libcuda, libnvidia-ml) "
              "are different versions, so NVML and CUDA refuse to start. This happens after a driver "
              "upgrade without a reboot, or in a container whose libraries do not match the host module.")
    if forward:
        detail += (" 'forward compatibility was attempted on non supported HW' (CUDA error 804) means a "
                   "newer user-space libcuda (a cuda-compat package, or one baked into the image) was "
                   "loaded over an older kernel driver on a GPU that does not support forward "
                   f"compatibility (only data-center GPUs do: {COMPAT_DOC}).")
    return [Finding(
        code="driver.library-match/mismatch",
        category="DRIVER_LIBRARY_MISMATCH",
        severity=Severity.ERROR,
        summary=f"NVIDIA driver and library versions do not match{versions}",
        detail=detail,
        evidence=evidence,
        fix=Fix("Reboot so the kernel module and libraries are the same version (or reload the modules); in a "
                "container, use the host's libcuda as injected by the NVIDIA Container Toolkit instead of a "
                "copy baked into the image",
                ["sudo reboot",
                 "# or, with no GPU process running: sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia "
                 "&& sudo modprobe nvidia",
                 "cat /proc/driver/nvidia/version; nvidia-smi   # both should print the same version"],
                COMPAT_DOC),
    )]


def _visible_devices_problem(value: Optional[str], gpu_count: int) -> Optional[str]:
    if value is None:
        return None
    v = value.strip()
    if v == "" or v in ("-1", "none", "void", "NoDevFiles"):
        return f"CUDA_VISIBLE_DEVICES={value!r} hides every GPU"
    items = [x.strip() for x in v.split(",") if x.strip()]
    if items and all(x.isdigit() for x in items) and gpu_count > 0:
        bad = [x for x in items if int(x) >= gpu_count]
        if bad and bad[0] == items[0]:
            return (f"CUDA_VISIBLE_DEVICES={value!r} starts with index {bad[0]}, but only {gpu_count} GPU(s) "
                    f"exist (0..{gpu_count - 1}); CUDA stops at the first invalid index")
    return None


@check("driver.gpus-visible", "GPUs visible to CUDA", categories=("NO_GPU_VISIBLE",))
def check_gpus_visible(ctx: CheckContext) -> List[Finding]:
    d = ctx.facts.driver
    if d.status != ProbeStatus.OK:
        raise SkipCheck(f"driver not usable (probe {d.status}: {d.reason or 'no reason given'})")
    findings: List[Finding] = []
    paste = ctx.facts.paste
    if not d.gpus and paste is not None and "driver.gpus" not in (paste.provenance or {}):
        # a paste that names the driver but shows no GPU list says nothing about how many GPUs there are
        raise SkipCheck("the pasted text has no GPU list")
    if not d.gpus and nvidia_hardware(ctx.facts) is False:
        # a driver installed on a machine with no NVIDIA PCI device: driver.hardware says what that means
        raise SkipCheck(_NO_HARDWARE_SKIP)
    if not d.gpus:
        host = ctx.facts.host
        cvd = host.env.get("NVIDIA_VISIBLE_DEVICES") if host.env else None
        ev = [Evidence("driver.gpus", [], expected="at least one GPU")]
        if cvd is not None:
            ev.append(Evidence("host.env.NVIDIA_VISIBLE_DEVICES", cvd))
        return [Finding(
            code="driver.gpus-visible/none",
            category="NO_GPU_VISIBLE",
            severity=Severity.ERROR,
            summary=f"Driver {d.version or '(version unknown)'} is loaded but reports no GPU",
            detail=("The driver works but lists no device: in a container started without GPUs "
                    "(NVIDIA_VISIBLE_DEVICES unset/void), a GPU that fell off the bus (check `dmesg` for Xid "
                    "79), or a VM without passthrough."),
            evidence=ev,
            fix=Fix("Start the container with GPUs, or check the kernel log for a GPU that fell off the bus",
                    ["docker run --gpus all ...", "sudo dmesg | grep -i -E 'NVRM|Xid'"]),
        )]
    for i, py in enumerate(ctx.facts.pythons):
        t = py.torch
        cvd = py.env.get("CUDA_VISIBLE_DEVICES") if py.env else None
        if cvd is None and ctx.facts.host.env:
            cvd = ctx.facts.host.env.get("CUDA_VISIBLE_DEVICES")
        problem = _visible_devices_problem(cvd, len(d.gpus))
        cuda_build = bool(t and t.cuda)
        sees_none = bool(t and t.device_count == 0) or (t is not None and t.cuda_available is False)
        if problem and (not t or not cuda_build or sees_none):
            findings.append(Finding(
                code="driver.gpus-visible/cuda-visible-devices",
                category="NO_GPU_VISIBLE",
                severity=Severity.ERROR,
                summary=f"{problem}; the driver sees {len(d.gpus)} GPU(s)",
                detail="CUDA applications only see the GPUs CUDA_VISIBLE_DEVICES lists, by index or UUID.",
                evidence=[Evidence(f"pythons[{i}].env.CUDA_VISIBLE_DEVICES", cvd),
                          Evidence("driver.gpus", len(d.gpus))],
                fix=Fix("Unset CUDA_VISIBLE_DEVICES or list valid indices",
                        [unset_env(ctx.facts, "CUDA_VISIBLE_DEVICES"),
                         set_env(ctx.facts, "CUDA_VISIBLE_DEVICES", ",".join(str(g.index) for g in d.gpus))]),
            ))
    return findings


# --------------------------------------------------------------------------- driver vs torch's CUDA


def _alternative_variant(ctx: CheckContext, torch_version: str, driver: str) -> Optional[str]:
    """The newest CUDA variant of this torch release that this driver runs and that has kernels for
    every GPU here (an older CUDA build often lacks the newest architectures: 1.12 cu102 has no sm_80)."""
    from ..domain.arch import arch_runs
    from ..domain.variants import cuda_of_variant
    from .torch_build import gpu_capabilities

    rel = ctx.compat.torch_release(torch_version)
    if rel is None:
        return None
    ccs = [cc for _, cc, _ in gpu_capabilities(ctx) if cc]

    def fits(variant: str) -> bool:
        arch = ctx.compat.torch_arch_list(torch_version, variant)
        return not arch or all(arch_runs(arch, cc)[0] for cc in ccs)

    runnable = [v for v in rel.cuda_variants
                if driver_runs_cuda(ctx.facts.driver, ctx.compat, cuda_of_variant(v)) and fits(v)]
    return max(runnable, key=lambda v: parse_version(cuda_of_variant(v))) if runnable else None


def _min_branch_for(min_driver: Optional[str]) -> Optional[int]:
    return driver_branch(min_driver)


@check("driver.cuda-compat", "Driver supports torch's CUDA version", categories=("DRIVER_TOO_OLD_FOR_TORCH_CUDA",))
def check_driver_cuda(ctx: CheckContext) -> List[Finding]:
    facts = ctx.facts
    d = facts.driver
    inferred: Dict[int, str] = {}
    envs = []
    for i, py in torch_builds(facts):
        if py.torch and py.torch.cuda:
            envs.append((i, py))
            continue
        guess = _inferred_cuda(ctx, py)
        if guess:
            cuda, note = guess
            inferred[i] = note
            envs.append((i, dataclasses.replace(py, torch=dataclasses.replace(py.torch, cuda=cuda))))
    if not envs:
        raise SkipCheck("no CUDA build of torch to judge (torch absent, CPU or ROCm build)")
    if d.status == ProbeStatus.ABSENT:
        raise SkipCheck("no NVIDIA driver (see driver.present)")
    if not d.version and not d.cuda_driver_version:
        raise SkipCheck(f"driver version unknown (probe {d.status}: {d.reason or 'not in the facts'})")
    findings: List[Finding] = []
    # a family name ("NVIDIA A100", a declared fleet's "H100") counts when every model it can mean is one
    datacenter = any(
        (specs := ctx.compat.gpu_candidates(g.name)) and all(sp.datacenter for sp in specs) for g in d.gpus if g.name
    )
    for i, py in envs:
        t = py.torch
        assert t is not None and t.cuda is not None
        cuda = mm_str(t.cuda)
        label = torch_label(t)
        req = ctx.compat.cuda_requirement(cuda) if cuda else None
        if req is None:
            # A CUDA version newer than the matrix: judge only against the driver's own ceiling.
            ceiling = d.cuda_driver_version or (
                (ctx.compat.driver_max_cuda(d.version) or (None,))[0] if d.version else None)
            cmm, tmm = major_minor(ceiling), major_minor(cuda)
            if cmm and tmm and tmm[0] > cmm[0]:
                # A newer CUDA major always needs a newer driver branch (minor-version compatibility
                # works within one major only), so this is known even beyond the matrix.
                findings.append(_too_old_finding(ctx, i, label, cuda, None, None, d.version, ceiling, datacenter))
            elif not cmm or not tmm or tmm > cmm:
                findings.append(Finding(
                    code="driver.cuda-compat/unknown-cuda",
                    category="DRIVER_TOO_OLD_FOR_TORCH_CUDA",
                    severity=Severity.INFO,
                    summary=(f"CUDA {t.cuda} ({label}) is unknown to this matrix (as of {ctx.compat.as_of}); "
                             f"driver {d.version or 'unknown'} not judged"),
                    evidence=[Evidence(f"pythons[{i}].torch.cuda", t.cuda)],
                ))
            continue
        if d.version is None:
            # Only the driver's ceiling is known (a pasted nvidia-smi header or error number).
            ceiling = d.cuda_driver_version
            ev = [Evidence("driver.cuda_driver_version", ceiling), Evidence(f"pythons[{i}].torch.cuda", t.cuda)]
            cmm, tmm = major_minor(ceiling), major_minor(cuda)
            if cmm and tmm and tmm > cmm and (tmm[0] > cmm[0] or tmm[0] < 11):
                findings.append(_too_old_finding(ctx, i, label, cuda, req.min_driver, req.minor_compat_min_driver,
                                                 None, ceiling, datacenter))
            elif cmm and tmm and tmm > cmm:
                findings.append(Finding(
                    code="driver.cuda-compat/minor-compat",
                    category="DRIVER_TOO_OLD_FOR_TORCH_CUDA",
                    severity=Severity.INFO,
                    summary=(f"The driver supports CUDA {ceiling}; {label} uses CUDA {cuda}: runs through CUDA "
                             f"minor-version compatibility if the driver is >= {req.minor_compat_min_driver}"),
                    detail=_MINOR_COMPAT_LIMITS,
                    evidence=ev,
                    fix=Fix("Paste the output of `nvidia-smi` to settle the exact driver version"),
                ))
            continue
        if req.min_driver and version_ge(d.version, req.min_driver):
            continue
        if req.min_driver is None:
            # a matrix row whose GA minimum is not confirmed yet: the driver's own ceiling (nvidia-smi's
            # "CUDA Version", or its branch's) at or above this CUDA settles it without the minimum
            ceiling = d.cuda_driver_version or (ctx.compat.driver_max_cuda(d.version) or (None,))[0]
            if ceiling and major_minor(ceiling) and major_minor(cuda) and major_minor(ceiling) >= major_minor(cuda):
                continue
        floor = req.minor_compat_min_driver
        cmajor = major_minor(cuda)[0] if major_minor(cuda) else 0
        if req.min_driver is None and floor is None:
            findings.append(Finding(
                code="driver.cuda-compat/unknown-minimum",
                category="DRIVER_TOO_OLD_FOR_TORCH_CUDA",
                severity=Severity.INFO,
                summary=(f"The minimum driver for CUDA {cuda} is not confirmed in this matrix (as of "
                         f"{ctx.compat.as_of}); driver {d.version} not judged"),
                evidence=[Evidence(f"pythons[{i}].torch.cuda", t.cuda, source=req.source)],
            ))
            continue
        if cmajor >= 11 and floor and version_ge(d.version, floor):
            # Minor-version compatibility: a 12.x runtime runs on any >= 525.60.13 driver, with limits.
            ptx_only = _ptx_only_gpus(ctx, py)
            if ptx_only:
                findings.append(Finding(
                    code="driver.cuda-compat/ptx-needs-newer-driver",
                    category="DRIVER_TOO_OLD_FOR_TORCH_CUDA",
                    severity=Severity.ERROR,
                    summary=(f"Driver {d.version} is older than CUDA {cuda} needs "
                             f"({req.min_driver or 'a driver of CUDA ' + cuda + ' or newer'}) and "
                             f"{', '.join(ptx_only)} would need torch's PTX JIT-compiled, which minor-version "
                             "compatibility does not cover"),
                    detail=_MINOR_COMPAT_LIMITS,
                    evidence=[Evidence("driver.version", d.version, expected=f">= {req.min_driver or floor}",
                                       source=req.source),
                              Evidence(f"pythons[{i}].torch.arch_list", t.arch_list)],
                    fix=_fix_upgrade_driver(ctx, req.min_driver, t.version, d.version, datacenter, py),
                ))
                continue
            own = (f"below CUDA {cuda}'s own minimum ({req.min_driver})" if req.min_driver else
                   f"not known to reach CUDA {cuda}'s own minimum (not confirmed in this matrix as of "
                   f"{ctx.compat.as_of})")
            lift = (f"upgrade to driver >= {req.min_driver} to lift the limits" if req.min_driver else
                    f"a driver whose nvidia-smi 'CUDA Version' is {cuda} or newer lifts the limits")
            findings.append(Finding(
                code="driver.cuda-compat/minor-compat",
                category="DRIVER_TOO_OLD_FOR_TORCH_CUDA",
                severity=Severity.INFO,
                summary=(f"Driver {d.version} is {own} but above the CUDA {cmajor}.x minor-version "
                         f"compatibility floor ({floor}): {label} runs"),
                detail=_MINOR_COMPAT_LIMITS,
                evidence=[Evidence("driver.version", d.version, expected=f">= {floor} (minor-version compatibility)",
                                   source=COMPAT_DOC),
                          Evidence(f"pythons[{i}].torch.cuda", t.cuda, source=req.source)],
                fix=Fix(f"Nothing needed to run prebuilt wheels; {lift}", [], COMPAT_DOC),
            ))
            continue
        findings.append(_too_old_finding(ctx, i, label, cuda, req.min_driver, floor, d.version,
                                         d.cuda_driver_version, datacenter, source=req.source))
    return [_mark_inferred(f, inferred) for f in findings]


def _inferred_cuda(ctx: CheckContext, py) -> Optional[Tuple[str, str]]:
    """(cuda, why) for a torch whose CUDA version the facts lack, from the wheel plain pip installs.

    Only for a pasted report: a live probe reads torch.version.cuda itself. A version with no local tag
    that is not known to be a CPU build came from PyPI, whose Linux x86_64 wheel is the release's default
    variant (compat torch.json default_variant); that is likely, not certain (an index URL may have been used).
    """
    from ..domain.variants import cuda_of_variant
    from .packages import package_variant

    t = py.torch
    if ctx.facts.origin != "paste" or t is None or t.hip or t.arch_list is not None or local_tag(t.version):
        return None
    pkg = py.package("torch") or Package(name="torch", version=t.version or "")
    variant, why, _certain = package_variant(ctx, py, pkg)
    cuda = cuda_of_variant(variant) if variant else None
    return (cuda, why) if cuda else None


def _mark_inferred(f: Finding, inferred: Dict[int, str]) -> Finding:
    for i, note in inferred.items():
        if any(e.path.startswith(f"pythons[{i}].") for e in f.evidence):
            severity = Severity.WARNING if f.severity == Severity.ERROR else f.severity
            return dataclasses.replace(
                f, severity=severity, confidence="medium",
                summary=f.summary + " (torch's CUDA version inferred: " + note + ")",
                evidence=f.evidence + [Evidence(f"pythons[{i}].torch.cuda", None,
                                                expected="paste `python -c \"import torch; print(torch.version.cuda)\"` to settle it",
                                                source=note)])
    return f


_MINOR_COMPAT_LIMITS = (
    "CUDA minor-version compatibility (CUDA 11+) lets an application built with a newer minor release of "
    "the same major run on an older driver of that major, with limits: PTX that is newer than the driver "
    "cannot be JIT-compiled (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), and APIs or features introduced after "
    f"the driver's release are unavailable. Source: {COMPAT_DOC}minor-version-compatibility.html"
)


def _ptx_only_gpus(ctx: CheckContext, py) -> List[str]:
    """GPUs for which torch has PTX but no SASS (they would need the driver to JIT newer PTX)."""
    from ..domain.arch import arch_runs

    t = py.torch
    arch = t.arch_list if t else None
    if not arch:
        return []
    sass_only = [a for a in arch if a.startswith("sm_")]
    out = []
    for g in ctx.facts.driver.gpus:
        cc = g.compute_capability
        if not cc:
            continue
        ok_all, _ = arch_runs(arch, cc)
        ok_sass, _ = arch_runs(sass_only, cc)
        if ok_all and not ok_sass:
            out.append(f"GPU {g.index} ({g.name}, {sm_name(cc)})")
    return out


def _target_branch(ctx: CheckContext, min_driver: Optional[str]) -> Optional[int]:
    """The oldest still-supported production/LTS branch at or above what ``min_driver`` needs that also
    supports every GPU here (compat driver_gpu_support.json); None when no branch does both.

    Installing exactly the minimum's branch (e.g. 530 for CUDA 12.1) often names a short-lived feature
    branch that distributions no longer ship; a supported branch that is new enough is the useful answer.
    """
    return _branch_plan(ctx, min_driver)[0]


def _branch_plan(ctx: CheckContext, min_driver: Optional[str]) -> Tuple[Optional[int], Optional[str]]:
    """(branch to suggest, why no branch can be suggested) for a driver at least ``min_driver``.

    A branch that drops a GPU here (R580 for a Tesla K80: Kepler ends at R470) or predates it (R550 for an
    RTX 5090: Blackwell starts at R570) is never suggested.
    """
    import datetime

    from ..compat.health import health_table
    from ._gpu_branches import branch_max_cuda, gpu_branch_limits

    need = _min_branch_for(min_driver)
    if need is None:
        return None, None
    limits = gpu_branch_limits(ctx)
    if limits.hi is not None and need > limits.hi and limits.hi_gpu is not None:
        ceiling = branch_max_cuda(ctx, limits.hi)
        return None, (f"{limits.hi_gpu.label} is supported only up to the R{limits.hi} driver branch"
                      + (f" (CUDA {ceiling} at most" + (", other 11.x builds through minor-version compatibility)"
                                                       if ceiling.startswith("11.") else ")")
                         if ceiling else "")
                      + f", so no driver both runs it and meets {min_driver}")
    floor = max(need, limits.lo or 0)
    try:
        table = health_table(ctx.compat)
        on = datetime.date.fromisoformat((ctx.facts.collected_at or table.as_of)[:10])
    except (LookupError, ValueError, TypeError):
        return floor, None
    supported = sorted(b.branch for b in table.supported_branches(on) if b.branch >= floor and limits.allows(b.branch))
    if supported:
        return supported[0], None
    if limits.hi is not None:
        # every supported branch dropped this GPU: its last (legacy) branch is still the one that runs it
        return limits.hi, None
    return floor, None


def _legacy_gpu_alternative(ctx: CheckContext, py, torch_version: str,
                            driver: Optional[str]) -> Tuple[str, List[str]]:
    """What to do when no driver runs this torch's CUDA on these GPUs: this torch in a CUDA variant the
    driver runs, else the newest torch the GPUs' last branch runs with kernels for them, else a newer GPU."""
    from ..domain.versions import base_version
    from ._gpu_branches import gpu_branch_limits, newest_patch, newest_torch_for
    from .packages import _pair_pins

    limits = gpu_branch_limits(ctx)
    hi = limits.hi
    if hi is None:
        return "", []
    alt = _alternative_variant(ctx, torch_version, driver) if driver else None
    if alt:
        version = base_version(torch_version) or ""
        pins = _pair_pins(ctx, py, version) if py is not None else [f"torch=={version}"]
        return (f"; install the {alt} build of torch {version}, which this driver runs and which has kernels "
                "for it"), [pip_install(ctx.facts, py, pins, alt, force=True)]
    ccs = [x.cc for x in limits.gpus]
    best = newest_torch_for(ctx, hi, ccs)
    if best is None:
        who = limits.hi_gpu.label if limits.hi_gpu else "this GPU"
        return (f"; no torch release with kernels for {who} runs on R{hi}: this torch needs a newer GPU (or "
                "cloud instance)"), []
    minor, variant = best
    version = newest_patch(ctx, minor)
    pins = _pair_pins(ctx, py, version) if py is not None else [f"torch=={version}"]
    commands = [pip_install(ctx.facts, py, pins, variant, force=True)]
    note = ""
    if driver_branch(driver) != hi:
        # R{hi} is the last branch for this GPU
        plan = driver_install(ctx.facts, hi)
        commands[:0] = plan.commands
        note = f" ({plan.note})" if plan.note else ""
    return (f"; install a torch build that R{hi} runs and that has kernels for it - the newest is torch "
            f"{version} ({variant}) - or use a newer GPU (or cloud instance) for newer torch releases{note}"), commands


def _fix_upgrade_driver(ctx: CheckContext, min_driver: Optional[str], torch_version: str,
                        driver: Optional[str], datacenter: bool, py=None) -> Fix:
    branch, impossible = _branch_plan(ctx, min_driver)
    if impossible:
        text, commands = _legacy_gpu_alternative(ctx, py, torch_version, driver)
        # no cuda-compat note: forward compatibility needs a branch that supports the GPU too
        return Fix(f"No driver upgrade helps: {impossible}{text}", commands, COMPAT_DOC)
    plan = driver_install(ctx.facts, branch) if branch is not None else None
    commands = list(plan.commands) if plan else []
    summary = (f"Upgrade the NVIDIA driver to {min_driver} or newer (e.g. the supported R{branch} branch)"
               if min_driver else "Upgrade the NVIDIA driver")
    if plan and plan.note:
        summary += f" ({plan.note})"
    if driver:
        alt = _alternative_variant(ctx, torch_version, driver)
        if alt:
            from ..domain.versions import base_version
            from .packages import _pair_pins

            version = base_version(torch_version) or ""
            # reinstall the companions with it: a cu118 torch next to a cu121 torchvision is CUDA_VARIANT_MIXED
            pins = _pair_pins(ctx, py, version) if py is not None else [f"torch=={version}"]
            summary += f", or install the {alt} build of torch, which this driver supports"
            commands.append(pip_install(ctx.facts, py, pins, alt, force=True))
    if datacenter:
        summary += ("; on data-center GPUs the CUDA forward-compatibility package (cuda-compat) is a third "
                    "way")
    return Fix(summary, commands, COMPAT_DOC)


def _too_old_finding(ctx: CheckContext, i: int, label: str, cuda: str, min_driver: Optional[str],
                     floor: Optional[str], driver: Optional[str], ceiling: Optional[str], datacenter: bool,
                     source: Optional[str] = None) -> Finding:
    need = f">= {min_driver}" if min_driver else f"a driver supporting CUDA {cuda}"
    cmajor = major_minor(cuda)[0] if major_minor(cuda) else 0
    if floor and cmajor >= 11:
        need += f"; minor-version compatibility needs >= {floor}"
    seen = f"Driver {driver}" if driver else f"The driver (supports CUDA {ceiling} at most)"
    ev = [Evidence(f"pythons[{i}].torch.cuda", cuda, source=source)]
    if driver:
        ev.append(Evidence("driver.version", driver, expected=f">= {min_driver or floor}", source=source))
    if ceiling:
        ev.append(Evidence("driver.cuda_driver_version", ceiling))
    torch_version = ctx.facts.pythons[i].torch.version if ctx.facts.pythons[i].torch else ""
    return Finding(
        code="driver.cuda-compat/too-old",
        category="DRIVER_TOO_OLD_FOR_TORCH_CUDA",
        severity=Severity.ERROR,
        summary=f"{seen} is too old for {label} (CUDA {cuda} needs {need})",
        detail=("torch ships its own CUDA runtime, but that runtime needs a kernel driver at least as new as "
                "NVIDIA lists for it; with an older driver torch.cuda.is_available() is False ('The NVIDIA "
                "driver on your system is too old')."),
        evidence=ev,
        fix=_fix_upgrade_driver(ctx, min_driver or floor, torch_version or "", driver, datacenter,
                                ctx.facts.pythons[i]),
    )

