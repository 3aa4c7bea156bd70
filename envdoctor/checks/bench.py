"""Benchmark checks: measured throughput against what public measurements achieve, with the likely cause."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ..bench.expect import (
    MATMUL_DTYPE,
    disk_kind,
    effective_dtype,
    expect,
    gpu_for,
    held_throttles,
    limiting_throttles,
    slice_of,
    storage_for,
)
from ..bench.links import platform_link
from ..domain.gpus import is_vgpu_name
from ..model.facts import BenchResult, Facts, Gpu, ProbeStatus
from ..model.findings import Evidence, Finding, Fix, Severity
from ..queries import compute_processes, slice_processes
from ._bench_common import THROTTLE_TEXT, bench_results, severity
from .base import Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)


def gpu_causes(facts: Facts, g: Optional[Gpu], gi: Optional[int], r: BenchResult,
               ri: Optional[int] = None) -> List[tuple]:
    """(text, evidence) for every fact of this run that explains a slow GPU, strongest first."""
    out = []
    if g is None:
        return out
    base = f"driver.gpus[{gi}]"
    throttles = held_throttles(g, r)
    during = r.params.get("throttle_reasons_seen") if isinstance(r.params, dict) else None
    if throttles:
        names = ", ".join(THROTTLE_TEXT.get(t, t) for t in throttles)
        ev = (Evidence(f"bench.results[{ri}].params.throttle_reasons_seen", during,
                       expected="no thermal or hardware slowdown while it ran")
              if during and ri is not None else
              Evidence(f"{base}.throttle_reasons", g.throttle_reasons, expected="no thermal or hardware slowdown"))
        out.append((f"clocks held back: {names} active", ev))
    if g.power_limit_w and g.power_default_limit_w and g.power_limit_w < 0.95 * g.power_default_limit_w:
        out.append((f"power limit {g.power_limit_w:g} W is below the default {g.power_default_limit_w:g} W",
                    Evidence(f"{base}.power_limit_w", g.power_limit_w, expected=f"{g.power_default_limit_w:g} W")))
    procs = compute_processes(g)
    on_slice = slice_processes(g, slice_of(g, r)) if g.mig_mode_current and procs else None
    if on_slice is not None:
        # on MIG only a process on the same slice shares its SMs and memory (NVIDIA MIG User Guide): the other
        # slices' processes are no cause of a slow result on this one
        if on_slice:
            out.append((f"{len(on_slice)} other process(es) were using this MIG slice",
                        Evidence(f"{base}.processes", [p.pid for p in on_slice], expected="none on this slice")))
    elif procs:
        out.append((f"{len(procs)} other process(es) were using this GPU",
                    Evidence(f"{base}.processes", [p.pid for p in procs], expected="none")))
    if g.mig_mode_current:
        # a result on a slice is judged against the slice's share of the board (bench.expect.mig_share), never the
        # whole board, so MIG explains nothing of a slow one: said as what was seen
        out.append((NOT_A_CAUSE + "MIG is on: the benchmark ran on a slice, judged against its share",
                    Evidence(f"{base}.mig_mode_current", True)))
    if g.virtualization_mode == "vgpu" or is_vgpu_name(g.name):
        out.append(("the GPU is a vGPU slice behind a hypervisor",
                    Evidence(f"{base}.virtualization_mode", g.virtualization_mode or g.name)))
    rest = [t for t in limiting_throttles(g, r) if t not in throttles]
    if rest:
        # what was seen but is no cause by itself: SW Power Cap at full load is how a GPU at its power limit runs;
        # a HW Slowdown in one sample may be a P-state change (NVML nvmlClocksEventReasons)
        words = {"sw_power_cap": "SW Power Cap (normal at full load at the power limit)",
                 "hw_slowdown": "HW Slowdown in a single reading (NVML: also reported during a P-state change)"}
        out.append((NOT_A_CAUSE + ", ".join(words.get(t, THROTTLE_TEXT.get(t, t)) for t in rest),
                    Evidence(f"bench.results[{ri}].params.throttle_reasons_seen" if during and ri is not None
                             else f"{base}.throttle_reasons", during if during and ri is not None else g.throttle_reasons)))
    return out


NOT_A_CAUSE = "also seen, not a cause by itself: "


def likely(causes: List[tuple]) -> List[tuple]:
    """The causes that explain a slow result (the notes of what was seen but explains nothing left out)."""
    return [c for c in causes if not c[0].startswith(NOT_A_CAUSE)]


def _below_expected(ctx: CheckContext, items: List[Any], nothing: str) -> List[Tuple[int, BenchResult, Any]]:
    """(index, result, expectation) of each result below what is expected of it. SkipCheck when no result had
    an expectation to judge against (each one's reason, or ``nothing`` when there were no results)."""
    below, why_not, judged = [], [], 0
    for i, r in items:
        e = expect(ctx.facts, ctx.compat, r)
        if e.expected is None:
            why_not.append(f"{r.name} on {r.device}: {e.basis}")
            continue
        judged += 1
        if e.verdict != "ok":
            below.append((i, r, e))
    if not judged:
        raise SkipCheck("; ".join(why_not) or nothing)
    return below


def _numa_note(facts: Facts) -> Optional[str]:
    loc = facts.topology.gpu_locality or []
    nodes = {x.numa_node for x in loc if x.numa_node is not None and x.numa_node >= 0}
    if len(nodes) > 1:
        return ("this machine has several NUMA nodes: run pinned to the GPU's local CPUs "
                "(numactl --cpunodebind=N --membind=N) to rule out a NUMA-remote GPU")
    return None


def _gpu_below(ctx: CheckContext, names: Any, found: Findings, what: str) -> List[Finding]:
    facts = ctx.facts
    items = [(i, r) for i, r in bench_results(facts, names) if (r.device or "").startswith("cuda")]
    out: List[Finding] = []
    for i, r, e in _below_expected(ctx, items, f"no GPU {what} result"):
        gi, g = gpu_for(facts, r)
        causes = gpu_causes(facts, g, gi, r, i)
        real = likely(causes)
        cause = real[0][0] if real else "no cause found in this run's facts"
        out.append(found(
            "below-expected", severity(e.verdict),
            f"{r.name} on {r.device} ({g.name if g else r.params.get('gpu_name')}): {r.value:g} {r.unit}, "
            f"{e.ratio:.0%} of the {e.expected:g} expected; likely cause: {cause}",
            detail=(f"Expected {e.basis}. " + (f"Shape {r.params.get('shape')}. " if r.params.get("shape") else "")
                    + ("Other facts of this run: " + "; ".join(c[0] for c in causes if c[0] != cause) + ". "
                       if [c for c in causes if c[0] != cause] else "")
                    + "A job on this GPU runs this much slower than the same GPU elsewhere."),
            evidence=[Evidence(f"bench.results[{i}].value", r.value, expected=f">= {e.expected:g} {r.unit}",
                               source=e.source)] + [c[1] for c in causes],
            fix=_gpu_fix(real),
        ))
    return out


def _unjudged(ctx: CheckContext, names: Any, found: Findings) -> List[Finding]:
    """GPU results that ran but have nothing to be judged against: said, never passed quietly."""
    out = []
    for i, r in bench_results(ctx.facts, names):
        if not (r.device or "").startswith("cuda") or r.status != ProbeStatus.OK or r.value is None:
            continue
        e = expect(ctx.facts, ctx.compat, r)
        if e.verdict != "no reference":
            continue
        relabel = effective_dtype(r)
        if relabel:
            out.append(found.warning(
                "tf32-override",
                f"{r.name} on {r.device} measured {relabel}: not reported as {r.name}",
                detail="An environment override changed what cuBLAS computes for this dtype, so the figure is not "
                       f"the one its name says. {r.value:g} {r.unit} is left unjudged.",
                evidence=[Evidence(f"bench.results[{i}].params.env_overrides", r.params.get("env_overrides"),
                                   expected="unset")],
                fix=Fix("Unset the override and re-run", ["env -u TORCH_ALLOW_TF32_CUBLAS_OVERRIDE -u "
                                                          "NVIDIA_TF32_OVERRIDE envdoctor bench"])))
            continue
        out.append(found.info(
            "no-reference", f"{r.name} on {r.device}: {r.value:g} {r.unit}, {e.basis}", category="NOTE",
            detail="Nothing in compat_data/bench.json to judge this figure against, so it neither passes nor fails.",
            evidence=[Evidence(f"bench.results[{i}].value", r.value)]))
    return out


# the GPU kernels' builders: below what is expected, nothing to judge against, or not the dtype it is named
MATMUL = Findings("bench.matmul", "PERF_BELOW_EXPECTED",
                  kinds=("below-expected", "no-reference", "tf32-override"),
                  categories=("NOTE",))
MEMBW = Findings("bench.membw", "PERF_BELOW_EXPECTED",
                 kinds=("below-expected", "no-reference", "tf32-override"),
                 categories=("NOTE",))


@check("bench.matmul", "Matmul throughput reaches what this GPU achieves in public measurements",
       categories=("PERF_BELOW_EXPECTED", "NOTE"))
def matmul(ctx: CheckContext) -> List[Finding]:
    out = _unjudged(ctx, MATMUL_DTYPE, MATMUL)
    try:
        out += _gpu_below(ctx, MATMUL_DTYPE, MATMUL, "matmul")
    except SkipCheck:
        if not out:
            raise
    return out


@check("bench.membw", "Device memory bandwidth reaches what this GPU achieves in public measurements",
       categories=("PERF_BELOW_EXPECTED", "NOTE"))
def membw(ctx: CheckContext) -> List[Finding]:
    out = _unjudged(ctx, ("membw_device",), MEMBW)
    try:
        out += _gpu_below(ctx, ("membw_device",), MEMBW, "device memory")
    except SkipCheck:
        if not out:
            raise
    return out


GPU_TO_GPU = Findings("bench.gpu-to-gpu", "PERF_BELOW_EXPECTED",
                      kinds=("p2p-below-expected", "allreduce-below-expected"))


@check("bench.gpu-to-gpu", "GPU-to-GPU copies and all-reduce reach what their links carry",
       categories=("PERF_BELOW_EXPECTED",))
def gpu_to_gpu(ctx: CheckContext) -> List[Finding]:
    facts = ctx.facts
    items = bench_results(facts, ("p2p", "allreduce"))
    out: List[Finding] = []
    for i, r, e in _below_expected(ctx, items, "no GPU-to-GPU result (one GPU?)"):
        what = "bus bandwidth" if r.name == "allreduce" else "one way"
        out.append(GPU_TO_GPU(
            f"{r.name}-below-expected", severity(e.verdict),
            f"{r.name} {r.device}: {r.value:g} GB/s {what}, {e.ratio:.0%} of the {e.expected:g} GB/s expected",
            detail=f"Expected {e.basis}. Data-parallel jobs wait on the slowest link every step.",
            evidence=[Evidence(f"bench.results[{i}].value", r.value, expected=f">= {e.expected:g} GB/s",
                               source=e.source),
                      Evidence("topology.gpu_matrix", facts.topology.gpu_matrix)],
            fix=Fix("Check the links and their errors; compare with nccl-tests", [
                "nvidia-smi topo -m", "nvidia-smi nvlink -s", "nvidia-smi nvlink -e"]),
        ))
    return out


def _gpu_fix(causes: List[tuple]) -> Fix:
    text = causes[0][0] if causes else ""
    if "Thermal" in text:
        return Fix("Check the cooling (airflow, fan speed, inlet temperature) and re-run; the GPU throttles "
                   "when hot", ["nvidia-smi -q -d PERFORMANCE,TEMPERATURE"])
    if "Power" in text or "power limit" in text:
        return Fix("Restore the power limit (envdoctor never changes it)", ["nvidia-smi -q -d POWER"])
    if "process" in text:
        return Fix("Stop the other work on this GPU and re-run the benchmark", ["nvidia-smi"])
    return Fix("Re-run with `envdoctor bench --sustain 60` to watch clocks and throttling over time",
               ["envdoctor bench --sustain 60"])


HOST_COPY = Findings("bench.host-copy", "PERF_BELOW_EXPECTED", kinds=("below-expected",))


@check("bench.host-copy", "Host<->GPU copies reach what the PCIe link carries",
       categories=("PERF_BELOW_EXPECTED",))
def host_copy(ctx: CheckContext) -> List[Finding]:
    facts = ctx.facts
    items = bench_results(facts, ("h2d_pinned", "d2h_pinned"))
    pageable = {r.device: r for _i, r in bench_results(facts, ("h2d_pageable",)) if r.status == ProbeStatus.OK}
    out: List[Finding] = []
    for i, r, e in _below_expected(ctx, items, "no host<->device copy result"):
        gi, g = gpu_for(facts, r)
        base = f"driver.gpus[{gi}]"
        causes = []
        gen = r.params.get("pcie_gen_under_load") or (g.pcie_gen_under_load if g else None)
        width = r.params.get("pcie_width_under_load") or (g.pcie_width_under_load if g else None)
        # the width the platform gives (an x8 slot, a VM's wiring) is what the expectation was set at: no cause
        plat = platform_link(facts, gi)
        max_w = min(w for w in (g.pcie_width_max if g else None, plat.width if plat else None) if w) \
            if g is not None and (g.pcie_width_max or plat) else None
        if g is not None and gen and width and (gen < (g.pcie_gen_max or 0) or width < (max_w or 0)):
            causes.append((f"the link trained at Gen{gen} x{width} under load, below its maximum "
                           f"Gen{g.pcie_gen_max} x{max_w}",
                           Evidence(f"bench.results[{i}].params.pcie_width_under_load", f"Gen{gen} x{width}",
                                    expected=f"Gen{g.pcie_gen_max} x{max_w}")))
        # another process copying, or a vGPU slice, shares the link too
        causes += [c for c in gpu_causes(facts, g, gi, r) if "process" in c[0] or "vGPU" in c[0]]
        numa = _numa_note(facts)
        cause = causes[0][0] if causes else "no cause found in this run's facts"
        pg = pageable.get(r.device)
        detail = f"Expected {e.basis}. "
        if pg is not None and r.name == "h2d_pinned" and pg.value is not None:
            detail += f"Pageable copies reached {pg.value:g} GB/s (pinned {r.value:g}). "
        if numa:
            detail += numa.capitalize() + "."
        out.append(HOST_COPY(
            "below-expected", severity(e.verdict),
            f"{r.name} on {r.device}: {r.value:g} GB/s, {e.ratio:.0%} of the {e.expected:g} GB/s expected; "
            f"likely cause: {cause}",
            detail=detail.strip(),
            evidence=[Evidence(f"bench.results[{i}].value", r.value, expected=f">= {e.expected:g} GB/s",
                               source=e.source)] + [c[1] for c in causes]
                     + ([Evidence(f"{base}.pcie_width_max", g.pcie_width_max)] if g is not None else []),
            fix=(Fix("Reseat the GPU or move it to a full-width slot; check the BIOS PCIe settings and riser",
                     ["sudo lspci -vv -d 10de: | grep -E 'LnkCap|LnkSta'"]) if causes and "link" in causes[0][0]
                 else Fix("Check the link and NUMA placement while copying",
                          ["nvidia-smi -q -d PCIE", "nvidia-smi topo -m"])),
        ))
    return out


DISK = Findings("bench.disk", "PERF_BELOW_EXPECTED", kinds=("below-expected",))


@check("bench.disk", "Sequential reads of the data path reach fast local storage",
       categories=("PERF_BELOW_EXPECTED",))
def disk(ctx: CheckContext) -> List[Finding]:
    facts = ctx.facts
    items = bench_results(facts, ("disk_seq_read",))
    out: List[Finding] = []
    for i, r, e in _below_expected(ctx, items, "no disk result"):
        si, p = storage_for(facts, r)
        kind = disk_kind(p)
        base = f"storage.paths[{si}]"
        if kind == "hdd":
            cause = f"the data is on a rotational disk ({p.block_device or p.device_model or 'HDD'})"
            ev = Evidence(f"{base}.rotational", True, expected="an SSD or NVMe")
        elif kind == "network_block":
            cause = f"the data is on a network block volume ({p.device_model}): it reads at its provisioned rate"
            ev = Evidence(f"{base}.device_model", p.device_model, expected="local NVMe for training data")
        elif kind == "network":
            cause = f"the data is on a network filesystem ({', '.join(x for x in (p.fstype, p.mount_source) if x)})"
            ev = Evidence(f"{base}.fstype", p.fstype, expected="a local filesystem on NVMe")
        else:
            cause = f"this {kind.replace('_', ' ') if kind else 'disk'} reads far below its kind"
            ev = Evidence(f"{base}.transport", p.transport if p else None)
        cached = r.params.get("direct") is False
        out.append(DISK(
            "below-expected", Severity.WARNING if cached else severity(e.verdict),
            f"Sequential read under {r.device}: {r.value:g} MB/s, below the {e.expected:g} MB/s expected; "
            f"likely cause: {cause}",
            detail=f"Expected: {e.basis}. The data loader reads no faster than this."
                   + (" O_DIRECT was refused: the figure may include cache." if cached else ""),
            evidence=[Evidence(f"bench.results[{i}].value", r.value, expected=f">= {e.expected:g} MB/s",
                               source=e.source), ev],
            fix=Fix("Copy the data set to local NVMe before training (or stage it into RAM / a local cache)",
                    ["df -h", "lsblk -d -o NAME,ROTA,TRAN,MODEL"]),
        ))
    return out
