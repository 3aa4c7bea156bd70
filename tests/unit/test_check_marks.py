"""No check mark without evidence, none against a finding (judging.settle.settle_statuses): a check is shown passed
only when it judged its subject fine; a report where nothing could be judged says so and fails the exit code."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

import tests.machines as machines
from envdoctor.checks import all_checks
from envdoctor.compat import load_compat
from envdoctor.judging.settle import settle
from envdoctor.model.facts import Facts
from envdoctor.model.findings import CheckResult, CheckStatus, Finding, Report, Severity
from envdoctor.report import render_console
from envdoctor.services.collect import judge
from tests.paths import FIXTURES

COMPAT = load_compat()
SUBJECTS = {c.id: set(c.categories) for c in all_checks()}
EVERY = {cid for cid, cats in SUBJECTS.items() if len(cats) > 20}  # the signature matcher: claims no subject


def _reports():
    for snap in sorted((FIXTURES / "snapshots").glob("*.json")):
        yield snap.stem, judge(Facts.from_json(snap.read_text()), COMPAT)
    for name, fn in sorted(vars(machines).items()):
        if inspect.isfunction(fn) and fn.__module__ == machines.__name__ and not name.startswith("_") \
                and not inspect.signature(fn).parameters:
            try:
                facts = fn()
            except Exception:  # noqa: BLE001 - a helper, not a machine builder
                continue
            if isinstance(facts, Facts):
                yield name, judge(facts, COMPAT)


REPORTS = list(_reports())


@pytest.mark.parametrize("name, report", REPORTS, ids=[n for n, _ in REPORTS])
def test_no_passed_check_has_findings_of_its_own_or_against_it(name, report) -> None:
    problems = [(c.id, f) for c in report.checks for f in c.findings if f.severity != Severity.INFO]
    for c in report.checks:
        if c.status != CheckStatus.PASSED:
            continue
        assert all(f.category == "HEALTHY" for f in c.findings), (name, c.id, [f.summary for f in c.findings])
        mine = SUBJECTS.get(c.id, set()) - {"HEALTHY", "NOTE"} if c.id not in EVERY else set()
        against = [f.code for cid, f in problems if cid != c.id and f.category in mine
                   and f.category not in (SUBJECTS.get(cid, set()) if cid not in EVERY else set())]
        assert not against, (name, c.id, against)
    text = render_console(report, color=False)
    for c in report.checks:
        if c.status == CheckStatus.NOTED:
            assert c.reason and c.headline == c.reason
            assert f"✓ {c.title} ({c.id})" not in text and f"i {c.headline[:40]}" in text.replace("\n", " "), c.id


def test_the_notes_of_the_issue_are_not_passes() -> None:
    seen = {}
    for _name, report in REPORTS:
        for c in report.checks:
            seen.setdefault(c.id, set()).add(c.status)
    # "✓ Driver branch is still supported" beside a past-end-of-life note (gpus_with_cpu_torch: R550)
    lifecycle = next(c for c in dict(REPORTS)["gpus_with_cpu_torch"].checks if c.id == "driver.lifecycle")
    assert lifecycle.status == CheckStatus.NOTED and "support ended" in lifecycle.headline
    # "✓ Training data sits on fast local storage" beside "cannot tell whether it is an HDD"
    storage = next(c for c in dict(REPORTS)["dev-container-no-driver"].checks if c.id == "storage.data-path")
    assert storage.status == CheckStatus.NOTED and "cannot tell whether it is an HDD" in storage.headline


def _result(check_id: str, status: str, findings=()) -> CheckResult:
    c = next(c for c in all_checks() if c.id == check_id)
    return CheckResult(c.id, c.area, c.title, status, findings=list(findings))


def test_a_signature_finding_in_a_checks_category_is_against_it() -> None:
    """'✓ Container has GPU access' above CONTAINER_NO_GPU_RUNTIME from the paste's messages."""
    sig = Finding("messages.signature/nvidia-smi-not-found", "CONTAINER_NO_GPU_RUNTIME", Severity.ERROR,
                  "Container started without GPU access: the paste shows “nvidia-smi not found”")
    persistence = Finding("gpu.persistence/off", "PERSISTENCE_MODE_OFF", Severity.INFO, "Persistence mode off on GPU 0")
    report = Report(facts=Facts(envdoctor_version="t", origin="paste"), envdoctor_version="t", checks=settle([
        _result("platform.container-gpu", CheckStatus.PASSED), _result("gpu.persistence", CheckStatus.PASSED,
                                                                       [persistence]),
        _result("gpu.busy", CheckStatus.PASSED), _result("messages.signatures", CheckStatus.FAILED, [sig])]))
    by = {c.id: c for c in report.checks}
    assert by["platform.container-gpu"].status == CheckStatus.NOTED
    assert "nvidia-smi not found" in by["platform.container-gpu"].headline
    assert by["gpu.persistence"].status == CheckStatus.NOTED and by["gpu.persistence"].headline.startswith(
        "Persistence mode off")
    assert by["gpu.busy"].status == CheckStatus.PASSED  # no finding about its subject: a real pass
    text = render_console(report, color=False, verbose=True)  # -v: every check on its own line
    assert "✓ Persistence mode on" not in text and "✓ Container has GPU access" not in text
    assert "✓ No other process is using the GPUs" in text
    assert report.to_dict()["summary"]["checks_noted"] == 2


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd)


def test_nothing_judged_is_said_and_fails(tmp_path: Path) -> None:
    paste = tmp_path / "one.txt"
    paste.write_text("PyTorch version: 2.5.1+cu124\n")
    snap = tmp_path / "empty.json"
    snap.write_text('{"schema_version": 1}')
    for argv in (["diagnose", str(paste)], ["check", "--facts", str(snap)]):
        out = _cli(*argv)
        assert out.returncode == 1, (argv, out.stdout[-500:], out.stderr)
        assert "Nothing could be judged" in out.stdout and "No problems found" not in out.stdout
        assert "✓" not in out.stdout
        doc = json.loads(_cli(*argv, "--format", "json").stdout)
        assert doc["summary"]["judged"] is False and doc["summary"]["checks_passed"] == 0
    # one judged check is enough to be a verdict
    healthy = judge(machines.healthy_a100(), COMPAT)
    assert healthy.judged and not healthy.fails("error")


def test_a_report_read_back_from_json_is_shown_as_it_was_judged() -> None:
    """The judge settles (judging/settle.py); a Report loaded from JSON is not judged again: a status and a
    caused_by written there come back as written, whatever settling would make of them now."""
    sig = Finding("messages.signature/nvidia-smi-not-found", "CONTAINER_NO_GPU_RUNTIME", Severity.ERROR, "s")
    raw = [_result("platform.container-gpu", CheckStatus.PASSED),
           _result("messages.signatures", CheckStatus.FAILED, [sig])]
    as_written = Report(facts=Facts(envdoctor_version="t", origin="paste"), envdoctor_version="t", checks=raw)
    back = Report.from_json(as_written.to_json())
    assert [c.status for c in back.checks] == [CheckStatus.PASSED, CheckStatus.FAILED]  # not re-settled
    assert [c.status for c in settle(raw)] == [CheckStatus.NOTED, CheckStatus.FAILED]  # what judging does
    judged = judge(Facts(envdoctor_version="t"))
    assert Report.from_json(judged.to_json()).checks == judged.checks
