"""The fleet report's renderers (console, JSON, Markdown), written by rank 0 alone or for a saved report judged
again: a ``model.fleet.FleetReport`` in, text out (issue 40: with the other renderers, out of the fleet package,
which sits below the judge)."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from .. import __version__
from ..domain.safe_text import escape_json_surrogates
from ..model.findings import Severity
from ..model.fleet import FLEET_KIND, FLEET_SCHEMA_VERSION, FleetReport, fleet_to_dict


def node_summary(node: Any) -> Dict[str, Any]:
    """The node's key facts: what the consistency check compares, as one flat record."""
    from ..checks.fleet import NODE_FACTS

    if node.facts is None:
        return {}
    return {what: get(node.facts, None) for what, _sev, get, _why in NODE_FACTS if what != "problems found"}


def to_dict(rep: FleetReport, redact: bool = True) -> Dict[str, Any]:
    fleet = rep.fleet
    nodes = []
    for n in fleet.nodes:
        r = rep.node_reports.get(n.key)
        nodes.append({"node": n.key, "hostname": n.hostname, "node_rank": n.node_rank, "ranks": n.ranks,
                      "collector": n.collector, "summary": node_summary(n), "facts_error": n.facts_error,
                      "facts": n.facts.to_dict() if n.facts is not None else None,
                      "findings": [f.to_dict() for f in r.findings] if r is not None else [],
                      "report_summary": r.to_dict()["summary"] if r is not None else None})
    out = {
        "kind": FLEET_KIND, "schema_version": FLEET_SCHEMA_VERSION, "envdoctor_version": __version__,
        "compat_as_of": rep.compat_as_of, "fleet": fleet_to_dict(fleet), "nodes": nodes,
        "fleet_checks": [{"id": c.id, "title": c.title, "status": c.status, "reason": c.reason}
                         for c in rep.checks],
        "fleet_findings": [f.to_dict() for f in rep.findings],
        "summary": {"ranks": fleet.world_size, "ranks_reported": sum(1 for r in fleet.ranks if r.get("payload")),
                    "ranks_missing": len(fleet.missing), "nodes": len(fleet.nodes),
                    "errors": sum(1 for f in rep.findings if f.severity == Severity.ERROR),
                    "warnings": sum(1 for f in rep.findings if f.severity == Severity.WARNING)},
    }
    if redact:
        from .redact import redact_facts_dict

        out = redact_facts_dict(out)
    return out


