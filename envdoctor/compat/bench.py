"""Queries over compat_data/bench.json: what each GPU, link, topology and disk achieves in public measurements."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..domain.fastclass import dataclass
from ..domain.gpus import name_key
from . import _parse as P
from ._parse import CompatDataError, loaded

# the per-GPU kernels of the payload that a row can carry, with the gpus.json peak field each is checked against
GPU_KERNELS: Dict[str, Optional[str]] = {
    "matmul_fp32": "fp32_tflops", "matmul_tf32": "tf32_tflops_dense", "matmul_bf16": "bf16_tflops_dense",
    "matmul_fp16": "fp16_tflops_dense", "matmul_fp8": None, "membw_device": "memory_bandwidth_gbs"}
UNITS = {"membw_device": "GB/s"}  # every other GPU kernel: TFLOP/s
CONFIDENCE = ("high", "medium", "low")
LINK_TABLES = ("host_copy", "p2p")
TOPOLOGIES = ("nvswitch_hopper", "nvls_hopper", "nvswitch_ampere", "nvswitch_blackwell", "nvlink_bridge_hopper", "pcie")
DISK_KINDS = ("hdd", "sata_ssd", "nvme", "network", "network_block")
MAX_SOURCES = 2


def kernel_unit(kernel: str) -> str:
    return UNITS.get(kernel, "TFLOP/s")


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
class Expectation:
    """One row: the achievable figure of a kernel (GPU row) or a link/topology, with how it was obtained."""

    key: str  # gpus.json row name, or the link / topology kind
    kernel: str  # "matmul_bf16", "membw_device", "host_copy", "p2p", "allreduce"
    expected: Optional[float]
    unit: str
    peak: Optional[float]
    method: str
    shape: Optional[str]
    sources: Tuple[str, ...]  # resolved to URLs
    confidence: str
    derived: bool
    basis: Optional[str] = None
    pcie_gen: Optional[int] = None
    width: Optional[int] = None
    direction: Optional[str] = None  # host_copy: "h2d", "d2h"; None: either
    # a matmul row may also give the figure at the best (non-square) shape its source found, for a result whose
    # sweep picked exactly that shape ("1024x9216x14336", MxNxK): the payload runs those shapes as well
    best_shape: Optional[str] = None
    best_shape_expected: Optional[float] = None

    @property
    def source(self) -> str:
        return "; ".join(self.sources)

    @property
    def band_table(self) -> str:
        return "gpu_derived" if self.derived and self.kernel in GPU_KERNELS else (
            "gpu" if self.kernel in GPU_KERNELS else self.kernel)


@dataclass(frozen=True)
class DiskKind:
    kind: str
    seq_read_mbs: Optional[Tuple[float, float]]
    seq_read_floor_mbs: Optional[float]
    source: str
    models: Tuple[str, ...] = ()  # network_block: device model prefixes ("Amazon Elastic Block Store")
    note: Optional[str] = None


class BenchTable:
    def __init__(self, doc: Dict[str, Any], sources: Dict[str, str]):
        self._sources = sources
        f = "bench.json"
        self.bands = {b.table: b.band for b in P.rows(f, "bands", doc.get("bands"), lambda r: _Named(
            P.text(r, "table"), Band(float(P.number(r, "warning_below")), float(P.number(r, "error_below")),
                                     self.cite(r["source"]))))}
        self.gpu_rows: List[Expectation] = P.rows(f, "rows", doc.get("rows"), self._gpu_row)
        self.links: List[Expectation] = P.rows(f, "links", doc.get("links"), self._link_row)
        self.topologies: List[Expectation] = P.rows(f, "topologies", doc.get("topologies"), self._topology_row)
        self.gaps: Dict[Tuple[str, str], str] = {}
        for g in doc.get("gaps") or []:
            for k in g.get("kernels") or []:
                self.gaps[(name_key(str(g.get("gpu"))), k)] = str(g.get("why"))
        self.disks = {d.kind: d for d in P.rows(f, "disk_kinds", doc.get("disk_kinds"), lambda r: DiskKind(
            P.text(r, "kind"), tuple(r["seq_read_mbs"]) if r.get("seq_read_mbs") else None,
            P.opt_number(r, "seq_read_floor_mbs"), self.cite(r["source"]), tuple(r.get("models") or ()),
            P.opt_text(r, "note")))}
        fast = P.rows(f, "fast_local_storage_mbs", doc.get("fast_local_storage_mbs"),
                      lambda r: (float(P.number(r, "seq_read_mbs")), self.cite(r["source"])))
        self.fast_local_mbs: Optional[Tuple[float, str]] = fast[0] if fast else None

    def _common(self, r: Dict[str, Any], key: str, kernel: str, expected: Optional[float]) -> Expectation:
        items: List[str] = r["source"] if isinstance(r["source"], list) else [r["source"]]
        return Expectation(
            key, kernel, expected, P.text(r, "unit"), P.opt_number(r, "peak"), P.text(r, "method"),
            P.opt_text(r, "shape"), tuple(self._sources.get(s, s) for s in items), P.text(r, "confidence"),
            bool(r.get("derived")), P.opt_text(r, "basis"), P.opt_integer(r, "pcie_gen"), P.opt_integer(r, "width"),
            P.opt_text(r, "direction"), P.opt_text(r, "best_shape"), P.opt_number(r, "best_shape_expected"))

    def _gpu_row(self, r: Dict[str, Any]) -> Expectation:
        return self._common(r, P.text(r, "gpu"), P.text(r, "kernel"), float(P.number(r, "expected")))

    def _link_row(self, r: Dict[str, Any]) -> Expectation:
        return self._common(r, P.text(r, "link"), P.text(r, "table"), float(P.number(r, "expected")))

    def _topology_row(self, r: Dict[str, Any]) -> Expectation:
        return self._common(r, P.text(r, "topology"), "allreduce", P.opt_number(r, "busbw_gbs"))

    def cite(self, source: Any) -> str:
        """A row's source with ids ("mamf") resolved to the URL of the file's sources list."""
        items: List[str] = source if isinstance(source, list) else [source]
        return "; ".join(self._sources.get(s, s) for s in items)

    def band(self, table: str) -> Band:
        return self.bands.get(table) or Band(0.9, 0.6, "envdoctor default")

    def lines(self, row: Expectation) -> Tuple[Optional[float], Optional[float]]:
        """(warning_below, error_below) in the row's unit."""
        if row.expected is None:
            return None, None
        b = self.band(row.band_table)
        return round(row.expected * b.warning_below, 2), round(row.expected * b.error_below, 2)

    # ------------------------------------------------------------------ per GPU

    def gpu_row(self, gpu_row_name: str, kernel: str) -> Optional[Expectation]:
        key = name_key(gpu_row_name)
        return next((r for r in self.gpu_rows if name_key(r.key) == key and r.kernel == kernel), None)

    def rows_for(self, gpu_row_name: str) -> List[Expectation]:
        key = name_key(gpu_row_name)
        order = list(GPU_KERNELS)
        return sorted((r for r in self.gpu_rows if name_key(r.key) == key), key=lambda r: order.index(r.kernel))

    def gap(self, gpu_row_name: str, kernel: str) -> Optional[str]:
        return self.gaps.get((name_key(gpu_row_name), kernel))

    # ------------------------------------------------------------------ links and topologies

    def host_copy(self, link: str, gen: Optional[int] = None, width: Optional[int] = None,
                  direction: Optional[str] = None) -> Optional[Tuple[float, Expectation]]:
        """Achievable one-direction GB/s: ``link`` "c2c" (NVLink-C2C) or "pcie" (the measured x16 row of that
        generation, scaled by lanes)."""
        return self._link("host_copy", link, gen, width, direction)

    def p2p(self, link: str, gen: Optional[int] = None, width: Optional[int] = None
            ) -> Optional[Tuple[float, Expectation]]:
        return self._link("p2p", link, gen, width, None)

    def _link(self, table: str, link: str, gen: Optional[int], width: Optional[int], direction: Optional[str]
              ) -> Optional[Tuple[float, Expectation]]:
        rows = [r for r in self.links if r.kernel == table and r.key == link
                and (r.direction is None or direction is None or r.direction == direction)]
        if link != "pcie":
            row = next(iter(sorted(rows, key=lambda r: r.direction != direction)), None)
            return (row.expected, row) if row is not None and row.expected is not None else None
        if not gen or not width:
            return None
        exact = next((r for r in rows if r.pcie_gen == gen and r.width == width), None)
        if exact is not None and exact.expected is not None:
            return exact.expected, exact
        x16 = next((r for r in rows if r.pcie_gen == gen and r.width == 16), None)
        if x16 is None or x16.expected is None:
            return None
        return x16.expected * width / 16.0, x16

    def topology(self, kind: str) -> Optional[Expectation]:
        return next((r for r in self.topologies if r.key == kind), None)


