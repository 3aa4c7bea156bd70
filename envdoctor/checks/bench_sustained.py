"""Bench checks over time and of the device kind: sustained load (throttling, wrong results, hardware errors,
the slowest GPU, the absolute level) and vGPU slices."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Tuple

from ..bench.expect import expect, held_throttles
from ..domain.gpus import gpu_label, is_vgpu_name
from ..model.facts import ProbeStatus
from ..model.findings import Evidence, Finding, Fix
from ._bench_common import HARD_THROTTLES, THROTTLE_TEXT, bench_results, severity
from .base import Check, CheckContext, Findings, SkipCheck, no_gpu_here, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)


SUSTAINED = Findings("bench.sustained", "PERF_BELOW_EXPECTED",
                     kinds=("below-expected", "clock-violations", "corrected-errors", "hardware-errors", "pcie-replays",
                            "straggler", "throttled", "wrong-results"),
                     categories=("GPU_MEMORY_ERRORS", "GPU_XID_ERRORS", "GPU_THROTTLED", "PCIE_LINK_DEGRADED"))


@check(SUSTAINED, "Under sustained load every GPU holds its clocks and keeps up with the others",
       categories=("PERF_BELOW_EXPECTED", "GPU_MEMORY_ERRORS", "GPU_XID_ERRORS", "GPU_THROTTLED",
                   "PCIE_LINK_DEGRADED"))
def sustained(ctx: CheckContext) -> List[Finding]:
    facts = ctx.facts
    items = [(i, r) for i, r in bench_results(facts, ("sustained",)) if r.status == ProbeStatus.OK and r.value]
    if not items:
        raise SkipCheck("no sustained run (`envdoctor bench --sustain 60`)")
    out: List[Finding] = []
    for i, r in items:
        onset = r.params.get("throttle_onset_s")
        drop = r.params.get("drop_pct")
        seen = r.params.get("throttle_reasons_seen") or []
        # SW Power Cap at the default limit is how a healthy H100/H200 runs a matmul: only a fall in throughput,
        # or a thermal / hardware slowdown, is throttling (DCGM diag and gpu-burn judge throughput and errors)
        held = held_throttles(None, r)
        hard = [x for x in seen if x in HARD_THROTTLES and x in held]
        fell = isinstance(drop, (int, float)) and drop > 10
        if fell or hard:
            names = ", ".join(THROTTLE_TEXT.get(t, t) for t in (hard or seen)) or "no throttle reason reported"
            out.append(SUSTAINED.warning(
                "throttled",
                f"{r.device} under sustained load: throughput fell" + (f" {drop}%" if drop is not None else "") + " "
                f"({r.params.get('tflops_first')} -> {r.params.get('tflops_last')} TFLOP/s)"
                + (f"; {names}" + (f" from {onset:g} s" if onset is not None else "") if hard or fell else ""),
                detail="Long jobs run at the throttled speed, not at the first minute's.",
                evidence=[Evidence(f"bench.results[{i}].params.throttle_reasons_seen", seen,
                                   expected="no thermal or hardware slowdown"),
                          Evidence(f"bench.results[{i}].params.drop_pct", drop, expected="<= 10")],
                fix=Fix("Check cooling and power delivery; compare with the other GPUs of the node",
                        ["nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER"]),
            ))
        bad = r.params.get("faulty_elements")
        if isinstance(bad, int) and bad > 0:
            out.append(SUSTAINED.error(
                "wrong-results",
                f"{r.device} computed wrong results under load: {bad} of {r.params.get('checked_elements')} "
                "elements differ from the reference product",
                detail="The same product computed twice must agree (gpu-burn compares every result). Faulty "
                       "elements mean failing memory or compute: the GPU corrupts training silently.",
                evidence=[Evidence(f"bench.results[{i}].params.faulty_elements", bad, expected="0")],
                fix=Fix("Drain the node and report the GPU to the provider with this output",
                        ["nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER"]),
            ))
        out += _counter_findings(i, r)
        if (r.device or "").startswith("cuda") and r.params.get("dtype") == "bfloat16":
            e = expect(facts, ctx.compat, dataclasses.replace(r, name="matmul_bf16"))
            if e.expected is not None and e.verdict != "ok":
                out.append(SUSTAINED(
                    "below-expected", severity(e.verdict),
                    f"{r.device} sustains {r.value:g} TFLOP/s bf16, {e.ratio:.0%} of the {e.expected:g} this GPU "
                    "achieves: a node whose GPUs all run this slow is neither a straggler nor visibly throttled",
                    detail=f"Expected {e.basis}.",
                    evidence=[Evidence(f"bench.results[{i}].value", r.value, expected=f">= {e.expected:g}",
                                       source=e.source)],
                    fix=Fix("Check the power limit and clocks against the defaults",
                            ["nvidia-smi -q -d POWER,CLOCK"])))
    gpus = [(i, r) for i, r in items if (r.device or "").startswith("cuda")]
    if len(gpus) >= 2:
        values = sorted(r.value for _i, r in gpus)
        median = values[len(values) // 2]
        i, slow = min(gpus, key=lambda x: x[1].value)
        if slow.value < 0.9 * median:
            out.append(SUSTAINED.warning(
                "straggler",
                f"{slow.device} sustains {slow.value:g} TFLOP/s against the median {median:g} of {len(gpus)} GPUs "
                f"running at the same time ({slow.value / median:.0%}): a data-parallel job runs at the slowest one",
                evidence=[Evidence(f"bench.results[{i}].value", slow.value, expected=f">= 90% of {median:g}")],
                fix=Fix("Check that GPU's cooling, power and throttle reasons; ask the provider to swap it",
                        ["nvidia-smi -q -d PERFORMANCE"]),
            ))
    return out


# Counters watched over the run (probes.nvml.HealthWatch; DCGM diag watches the same under its load): one that
# grows is a finding. counter -> (kind, severity, category, what it means). The power and sync-boost violation
# times grow on every healthy H100/H200 at its default power limit (SW Power Cap), so they are evidence only.
COUNTERS = {
    "ecc_dbe_volatile": ("hardware-errors", "error", "GPU_MEMORY_ERRORS", "uncorrectable (double-bit) ECC errors"),
    "ecc_sbe_volatile": ("corrected-errors", "warning", "GPU_MEMORY_ERRORS", "corrected (single-bit) ECC errors"),
    "pcie_replays": ("pcie-replays", "warning", "PCIE_LINK_DEGRADED", "PCIe replays (link-level retransmissions)"),
    "violation_thermal_ns": ("clock-violations", "warning", "GPU_THROTTLED", "time clocked down for temperature"),
    "violation_reliability_ns": ("clock-violations", "warning", "GPU_THROTTLED", "time clocked down for reliability"),
    "violation_board_limit_ns": ("clock-violations", "warning", "GPU_THROTTLED", "time clocked down at the board limit"),
    # HW Thermal Slowdown and HW Power Brake "reduce core clocks by a factor of 2 or more" (nvml.h API 13,
    # NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN / _HW_POWER_BRAKE_SLOWDOWN): raised by the board or the
    # chassis, never by the job, so time spent in them under load is a fault, as gpu.throttle/hw-slowdown says
    "violation_hw_thermal_ns": ("clock-violations", "error", "GPU_THROTTLED",
                                "time in HW thermal slowdown (clocks halved or worse)"),
    "violation_hw_power_brake_ns": ("clock-violations", "error", "GPU_THROTTLED",
                                    "time in HW power brake slowdown (clocks halved or worse)"),
}
_FIXES = {"hardware-errors": Fix("Drain the node and report the GPU to the provider with this output",
                                 ["nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER"]),
          "corrected-errors": Fix("Watch the count; if it keeps growing, have the GPU replaced",
                                  ["nvidia-smi -q -d ECC"]),
          "pcie-replays": Fix("Reseat the GPU or its riser; ask the provider to check the slot",
                              ["nvidia-smi -q -d PCIE"]),
          "clock-violations": Fix("Check cooling, airflow and the board's power delivery",
                                  ["nvidia-smi -q -d PERFORMANCE,TEMPERATURE"])}


def _counter_findings(i: int, r: Any) -> List[Finding]:
    """A counter that grew during the run, with the counter and its growth as evidence; Xid events seen."""
    out: List[Finding] = []
    grew = r.params.get("health_counters") or {}
    if "ecc_dbe_volatile" not in grew and r.params.get("ecc_uncorrected_delta"):  # results of the first round
        grew = {**grew, "ecc_dbe_volatile": r.params["ecc_uncorrected_delta"]}
    by_kind: Dict[Tuple[str, str, str], List[Tuple[str, float, str]]] = {}
    for counter, (kind, sev, category, text) in COUNTERS.items():
        delta = grew.get(counter)
        if isinstance(delta, (int, float)) and delta > 0:
            by_kind.setdefault((kind, sev, category), []).append((counter, delta, text))
    for (kind, sev, category), items in by_kind.items():
        what = "; ".join(f"{text} +{d / 1e6:g} ms" if c.endswith("_ns") else f"{text} +{d:g}" for c, d, text in items)
        out.append(SUSTAINED(
            kind, sev, f"{r.device}: counters grew during the sustained run: {what}", category=category,
            detail="DCGM diag fails a GPU whose error counters grow under its load; a run that starts clean and "
                   "ends with errors points at the hardware, not at the software.",
            evidence=[Evidence(f"bench.results[{i}].params.health_counters.{c}", d, expected="0 (no growth)")
                      for c, d, _t in items],
            fix=_FIXES[kind]))
    xids = r.params.get("xid_seen")
    if xids:
        out.append(SUSTAINED.error(
            "hardware-errors", f"{r.device}: Xid events during the sustained run ({', '.join(map(str, xids))})",
            category="GPU_XID_ERRORS",
            detail="The driver reported GPU faults while the load ran (NVML Xid critical-error events).",
            evidence=[Evidence(f"bench.results[{i}].params.xid_seen", xids, expected="none")],
            fix=Fix("Look the Xid numbers up in NVIDIA's Xid catalogue; drain the node and report the GPU",
                    ["nvidia-smi -q -d ECC", "dmesg | grep -i xid"])))
    return out


GPU_VIRTUALIZED = Findings("bench.gpu-virtualized", "GPU_VIRTUALIZED", kinds=("vgpu",))


@check(GPU_VIRTUALIZED, "GPUs are whole devices, not vGPU slices")
def gpu_virtualized(ctx: CheckContext) -> List[Finding]:
    drv = ctx.facts.driver
    if drv.status != ProbeStatus.OK or not drv.gpus:
        raise SkipCheck("no GPU facts", not_applicable=no_gpu_here(ctx.facts))
    known = [g for g in drv.gpus if g.virtualization_mode is not None or g.name]
    if not known:
        raise SkipCheck("virtualization mode unknown")
    out = []
    for i, g in enumerate(drv.gpus):
        by_mode = g.virtualization_mode == "vgpu"
        by_name = is_vgpu_name(g.name)
        if by_mode or by_name:
            out.append(GPU_VIRTUALIZED.info(
                "vgpu",
                f"{gpu_label(g)} is a vGPU: a slice of a physical GPU behind a hypervisor",
                detail="Its memory and time are shared with other virtual machines; benchmark figures below the "
                       "whole board's are expected and this is the likely reason when they are low.",
                evidence=[Evidence(f"driver.gpus[{i}].virtualization_mode", g.virtualization_mode),
                          Evidence(f"driver.gpus[{i}].name", g.name)],
            ))
    return out