def render_json(rep: FleetReport, redact: bool = True) -> str:
    return escape_json_surrogates(json.dumps(to_dict(rep, redact), indent=2, sort_keys=True))  # domain/safe_text.py


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def _table(rows: List[List[str]], header: List[str], width: Optional[int] = None) -> List[str]:
    """Aligned columns; where they are wider than ``width`` (the indent of 2 included), one block per row instead:
    its cells as "column value", wrapped at spaces under the row's first cell, no cell cut."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    if width is not None and 2 + sum(widths) + 2 * (len(widths) - 1) > width:
        import textwrap

        out: List[str] = []
        for r in rows:
            # "node 0", not "node node 0": a value that already starts with its column's name stands alone
            cells = [str(v) if str(v).startswith(f"{h} ") else f"{h} {v}" for h, v in zip(header, r)]
            out += textwrap.wrap(" · ".join(cells), width=width - 2, subsequent_indent="    ",
                                 break_long_words=False, break_on_hyphens=False)
        return out
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*header).rstrip(), fmt.format(*["-" * w for w in widths]).rstrip()] + \
        [fmt.format(*[str(x) for x in r]).rstrip() for r in rows]


def _bench(rec: Dict[str, Any], name_prefix: str) -> str:
    for res in rec.get("bench") or []:
        if str(res.get("name", "")).startswith(name_prefix):
            if res.get("status") == "ok":
                return f"{res['value']:g} {res.get('unit') or ''}".strip()
            return res.get("status") or "-"
    return "-"


def _sections(rep: FleetReport, redact: bool = False) -> Dict[str, Any]:
    """What both text renderers print, as rows (``redact``: GPU UUIDs masked, as in the JSON)."""
    fleet = rep.fleet
    ranks = []
    for rec in fleet.ranks:
        gpu = rec.get("gpu") or {}
        node = next((n.key for n in fleet.nodes if rec["rank"] in n.ranks), "?")
        ranks.append([rec["rank"], node, rec.get("hostname") or "?", rec.get("local_rank"), rec.get("device") or "?",
                      gpu.get("name") or "-", ("GPU-<redacted>" if redact and gpu.get("uuid") else gpu.get("uuid"))
                      or "-", gpu.get("pci_bus_id") or "-",
                      _bench(rec, "matmul"), _bench(rec, "h2d"), fleet.reported_cell(rec["rank"])])
    for m in fleet.missing:
        if not fleet.rank(m["rank"]):
            came = fleet.arrival(m["rank"]) or {}  # issue 41: where the board or the launcher's placement has it
            ranks.append([m["rank"], f"node {came['node_rank']}" if came.get("node_rank") is not None else "?",
                          came.get("hostname") or "?", "?" if came.get("local_rank") is None else came["local_rank"],
                          "?", "-", "-", "-", "-", "-", fleet.reported_cell(m["rank"])])
    ranks.sort(key=lambda r: r[0])
    nodes = []
    for n in fleet.nodes:
        s = node_summary(n)
        r = rep.node_reports.get(n.key)
        nodes.append([n.label, ",".join(map(str, n.ranks)), s.get("NVIDIA driver") or "-",
                      s.get("torch version") or "-", s.get("NCCL version") or "-", s.get("Python version") or "-",
                      s.get("GPU models") or "-",
                      (f"{sum(1 for f in r.problems if f.severity == 'error')} errors, "
                       f"{sum(1 for f in r.problems if f.severity == 'warning')} warnings") if r else
                      (n.facts_error or "no facts")])
    coll = []
    for c in fleet.collectives:
        if c.get("skipped"):
            coll.append([c.get("scope"), "-", "-", "-", "-", c["skipped"]])
        if c.get("error"):
            coll.append([c.get("scope"), "-", "-", "-", "-", f"failed: {c['error']}"])
        for s in c.get("sweep") or []:
            coll.append([c.get("scope"), _size(s["bytes"]), s["iters"], f"{s['time_us']:g}", f"{s['algbw_gbs']:g}",
                         f"{s['busbw_gbs']:g}"])
    return {"ranks": ranks, "nodes": nodes, "collectives": coll}


RANK_HEADER = ["rank", "node", "host", "local", "device", "GPU", "GPU UUID", "bus id", "matmul", "h2d", "reported"]
NODE_HEADER = ["node", "ranks", "driver", "torch", "NCCL", "Python", "GPUs", "node findings"]
COLL_HEADER = ["all-reduce over", "size", "iters", "time (us)", "algbw (GB/s)", "busbw (GB/s)"]


def _verdict(rep: FleetReport) -> str:
    errors = sum(1 for f in rep.problems if f.severity == Severity.ERROR)
    warnings = sum(1 for f in rep.problems if f.severity == Severity.WARNING)
    f = rep.fleet
    head = f"{sum(1 for r in f.ranks if r.get('payload'))} of {f.world_size} ranks reported, {len(f.nodes)} node(s)"
    if not errors and not warnings:
        return f"{head}: no problem found."
    return f"{head}: {errors} error(s), {warnings} warning(s)."


def render_console(rep: FleetReport, verbose: bool = False, width: Optional[int] = None) -> str:
    """The console report; ``width``: a table wider than that prints one block per row (the command line
    wraps the prose to the terminal, cli.common.fit_text). The marks are `check`'s (report/summary.py)."""
    from ..remedies.shell_wrap import wrap_command
    from .summary import SEVERITY_SYMBOLS

    fleet = rep.fleet
    s = _sections(rep)
    # two lines: the first starts with "envdoctor", which the console fitter takes for a command and never wraps
    out = [f"envdoctor {__version__} fleet: {fleet.world_size} ranks, backend {fleet.backend}, "
           f"timeout {fleet.timeout_s:g} s",
           f"started {fleet.started_at or '?'}" + (f", took {fleet.duration_s:g} s" if fleet.duration_s is not None
                                                   else "")]
    if fleet.orphaned:
        out.append(f"PARTIAL: {fleet.orphaned}")
    elif fleet.interrupted:
        out.append(f"PARTIAL: rank 0 was stopped ({fleet.interrupted}); the report covers what had arrived")
    out += ["", "Ranks"] + ["  " + x for x in _table(s["ranks"], RANK_HEADER, width)]
    out += ["", "Nodes"] + ["  " + x for x in _table(s["nodes"], NODE_HEADER, width)]
    if s["collectives"]:
        out += ["", "All-reduce (busbw = algbw x 2(n-1)/n, as nccl-tests define it)"]
        out += ["  " + x for x in _table(s["collectives"], COLL_HEADER, width)]
    out += ["", "Findings"]
    marks = {sev: symbol for sev, (symbol, _style) in SEVERITY_SYMBOLS.items()}
    found = rep.findings
    for f in found:
        out.append(f"  {marks[f.severity]} [{f.category}] "
                   f"{f.summary}")
        out.append(f"      code: {f.code}")
        if f.fix is not None and f.severity != Severity.INFO:
            out.append(f"      fix: {f.fix.summary}")
            # commands laid out in the width with the shell's continuation, never cut (as `check` does)
            out += [ln for c in f.fix.commands
                    for ln in (wrap_command(c, width, indent=8) if width else [f"        {c}"])]
        if verbose:
            out += [f"      evidence: {e.path} = {e.value!r}" + (f" (expected {e.expected})" if e.expected else "")
                    for e in f.evidence]
    if not found:
        out.append("  none")
    skipped = [c for c in rep.checks if c.status == "skipped"]
    if skipped:
        out += ["", "Not judged"] + [f"  - {c.id}: {c.reason}" for c in skipped]
    out += ["", _verdict(rep)]
    return "\n".join(out)


