"""Checks do no I/O: every snapshot and every paste in the repository judged under the audit hook of tests/audit.py.

The hook refuses file opens, directory listings, stat, process starts and sockets while the checks run
(`diagnose` of a paste: the whole reading and judging, after the paste's text is read); the negative controls
show that a check doing any of these is caught, so these tests can fail.
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict

import pytest

import envdoctor.checks as checks_pkg
from envdoctor.checks import all_checks, run_checks
from envdoctor.checks.base import Check
from envdoctor.compat import load_compat
from envdoctor.diagnose import diagnose_report
from envdoctor.findings import CheckStatus
from tests import audit


@pytest.fixture()
def guarded_checks(monkeypatch) -> Dict[str, int]:
    """checks.run_checks (which `diagnose` calls) under the hook; the dict counts its runs."""
    counter: Dict[str, int] = {"runs": 0}
    monkeypatch.setattr(checks_pkg, "run_checks", audit.guarded(checks_pkg.run_checks, counter))
    audit.SEEN.clear()
    return counter


def test_every_snapshot_is_judged_without_io() -> None:
    compat = load_compat()  # loading the matrix is the caller's I/O, done before
    snaps = audit.snapshots()
    assert len(snaps) >= 10 and sum(n.startswith("snapshot:") for n, _ in snaps) >= 3
    audit.SEEN.clear()
    for name, facts in snaps:
        for expect_gpu in (False, True):
            with audit.forbidden():
                results = run_checks(facts, compat, all_checks(), expect_gpu=expect_gpu)
            errored = [(r.id, r.reason) for r in results if r.status == CheckStatus.ERRORED]
            assert not errored, (name, errored)
            assert len(results) == len(all_checks())
    assert not audit.SEEN, audit.SEEN


def test_every_paste_is_judged_without_io(guarded_checks) -> None:
    compat = load_compat()
    pastes = audit.pastes()
    assert len(pastes) > 40
    judged = 0
    for path in pastes:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            with audit.forbidden():  # reading the paste's facts too, not only the checks
                report = diagnose_report([text], compat)
        except ValueError:  # nothing recognisable (a fixture that is not a paste): nothing was judged
            continue
        judged += 1
        errored = [(r.id, r.reason) for r in report.checks if r.status == "errored"]
        assert not errored, (path.name, errored)
    assert not audit.SEEN, audit.SEEN
    assert judged > 40 and guarded_checks["runs"] >= judged  # the checks of every judged paste ran under the hook


def _reads_with_pathlib(ctx: Any) -> list:
    Path(__file__).read_text()
    return []


def _lists_a_directory(ctx: Any) -> list:
    list(Path(__file__).parent.iterdir())
    return []


def _stats_a_file(ctx: Any) -> list:
    return [] if Path("/etc/os-release").exists() else []


def _starts_a_process(ctx: Any) -> list:
    subprocess.run(["true"], check=False)
    return []


def _opens_a_socket(ctx: Any) -> list:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    return []


@pytest.mark.parametrize("impure, event", [
    (_reads_with_pathlib, "open"), (_lists_a_directory, ("os.listdir", "os.scandir")), (_stats_a_file, "os.stat"),
    (_starts_a_process, "subprocess.Popen"), (_opens_a_socket, "socket.__new__"),
], ids=["pathlib-read", "listdir", "stat", "process", "socket"])
def test_an_impure_check_is_caught(guarded_checks, impure: Callable[[Any], list], event: Any) -> None:
    checks = [Check("test.io", "does I/O", impure)]
    report = diagnose_report(["torch: 2.0.1"], load_compat(), checks=checks)
    assert [(r.id, r.status) for r in report.checks] == [("test.io", "errored")]
    assert audit.SEEN and audit.SEEN[-1].startswith(event), audit.SEEN
    facts, compat = audit.snapshots()[1][1], load_compat()
    with audit.forbidden():
        results = run_checks(facts, compat, checks)
    assert [r.status for r in results] == [CheckStatus.ERRORED]
    audit.SEEN.clear()
    Path(__file__).read_text()  # outside the checks the hook lets it through
    assert not audit.SEEN