def _source_ids_ok(source: Any, ids: Dict[str, str]) -> bool:
    items = source if isinstance(source, list) else [source]
    return bool(items) and len(items) <= MAX_SOURCES and all(
        isinstance(s, str) and (s in ids or s.startswith(("http", "file:", "envdoctor"))) for s in items)


def _check_common(where: str, r: Dict[str, Any], ids: Dict[str, str], expected_field: str = "expected") -> None:
    if not _source_ids_ok(r.get("source"), ids):
        raise CompatDataError(f"{where}.source must be 1-{MAX_SOURCES} ids of the sources list or URLs")
    if not isinstance(r.get("method"), str) or not r["method"].strip():
        raise CompatDataError(f"{where}: no method")
    if r.get("confidence") not in CONFIDENCE:
        raise CompatDataError(f"{where}.confidence {r.get('confidence')!r} is not one of {', '.join(CONFIDENCE)}")
    if not isinstance(r.get("derived"), bool):
        raise CompatDataError(f"{where}.derived must be true or false")
    if r["derived"] and not (isinstance(r.get("basis"), str) and r["basis"].strip()):
        raise CompatDataError(f"{where}: a derived row needs a basis (how it was derived, from what)")
    exp = r.get(expected_field)
    if exp is not None and not (isinstance(exp, (int, float)) and not isinstance(exp, bool) and exp > 0):
        raise CompatDataError(f"{where}.{expected_field} {exp!r} is not a positive number")
    peak = r.get("peak")
    if peak is not None and not (isinstance(peak, (int, float)) and peak > 0):
        raise CompatDataError(f"{where}.peak {peak!r} is not a positive number")
    if isinstance(exp, (int, float)) and isinstance(peak, (int, float)) and exp > 1.1 * peak:
        raise CompatDataError(f"{where}: expected {exp} is over 110% of the peak {peak}")
    best, shape = r.get("best_shape_expected"), r.get("best_shape")
    if (best is None) != (shape is None):
        raise CompatDataError(f"{where}: best_shape and best_shape_expected come together")
    if best is not None:
        if not (isinstance(best, (int, float)) and best > 0 and isinstance(shape, str)
                and len(shape.split("x")) == 3 and all(x.isdigit() for x in shape.split("x"))):
            raise CompatDataError(f"{where}: best_shape must be MxNxK and best_shape_expected a positive number")
        if isinstance(peak, (int, float)) and best > 1.1 * peak:
            raise CompatDataError(f"{where}: best_shape_expected {best} is over 110% of the peak {peak}")


