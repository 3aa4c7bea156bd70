"""Driver checks: is there NVIDIA hardware and a driver, does it match its libraries, does it see GPUs."""

from __future__ import annotations

from typing import List

from ..domain.pci import is_nvidia_gpu_description
from ..model.facts import Facts, ProbeStatus
from ..model.findings import Evidence, Finding, Fix, Severity
from ..queries import nvidia_hardware
from ..remedies import COMPAT_DOC, command, driver_install
from ._gpus import container_without_gpus
from ._util import torch_envs
from .base import NO_DRIVER, NO_GPU, CheckContext, Findings, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)


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


def _no_hardware(ctx: CheckContext) -> List[Finding]:
    """No PCI device of vendor 0x10de: not a driver problem. Fine for CPU work unless GPUs are expected."""
    facts = ctx.facts
    evidence = [Evidence("topology.nvidia_pci_devices", [], expected="an NVIDIA (vendor 0x10de) PCI device"
                         if ctx.expect_gpu else None, source="/sys/bus/pci/devices")]
    if ctx.expect_gpu:
        return [HARDWARE.error(
            "none-expected",
            "GPUs are expected here, but this machine has no NVIDIA hardware: no PCI device of vendor "
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
    return [HARDWARE.info(
        "none",
        "No NVIDIA hardware on this machine (no PCI device of vendor 0x10de): CPU work is fine"
        + (f"; {', '.join(parts)}" if parts else "") + ". Pass --expect-gpu if GPUs should be here",
        category="HEALTHY",
        evidence=evidence,
    )]


_NO_HARDWARE_SKIP = "no NVIDIA hardware on the PCI bus (driver.hardware): there is no GPU for a driver to serve"


HARDWARE = Findings("driver.hardware", "NO_GPU_VISIBLE",
                    kinds=("none", "none-expected"),
                    categories=("HEALTHY",))


@check(HARDWARE, "NVIDIA hardware is here, or not needed", categories=("NO_GPU_VISIBLE", "HEALTHY"))
def check_hardware(ctx: CheckContext) -> List[Finding]:
    hardware = nvidia_hardware(ctx.facts)
    if hardware is None:
        raise SkipCheck("whether this machine has NVIDIA hardware is unknown: /sys/bus/pci/devices was not read "
                        "(a snapshot or paste without it)")
    if hardware:
        return []
    return _no_hardware(ctx)


PRESENT = Findings("driver.present", "NO_NVIDIA_DRIVER", kinds=("absent",))


@check(PRESENT, "NVIDIA driver installed")
def check_driver_present(ctx: CheckContext) -> List[Finding]:
    d = ctx.facts.driver
    if d.status == ProbeStatus.OK:
        return []
    if d.status != ProbeStatus.ABSENT:
        raise SkipCheck(f"driver state unknown (probe {d.status}: {d.reason or 'no reason given'})")
    hardware = nvidia_hardware(ctx.facts)
    if hardware is False:
        raise SkipCheck(_NO_HARDWARE_SKIP, not_applicable=NO_GPU)
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
    finding = PRESENT(
        "absent", severity,
        summary,
        detail=("Nothing runs on an NVIDIA GPU without the kernel driver and its user-space libraries "
                "(libcuda, libnvidia-ml). torch.cuda.is_available() will be False."),
        evidence=evidence,
        fix=Fix(summary_fix, commands, DRIVER_DOWNLOAD),
    )
    if severity == Severity.INFO:  # no driver and nothing that needs one: no check mark for "driver installed"
        raise SkipCheck("no NVIDIA driver, and nothing here needs one", notes=[finding], not_applicable=NO_DRIVER)
    return [finding]


_MISMATCH_TEXTS = ("driver/library version mismatch", "forward compatibility was attempted on non supported hw")


LIBRARY_MATCH = Findings("driver.library-match", "DRIVER_LIBRARY_MISMATCH", kinds=("mismatch",))


@check(LIBRARY_MATCH, "Driver kernel module matches its libraries")
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
                              "NVML/CUDA were seen", not_applicable=NO_DRIVER if d.status == ProbeStatus.ABSENT else None)
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
    return [LIBRARY_MATCH.error(
        "mismatch",
        f"NVIDIA driver and library versions do not match{versions}",
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


# a CUDA_VISIBLE_DEVICES that hides the GPUs is a row of compat_data/env_vars.json, judged by host.environment
GPUS_VISIBLE = Findings("driver.gpus-visible", "NO_GPU_VISIBLE", kinds=("none",))


@check(GPUS_VISIBLE, "GPUs visible to CUDA")
def check_gpus_visible(ctx: CheckContext) -> List[Finding]:
    d = ctx.facts.driver
    if d.status != ProbeStatus.OK:
        raise SkipCheck(f"driver not usable (probe {d.status}: {d.reason or 'no reason given'})",
                        not_applicable=NO_DRIVER if d.status == ProbeStatus.ABSENT else None)
    paste = ctx.facts.paste
    if not d.gpus and paste is not None and "driver.gpus" not in (paste.provenance or {}):
        # a paste that names the driver but shows no GPU list says nothing about how many GPUs there are
        raise SkipCheck("the pasted text has no GPU list")
    if not d.gpus and nvidia_hardware(ctx.facts) is False:
        # a driver installed on a machine with no NVIDIA PCI device: driver.hardware says what that means
        raise SkipCheck(_NO_HARDWARE_SKIP, not_applicable=NO_GPU)
    if not d.gpus:
        host = ctx.facts.host
        cvd = host.env.get("NVIDIA_VISIBLE_DEVICES") if host.env else None
        ev = [Evidence("driver.gpus", [], expected="at least one GPU")]
        if cvd is not None:
            ev.append(Evidence("host.env.NVIDIA_VISIBLE_DEVICES", cvd))
        return [GPUS_VISIBLE.error(
            "none",
            f"Driver {d.version or '(version unknown)'} is loaded but reports no GPU",
            detail=("The driver works but lists no device: in a container started without GPUs "
                    "(NVIDIA_VISIBLE_DEVICES unset/void), a GPU that fell off the bus (check `dmesg` for Xid "
                    "79), or a VM without passthrough."),
            evidence=ev,
            fix=Fix("Start the container with GPUs, or check the kernel log for a GPU that fell off the bus",
                    ["docker run --gpus all ...", "sudo dmesg | grep -i -E 'NVRM|Xid'"]),
        )]
    return []


# --------------------------------------------------------------------------- driver vs torch's CUDA


