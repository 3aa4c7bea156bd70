"""GPU error checks: uncorrectable memory errors, row remapping, InfoROM, and Xid events in the kernel log."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ..domain.gpus import gpu_label
from ..domain.pci import bus_key
from ..model.actions import RESET_GPU, nvidia_action, strongest
from ..model.facts import Driver, Gpu, ProbeStatus
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import command, kernel_log_xid, placeholder
from ._gpus import gpu_list, gpu_path, require_gpus
from .base import NO_DRIVER, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)


def _should_be_zero(g: Gpu, field: str) -> List[Evidence]:
    return [Evidence(gpu_path(g, field), getattr(g, field), expected="0")]


def _query(g: Gpu, sections: str) -> str:
    """The nvidia-smi query that shows one GPU's ``sections`` (ROW_REMAPPER, ECC, PAGE_RETIREMENT)."""
    return f"nvidia-smi -i {g.index} -q -d {sections}"


def _counted(g: Gpu, code: str, field: str, what: str, fix: Fix, detail: Optional[str] = None) -> Finding:
    """A warning about errors the GPU has counted and already handled: "GPU 3 (...): 12 <what>"."""
    return MEMORY_ERRORS.warning(code.split("/", 1)[1], f"{gpu_label(g)}: {getattr(g, field)} {what}", detail=detail,
                                 evidence=_should_be_zero(g, field), fix=fix)


MEMORY_ERRORS = Findings("gpu.memory-errors", "GPU_MEMORY_ERRORS",
                         kinds=("ecc-aggregate", "ecc-volatile", "inforom", "remap-failed", "remap-pending",
                                "remap-unread-mig", "remapped-uncorrectable", "retired-pages", "retirement-pending",
                                "xid-not-read"))