def validate_bench(doc: Dict[str, Any], gpus_doc: Dict[str, Any]) -> None:
    """The rules beyond the generic ones: known GPUs and kernels, a method, sources and a confidence on every
    expectation, peaks that match gpus.json, sane bands, link and disk rows. Raises CompatDataError naming the
    row."""
    names = {name_key(r["name"]): r for r in gpus_doc.get("rows", [])}
    ids = P.source_ids(doc)
    seen = set()
    for i, r in enumerate(doc.get("rows", [])):
        where = f"bench.json: rows[{i}]"
        gpu = names.get(name_key(str(r.get("gpu", ""))))
        if gpu is None:
            raise CompatDataError(f"{where}.gpu {r.get('gpu')!r} is not a gpus.json row name")
        kernel = r.get("kernel")
        if kernel not in GPU_KERNELS:
            raise CompatDataError(f"{where}.kernel {kernel!r} is not one of {', '.join(GPU_KERNELS)}")
        if (gpu["name"], kernel) in seen:
            raise CompatDataError(f"{where}: a second {kernel} row for {gpu['name']}")
        seen.add((gpu["name"], kernel))
        if r.get("unit") != kernel_unit(kernel):
            raise CompatDataError(f"{where}.unit {r.get('unit')!r}: {kernel} is in {kernel_unit(kernel)}")
        if r.get("expected") is None:
            raise CompatDataError(f"{where}: no expected figure")
        _check_common(where, r, ids)
        field = GPU_KERNELS[kernel]
        ds = gpu.get(field) if field else None
        peak = r.get("peak")
        if ds is not None and peak is not None and abs(peak - ds) / ds > 0.01:
            raise CompatDataError(f"{where}: peak {peak} differs from gpus.json {field} {ds}")
    for i, b in enumerate(doc.get("bands", [])):
        w, e = b.get("warning_below"), b.get("error_below")
        if not (isinstance(w, (int, float)) and isinstance(e, (int, float)) and 0 < e < w <= 1):
            raise CompatDataError(f"bench.json: bands[{i}]: need 0 < error_below < warning_below <= 1, got {e}, {w}")
    for i, r in enumerate(doc.get("links", [])):
        where = f"bench.json: links[{i}]"
        if r.get("table") not in LINK_TABLES:
            raise CompatDataError(f"{where}.table {r.get('table')!r} is not one of {', '.join(LINK_TABLES)}")
        if r.get("link") == "pcie" and (r.get("pcie_gen") not in (1, 2, 3, 4, 5, 6)
                                        or r.get("width") not in (1, 2, 4, 8, 16, 32)):
            raise CompatDataError(f"{where}: a PCIe row needs pcie_gen 1-6 and width 1-32")
        if r.get("direction") not in (None, "h2d", "d2h"):
            raise CompatDataError(f"{where}.direction {r.get('direction')!r} is not h2d, d2h or absent")
        if r.get("expected") is None:
            raise CompatDataError(f"{where}: no expected figure")
        _check_common(where, r, ids)
    for i, r in enumerate(doc.get("topologies", [])):
        where = f"bench.json: topologies[{i}]"
        if r.get("topology") not in TOPOLOGIES:
            raise CompatDataError(f"{where}.topology {r.get('topology')!r} is not one of {', '.join(TOPOLOGIES)}")
        _check_common(where, r, ids, "busbw_gbs")
    for i, g in enumerate(doc.get("gaps", [])):
        if name_key(str(g.get("gpu", ""))) not in names or not all(k in GPU_KERNELS for k in g.get("kernels", [])):
            raise CompatDataError(f"bench.json: gaps[{i}] must name a gpus.json row and known kernels")
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


__all__ = ["Band", "BenchTable", "DiskKind", "Expectation", "GPU_KERNELS", "bench_table", "kernel_unit",
           "parse_bench", "validate_bench"]
