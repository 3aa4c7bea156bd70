"""What each benchmark result should have reached, from compat_data/bench.json and the run's own facts (pure).

One place computes the expectation; the bench checks turn it into verdicts and the results table prints it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

from ..compat.bench import bench_table
from ..domain.pci import bus_key
from ..facts import LIMITING_THROTTLE_REASONS, BenchResult, DataPath, Facts, Gpu, ProbeStatus

MATMUL_DTYPE = {"matmul_fp32": "fp32", "matmul_tf32": "tf32", "matmul_bf16": "bf16", "matmul_fp16": "fp16",
                "matmul_fp8": "fp8"}
_PEAK = {"bf16": "bf16_tflops_dense", "fp16": "fp16_tflops_dense", "tf32": "tf32_tflops_dense", "fp32": "fp32_tflops"}
# a vGPU profile name: "GRID A100-4C", "NVIDIA A100-3-20C", "GRID P4-1Q" (NVIDIA vGPU user guide, profile names)
VGPU_NAME = re.compile(r"^(?:grid|nvidia)\s+\S.*?-(?:\d+-)?\d+[abcq]$", re.IGNORECASE)


@dataclass(frozen=True)
class Expectation:
    expected: Optional[float]  # None: no reference
    unit: Optional[str]
    ratio: Optional[float]
    verdict: str  # "ok", "warning", "error", "no reference", "skipped", "failed"
    basis: str  # "80.3% of H100 SXM5 80GB's 989.5 dense bf16 TFLOP/s (mamf-finder)", or why there is none
    source: Optional[str] = None


def gpu_for(facts: Facts, r: BenchResult) -> Tuple[Optional[int], Optional[Gpu]]:
    """The driver's GPU that a result ran on: by PCI bus (CUDA and NVML may number GPUs differently)."""
    key = bus_key(r.params.get("pci_bus_id")) if isinstance(r.params, dict) else None
    for i, g in enumerate(facts.driver.gpus):
        if key and bus_key(g.pci_bus_id) == key:
            return i, g
    name = r.params.get("gpu_name") if isinstance(r.params, dict) else None
    same = [(i, g) for i, g in enumerate(facts.driver.gpus) if name and g.name == name]
    if len(same) == 1:
        return same[0]
    return None, None


def storage_for(facts: Facts, r: BenchResult) -> Tuple[Optional[int], Optional[DataPath]]:
    path = r.params.get("path") if isinstance(r.params, dict) else None
    path = path or r.device
    for i, p in enumerate(facts.storage.paths):
        if p.path == path:
            return i, p
    return None, None


def disk_kind(p: Optional[DataPath]) -> Optional[str]:
    if p is None:
        return None
    fstype = (p.fstype or "").lower()
    if (p.kind or "").lower() == "network" or fstype.startswith(("nfs", "cifs", "smb", "fuse.s3", "fuse.gcs")):
        return "network"
    if p.rotational is True:
        return "hdd"
    transport = (p.transport or "").lower()
    if transport == "nvme" or (p.block_device or "").startswith("nvme"):
        return "nvme"
    if p.rotational is False and transport in ("sata", "sas", "ata"):
        return "sata_ssd"
    return None


def _verdict(ratio: float, band: Any) -> str:
    if ratio < band.error_below:
        return "error"
    if ratio < band.warning_below:
        return "warning"
    return "ok"


def _table(compat: Any) -> Any:
    try:
        return bench_table(compat)
    except LookupError:
        return None


def expect(facts: Facts, compat: Any, r: BenchResult) -> Expectation:
    """The expectation for one result; never raises for missing facts (says "no reference" and why)."""
    if r.status != ProbeStatus.OK or r.value is None:
        return Expectation(None, r.unit, None, r.status, r.reason or r.status)
    table = _table(compat)
    if table is None:
        return Expectation(None, r.unit, None, "no reference", "compat_data/bench.json is not available")
    if r.name in MATMUL_DTYPE:
        return _matmul(facts, compat, table, r)
    if r.name in ("h2d_pinned", "d2h_pinned"):
        return _host_copy(facts, table, r)
    if r.name == "disk_seq_read":
        return _disk(facts, table, r)
    return Expectation(None, r.unit, None, "no reference", _no_reference_why(r))


