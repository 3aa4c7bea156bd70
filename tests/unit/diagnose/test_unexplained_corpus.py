"""Issue 29 over every labelled paste: a paste holding an error line never gets "No problems found", neither in
the console nor in the JSON (where a paste with no root cause and nothing unrecognised would be that verdict).

The labelled folders: ../shared/examples/*/ (skipped with a reason when ../shared is absent), the repository's
own tests/fixtures/pastes/, and tests/fixtures/corpus/*/ (folders with labels.json and <id>.txt, as the shared
batches), globbed so that a corpus merged later is held to the same rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor.checks.diagnose_unexplained import is_error_line
from envdoctor.compat import load_compat
from envdoctor.diagnose.readers.base import clean_lines
from envdoctor.report.console import render_console
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES, SHARED


def _rows(folder: Path):
    path = folder / "labels.json"
    if not path.exists():
        return []
    return [(folder, r["id"]) for r in json.loads(path.read_text(encoding="utf-8"))]


SHARED_ROWS = [r for d in sorted((SHARED / "examples").glob("*/")) for r in _rows(d)]
OWN_ROWS = _rows(FIXTURES / "pastes") + [r for d in sorted((FIXTURES / "corpus").glob("*/")) for r in _rows(d)]


def _check(folder: Path, rid: str) -> None:
    text = (folder / f"{rid}.txt").read_text(encoding="utf-8", errors="replace")
    errors = [ln for ln in clean_lines(text) if is_error_line(ln)]
    if not errors:
        pytest.skip("no error line in this paste")
    report = diagnose_report([text], load_compat())
    console = render_console(report, width=100)
    summary = report.to_dict()["summary"]
    assert "No problems found" not in console, (errors[:3], console[-600:])
    assert summary["root_causes"] or summary["not_recognised"] or not summary["judged"] or any(
        f.category == "HEALTHY" and f.code.startswith("messages.") for f in report.all_findings), errors[:3]


@pytest.mark.parametrize("folder,rid", OWN_ROWS, ids=[f"{f.name}/{r}" for f, r in OWN_ROWS])
def test_own_paste_with_an_error_line_is_never_no_problems(folder, rid) -> None:
    _check(folder, rid)


@pytest.mark.skipif(not SHARED_ROWS, reason="../shared/examples not present (a bare clone)")
@pytest.mark.parametrize("folder,rid", SHARED_ROWS, ids=[f"{f.name}/{r}" for f, r in SHARED_ROWS])
def test_shared_paste_with_an_error_line_is_never_no_problems(folder, rid) -> None:
    _check(folder, rid)


def test_every_unlabelled_fixture_paste_with_an_error_line_too() -> None:
    """The fixture pastes without a label (one per category and reader) are held to the same rule."""
    labelled = {rid for _, rid in _rows(FIXTURES / "pastes")}
    seen = 0
    for path in sorted((FIXTURES / "pastes").glob("*.txt")):
        if path.stem in labelled:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if not any(is_error_line(ln) for ln in clean_lines(text)):
            continue
        seen += 1
        report = diagnose_report([text], load_compat())
        assert "No problems found" not in render_console(report, width=100), path.name
    assert seen >= 10
