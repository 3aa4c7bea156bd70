"""`envdoctor matrix bench --gpu NAME [--link ...]`: what a GPU should measure, before renting it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..bench.expect import c2c_link
from ..compat.bench import GPU_KERNELS, bench_table, kernel_unit
from ..domain.arch import parse_cc

if TYPE_CHECKING:
    from ..compat.queries import Compat


class MatrixError(ValueError):
    """A query that cannot be answered as asked (bad version, unknown name); one line. Every `matrix` query
    raises it (envdoctor.services.matrix imports it from here: the bench half imports nothing from matrix.py)."""


LINK_CHOICES = ("pcie3", "pcie4", "pcie5", "pcie6", "c2c", "c2c_gb200", "nvlink2", "nvlink3", "nvlink4", "nvlink5",
                "nvlink_bridge_hopper", "nvlink_bridge_ga102", "nvswitch_hopper", "nvls_hopper", "nvswitch_ampere",
                "nvswitch_blackwell")


def _row(name: str, row: Any, table: Any, expected: Optional[float] = None) -> Dict[str, Any]:
    expected = row.expected if expected is None else expected
    scaled = expected != row.expected
    b = table.band(row.band_table)
    return {"name": name, "unit": row.unit, "expected": round(expected, 2) if expected is not None else None,
            "warning_below": round(expected * b.warning_below, 2) if expected is not None else None,
            "error_below": round(expected * b.error_below, 2) if expected is not None else None,
            "peak": round(row.peak * expected / row.expected, 2) if row.peak and scaled and row.expected else row.peak,
            "method": row.method + (" (scaled by lanes)" if scaled else ""), "shape": row.shape,
            "derived": row.derived, "sources": list(row.sources), "confidence": row.confidence,
            **({"best_shape": row.best_shape, "best_shape_expected": row.best_shape_expected} if row.best_shape else {})}


def _models(compat: Compat, name: str) -> List[Any]:
    from ..model.targets import TargetError, resolve_gpu

    try:
        target = resolve_gpu(compat, name)
    except TargetError as e:
        raise MatrixError(str(e)) from None
    if target.how == "sm_XX":
        raise MatrixError(f"{name!r} is an architecture; name a GPU model (`envdoctor matrix gpu {name}`)")
    for prefix in ("", "GeForce ", "Tesla ", "NVIDIA ", "NVIDIA GeForce ", "Quadro "):
        for suffix in ("", "..."):
            models = compat.gpu_candidates(f"{prefix}{name}{suffix}")
            if models:
                return list(models)
    return []


def _link_rows(table: Any, gpu_name: str, links: List[str]) -> List[Dict[str, Any]]:
    out = []
    for link in links:
        if link.startswith("pcie"):
            gen, width = link[4:].partition("x")[0], link.partition("x")[2] or "16"
            got = table.host_copy("pcie", int(gen), int(width))
            if got:
                out.append(_row(f"h2d_pinned/d2h_pinned over PCIe Gen{gen} x{width}", got[1], table, got[0]))
            got = table.p2p("pcie", int(gen), int(width))
            if got:
                out.append(_row(f"p2p over PCIe Gen{gen} x{width}", got[1], table, got[0]))
        elif link in ("c2c", "c2c_gb200"):
            for d, kernel in (("h2d", "h2d_pinned"), ("d2h", "d2h_pinned")):
                got = table.host_copy(link, direction=d)
                if got and got[1].direction in (None, d):
                    out.append(_row(f"{kernel} over NVLink-C2C" + (" (Grace Blackwell)" if link == "c2c_gb200" else ""),
                                    got[1], table, got[0]))
        elif link.startswith(("nvswitch", "nvls")):
            row = table.topology(link)
            if row is not None and row.expected is not None:
                out.append(_row(f"allreduce busbw ({link})", row, table))
        else:
            got = table.p2p(link)
            if got:
                out.append(_row(f"p2p over {link}", got[1], table, got[0]))
    return out


def default_links(spec: Any) -> List[str]:
    """The links a GPU of this model usually has: its PCIe generation (x16), C2C on Grace superchips."""
    name = spec.name
    if name.startswith(("GH", "GB")):
        return [c2c_link(name[:2])]
    return [f"pcie{spec.pcie_gen}"] if getattr(spec, "pcie_gen", None) else []


# kernels a GPU cannot run, by compute capability: the payload skips fp8 matmul below 8.9 by the same rule
# (envdoctor/_payload/bench.py), since fp8 tensor cores arrived with Ada (8.9) and Hopper (9.0)
_NEEDS_CC = {"matmul_fp8": (8, 9)}


def _not_applicable(spec: Any, kernel: str) -> Optional[str]:
    need = _NEEDS_CC.get(kernel)
    if need is None or not spec.compute_capability:
        return None
    try:
        cc = parse_cc(spec.compute_capability)
    except ValueError:
        return None
    if cc >= need:
        return None
    return (f"not applicable: {kernel} needs compute capability {need[0]}.{need[1]} or newer "
            f"({spec.name} is {spec.compute_capability}); envdoctor bench skips it there")


def bench_expectations(compat: Compat, name: str, links: Optional[List[str]] = None) -> Dict[str, Any]:

    models = _models(compat, name)
    if not models:
        raise MatrixError(f"GPU {name!r} is not in the matrix (`envdoctor matrix gpu` names the known ones)")
    table = bench_table(compat)
    spec = models[0]
    kernels: List[Dict[str, Any]] = []
    missing = []
    for kernel in GPU_KERNELS:
        row = table.gpu_row(spec.name, kernel)
        if row is not None:
            kernels.append(_row(kernel, row, table))
        else:
            why = table.gap(spec.name, kernel) or _not_applicable(spec, kernel)
            missing.append({"name": kernel, "unit": kernel_unit(kernel), "why": why or "no public figure in "
                            "compat_data/bench.json (not measured publicly, or not yet gathered)"})
    kernels += _link_rows(table, spec.name, list(links or default_links(spec)))
    return {"query": "bench", "gpu": spec.name, "asked": name,
            "other_models": [m.name for m in models[1:]], "kernels": kernels, "no_reference": missing,
            "bands": {k: {"warning_below": v.warning_below, "error_below": v.error_below} for k, v in
                      table.bands.items() if k.startswith("gpu") or k in ("host_copy", "p2p", "allreduce")},
            "as_of": compat.as_of}


def render(payload: Dict[str, Any]) -> str:
    lines = [f"What {payload['gpu']} should measure (envdoctor bench, compat_data/bench.json as of {payload['as_of']})"]
    if payload.get("other_models"):
        lines.append(f"  ('{payload['asked']}' also names: {', '.join(payload['other_models'])}; ask for one of them)")
    # one block per kernel: the figure and its lines on the first line, how it was measured and the sources on
    # their own indented lines (a terminal of 80 columns wraps them under themselves: cli.common.fit_text)
    for k in payload["kernels"]:
        tag = "derived" if k["derived"] else "measured"
        lines.append(f"  {k['name']}: {k['expected']:g} {k['unit']}  (warning < {k['warning_below']:g}, "
                     f"error < {k['error_below']:g})  [{tag}, {k['confidence']}]")
        lines.append("      " + k["method"] + (f"; peak {k['peak']:g}" if k.get("peak") else ""))
        if k.get("best_shape"):
            lines.append(f"      at {k['best_shape']} (when the sweep picks that shape): {k['best_shape_expected']:g} "
                         f"{k['unit']}")
        for source in k["sources"]:
            lines.append("      " + source)
    for m in payload.get("no_reference") or []:
        lines.append(f"  {m['name']}: no reference: {m['why']}")
    return "\n".join(lines)


def query_bench(args: Any) -> Tuple[Dict[str, Any], str]:
    from ..compat import load_compat

    compat = load_compat()
    links = []
    for v in getattr(args, "link", None) or []:
        links += [x.strip() for x in v.split(",") if x.strip()]

    for link in links:
        base = link.partition("x")[0]
        if base not in LINK_CHOICES:
            raise MatrixError(f"--link {link}: one of {', '.join(LINK_CHOICES)} (PCIe may take a width: pcie4x8)")
    payload = bench_expectations(compat, args.gpu, links or None)
    payload["compat_data"] = getattr(compat, "label", None)
    return payload, render(payload)
