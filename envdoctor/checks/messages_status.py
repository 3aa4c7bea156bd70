"""NVIDIA library statuses quoted in a paste (compat_data/status_codes.json): the cause a status names, or why it
names none.

A paste that quotes a status (``CUDA_ERROR_NO_DEVICE``, ``cudaErrorNoDevice``, ``CUDA error 100``, ``NCCL error
2``, ``CUDNN_STATUS_...``, or the library's own message string; compat/status_codes.py ``statuses_in``) is read
through the table, whoever's program printed it:

- a status that names an environment cause (no device, a driver too old, no binary for the GPU, the fabric manager
  not ready, a stub libcuda, NVML's driver/library mismatch, an uncorrectable ECC error ...) is a finding of that
  category, an error unless the row's confidence is low;
- a status the program's own call or kernel raises (an illegal address, an invalid value, a device-side assert)
  is said as an info (category HEALTHY, as the catalogue's own "device-side assert" row): the line is explained,
  and it is no environment error;
- a status that does not name its cause alone (an unknown error, cuDNN's or cuBLAS's failure beneath a call, NCCL's
  system error) is an info note with what to paste; its line stays among those the paste does not explain.

The error-signature catalogue wins: a message a signature matched (or an assembled message holding one it
matched) is not read again here, so a status never adds a second finding to a line a signature explains; and where
a signature names a cause anywhere in the paste, a status that names none adds no note (it is most often a
consequence of that cause).
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

from ..compat.status_codes import LIBRARIES, Mention, StatusRow, status_table, statuses_in
from ..model.catalogue import CATEGORIES
from ..model.findings import Evidence, Finding, Fix, Severity
from ._errors import covered
from ._paste import signature_hits
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS)

TABLE = "compat_data/status_codes.json"
# a kind per status row: "<library>.<first enum name>" in lower case, "-" for "_" ("cuda-driver.cuda-error-no-device")
STATUS = Findings("messages.status-codes", "", kinds=("{status}",), categories=tuple(sorted(CATEGORIES)))
_URL = re.compile(r"https?://\S+")

Seen = List[Tuple[int, str, Mention]]  # (message index, message, what it quoted)


def _link(row: StatusRow) -> str:
    urls = _URL.findall(row.source)
    return urls[-1].rstrip(";,") if urls else ""


def _quoted(row: StatusRow, seen: Seen) -> str:
    """What the paste said and what it is: ``“CUDA error 100” (CUDA runtime (cudaError_t) 100: cudaErrorNoDevice,
    “no CUDA-capable device is detected”)``, ``CUDA_ERROR_NO_DEVICE (CUDA driver API (CUresult) 100)``."""
    text = seen[0][2].text
    parts = [f"{LIBRARIES[row.library]} {row.number}" + (f": {row.names[0]}" if text != row.names[0] else "")]
    if row.message and row.message.lower() != text.lower():
        parts.append(f"\u201c{row.message}\u201d")
    said = row.names[0] if text == row.names[0] else f"\u201c{text}\u201d"
    return f"{said} ({', '.join(parts)})"


def _cite(row: StatusRow) -> str:
    return f"{TABLE} row {row.key}; source: {row.source}"


def _evidence(seen: Seen, row: StatusRow) -> List[Evidence]:
    return [Evidence(f"paste.messages[{i}]", m[:500], expected=row.label, source=row.source) for i, m, _ in seen[:3]]


def _cause(category: str, rows: List[Tuple[StatusRow, Seen]]) -> Finding:
    """One finding for every status the paste quotes that names ``category``, the surest row first."""
    rank = {"high": 3, "medium": 2, "low": 1}
    rows = sorted(rows, key=lambda rs: -rank.get(rs[0].confidence or "", 0))
    row, seen = rows[0]
    confidence = row.confidence or "medium"
    severity = Severity.WARNING if confidence == "low" else Severity.ERROR
    detail = (f"{row.label}: {row.meaning}. Read from {_cite(row)}."
              + (f" To confirm, {row.ask}." if row.ask else ""))
    evidence = [e for r, s in rows for e in _evidence(s, r)]
    return STATUS(row.finding_kind, severity, category=category,
                  summary=f"{CATEGORIES[category].title}: the paste shows {_quoted(row, seen)}",
                  detail=detail, evidence=evidence, confidence=confidence,
                  fix=Fix(CATEGORIES[category].fix, [], _link(row)))


def _program(row: StatusRow, seen: Seen) -> Finding:
    """The status the program's own call or kernel raised: the line is explained, the machine is not blamed."""
    meaning = row.meaning or row.message or row.names[0]
    return STATUS(row.finding_kind, Severity.INFO, category="HEALTHY",
                  summary=(f"The paste shows {_quoted(row, seen)}: a status the program's own call or kernel raises, "
                           "not a cause in the environment"),
                  detail=(f"{row.label} means {meaning}; NVIDIA's libraries return it for what the program asked (an "
                          "argument, a handle, a kernel), so on its own it names no fault of the driver, the GPU or "
                          "the installed packages (an earlier error in the paste may still be what led to it). "
                          f"Read from {_cite(row)}."),
                  evidence=_evidence(seen, row), confidence="medium",
                  fix=Fix(f"Find the failing call in the program: {row.ask}." if row.ask else
                          "Find the failing call in the program.", [], _link(row)))


