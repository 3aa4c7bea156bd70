"""What the kinds tests of the diagnose package ask of a paste: its findings, and its warnings and errors by
category (the corpus's "right": a label found at warning or error). One place for the helpers the round tests
shared by copy."""

from __future__ import annotations

from typing import Dict, List

from envdoctor.diagnose import NothingRecognised
from envdoctor.model.findings import Finding
from envdoctor.services.diagnose import diagnose_report


def findings(text: str, compat) -> List[Finding]:
    """Every finding of the paste (machines' too); none where nothing in it is recognisable (exit 2 on the command
    line: nothing false was said)."""
    try:
        return list(diagnose_report([text], compat).all_findings)
    except NothingRecognised:
        return []


def serious(text: str, compat) -> Dict[str, Finding]:
    """category -> a warning or error of that category."""
    return {f.category: f for f in findings(text, compat) if f.severity in ("warning", "error")}
