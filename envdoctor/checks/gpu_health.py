"""GPU health checks: throttling, memory errors, other tenants, MIG, persistence mode, compute mode."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..domain.gpus import gpu_label
from ..domain.pci import bus_key
from ..facts import Driver, Facts, Gpu, ProbeStatus
from ..findings import Evidence, Finding, Fix, Severity
from ..remedies import command, kernel_log_xid, placeholder, set_env
from .base import Check, CheckContext, SkipCheck, registrar, section_reason

CHECKS: List[Check] = []
check = registrar(CHECKS)

MIB = 2**20
GIB = 2**30


# --------------------------------------------------------------------------- helpers shared by the health checks


def gpu_path(g: Gpu, fieldname: str) -> str:
    return f"driver.gpus[{g.index}].{fieldname}"


def require_gpus(facts: Facts, what: str) -> List[Gpu]:
    """The GPUs the driver probe saw; SkipCheck when there are none to judge."""
    driver: Driver = facts.driver
    if driver.status != ProbeStatus.OK:
        raise SkipCheck(section_reason(driver, what))
    if not driver.gpus:
        raise SkipCheck(f"{what} unknown: the driver reports no GPU")
    return list(driver.gpus)


def require_any(gpus: List[Gpu], fields: Tuple[str, ...], what: str) -> None:
    if not any(getattr(g, f) is not None for g in gpus for f in fields):
        raise SkipCheck(f"{what} unknown: the probe did not report {', '.join(fields)}")


def gpu_list(gpus: List[Gpu]) -> str:
    idx = [str(g.index) for g in gpus]
    return ("GPU " if len(idx) == 1 else "GPUs ") + ", ".join(idx)


def looks_loaded(g: Gpu) -> bool:
    """Readings taken under load: our own load (under_load) or the GPU visibly working.

    Power draw within 10% of the limit only happens under load; utilisation is a weaker sign.
    """
    if g.under_load:
        return True
    if g.power_draw_w is not None and g.power_limit_w and g.power_draw_w >= 0.9 * g.power_limit_w:
        return True
    return g.utilization_gpu_pct is not None and g.utilization_gpu_pct >= 50


# --------------------------------------------------------------------------- GPU_THROTTLED

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
# gpu_idle, applications_clocks_setting, sync_boost, display_clocks_setting: normal operation, not faults.


def _reasons(g: Gpu) -> List[str]:
    return [r.lower() for r in (g.throttle_reasons or [])]


@check("gpu.throttle", "GPU clocks are not throttled", categories=("GPU_THROTTLED",))
def throttle(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "throttle reasons")
    require_any(gpus, ("throttle_reasons", "power_limit_w", "clocks_sm_locked_max_mhz", "clocks_sm_app_mhz"),
                "throttle reasons")
    out: List[Finding] = []

    hw = [(g, [_HW[r] for r in _reasons(g) if r in _HW]) for g in gpus]
    hw = [(g, names) for g, names in hw if names]
    if hw:
        # HW slowdown is asserted by the board or the system (power supply, thermal sensor, EDPp):
        # it halves clocks or worse at any load, so it is a fault even when the GPU is idle.
        # NVIDIA nvml.h: nvmlClocksEventReasonHwSlowdown / HwPowerBrakeSlowdown.
        out.append(Finding(
            code="gpu.throttle/hw-slowdown",
            category="GPU_THROTTLED",
            severity=Severity.ERROR,
            summary=f"Hardware slowdown active on {gpu_list([g for g, _ in hw])}: "
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
        out.append(Finding(
            code="gpu.throttle/hw-slowdown-seen",
            category="GPU_THROTTLED",
            severity=Severity.WARNING,
            summary=f"HW Slowdown reported on {gpu_list(maybe)} in one reading: a fault if it persists, "
                    "harmless during a P-state or clock change",
            detail="HW Slowdown halves clocks or worse when the board asserts it (temperature, power brake, "
                   "power draw). NVIDIA notes that it may also be reported briefly during a P-state or clock "
                   "change, so only a reading that stays tells.",
            evidence=[Evidence(gpu_path(g, "throttle_reasons"), list(g.throttle_reasons or []),
                               expected="hw_slowdown not active") for g in maybe],
            fix=Fix("Watch the reason for a few seconds; if it stays active, check the chassis power supplies and "
                    "cooling, then reset the GPU",
                    commands=["nvidia-smi --query-gpu=index,clocks_event_reasons.hw_slowdown,clocks.sm,power.draw "
                              "--format=csv -l 1"],
                    url="https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html"),
        ))

    unknown = [g for g in gpus if any(r.startswith("unknown_0x") for r in _reasons(g))]
    if unknown:
        out.append(Finding(
            code="gpu.throttle/unknown-reason",
            category="GPU_THROTTLED",
            severity=Severity.INFO,
            summary="Clock-event reason bits this envdoctor cannot name on "
                    + "; ".join(f"GPU {g.index}: " + ", ".join(r for r in _reasons(g) if r.startswith("unknown_0x"))
                                for g in unknown),
            detail="A newer driver reports a reason that the bundled NVML names do not cover; nvidia-smi "
                   "prints its name.",
            evidence=[Evidence(gpu_path(g, "throttle_reasons"), list(g.throttle_reasons or [])) for g in unknown],
            fix=Fix("Read the reason's name from nvidia-smi", commands=["nvidia-smi -q -d PERFORMANCE"]),
        ))

    thermal = [g for g in gpus if any(r in _THERMAL for r in _reasons(g))]
    if thermal:
        out.append(Finding(
            code="gpu.throttle/thermal",
            category="GPU_THROTTLED",
            severity=Severity.WARNING,
            summary=f"SW thermal slowdown active on {gpu_list(thermal)}: "
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
    loaded = [g for g in capped if looks_loaded(g)]
    idle = [g for g in capped if not looks_loaded(g)]
    if loaded:
        out.append(Finding(
            code="gpu.throttle/power-cap",
            category="GPU_THROTTLED",
            severity=Severity.WARNING,
            summary=f"Power cap limits clocks under load on {gpu_list(loaded)}: "
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
        out.append(Finding(
            code="gpu.throttle/power-cap-idle",
            category="GPU_THROTTLED",
            severity=Severity.INFO,
            summary=f"SW power cap reported while idle on {gpu_list(idle)} ("
                    + "; ".join(_power_text(g) for g in idle) + "): not a fault at idle, not verified under load",
            evidence=[Evidence(gpu_path(g, "throttle_reasons"), list(g.throttle_reasons or []))
                      for g in idle],
            fix=Fix("Re-check while a job runs",
                    commands=["nvidia-smi --query-gpu=index,power.draw,power.limit,clocks_event_reasons.active "
                              "--format=csv -l 5"]),
        ))

    lowered = [g for g in gpus if g.power_limit_w is not None and g.power_default_limit_w
               and g.power_limit_w < 0.97 * g.power_default_limit_w]
    if lowered:
        out.append(Finding(
            code="gpu.throttle/power-limit-lowered",
            category="GPU_THROTTLED",
            severity=Severity.WARNING,
            summary="Power limit set below the default on "
                    + "; ".join(f"GPU {g.index}: {g.power_limit_w:g} W of {g.power_default_limit_w:g} W"
                                for g in lowered),
            detail="A lowered power limit caps clocks whenever the GPU is busy.",
            evidence=[Evidence(gpu_path(g, "power_limit_w"), g.power_limit_w,
                               expected=f">= {g.power_default_limit_w:g} W (default)") for g in lowered],
            fix=Fix("Restore the default power limit",
                    commands=[f"sudo nvidia-smi -i {g.index} -pl {g.power_default_limit_w:g}" for g in lowered]),
        ))

    locked = [g for g in gpus if g.clocks_sm_locked_max_mhz and g.clocks_sm_max_mhz
              and g.clocks_sm_locked_max_mhz < 0.9 * g.clocks_sm_max_mhz]
    if locked:
        out.append(Finding(
            code="gpu.throttle/clocks-locked",
            category="GPU_THROTTLED",
            severity=Severity.WARNING,
            summary="GPU clocks locked below the maximum on "
                    + "; ".join(f"GPU {g.index}: {g.clocks_sm_locked_max_mhz} MHz of {g.clocks_sm_max_mhz} MHz"
                                for g in locked),
            evidence=[Evidence(gpu_path(g, "clocks_sm_locked_max_mhz"), g.clocks_sm_locked_max_mhz,
                               expected=f"unlocked (max {g.clocks_sm_max_mhz} MHz)") for g in locked],
            fix=Fix("Reset the locked GPU clocks",
                    commands=[f"sudo nvidia-smi -i {g.index} -rgc" for g in locked]),
        ))
    # application clocks set below their default (`nvidia-smi -ac`): NVML nvmlDeviceGetApplicationsClock vs
    # nvmlDeviceGetDefaultApplicationsClock
    app_low = [g for g in gpus if g.clocks_sm_app_mhz and g.clocks_sm_app_default_mhz
               and g.clocks_sm_app_mhz < 0.97 * g.clocks_sm_app_default_mhz]
    if app_low:
        out.append(Finding(
            code="gpu.throttle/app-clocks-lowered",
            category="GPU_THROTTLED",
            severity=Severity.WARNING,
            summary="Application clocks set below the default on "
                    + "; ".join(f"GPU {g.index}: {g.clocks_sm_app_mhz} MHz of {g.clocks_sm_app_default_mhz} MHz"
                                for g in app_low),
            evidence=[Evidence(gpu_path(g, "clocks_sm_app_mhz"), g.clocks_sm_app_mhz,
                               expected=f">= {g.clocks_sm_app_default_mhz} MHz (default)") for g in app_low],
            fix=Fix("Reset the application clocks to their defaults",
                    commands=[f"sudo nvidia-smi -i {g.index} -rac" for g in app_low]),
        ))
    return out


def _power_text(g: Gpu) -> str:
    if g.power_draw_w is not None and g.power_limit_w:
        return f"GPU {g.index} {g.power_draw_w:g} W of {g.power_limit_w:g} W"
    return f"GPU {g.index}"


# --------------------------------------------------------------------------- GPU_MEMORY_ERRORS


@check("gpu.memory-errors", "GPU memory has no uncorrectable errors", categories=("GPU_MEMORY_ERRORS",))
def memory_errors(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "ECC and row-remap state")
    fields = ("ecc_volatile_uncorrected", "ecc_aggregate_uncorrected", "remapped_rows_pending",
              "remapped_rows_failure", "remapped_rows_uncorrectable", "retired_pages_pending",
              "retired_pages_double_bit", "inforom_valid")
    if not any(getattr(g, f) is not None for g in gpus for f in fields) and not any(_inforom_note(g) for g in gpus):
        raise SkipCheck("ECC and row-remap state unknown: the probe did not report ECC, row remapping, "
                        "retired pages or infoROM state")
    out: List[Finding] = []
    for g in gpus:
        label = gpu_label(g)
        reset = Fix("Drain the GPU and reset it (or reboot) so the pending remap/retirement is applied; "
                    "if errors return, ask the provider to replace the GPU",
                    commands=[f"sudo nvidia-smi -i {g.index} -r", f"nvidia-smi -i {g.index} -q -d ROW_REMAPPER,ECC"],
                    url="https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html")
        if g.remapped_rows_failure:
            out.append(Finding(
                "gpu.memory-errors/remap-failed", "GPU_MEMORY_ERRORS", Severity.ERROR,
                f"{label}: row remapping failed (no spare rows left)",
                detail="NVIDIA's memory error management: a remapping failure means the GPU cannot repair "
                       "its memory any more and should be replaced.",
                evidence=[Evidence(gpu_path(g, "remapped_rows_failure"), True, expected="false")],
                fix=Fix("Ask the provider to replace this GPU", commands=[f"nvidia-smi -i {g.index} -q -d ROW_REMAPPER"],
                        url="https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"),
            ))
        if g.remapped_rows_pending:
            n = g.remapped_rows_uncorrectable
            out.append(Finding(
                "gpu.memory-errors/remap-pending", "GPU_MEMORY_ERRORS", Severity.ERROR,
                f"{label}: row remapping pending after "
                + (f"{n} uncorrectable error(s)" if n is not None else "memory errors") + "; GPU reset required",
                detail="Until the GPU is reset the faulty rows stay in use: jobs can crash with Xid 48/94/95 "
                       "or compute on bad memory.",
                evidence=[Evidence(gpu_path(g, "remapped_rows_pending"), True, expected="false")]
                         + ([Evidence(gpu_path(g, "remapped_rows_uncorrectable"), n, expected="0")]
                            if n is not None else []),
                fix=reset,
            ))
        elif g.remapped_rows_uncorrectable:
            out.append(Finding(
                "gpu.memory-errors/remapped-uncorrectable", "GPU_MEMORY_ERRORS", Severity.WARNING,
                f"{label}: {g.remapped_rows_uncorrectable} row(s) remapped after uncorrectable errors",
                detail="The remaps are applied, but a GPU that keeps collecting uncorrectable errors is failing.",
                evidence=[Evidence(gpu_path(g, "remapped_rows_uncorrectable"), g.remapped_rows_uncorrectable,
                                   expected="0")],
                fix=Fix("Watch the count; ask the provider to check the GPU if it grows",
                        commands=[f"nvidia-smi -i {g.index} -q -d ROW_REMAPPER"]),
            ))
        if g.ecc_volatile_uncorrected:
            out.append(Finding(
                "gpu.memory-errors/ecc-volatile", "GPU_MEMORY_ERRORS", Severity.ERROR,
                f"{label}: {g.ecc_volatile_uncorrected} uncorrectable ECC error(s) since the last reset",
                evidence=[Evidence(gpu_path(g, "ecc_volatile_uncorrected"), g.ecc_volatile_uncorrected,
                                   expected="0")],
                fix=reset,
            ))
        elif g.ecc_aggregate_uncorrected:
            out.append(Finding(
                "gpu.memory-errors/ecc-aggregate", "GPU_MEMORY_ERRORS", Severity.WARNING,
                f"{label}: {g.ecc_aggregate_uncorrected} uncorrectable ECC error(s) over the GPU's lifetime",
                evidence=[Evidence(gpu_path(g, "ecc_aggregate_uncorrected"), g.ecc_aggregate_uncorrected,
                                   expected="0")],
                fix=Fix("Check whether the count grows; report it to the provider if it does",
                        commands=[f"nvidia-smi -i {g.index} -q -d ECC"]),
            ))
        if g.retired_pages_pending:
            out.append(Finding(
                "gpu.memory-errors/retirement-pending", "GPU_MEMORY_ERRORS", Severity.ERROR,
                f"{label}: page retirement pending; the GPU must be reset to retire the bad pages",
                evidence=[Evidence(gpu_path(g, "retired_pages_pending"), True, expected="false")],
                fix=Fix("Reset the GPU (or reboot) to retire the pages",
                        commands=[f"sudo nvidia-smi -i {g.index} -r", f"nvidia-smi -i {g.index} -q -d PAGE_RETIREMENT"],
                        url="https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html"),
            ))
        elif g.retired_pages_double_bit:
            out.append(Finding(
                "gpu.memory-errors/retired-pages", "GPU_MEMORY_ERRORS", Severity.WARNING,
                f"{label}: {g.retired_pages_double_bit} page(s) retired after double-bit errors",
                evidence=[Evidence(gpu_path(g, "retired_pages_double_bit"), g.retired_pages_double_bit,
                                   expected="0")],
                fix=Fix("Watch the count; NVIDIA advises replacing a GPU that keeps retiring pages",
                        commands=[f"nvidia-smi -i {g.index} -q -d PAGE_RETIREMENT"],
                        url="https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html"),
            ))
        note = _inforom_note(g)
        if g.inforom_valid is False or note:
            out.append(Finding(
                "gpu.memory-errors/inforom", "GPU_MEMORY_ERRORS", Severity.WARNING,
                f"{label}: infoROM is corrupted",
                detail="nvidia-smi warns 'infoROM is corrupted': the GPU's error records (ECC counts, retired "
                       "pages) cannot be trusted or saved.",
                evidence=[Evidence(gpu_path(g, "inforom_valid"), g.inforom_valid, expected="true")]
                         + ([Evidence(gpu_path(g, "notes"), note)] if note else []),
                fix=Fix("Ask the provider to reflash the infoROM or replace the GPU",
                        commands=[f"nvidia-smi -i {g.index} -q -d ECC"]),
            ))
    mig_unread = [g for g in gpus if g.mig_mode_current and g.remapped_rows_pending is None
                  and g.remapped_rows_uncorrectable is None]
    if mig_unread:
        out.append(Finding(
            "gpu.memory-errors/remap-unread-mig", "GPU_MEMORY_ERRORS", Severity.INFO,
            f"Row-remap state not reported on {gpu_list(mig_unread)} while MIG is on; pending remaps there are "
            "not checked",
            evidence=[Evidence(gpu_path(g, "remapped_rows_pending"), None, expected="reported",
                               source="MIG mode on") for g in mig_unread],
            fix=Fix("Read it on the host", commands=[f"nvidia-smi -i {g.index} -q -d ROW_REMAPPER" for g in mig_unread]),
        ))
    if ctx.facts.driver.kernel_log_readable is None and not any(f.severity != Severity.INFO for f in out):
        # the kernel log was not read (a snapshot or paste without it): say so rather than imply it is
        # clean; when it was read, gpu.xid judges it
        out.append(Finding(
            "gpu.memory-errors/xid-not-read", "GPU_MEMORY_ERRORS", Severity.INFO,
            "ECC and row-remap counters are clean; Xid errors in the kernel log were not read",
            fix=Fix("Look for Xid errors yourself", commands=["sudo dmesg -T | grep -i xid"]),
        ))
    return out


def _inforom_note(g: Gpu) -> Optional[str]:
    for n in g.notes or []:
        if "inforom" in n.lower() and "corrupt" in n.lower():
            return n
    return None


# --------------------------------------------------------------------------- Xid events (kernel log)

# What an Xid code means, its category and severity: compat_data/xid.json, from NVIDIA's Xid catalog.
# Codes not listed there are reported as info with a pointer to the catalog.


def _xid_catalog(compat) -> Tuple[Dict[int, Tuple[str, str, str]], Dict[int, str]]:
    """({code: (meaning, category, severity)} for hardware codes, {code: meaning} for application-raised ones)."""
    hardware: Dict[int, Tuple[str, str, str]] = {}
    application: Dict[int, str] = {}
    for row in compat.table("xid")["rows"]:
        if row.get("application_error"):
            application[int(row["code"])] = row["meaning"]
        else:
            hardware[int(row["code"])] = (row["meaning"], row["category"], row["severity"])
    return hardware, application


_XID_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"


@check("gpu.xid", "No GPU Xid errors in the kernel log",
       categories=("GPU_MEMORY_ERRORS", "INTERCONNECT", "GPU_XID_ERRORS"))
def xid(ctx: CheckContext) -> List[Finding]:
    drv: Driver = ctx.facts.driver
    if drv.kernel_log_readable is None:
        raise SkipCheck("Xid errors unknown: the kernel log was not read (a snapshot, a paste, or --facts from "
                        "an older envdoctor)")
    if drv.kernel_log_readable is False:
        raise SkipCheck(f"kernel log not readable: {drv.kernel_log_reason or 'no reason given'}", notes=[Finding(
            "gpu.xid/log-unreadable", "GPU_XID_ERRORS", Severity.INFO,
            f"kernel log not readable: {drv.kernel_log_reason or 'no reason given'}; Xid errors not checked",
            detail="Containers usually lack CAP_SYSLOG, and kernel.dmesg_restrict=1 limits dmesg to root.",
            evidence=[Evidence("driver.kernel_log_reason", drv.kernel_log_reason)],
            fix=Fix("Read the kernel log on the host (or as root) and look for Xid lines",
                    commands=["sudo dmesg -T | grep -i 'NVRM: Xid'", "sudo journalctl -k -b | grep -i xid"],
                    url=_XID_URL),
        )])
    events = list(drv.xid_events or [])
    if not events:
        if drv.status == ProbeStatus.ABSENT:
            raise SkipCheck("no NVIDIA driver: the kernel log can hold no Xid error to judge")
        return []
    gpus = {bus_key(g.pci_bus_id): g for g in drv.gpus if bus_key(g.pci_bus_id)}
    # one finding per (code, GPU): the count, the GPU and what the code means
    groups: Dict[Tuple[int, Optional[str]], List[int]] = {}
    for i, ev in enumerate(events):
        # an address that does not parse is still named as the log wrote it (quoted in the fix)
        groups.setdefault((ev.code, bus_key(ev.pci_bus_id) or (ev.pci_bus_id or "").strip().lower() or None),
                          []).append(i)
    src = drv.kernel_log_source or "the kernel log"
    catalog, app_xids = _xid_catalog(ctx.compat)
    out: List[Finding] = []
    for (code, bus), idx in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        g = gpus.get(bus)
        where = f"{gpu_label(g)} at {bus}" if g is not None else f"the GPU at {bus}" if bus else "a GPU"
        first, last = events[idx[0]], events[idx[-1]]
        meaning, category, severity = catalog.get(
            code, (app_xids.get(code, "see NVIDIA's Xid catalog"), "GPU_XID_ERRORS", Severity.INFO))
        if code in app_xids:
            meaning += "; usually raised by the application, not the hardware"
        when = f" (last at {last.timestamp})" if last.timestamp else ""
        reset = [f"sudo nvidia-smi -i {g.index} -r" if g is not None else command("sudo", "nvidia-smi", "-i", placeholder("<gpu>"), "-r")]
        if severity == Severity.INFO:
            fix = Fix("Look at the program that ran when it was logged; report it if it repeats without one",
                      commands=[kernel_log_xid(bus)], url=_XID_URL)
        elif code == 74:
            fix = Fix("Check the NVLink state and counters, then reset the GPU; report it if it repeats",
                      commands=["nvidia-smi nvlink -s", "nvidia-smi nvlink -e"] + reset, url=_XID_URL)
        elif category == "GPU_MEMORY_ERRORS":
            fix = Fix("Drain the GPU and reset it so remaps/retirements apply; ask the provider to replace it "
                      "if the errors return", commands=reset + ["nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT"],
                      url="https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html")
        else:
            fix = Fix("Drain the GPU and reset it (or reboot); repeated Xid 79/119/120 mean failing hardware "
                      "or power/cooling: report it to the provider", commands=reset + ["nvidia-smi -q"],
                      url=_XID_URL)
        out.append(Finding(
            f"gpu.xid/{code}", category, severity,
            f"{len(idx)} x Xid {code} on {where}{when}: {meaning}",
            detail=f"First logged: {first.message}" if first.message else None,
            evidence=[Evidence("driver.xid_events", len(idx), expected="no Xid " + str(code),
                               source=f"{src}: NVRM: Xid (PCI:{bus or '?'}): {code}, {first.message or ''}".rstrip())],
            fix=fix,
        ))
    return out


# --------------------------------------------------------------------------- GPUs NVML lost

# nvml.h: GPU_IS_LOST "the GPU has fallen off the bus or has otherwise become inaccessible"; RESET_REQUIRED
# "the GPU requires a reset before it can be used again"; GPU_NOT_FOUND; TIMEOUT is envdoctor's own (no answer
# before the probe's deadline)
_LOST_TEXT = {"GPU_IS_LOST": "fell off the bus or became inaccessible (NVML GPU_IS_LOST)",
              "GPU_NOT_FOUND": "is no longer found by the driver (NVML GPU_NOT_FOUND)",
              "RESET_REQUIRED": "needs a reset before it can be used (NVML RESET_REQUIRED)",
              "TIMEOUT": "did not answer NVML before the deadline (hung)"}


@check("gpu.reachable", "Every GPU answers the driver", categories=("NO_GPU_VISIBLE",))
def reachable(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "GPU reachability")
    lost = [g for g in gpus if g.nvml_error in _LOST_TEXT]
    closed = [g for g in gpus if g.nvml_error and g.nvml_error not in _LOST_TEXT]
    out: List[Finding] = []
    if closed:
        # NO_PERMISSION on one GPU: a Slurm/cgroup device limit or device-node permissions, not a broken GPU
        out.append(Finding(
            "gpu.reachable/not-accessible", "NO_GPU_VISIBLE", Severity.INFO,
            f"{gpu_list(closed)} not accessible to this process (" + "; ".join(
                f"GPU {g.index}: NVML {g.nvml_error}" for g in closed) + "): not judged",
            detail="Usually the job's device limits (Slurm, cgroups, a container given some GPUs) or the "
                   "permissions of /dev/nvidia*; those GPUs are not this job's to use.",
            evidence=[Evidence(gpu_path(g, "nvml_error"), g.nvml_error) for g in closed],
            fix=Fix("Nothing to do if those GPUs belong to other jobs; otherwise check the device permissions",
                    commands=["ls -l /dev/nvidia*"]),
        ))
    if not lost:
        return out
    return out + [Finding(
        "gpu.reachable/lost", "NO_GPU_VISIBLE", Severity.ERROR,
        f"{len(lost)} of {len(gpus)} GPU(s) not answering: "
        + "; ".join(f"{gpu_label(g)} {_LOST_TEXT.get(g.nvml_error or '', 'failed: NVML ' + str(g.nvml_error))}"
                    for g in lost),
        detail="Jobs that use it fail (CUDA error, Xid 79) and the rest of its facts are unknown; the kernel log "
               "usually says why.",
        evidence=[Evidence(gpu_path(g, "nvml_error"), g.nvml_error, expected="none") for g in lost],
        fix=Fix("Drain the GPU and reset it (or reboot); if it stays lost, report it to the provider",
                commands=["sudo dmesg -T | grep -i -E 'xid|fallen off'"]
                         + [f"sudo nvidia-smi -i {g.index} -r" for g in lost],
                url="https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"),
    )]


# --------------------------------------------------------------------------- GPU_BUSY


@check("gpu.busy", "No other process is using the GPUs", categories=("GPU_BUSY",))
def busy(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "GPU processes")
    require_any(gpus, ("processes", "memory_used_bytes", "utilization_gpu_pct"), "GPU processes")
    out: List[Finding] = []
    # readings taken under envdoctor's own load show that load's memory and utilisation: only a
    # listed process is evidence of another tenant then
    compute: Dict[int, List] = {}
    for g in gpus:
        procs = [p for p in (g.processes or []) if p.type is None or "C" in p.type]
        if procs:
            compute[g.index] = procs
    if compute:
        ev = []
        parts = []
        for idx, procs in compute.items():
            mem = sum(p.used_memory_bytes or 0 for p in procs)
            parts.append(f"GPU {idx}: " + ", ".join(
                f"{p.name or '?'} (pid {p.pid}" + (f", {p.used_memory_bytes // MIB} MiB)" if p.used_memory_bytes else ")")
                for p in procs))
            ev.append(Evidence(f"driver.gpus[{idx}].processes", [p.pid for p in procs], expected="none",
                               source=f"{mem // MIB} MiB held"))
        out.append(Finding(
            "gpu.busy/processes", "GPU_BUSY", Severity.WARNING,
            "Other compute processes already on the GPUs: " + "; ".join(parts),
            detail="Their memory is not available to your job and they share the SMs: out-of-memory errors "
                   "and slower steps. Zombie processes from a crashed run look the same.",
            evidence=ev,
            fix=Fix("Stop the processes you own, or choose idle GPUs",
                    commands=["nvidia-smi --query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv",
                              command("kill", placeholder("<pid>")),
                              set_env(ctx.facts, "CUDA_VISIBLE_DEVICES", placeholder("<idle GPU indices>"))]),
        ))
    hidden = [g for g in gpus if not g.under_load and g.index not in compute and not g.processes and g.memory_used_bytes
              and g.memory_total_bytes and g.memory_used_bytes > max(GIB, 0.1 * g.memory_total_bytes)]
    if hidden:
        # in a container NVML cannot map other PID namespaces' processes, so memory in use with an
        # empty process list is another tenant or a process outside the container
        out.append(Finding(
            "gpu.busy/memory-held", "GPU_BUSY", Severity.WARNING,
            "GPU memory in use with no visible process: "
            + "; ".join(f"GPU {g.index}: {g.memory_used_bytes // MIB} MiB of {g.memory_total_bytes // MIB} MiB"
                        for g in hidden),
            detail="Usually a process in another container or on the host holds it.",
            evidence=[Evidence(gpu_path(g, "memory_used_bytes"), g.memory_used_bytes, expected="< 10% of total")
                      for g in hidden],
            fix=Fix("Find the process on the host, or choose idle GPUs",
                    commands=["nvidia-smi", set_env(ctx.facts, "CUDA_VISIBLE_DEVICES", placeholder("<idle GPU indices>"))]),
        ))
    busy_util = [g for g in gpus if not g.under_load and g.index not in compute and g not in hidden
                 and g.utilization_gpu_pct is not None and g.utilization_gpu_pct >= 50]
    if busy_util:
        out.append(Finding(
            "gpu.busy/utilization", "GPU_BUSY", Severity.WARNING,
            "GPUs busy before your job starts: "
            + "; ".join(f"GPU {g.index} at {g.utilization_gpu_pct:g}%" for g in busy_util),
            evidence=[Evidence(gpu_path(g, "utilization_gpu_pct"), g.utilization_gpu_pct, expected="< 50")
                      for g in busy_util],
            fix=Fix("Find what runs there, or choose idle GPUs",
                    commands=["nvidia-smi", set_env(ctx.facts, "CUDA_VISIBLE_DEVICES", placeholder("<idle GPU indices>"))]),
        ))
    return out


# --------------------------------------------------------------------------- MIG, persistence, compute mode


@check("gpu.mig", "GPUs are whole (MIG off)", categories=("MIG_ENABLED",))
def mig(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "MIG mode")
    require_any(gpus, ("mig_mode_current",), "MIG mode")
    out: List[Finding] = []
    on = [g for g in gpus if g.mig_mode_current]
    empty = [g for g in on if g.mig_device_count == 0]
    sliced = [g for g in on if g.mig_device_count != 0]
    disable = [f"sudo nvidia-smi -i {g.index} -mig 0" for g in on] + [f"sudo nvidia-smi -i {g.index} -r" for g in on]
    if empty:
        out.append(Finding(
            "gpu.mig/no-instances", "MIG_ENABLED", Severity.WARNING,
            f"MIG enabled with no MIG instance on {gpu_list(empty)}: CUDA sees no device there",
            evidence=[Evidence(gpu_path(g, "mig_device_count"), 0, expected="> 0 or MIG off") for g in empty],
            fix=Fix("Create MIG instances, or disable MIG to use the whole GPU",
                    commands=[command("sudo", "nvidia-smi", "mig", "-cgi", placeholder("<profile>"), "-C")] + disable),
        ))
    if sliced:
        counts = "; ".join(f"GPU {g.index}: {g.mig_device_count} instance(s)" if g.mig_device_count
                           else f"GPU {g.index}" for g in sliced)
        out.append(Finding(
            "gpu.mig/enabled", "MIG_ENABLED", Severity.INFO,
            f"MIG enabled on {gpu_list(sliced)} ({counts}): jobs see MIG slices, not whole GPUs",
            evidence=[Evidence(gpu_path(g, "mig_mode_current"), True) for g in sliced],
            fix=Fix("Disable MIG if you need whole GPUs", commands=disable),
        ))
    pending = [g for g in gpus if g.mig_mode_pending is not None and g.mig_mode_current is not None
               and g.mig_mode_pending != g.mig_mode_current]
    if pending:
        out.append(Finding(
            "gpu.mig/change-pending", "MIG_ENABLED", Severity.INFO,
            f"MIG mode change pending on {gpu_list(pending)} until the GPU is reset",
            evidence=[Evidence(gpu_path(g, "mig_mode_pending"), g.mig_mode_pending) for g in pending],
            fix=Fix("Reset the GPU to apply it", commands=[f"sudo nvidia-smi -i {g.index} -r" for g in pending]),
        ))
    return out


@check("gpu.persistence", "Persistence mode on", categories=("PERSISTENCE_MODE_OFF",))
def persistence(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "persistence mode")
    if (ctx.facts.host.os or "Linux") != "Linux":
        raise SkipCheck(f"persistence mode is a Linux setting (this is {ctx.facts.host.os})")
    require_any(gpus, ("persistence_mode",), "persistence mode")
    off = [g for g in gpus if g.persistence_mode is False]
    if not off:
        return []
    return [Finding(
        "gpu.persistence/off", "PERSISTENCE_MODE_OFF", Severity.INFO,
        f"Persistence mode off on {gpu_list(off)}",
        detail="Without a persistent client the driver tears the GPU state down between jobs: each CUDA "
               "start pays the initialisation again and clocks/ECC state reset.",
        evidence=[Evidence(gpu_path(g, "persistence_mode"), False, expected="true") for g in off],
        fix=Fix("Enable the persistence daemon (or persistence mode)",
                commands=["sudo systemctl enable --now nvidia-persistenced", "sudo nvidia-smi -pm 1"],
                url="https://docs.nvidia.com/deploy/driver-persistence/index.html"),
    )]


def _compute_mode(value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    v = value.strip().lower().replace(" ", "_").replace(".", "")
    if "prohibit" in v:
        return "Prohibited"
    if "thread" in v:
        return "Exclusive_Thread"
    if "exclusive" in v or v in ("e_process", "eprocess"):
        return "Exclusive_Process"
    if "default" in v:
        return "Default"
    return value


@check("gpu.compute-mode", "Compute mode allows shared use", categories=("COMPUTE_MODE_RESTRICTED",))
def compute_mode(ctx: CheckContext) -> List[Finding]:
    gpus = require_gpus(ctx.facts, "compute mode")
    require_any(gpus, ("compute_mode",), "compute mode")
    out: List[Finding] = []
    prohibited = [g for g in gpus if _compute_mode(g.compute_mode) == "Prohibited"]
    exclusive = [g for g in gpus if _compute_mode(g.compute_mode) in ("Exclusive_Process", "Exclusive_Thread")]
    if prohibited:
        out.append(Finding(
            "gpu.compute-mode/prohibited", "COMPUTE_MODE_RESTRICTED", Severity.ERROR,
            f"Compute mode Prohibited on {gpu_list(prohibited)}: no process can create a CUDA context there",
            evidence=[Evidence(gpu_path(g, "compute_mode"), g.compute_mode, expected="Default") for g in prohibited],
            fix=Fix("Set the compute mode back to Default",
                    commands=[f"sudo nvidia-smi -i {g.index} -c DEFAULT" for g in prohibited]),
        ))
    if exclusive:
        out.append(Finding(
            "gpu.compute-mode/exclusive", "COMPUTE_MODE_RESTRICTED", Severity.WARNING,
            f"Compute mode exclusive on {gpu_list(exclusive)}: only one process at a time may use each GPU",
            detail="A second process (another rank, an evaluation script, a notebook) fails with "
                   "'all CUDA-capable devices are busy or unavailable'.",
            evidence=[Evidence(gpu_path(g, "compute_mode"), g.compute_mode, expected="Default") for g in exclusive],
            fix=Fix("Set the compute mode back to Default if you share GPUs between processes",
                    commands=[f"sudo nvidia-smi -i {g.index} -c DEFAULT" for g in exclusive]),
        ))
    return out
