"""Queries over compat_data/bench.json: what benchmarks achieve in public measurements (matmul, copies, disks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from . import _parse as P
from ._parse import CompatDataError, loaded
from ._parse import norm_name as _norm_name
from ._parse import source_text as _src

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
_PEAK_FIELD = {"bf16": "bf16_tflops_dense", "fp16": "fp16_tflops_dense", "tf32": "tf32_tflops_dense",
               "fp32": "fp32_tflops"}
DISK_KINDS = ("hdd", "sata_ssd", "nvme", "network")


@dataclass(frozen=True)
class Band:
    warning_below: float
    error_below: float
    source: str


@dataclass(frozen=True)
class _Named:
    table: str
    band: Band


@dataclass(frozen=True)
class MatmulRow:
    gpu: str  # a gpus.json row name
    dtype: str
    fraction: float
    mamf_tflops: Optional[float]
    theory_tflops: Optional[float]
    source: str


@dataclass(frozen=True)
class CopyRow:
    pcie_gen: int
    width: int
    gbs: float
    source: str
    confidence: Optional[str] = None


@dataclass(frozen=True)
class DiskKind:
    kind: str
    seq_read_mbs: Optional[Tuple[float, float]]
    seq_read_floor_mbs: Optional[float]
    source: str


class BenchTable:
    def __init__(self, doc: Dict[str, Any], sources: Dict[str, str]):
        self._sources = sources
        f = "bench.json"
        self.bands = {b.table: b.band for b in P.rows(f, "bands", doc.get("bands"), lambda r: _Named(
            P.text(r, "table"), Band(float(P.number(r, "warning_below")), float(P.number(r, "error_below")),
                                     _src(r["source"]))))}
        self.matmul = P.rows(f, "rows", doc.get("rows"), lambda r: MatmulRow(
            P.text(r, "gpu"), P.text(r, "dtype"), float(P.number(r, "fraction")), P.opt_number(r, "mamf_tflops"),
            P.opt_number(r, "theory_tflops"), self.cite(r["source"])))
        self.copies = P.rows(f, "host_copy_achievable", doc.get("host_copy_achievable"), lambda r: CopyRow(
            P.integer(r, "pcie_gen"), P.integer(r, "width"), float(P.number(r, "gbs")), self.cite(r["source"]),
            P.opt_text(r, "confidence")))
        self.disks = {d.kind: d for d in P.rows(f, "disk_kinds", doc.get("disk_kinds"), lambda r: DiskKind(
            P.text(r, "kind"), tuple(r["seq_read_mbs"]) if r.get("seq_read_mbs") else None,
            P.opt_number(r, "seq_read_floor_mbs"), self.cite(r["source"])))}
        fast = P.rows(f, "fast_local_storage_mbs", doc.get("fast_local_storage_mbs"),
                      lambda r: (float(P.number(r, "seq_read_mbs")), self.cite(r["source"])))
        self.fast_local_mbs: Optional[Tuple[float, str]] = fast[0] if fast else None

    def cite(self, source: Any) -> str:
        """A row's source with ids ("mamf") resolved to the URL of the file's sources list."""
        items = source if isinstance(source, list) else [source]
        return "; ".join(self._sources.get(s, s) for s in items)

    def band(self, table: str) -> Band:
        return self.bands.get(table) or Band(0.9, 0.5, "envdoctor default")

    def matmul_row(self, gpu_row_name: str, dtype: str) -> Optional[MatmulRow]:
        key = _norm_name(gpu_row_name)
        return next((r for r in self.matmul if _norm_name(r.gpu) == key and r.dtype == dtype), None)

    def copy_expectation(self, gen: Optional[int], width: Optional[int]) -> Optional[Tuple[float, CopyRow]]:
        """Achievable one-direction GB/s on a PCIe link: the measured x16 row of that generation scaled by lanes."""
        if not gen or not width:
            return None
        row = next((r for r in self.copies if r.pcie_gen == gen and r.width == width), None)
        if row is not None:
            return row.gbs, row
        row = next((r for r in self.copies if r.pcie_gen == gen and r.width == 16), None)
        if row is None:
            return None
        return row.gbs * width / 16.0, row


def validate_bench(doc: Dict[str, Any], gpus_doc: Dict[str, Any]) -> None:
    """The rules beyond the generic ones: known GPUs and dtypes, fractions that match their own figures and
    the gpus.json peak, sane bands and link rows. Raises CompatDataError naming the row."""
    names = {_norm_name(r["name"]): r for r in gpus_doc.get("rows", [])}
    for i, r in enumerate(doc.get("rows", [])):
        where = f"bench.json: rows[{i}]"
        gpu = names.get(_norm_name(str(r.get("gpu", ""))))
        if gpu is None:
            raise CompatDataError(f"{where}.gpu {r.get('gpu')!r} is not a gpus.json row name")
        if r.get("dtype") not in DTYPES:
            raise CompatDataError(f"{where}.dtype {r.get('dtype')!r} is not one of {', '.join(DTYPES)}")
        frac = r.get("fraction")
        if not isinstance(frac, (int, float)) or not 0 < frac <= 1:
            raise CompatDataError(f"{where}.fraction {frac!r} is not in (0, 1]")
        mamf, theory = r.get("mamf_tflops"), r.get("theory_tflops")
        if isinstance(mamf, (int, float)) and isinstance(theory, (int, float)) and abs(mamf / theory - frac) > 0.01:
            raise CompatDataError(f"{where}: fraction {frac} is not mamf_tflops / theory_tflops "
                                  f"({mamf} / {theory} = {mamf / theory:.3f})")
        field = _PEAK_FIELD.get(r["dtype"])
        peak = gpu.get(field) if field else None
        if field and peak is None:
            raise CompatDataError(f"{where}: gpus.json {gpu['name']!r} has no {field} to apply the fraction to")
        if peak is not None and isinstance(theory, (int, float)) and abs(theory - peak) / peak > 0.01:
            raise CompatDataError(f"{where}: theory_tflops {theory} differs from gpus.json {field} {peak}")
        if field is None and not isinstance(theory, (int, float)):
            raise CompatDataError(f"{where}: {r['dtype']} needs theory_tflops (gpus.json has no {r['dtype']} peak)")
    for i, b in enumerate(doc.get("bands", [])):
        w, e = b.get("warning_below"), b.get("error_below")
        if not (isinstance(w, (int, float)) and isinstance(e, (int, float)) and 0 < e < w <= 1):
            raise CompatDataError(f"bench.json: bands[{i}]: need 0 < error_below < warning_below <= 1, got {e}, {w}")
    for i, r in enumerate(doc.get("host_copy_achievable", [])):
        if r.get("pcie_gen") not in (1, 2, 3, 4, 5, 6) or r.get("width") not in (1, 2, 4, 8, 16, 32) or not (
                isinstance(r.get("gbs"), (int, float)) and r["gbs"] > 0):
            raise CompatDataError(f"bench.json: host_copy_achievable[{i}]: pcie_gen 1-6, width 1-32 and gbs > 0 needed")
    for i, r in enumerate(doc.get("disk_kinds", [])):
        if r.get("kind") not in DISK_KINDS:
            raise CompatDataError(f"bench.json: disk_kinds[{i}].kind {r.get('kind')!r} is not one of {DISK_KINDS}")
        rng = r.get("seq_read_mbs")
        if rng is not None and not (isinstance(rng, list) and len(rng) == 2 and 0 < rng[0] <= rng[1]):
            raise CompatDataError(f"bench.json: disk_kinds[{i}].seq_read_mbs must be [low, high] or null")


def bench_table(compat: Any) -> BenchTable:
    """The table of a loaded Compat (parsed at load); LookupError (a check turns it into a skip) when absent."""
    if isinstance(compat, BenchTable):
        return compat
    return loaded(compat, "bench")


def parse_bench(doc: Dict[str, Any]) -> BenchTable:
    """Build the table from the raw JSON (run validate_bench first); CompatDataError naming a bad row."""
    return BenchTable(doc, P.source_ids(doc))


__all__ = ["Band", "BenchTable", "CopyRow", "DiskKind", "MatmulRow", "bench_table", "parse_bench", "validate_bench"]

