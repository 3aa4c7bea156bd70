"""GPU clock checks: throttling reasons, judged against load and power."""

from __future__ import annotations

from typing import List

from ..model.facts import Gpu
from ..model.findings import Evidence, Finding, Fix
from ..remedies import command, placeholder
from ._gpus import gpu_list, gpu_path, looks_loaded, require_gpus
from .base import Check, CheckContext, Findings, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)


# NVML clock-event reasons (nvml.h, nvmlClocksEventReasons): which are faults, and when.
_HW = {
    "hw_thermal_slowdown": "HW Thermal Slowdown",
    "hw_power_brake_slowdown": "HW Power Brake Slowdown",
}


# HW Slowdown alone: NVML reference, nvmlClocksEventReasonHwSlowdown: "This is an indicator of ... temperature
# being too high, External Power Brake Assertion ..., Power draw is too high ... May be also reported during
# PState or clock change - This behavior may be removed in a later release". One instantaneous reading
# cannot tell the fault from a P-state change, so it is a warning with the way to confirm it.
_HW_MAYBE = {"hw_slowdown": "HW Slowdown"}


_THERMAL = {"sw_thermal_slowdown": "SW Thermal Slowdown"}


# Settings lowered by hand (nvidia-smi -pl / -lgc / -ac): the setting against its default or maximum. NVML:
# nvmlDeviceGetPowerManagementLimit vs ...DefaultLimit; locked SM clocks vs the maximum SM clock;
# nvmlDeviceGetApplicationsClock vs nvmlDeviceGetDefaultApplicationsClock. A locked or application clock of 0 is
# "not set". Where these settings cannot be read the rows judge nothing, and "clock-setting" (the Applications
# Clocks Setting reason under load) is what catches a held clock: NVML has no getter for locked clocks on any
# driver (nvml.h API 13 has nvmlDeviceSetGpuLockedClocks / nvmlDeviceResetGpuLockedClocks only), so
# clocks-locked judges facts from elsewhere (a snapshot, a test); and R590 answers NVML_ERROR_DEPRECATED to every
# application-clock getter (application clocks are deprecated in NVML 13 and removed in CUDA 14.0), which the
# probe records once per GPU as "application clocks: not available on this driver", so app-clocks-lowered judges
# drivers before R590 only. (code, summary head, setting, reference, fraction, 0 = unset, per-GPU text, expected, detail, fix,
# the command that resets one GPU)
_LOWERED = (
    ("gpu.throttle/power-limit-lowered", "Power limit set below the default", "power_limit_w", "power_default_limit_w", 0.97,
     False, "{v:g} W of {ref:g} W", ">= {ref:g} W (default)",
     "A lowered power limit caps clocks whenever the GPU is busy.", "Restore the default power limit",
     "sudo nvidia-smi -i {i} -pl {ref:g}"),
    ("gpu.throttle/clocks-locked", "GPU clocks locked below the maximum", "clocks_sm_locked_max_mhz", "clocks_sm_max_mhz", 0.9,
     True, "{v} MHz of {ref} MHz", "unlocked (max {ref} MHz)", None, "Reset the locked GPU clocks",
     "sudo nvidia-smi -i {i} -rgc"),
    ("gpu.throttle/app-clocks-lowered", "Application clocks set below the default", "clocks_sm_app_mhz",
     "clocks_sm_app_default_mhz", 0.97, True, "{v} MHz of {ref} MHz", ">= {ref} MHz (default)", None,
     "Reset the application clocks to their defaults", "sudo nvidia-smi -i {i} -rac"),
)


def _reasons(g: Gpu) -> List[str]:
    return [r.lower() for r in (g.throttle_reasons or [])]


def reasons_field(ctx: CheckContext, reason: str) -> str:
    """The nvidia-smi query field of a clock-event reason on this driver: R535 renamed clocks_throttle_reasons.*
    to clocks_event_reasons.* (nvidia-smi release notes, R535), and older nvidia-smi knows only the old name."""
    from ..domain.versions import release

    version = ctx.facts.driver.version
    try:
        old = bool(version) and release(version)[0] < 535
    except (ValueError, TypeError, IndexError):
        old = False
    return f"clocks_throttle_reasons.{reason}" if old else f"clocks_event_reasons.{reason}"