def _ambiguous(row: StatusRow, seen: Seen) -> Finding:
    """A status that does not name its cause: what it means and what to paste. Its evidence names the table row,
    not the message, so the line stays among those the paste leaves unexplained (not judged, not healthy)."""
    return STATUS(row.finding_kind, Severity.INFO, category="NOTE",
                  summary=f"The paste shows {_quoted(row, seen)}: the status alone does not name the cause",
                  detail=(f"{row.label} means {row.meaning}. Read from {_cite(row)}. To judge it, {row.ask}."),
                  evidence=[Evidence(f"compat_data.status_codes[{row.key}]", seen[0][2].text, expected=row.label,
                                     source=row.source)],
                  confidence="medium", fix=Fix(f"To judge it, {row.ask}.", [], _link(row)))


def statuses_unexplained(ctx: CheckContext) -> Tuple[Dict[str, Tuple[StatusRow, Seen]], bool]:
    """The statuses the paste's messages quote (row key -> row and where), leaving out each message a signature
    matched or that holds / is held by one it matched; and whether a signature named a cause (a warning or an
    error) anywhere in the paste."""
    paste = ctx.facts.paste
    table = status_table(ctx.compat)
    if paste is None or table is None:
        return {}, False
    hits = signature_hits(ctx.facts, ctx.compat)
    explained = [h.message for h in hits]
    named = any(h.signature.severity in (Severity.ERROR, Severity.WARNING) for h in hits)
    out: Dict[str, Tuple[StatusRow, Seen]] = {}
    for i, message in enumerate(paste.messages):
        mentions = statuses_in(message, table)
        if not mentions or explained and covered(message, explained):
            continue
        for mention in mentions:
            out.setdefault(mention.row.key, (mention.row, []))[1].append((i, message, mention))
    return out, named


@check("messages.status-codes", "NVIDIA library statuses in the paste", categories=tuple(sorted(CATEGORIES)),
       applies=PASTE_ONLY)
def check_status_codes(ctx: CheckContext) -> List[Finding]:
    paste = ctx.facts.paste
    if paste is None:
        raise SkipCheck("no pasted text (statuses are read only by `envdoctor diagnose`)",
                        not_applicable="judged in pastes only")
    if not paste.messages:
        raise SkipCheck("the paste holds no error or warning message")
    if status_table(ctx.compat) is None:
        raise SkipCheck(f"{TABLE} unavailable: the statuses cannot be read")
    causes: Dict[str, List[Tuple[StatusRow, Seen]]] = {}
    out: List[Finding] = []
    statuses, named = statuses_unexplained(ctx)
    for row, seen in statuses.values():
        if row.category is not None:
            causes.setdefault(row.category, []).append((row, seen))
        elif named:
            # a known message of the paste names a cause: a status that names none (a handle that then failed to
            # close, a library failing beneath a call) is most often its consequence, and a note would only
            # lengthen the reply
            continue
        elif row.kind == "program":
            out.append(_program(row, seen))
        elif row.kind == "ambiguous":
            out.append(_ambiguous(row, seen))
    return [_cause(category, rows) for category, rows in causes.items()] + out
