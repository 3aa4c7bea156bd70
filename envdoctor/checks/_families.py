"""Message families (compat_data/error_signatures.json rows with a ``family``) as the reading of last resort.

A family is the words any program uses for a cause ("the driver ... is too old", "compiled without CUDA support"),
not one program's message, so it may only speak where nothing surer does: this module drops a family's hit on a
message that a row of the catalogue or an NVIDIA status reads (docs/diagnose.md, "Message families").
"""

from __future__ import annotations

from typing import Any, List

from ..compat.status_codes import status_table, statuses_in
from ._errors import covered


def families_as_fallback(hits: List[Any], compat: Any) -> List[Any]:
    """The hits without a message family's where something surer reads the message: a row that is not a family
    matched it (or a message holding it, or one it holds), or it quotes an NVIDIA status (the status table reads
    it, checks/messages_status.py). A family is the reading of last resort for words no known message has."""
    if not any(h.signature.family for h in hits):
        return hits
    known = [h for h in hits if not h.signature.family]
    explained = [h.message for h in known]
    table = status_table(compat)
    out = list(known)
    for h in hits:
        if not h.signature.family or (explained and covered(h.message, explained)):
            continue
        if table is not None and statuses_in(h.message, table):
            continue
        out.append(h)
    return sorted(out, key=lambda h: h.index)