def render_markdown(rep: FleetReport, redact: bool = True) -> str:
    from .markdown import cell

    fleet = rep.fleet
    s = _sections(rep, redact)

    def table(rows: List[List[Any]], header: List[str]) -> List[str]:
        return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
            ["| " + " | ".join(cell(str(x)) for x in r) + " |" for r in rows]

    out = ["## envdoctor fleet report", "",
           f"envdoctor {__version__}: {fleet.world_size} ranks, backend `{fleet.backend}`, started "
           f"{fleet.started_at or '?'}", ""]
    if fleet.orphaned:
        out += [f"**Partial**: {cell(fleet.orphaned)}.", ""]
    elif fleet.interrupted:
        out += [f"**Partial**: rank 0 was stopped ({cell(fleet.interrupted)}).", ""]
    out += ["### Ranks", ""] + table(s["ranks"], RANK_HEADER) + ["", "### Nodes", ""] + table(s["nodes"], NODE_HEADER)
    if s["collectives"]:
        out += ["", "### All-reduce", "", "busbw = algbw × 2(n−1)/n (nccl-tests).", ""]
        out += table(s["collectives"], COLL_HEADER)
    out += ["", "### Findings", ""]
    for f in rep.findings:
        out.append(f"- **{f.severity}** `{f.code}` ({f.category}): {cell(f.summary)}")
        if f.fix is not None and f.severity != Severity.INFO:
            out.append(f"  - fix: {cell(f.fix.summary)}")
    if not rep.findings:
        out.append("None.")
    out += ["", _verdict(rep)]
    text = "\n".join(out)
    if redact:
        from .redact import redact_text

        hosts = [h for h in (r.get("hostname") for r in fleet.ranks + fleet.arrivals) if isinstance(h, str) and h]
        text = redact_text(text, hosts)
    return text
