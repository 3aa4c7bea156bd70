"""Bench checks over time and of the device kind: sustained load (throttling, wrong results, hardware errors,
the slowest GPU, the absolute level) and vGPU slices."""

from __future__ import annotations

import dataclasses
from typing import List

from ..bench.expect import expect
from ..domain.gpus import gpu_label, is_vgpu_name
from ..facts import ProbeStatus
from ..findings import Evidence, Finding, Fix
from ._bench_common import HARD_THROTTLES, THROTTLE_TEXT, bench_results, severity
from .base import Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)


SUSTAINED = Findings("bench.sustained", "PERF_BELOW_EXPECTED")


@check(SUSTAINED, "Under sustained load every GPU holds its clocks and keeps up with the others")
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
        hard = [x for x in seen if x in HARD_THROTTLES]
        fell = isinstance(drop, (int, float)) and drop > 10
        if fell or hard:
            names = ", ".join(THROTTLE_TEXT.get(t, t) for t in (hard or seen)) or "no throttle reason reported"
            out.append(SUSTAINED.warning(
                "throttled",
                f"{r.device} under sustained load: throughput fell {drop if drop is not None else '?'}% "
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
        for key, label in (("ecc_uncorrected_delta", "uncorrected ECC errors"), ("xid_seen", "Xid events")):
            v = r.params.get(key)
            if v:
                out.append(SUSTAINED.error(
                    "hardware-errors", f"{r.device}: {label} during the sustained run ({v})",
                    evidence=[Evidence(f"bench.results[{i}].params.{key}", v, expected="none")],
                    fix=Fix("Drain the node and report the GPU", ["nvidia-smi -q -d ECC"])))
        if (r.device or "").startswith("cuda") and r.params.get("dtype") == "bfloat16":
            e = expect(facts, ctx.compat, dataclasses.replace(r, name="matmul_bf16"))
            if e.expected is not None and e.verdict != "ok":
                out.append(Finding(
                    "bench.sustained/below-expected", "PERF_BELOW_EXPECTED", severity(e.verdict),
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


GPU_VIRTUALIZED = Findings("bench.gpu-virtualized", "GPU_VIRTUALIZED")


@check(GPU_VIRTUALIZED, "GPUs are whole devices, not vGPU slices")
def gpu_virtualized(ctx: CheckContext) -> List[Finding]:
    drv = ctx.facts.driver
    if drv.status != ProbeStatus.OK or not drv.gpus:
        raise SkipCheck("no GPU facts")
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