@check(MEMORY_ERRORS, "GPU memory has no uncorrectable errors")
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
            out.append(MEMORY_ERRORS.error(
                "remap-failed",
                f"{label}: row remapping failed (no spare rows left)",
                detail="NVIDIA's memory error management: a remapping failure means the GPU cannot repair "
                       "its memory any more and should be replaced.",
                evidence=[Evidence(gpu_path(g, "remapped_rows_failure"), True, expected="false")],
                fix=Fix("Ask the provider to replace this GPU", commands=[_query(g, "ROW_REMAPPER")],
                        url="https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html"),
            ))
        if g.remapped_rows_pending:
            n = g.remapped_rows_uncorrectable
            out.append(MEMORY_ERRORS.error(
                "remap-pending",
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
            out.append(_counted(g, "gpu.memory-errors/remapped-uncorrectable", "remapped_rows_uncorrectable",
                                "row(s) remapped after uncorrectable errors",
                                Fix("Watch the count; ask the provider to check the GPU if it grows",
                                    commands=[_query(g, "ROW_REMAPPER")]),
                                detail="The remaps are applied, but a GPU that keeps collecting uncorrectable "
                                       "errors is failing."))
        if g.ecc_volatile_uncorrected:
            out.append(MEMORY_ERRORS.error(
                "ecc-volatile",
                f"{label}: {g.ecc_volatile_uncorrected} uncorrectable ECC error(s) since the last reset",
                evidence=_should_be_zero(g, "ecc_volatile_uncorrected"),
                fix=reset,
            ))
        elif g.ecc_aggregate_uncorrected:
            out.append(_counted(g, "gpu.memory-errors/ecc-aggregate", "ecc_aggregate_uncorrected",
                                "uncorrectable ECC error(s) over the GPU's lifetime",
                                Fix("Check whether the count grows; report it to the provider if it does",
                                    commands=[_query(g, "ECC")])))
        if g.retired_pages_pending:
            out.append(MEMORY_ERRORS.error(
                "retirement-pending",
                f"{label}: page retirement pending; the GPU must be reset to retire the bad pages",
                evidence=[Evidence(gpu_path(g, "retired_pages_pending"), True, expected="false")],
                fix=Fix("Reset the GPU (or reboot) to retire the pages",
                        commands=[f"sudo nvidia-smi -i {g.index} -r", f"nvidia-smi -i {g.index} -q -d PAGE_RETIREMENT"],
                        url="https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html"),
            ))
        elif g.retired_pages_double_bit:
            out.append(_counted(g, "gpu.memory-errors/retired-pages", "retired_pages_double_bit", "page(s) retired after double-bit errors",
                                Fix("Watch the count; NVIDIA advises replacing a GPU that keeps retiring pages",
                                    commands=[_query(g, "PAGE_RETIREMENT")],
                                    url="https://docs.nvidia.com/deploy/dynamic-page-retirement/index.html")))
        note = _inforom_note(g)
        if g.inforom_valid is False or note:
            out.append(MEMORY_ERRORS.warning(
                "inforom",
                f"{label}: infoROM is corrupted",
                detail="nvidia-smi warns 'infoROM is corrupted': the GPU's error records (ECC counts, retired "
                       "pages) cannot be trusted or saved.",
                evidence=[Evidence(gpu_path(g, "inforom_valid"), g.inforom_valid, expected="true")]
                         + ([Evidence(gpu_path(g, "notes"), note)] if note else []),
                fix=Fix("Ask the provider to reflash the infoROM or replace the GPU",
                        commands=[_query(g, "ECC")]),
            ))
    mig_unread = [g for g in gpus if g.mig_mode_current and g.remapped_rows_pending is None
                  and g.remapped_rows_uncorrectable is None]
    if mig_unread:
        out.append(MEMORY_ERRORS.info(
            "remap-unread-mig",
            f"Row-remap state not reported on {gpu_list(mig_unread)} while MIG is on; pending remaps there are "
            "not checked",
            evidence=[Evidence(gpu_path(g, "remapped_rows_pending"), None, expected="reported",
                               source="MIG mode on") for g in mig_unread],
            fix=Fix("Read it on the host", commands=[f"nvidia-smi -i {g.index} -q -d ROW_REMAPPER" for g in mig_unread]),
        ))
    if ctx.facts.driver.kernel_log_readable is None and not any(f.severity != Severity.INFO for f in out):
        # the kernel log was not read (a snapshot or paste without it): say so rather than imply it is
        # clean; when it was read, gpu.xid judges it
        out.append(MEMORY_ERRORS.info(
            "xid-not-read",
            f"{_what_was_read(gpus)}; Xid errors in the kernel log were not read",
            fix=Fix("Look for Xid errors yourself", commands=["sudo dmesg -T | grep -i xid"]),
        ))
    return out


def _inforom_note(g: Gpu) -> Optional[str]:
    for n in g.notes or []:
        if "inforom" in n.lower() and "corrupt" in n.lower():
            return n
    return None


def _xid_catalog(compat) -> Tuple[Dict[int, Tuple[str, str, str]], Dict[int, str], Dict[int, Any]]:
    """({code: (meaning, category, severity)} for the hardware codes envdoctor judges, {code: meaning} for
    application-raised ones, {code: XidCode} for every code of NVIDIA's catalog)."""
    from ..compat.xid import xid_table

    try:
        table = xid_table(compat)  # parsed and validated at load
    except LookupError as e:
        raise SkipCheck(f"Xid meanings unknown: {e}") from None
    hardware = {c: (r.meaning, r.category or "", r.severity or "") for c, r in table.hardware().items()}
    return hardware, {c: r.meaning for c, r in table.application().items()}, table.catalogued()


def _nvidia_buckets(row: Any) -> Optional[str]:
    """NVIDIA's resolution buckets for a catalogued code, as the catalog words them."""
    if row is None or not (row.resolution or row.investigation):
        return None
    parts = [f"immediate action {row.resolution}" if row.resolution else None,
             f"investigation {row.investigation}" if row.investigation else None]
    return "NVIDIA's Xid catalog: " + ", ".join(p for p in parts if p)


# Xid 154's message names the recovery action the driver now requires ("GPU recovery action changed from 0x0
# (None) to 0x1 (GPU Reset Required)": NVIDIA's Xid catalog, Xid 154; nvml.h nvmlDeviceGpuRecoveryAction_t)
_XID154_TO = re.compile(r"to\s+0x([0-9a-fA-F]+)\s*\(([^)]*)\)")


def _xid154_action(message: Optional[str]) -> Optional[Tuple[str, str]]:
    """(the NVML name, the words of the log) of the recovery action an Xid 154 line changed to; None unread."""
    from ..compat.xid import RECOVERY_ACTIONS

    m = _XID154_TO.search(message or "")
    if not m:
        return None
    value = int(m.group(1), 16)
    return RECOVERY_ACTIONS.get(value, f"unknown_{value}"), m.group(2).strip()


_RECOVERY_TEXT = {"gpu_reset": "a GPU reset", "node_reboot": "a node reboot", "drain_p2p": "its peer-to-peer traffic "
                  "drained", "drain_and_reset": "its work drained, then a GPU reset",
                  "recover_imex_domain": "its IMEX domain recovered"}


def _recovery_findings(drv: Driver) -> List[Finding]:
    """The GPUs whose driver reports a recovery action other than none (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION)."""
    pending = [(i, g) for i, g in enumerate(drv.gpus or []) if g.recovery_action not in (None, "none")]
    if not pending:
        return []
    # what a scheduler does about it: NVML's own recovery action, the strongest over the GPUs (an action the
    # vocabulary does not know is a GPU reset, the least that clears a pending recovery)
    act = strongest(nvidia_action(nvml_recovery=g.recovery_action) or RESET_GPU for _i, g in pending)
    return [XID.error(
        "recovery-action",
        "The driver requires a recovery action before new work: " + "; ".join(
            f"{gpu_label(g)}: {_RECOVERY_TEXT.get(g.recovery_action or '', g.recovery_action)}" for _i, g in pending),
        category="GPU_XID_ERRORS",
        detail="NVML reports the GPU recovery action the driver derived from the errors it handled (the action Xid "
               "154 announces in the kernel log); jobs on the GPU fail or hang until it is done.",
        evidence=[Evidence(f"driver.gpus[{i}].recovery_action", g.recovery_action, expected="none",
                           source="NVML_FI_DEV_GET_GPU_RECOVERY_ACTION") for i, g in pending],
        fix=Fix("Drain the GPU's work, then do what the driver asks (reset the GPU, or reboot the node)",
                commands=[f"sudo nvidia-smi -i {g.index} -r" for _i, g in pending
                          if g.recovery_action in ("gpu_reset", "drain_and_reset")] + [kernel_log_xid(None)],
                url=_XID_URL), action=act)]


_XID_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"


# a kind per Xid code logged, in the category compat_data/xid.json gives it
XID = Findings("gpu.xid", "GPU_XID_ERRORS", kinds=("log-unreadable", "recovery-action", "{xid}"),
               categories=("GPU_MEMORY_ERRORS", "INTERCONNECT"))


@check(XID, "No GPU Xid errors in the kernel log", categories=("GPU_MEMORY_ERRORS", "INTERCONNECT", "GPU_XID_ERRORS"))
def xid(ctx: CheckContext) -> List[Finding]:
    drv: Driver = ctx.facts.driver
    # what NVML says the driver requires is judged whether or not the kernel log could be read
    recovery = _recovery_findings(drv)
    if drv.kernel_log_readable is None:
        if recovery:
            return recovery
        raise SkipCheck("Xid errors unknown: the kernel log was not read (a snapshot, a paste, or --facts from "
                        "an older envdoctor)")
    if drv.kernel_log_readable is False:
        if recovery:
            return recovery
        raise SkipCheck(f"kernel log not readable: {drv.kernel_log_reason or 'no reason given'}", notes=[XID.info(
            "log-unreadable",
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
            raise SkipCheck("no NVIDIA driver: the kernel log can hold no Xid error to judge", not_applicable=NO_DRIVER)
        return recovery
    gpus = {bus_key(g.pci_bus_id): g for g in drv.gpus if bus_key(g.pci_bus_id)}
    # one finding per (code, GPU): the count, the GPU and what the code means
    groups: Dict[Tuple[int, Optional[str]], List[int]] = {}
    for i, ev in enumerate(events):
        # an address that does not parse is still named as the log wrote it (quoted in the fix)
        groups.setdefault((ev.code, bus_key(ev.pci_bus_id) or (ev.pci_bus_id or "").strip().lower() or None),
                          []).append(i)
    src = drv.kernel_log_source or "the kernel log"
    catalog, app_xids, nvidia = _xid_catalog(ctx.compat)
    out: List[Finding] = []
    for (code, bus), idx in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        g = gpus.get(bus)
        where = f"{gpu_label(g)} at {bus}" if g is not None else f"the GPU at {bus}" if bus else "a GPU"
        first, last = events[idx[0]], events[idx[-1]]
        row = nvidia.get(code)
        meaning, category, severity = catalog.get(
            code, (app_xids.get(code, row.meaning if row is not None else "see NVIDIA's Xid catalog"),
                   "GPU_XID_ERRORS", Severity.INFO))
        if code in app_xids:
            meaning += "; usually raised by the application, not the hardware"
        # what a scheduler does about it: NVIDIA's resolution bucket for the code (the catalog's immediate action),
        # or for Xid 154 the recovery action its line announces; None keeps the catalogue's default
        sched = nvidia_action(bucket=row.resolution) if row is not None and row.resolution else None
        if code == 154:  # the recovery action it announces: none is a note, anything else an error
            announced = _xid154_action(last.message)
            if announced is not None:
                meaning = f"the driver now requires: {announced[1] or announced[0]}"
                severity = Severity.INFO if announced[0] == "none" else Severity.ERROR
                sched = nvidia_action(nvml_recovery=announced[0])
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
        out.append(XID(
            str(code), severity, f"{len(idx)} x Xid {code} on {where}{when}: {meaning}", category=category,
            detail="; ".join(x for x in (f"First logged: {first.message}" if first.message else None,
                                         _nvidia_buckets(row)) if x) or None,
            evidence=[Evidence("driver.xid_events", len(idx), expected="no Xid " + str(code),
                               source=((f"{src}: NVRM: Xid (PCI:{bus}): {code}, " if bus else f"{src}: NVRM: Xid {code}, ")
                                       + (first.message or "")).rstrip(", "))],
            fix=fix,
            # an info finding asks nothing of a scheduler (the catalogue's rule); a judged one takes NVIDIA's action
            **({"action": sched} if sched is not None and severity != Severity.INFO else {}),
        ))
    return out


def _what_was_read(gpus) -> str:
    """Name only the counters the facts hold: an nvidia-smi table has ECC but no row-remap state, and a
    report must never claim a counter it did not see is clean."""
    read = []
    if any(g.ecc_volatile_uncorrected is not None or g.ecc_aggregate_uncorrected is not None for g in gpus):
        read.append("ECC")
    if any(g.remapped_rows_pending is not None or g.remapped_rows_uncorrectable is not None for g in gpus):
        read.append("row-remap")
    if any(g.retired_pages_pending is not None or g.retired_pages_double_bit is not None for g in gpus):
        read.append("page-retirement")
    if not read:
        return "No ECC, row-remap or page-retirement counter was read"
    return " and ".join(read) + " counters show no error (" + (
        "row-remap state not read" if "row-remap" not in read else "all three read" if len(read) == 3
        else "page-retirement state not read") + ")"