def _no_reference_why(r: BenchResult) -> str:
    return {
        "membw_device": "no published achievable device-copy fraction in compat_data/bench.json yet",
        "membw_host": "host memory bandwidth depends on the DIMMs and channels populated: no reference",
        "h2d_pageable": "pageable copies go through a CPU staging copy: compared with h2d_pinned, not a table",
        "disk_rand_read": "published IOPS are at deep queues; this reads at queue depth 1: no reference",
        "p2p": "no reference for GPU-to-GPU copies yet",
        "allreduce": "no reference for all-reduce bus bandwidth yet",
        "sustained": "judged over time (throttling, slowest GPU), not against a table",
    }.get(r.name, "no reference")


def _matmul(facts: Facts, compat: Any, table: Any, r: BenchResult) -> Expectation:
    if not (r.device or "").startswith("cuda"):
        return Expectation(None, r.unit, None, "no reference", "CPU matmul: no reference (depends on the CPU)")
    dtype = MATMUL_DTYPE[r.name]
    _i, g = gpu_for(facts, r)
    name = (g.name if g is not None else None) or r.params.get("gpu_name")
    spec = compat.gpu(name) if name else None
    if spec is None:
        return Expectation(None, r.unit, None, "no reference", f"no reference for this GPU ({name or 'unknown name'})")
    row = table.matmul_row(spec.name, dtype)
    if row is None:
        return Expectation(None, r.unit, None, "no reference",
                           f"no reference for this GPU: no published {dtype} achievable figure for {spec.name}")
    peak = getattr(spec, _PEAK[dtype]) if dtype in _PEAK else row.theory_tflops
    if not peak:
        return Expectation(None, r.unit, None, "no reference", f"no {dtype} peak for {spec.name} in gpus.json")
    expected = row.fraction * float(peak)
    ratio = r.value / expected
    basis = (f"{row.fraction:.1%} of {spec.name}'s {float(peak):g} dense {dtype} TFLOP/s "
             f"(maximum achievable matmul tables)")
    return Expectation(round(expected, 1), r.unit, round(ratio, 3), _verdict(ratio, table.band("matmul")), basis,
                       row.source)


def _host_copy(facts: Facts, table: Any, r: BenchResult) -> Expectation:
    _i, g = gpu_for(facts, r)
    if g is None:
        return Expectation(None, r.unit, None, "no reference", "the GPU's PCIe link is unknown")
    gen, width = g.pcie_gen_max, g.pcie_width_max
    got = table.copy_expectation(gen, width)
    if got is None:
        return Expectation(None, r.unit, None, "no reference",
                           f"no reference for a Gen{gen or '?'} x{width or '?'} link")
    expected, row = got
    ratio = r.value / expected
    basis = f"Gen{gen} x{width} (the link's maximum): {expected:.1f} GB/s one way in public measurements"
    if width != row.width:
        basis += f" (x{row.width} figure scaled by lanes)"
    return Expectation(round(expected, 2), r.unit, round(ratio, 3), _verdict(ratio, table.band("host_copy")), basis,
                       row.source)


def _disk(facts: Facts, table: Any, r: BenchResult) -> Expectation:
    _i, p = storage_for(facts, r)
    kind = disk_kind(p)
    if kind is None:
        return Expectation(None, r.unit, None, "no reference", "the kind of disk under this path is unknown")
    band = table.band("disk")
    row = table.disks.get(kind)
    if kind in ("hdd", "network"):
        if table.fast_local_mbs is None:
            return Expectation(None, r.unit, None, "no reference", "no fast-local-storage figure")
        expected, src = table.fast_local_mbs
        what = "a rotational disk" if kind == "hdd" else "a network filesystem"
        basis = f"fast local storage reads {expected:g}+ MB/s; this path is on {what}"
        ratio = r.value / expected
        return Expectation(expected, r.unit, round(ratio, 3), _verdict(ratio, band), basis, src)
    if row is None or not row.seq_read_floor_mbs:
        return Expectation(None, r.unit, None, "no reference", f"no reference for {kind}")
    expected = float(row.seq_read_floor_mbs)
    ratio = r.value / expected
    basis = f"a healthy {kind.replace('_', ' ')} reads over {expected:g} MB/s even at queue depth 1"
    return Expectation(expected, r.unit, round(ratio, 3), _verdict(ratio, band), basis, row.source)


def limiting_throttles(g: Optional[Gpu], r: Optional[BenchResult] = None) -> List[str]:
    seen = set((g.throttle_reasons or []) if g is not None else [])
    if r is not None and isinstance(r.params, dict):
        seen.update(r.params.get("throttle_reasons_seen") or [])
    return [x for x in LIMITING_THROTTLE_REASONS if x in seen]