THROTTLE = Findings("gpu.throttle", "GPU_THROTTLED",
                    kinds=("app-clocks-lowered", "clock-setting", "clocks-locked", "hw-slowdown", "hw-slowdown-seen",
                           "power-cap", "power-cap-at-limit", "power-cap-idle", "power-limit-lowered", "thermal",
                           "unknown-reason"))


@check(THROTTLE, "GPU clocks are not throttled")
def throttle(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "throttle reasons",
                        ("throttle_reasons", "power_limit_w", "clocks_sm_locked_max_mhz", "clocks_sm_app_mhz"))
    out: List[Finding] = []

    hw = [(g, [_HW[r] for r in _reasons(g) if r in _HW]) for g in gpus]
    hw = [(g, names) for g, names in hw if names]
    if hw:
        # HW slowdown is asserted by the board or the system (power supply, thermal sensor, EDPp):
        # it halves clocks or worse at any load, so it is a fault even when the GPU is idle.
        # NVIDIA nvml.h: nvmlClocksEventReasonHwSlowdown / HwPowerBrakeSlowdown.
        out.append(THROTTLE.error(
            "hw-slowdown",
            f"Hardware slowdown active on {gpu_list([g for g, _ in hw])}: "
            + "; ".join(f"GPU {g.index}: {', '.join(n)}" for g, n in hw),
            detail="HW Slowdown / HW Power Brake / HW Thermal Slowdown cut the clocks by half or more. They "
                   "are raised by the board or chassis (power supply or power-brake signal, overheating), "
                   "not by your job.",
            evidence=[Evidence(gpu_path(g, "throttle_reasons"), list(g.throttle_reasons or []),
                               expected="no hw_* reason active") for g, _ in hw],
            fix=Fix("Check the chassis power supplies and cooling, then reset the GPU; report it to the "
                    "provider if it persists",
                    commands=["nvidia-smi -q -d PERFORMANCE",
                              "sudo nvidia-smi -i " + ",".join(str(g.index) for g, _ in hw) + " -r"],
                    url="https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html"),
        ))

    faulted = {g.index for g, _ in hw}  # already an error there: the same board fault, said once
    maybe = [g for g in gpus if g.index not in faulted and any(r in _HW_MAYBE for r in _reasons(g))]
    if maybe:
        out.append(THROTTLE.warning(
            "hw-slowdown-seen",
            f"HW Slowdown reported on {gpu_list(maybe)} in one reading: a fault if it persists, "
            "harmless during a P-state or clock change",
            detail="HW Slowdown halves clocks or worse when the board asserts it (temperature, power brake, "
                   "power draw). NVIDIA notes that it may also be reported briefly during a P-state or clock "
                   "change, so only a reading that stays tells.",
            evidence=[Evidence(gpu_path(g, "throttle_reasons"), list(g.throttle_reasons or []),
                               expected="hw_slowdown not active") for g in maybe],
            fix=Fix("Watch the reason for a few seconds; if it stays active, check the chassis power supplies and "
                    "cooling, then reset the GPU",
                    commands=[f"nvidia-smi --query-gpu=index,{reasons_field(ctx, 'hw_slowdown')},clocks.sm,power.draw "
                              "--format=csv -l 1"],
                    url="https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html"),
        ))

    unknown = [g for g in gpus if any(r.startswith("unknown_0x") for r in _reasons(g))]
    if unknown:
        out.append(THROTTLE.info(
            "unknown-reason",
            "Clock-event reason bits this envdoctor cannot name on "
            + "; ".join(f"GPU {g.index}: " + ", ".join(r for r in _reasons(g) if r.startswith("unknown_0x"))
                        for g in unknown),
            detail="A newer driver reports a reason that the bundled NVML names do not cover; nvidia-smi "
                   "prints its name.",
            evidence=[Evidence(gpu_path(g, "throttle_reasons"), list(g.throttle_reasons or [])) for g in unknown],
            fix=Fix("Read the reason's name from nvidia-smi", commands=["nvidia-smi -q -d PERFORMANCE"]),
        ))

    thermal = [g for g in gpus if any(r in _THERMAL for r in _reasons(g))]
    if thermal:
        out.append(THROTTLE.warning(
            "thermal",
            f"SW thermal slowdown active on {gpu_list(thermal)}: "
            + "; ".join(f"GPU {g.index} at {g.temperature_c:g} C" if g.temperature_c is not None
                        else f"GPU {g.index}" for g in thermal),
            detail="The driver lowers clocks because the GPU (or its memory) is above its thermal target; "
                   "cooling is not keeping up.",
            evidence=[Evidence(gpu_path(g, "throttle_reasons"), list(g.throttle_reasons or []),
                               expected="sw_thermal_slowdown not active") for g in thermal]
                     + [Evidence(gpu_path(g, "temperature_c"), g.temperature_c,
                                 expected=f"< {g.temperature_slowdown_c:g} C (slowdown)"
                                 if g.temperature_slowdown_c else None)
                        for g in thermal if g.temperature_c is not None],
            fix=Fix("Improve airflow/cooling (fans, blanking panels, inlet temperature) and check the fan speed",
                    commands=["nvidia-smi -q -d TEMPERATURE,PERFORMANCE"]),
        ))

    capped = [g for g in gpus if "sw_power_cap" in _reasons(g)]
    # NVML nvmlClocksEventReasonSwPowerCap: "the GPU power draw is at the power limit and clocks are lowered to stay
    # under it" -- how an H100/H200 (or a 4090) at its default limit runs a matmul: normal at full load. Only a
    # limit below the default makes it a cost worth a warning (power-limit-lowered says the same on its own).
    at_default = [g for g in capped if looks_loaded(g) and g.power_limit_w and g.power_default_limit_w
                  and g.power_limit_w >= 0.97 * g.power_default_limit_w]
    loaded = [g for g in capped if looks_loaded(g) and g not in at_default]
    idle = [g for g in capped if not looks_loaded(g)]
    if at_default:
        out.append(THROTTLE.info(
            "power-cap-at-limit",
            f"SW power cap under load at the default power limit on {gpu_list(at_default)} ("
            + "; ".join(_power_text(g) for g in at_default) + "): normal at full load, not a fault",
            detail="The GPU draws its whole (default) power limit and the driver holds the clocks there, as NVML "
                   "documents SW Power Cap; benchmarks judge the throughput that results.",
            evidence=[Evidence(gpu_path(g, "throttle_reasons"), list(g.throttle_reasons or [])) for g in at_default]
                     + [Evidence(gpu_path(g, "power_limit_w"), g.power_limit_w,
                                 expected=f">= {g.power_default_limit_w:g} W (default)") for g in at_default],
            fix=Fix("Nothing to change; compare the benchmark figures with what this GPU reaches",
                    commands=["envdoctor bench"])))
    if loaded:
        out.append(THROTTLE.warning(
            "power-cap",
            f"Power cap limits clocks under load on {gpu_list(loaded)}: "
            + "; ".join(_power_text(g) for g in loaded),
            detail="The GPU draws its whole power limit and the driver lowers clocks to stay under it. "
                   "Expected on some workloads, but a limit below the default, or a hot GPU, costs speed.",
            evidence=[Evidence(gpu_path(g, "throttle_reasons"), list(g.throttle_reasons or []))
                      for g in loaded]
                     + [Evidence(gpu_path(g, "power_draw_w"), g.power_draw_w,
                                 expected=f"< power limit {g.power_limit_w:g} W" if g.power_limit_w else None)
                        for g in loaded],
            fix=Fix("Keep the power limit at its default (or the maximum the board allows)",
                    commands=["nvidia-smi -q -d POWER", command("sudo", "nvidia-smi", "-pl", placeholder("<watts>"))]),
        ))
    if idle:
        # SW Power Cap is reported in P8 at 15-30 W on A40/RTX A6000/RTX 5090 (real captures in
        # tests/fixtures/perf-throttle): a reporting quirk at idle, not a fault; only load tells.
        out.append(THROTTLE.info(
            "power-cap-idle",
            f"SW power cap reported while idle on {gpu_list(idle)} ("
            + "; ".join(_power_text(g) for g in idle) + "): not a fault at idle, not verified under load",
            evidence=[Evidence(gpu_path(g, "throttle_reasons"), list(g.throttle_reasons or []))
                      for g in idle],
            fix=Fix("Re-check while a job runs",
                    commands=[f"nvidia-smi --query-gpu=index,power.draw,power.limit,{reasons_field(ctx, 'active')} "
                              "--format=csv -l 5"]),
        ))

    # "clocks-locked" below needs the lock itself (clocks_sm_locked_max_mhz), which no NVML getter or nvidia-smi
    # output gives envdoctor; what NVML does report is the reason nvmlClocksEventReasonApplicationsClocksSetting
    # ("GPU clocks are limited by current setting of applications clocks"): active under load with the SM clock
    # below 90% of its maximum, the clocks are held by a setting (application clocks, or locked clocks)
    held = [g for g in gpus if "applications_clocks_setting" in _reasons(g) and looks_loaded(g)
            and g.clocks_sm_mhz and g.clocks_sm_max_mhz and g.clocks_sm_mhz < 0.9 * g.clocks_sm_max_mhz]
    if held:
        out.append(THROTTLE.warning(
            "clock-setting",
            "GPU clocks held below the maximum by a clock setting under load on "
            + "; ".join(f"GPU {g.index}: {g.clocks_sm_mhz} MHz of {g.clocks_sm_max_mhz} MHz" for g in held),
            detail="The Applications Clocks Setting reason is active while the GPU works: application clocks "
                   "(nvidia-smi -ac) or locked clocks (nvidia-smi -lgc) hold the SM clock down.",
            evidence=[Evidence(gpu_path(g, "throttle_reasons"), list(g.throttle_reasons or []),
                               expected="applications_clocks_setting not active under load") for g in held]
                     + [Evidence(gpu_path(g, "clocks_sm_mhz"), g.clocks_sm_mhz,
                                 expected=f">= {0.9 * g.clocks_sm_max_mhz:g} MHz (90% of max)") for g in held],
            fix=Fix("Reset the locked GPU clocks and the application clocks",
                    commands=[c for g in held for c in (f"sudo nvidia-smi -i {g.index} -rgc",
                                                        f"sudo nvidia-smi -i {g.index} -rac")],
                    url="https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html")))

    for code, what, field, ref_field, fraction, zero_unset, text, expected, detail, fix, reset in _LOWERED:
        low = [g for g in gpus if getattr(g, field) is not None and (getattr(g, field) or not zero_unset)
               and getattr(g, ref_field) and getattr(g, field) < fraction * getattr(g, ref_field)]
        if low:
            out.append(THROTTLE.warning(
                code.split("/", 1)[1], f"{what} on " + "; ".join(f"GPU {g.index}: " + text.format(v=getattr(g, field),
                                                                              ref=getattr(g, ref_field)) for g in low),
                detail=detail,
                evidence=[Evidence(gpu_path(g, field), getattr(g, field), expected=expected.format(ref=getattr(g, ref_field)))
                          for g in low],
                fix=Fix(fix, commands=[reset.format(i=g.index, ref=getattr(g, ref_field)) for g in low])))
    return out


