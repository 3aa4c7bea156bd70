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


def serious_by_code(text: str, compat) -> Dict[str, Finding]:
    """code -> a warning or error with that code (the speed tests name the finding, not only its category)."""
    return {f.code: f for f in findings(text, compat) if f.severity in ("warning", "error")}


def corpus_row(tracker: str, rid: str) -> str:
    """The text of corpus row ``rid`` in folder ``tracker`` (tests/fixtures/corpus)."""
    from tests.paths import FIXTURES

    return (FIXTURES / "corpus" / tracker / f"{rid}.txt").read_text(encoding="utf-8", errors="replace")


def asks(f: Finding, what: str) -> bool:
    """Whether the finding asks for an output holding ``what`` (its ``paste.settle`` evidence)."""
    return any(e.path == "paste.settle" and what in str(e.value) for e in f.evidence)


def by_row(text: str, compat) -> Dict[str, Finding]:
    """error_signatures.json row id -> the finding that row gave the paste (``messages.signature/<row>[/<qualifier>]``,
    any severity); empty where nothing in the paste is recognisable."""
    return {f.code.split("/")[1]: f for f in findings(text, compat) if f.code.startswith("messages.signature/")}


def assert_names_its_cause(text: str, compat, row: str, category: str, severity: str) -> Finding:
    """A source-derived row reads its own source's message: the row's finding at ``category`` and ``severity`` is
    among the reply's problems, and no other category is named as an error (a wrapper line may stay a
    not-recognised warning). Returns the finding."""
    report = diagnose_report([text], compat)
    f = {g.code.split("/")[1]: g for g in report.findings if g.code.startswith("messages.signature/")}.get(row)
    assert f is not None, f"row {row} did not match its own source's message"
    assert (f.category, f.severity) == (category, severity)
    assert f in report.problems
    assert {g.category for g in report.problems if g.severity == "error"} <= {category}
    return f