def _power_text(g: Gpu) -> str:
    if g.power_draw_w is not None and g.power_limit_w:
        return f"GPU {g.index} {g.power_draw_w:g} W of {g.power_limit_w:g} W"
    return f"GPU {g.index}"


VGPU_LICENSE = Findings("gpu.vgpu-license", "GPU_THROTTLED", kinds=("unlicensed",))
_VGPU_LICENSING_URL = "https://docs.nvidia.com/ai-enterprise/release-8/latest/infra-software/vgpu/licensing.html"


@check(VGPU_LICENSE, "vGPUs hold a license")
def vgpu_license(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "vGPU license")  # GPUs that are not vGPUs need none: passed
    unlicensed = [g for g in gpus if g.vgpu_license == "unlicensed"]
    if not unlicensed:
        return []
    # NVIDIA AI Enterprise, "NVIDIA vGPU for Compute Licensing": an unlicensed vGPU starts at full capability and
    # after a 20-minute grace period its compute performance is reduced to an idle level until it gets a license
    return [VGPU_LICENSE.warning(
        "unlicensed",
        f"vGPU without a license on {gpu_list(unlicensed)}: compute is cut to an idle level 20 minutes after boot",
        detail="NVIDIA enforces vGPU software licensing in the guest driver: an unlicensed vGPU runs at full "
               "capability for a 20-minute grace period, then its performance is degraded until a license is "
               "acquired. Benchmarks taken early look fine and long jobs slow down.",
        evidence=[Evidence(gpu_path(g, "vgpu_license"), g.vgpu_license, expected="licensed",
                           source="NVML nvmlDeviceGetGridLicensableFeatures / nvidia-smi -q 'License Status'")
                  for g in unlicensed],
        fix=Fix("Configure the guest's license client (client configuration token from the NVIDIA License System) "
                "and restart nvidia-gridd, or ask the provider for a licensed vGPU",
                commands=["nvidia-smi -q | grep -i -A 2 'License Status'", "sudo systemctl restart nvidia-gridd"],
                url=_VGPU_LICENSING_URL),
    )]
