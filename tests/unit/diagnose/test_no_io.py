"""Checks do no I/O: every snapshot and paste in the repository judged under the audit hook of tests/audit.py.

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
from envdoctor.model.findings import CheckStatus
from envdoctor.services.diagnose import diagnose_report
from tests import audit
from tests.paths import REPO


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


_NO_IO_MODULES = {"os", "io", "json", "pathlib", "subprocess", "socket", "shutil", "glob", "tempfile", "urllib",
                  "http", "ctypes", "importlib", "requests"}
# the registry finds new check modules when envdoctor.checks is imported (pkgutil + importlib), never in a check
_IMPORT_TIME = {"envdoctor/checks/registry.py": ("importlib",),
                # and base.py reads ENVDOCTOR_STRICT_FINDINGS (the test suite's strict findings) once, at import
                "envdoctor/checks/base.py": ("os",)}
_LOADERS = {"table", "load_compat", "active_compat", "active_choice", "validate_file", "_load_dir", "parse_health",
            "parse_driver_gpu_support", "parse_bench", "parse_signatures", "parse_xid", "read_text", "read_bytes"}


def test_checks_and_readers_reach_compat_only_through_the_loaded_object() -> None:
    """The static half: no module under envdoctor/checks, envdoctor/remedies (which checks call) or
    envdoctor/diagnose imports a file, process or network module, or calls a compat loader/parser or the raw
    ``Compat.table``: they get ``ctx.compat``."""
    import ast

    root = REPO / "envdoctor"
    offences = []
    files = [p for d in ("checks", "remedies", "diagnose") for p in sorted((root / d).rglob("*.py"))]
    assert len(files) > 15
    for path in files:
        rel = path.relative_to(root.parent)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            allowed = _IMPORT_TIME.get(str(rel), ())
            offences += [f"{rel}:{node.lineno} imports {n}" for n in names
                         if n.split(".")[0] in _NO_IO_MODULES and n not in allowed]
            if isinstance(node, ast.Call):
                f = node.func
                called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if called == "open" or called in _LOADERS and (isinstance(f, ast.Attribute) or called != "table"):
                    offences.append(f"{rel}:{node.lineno} calls {called}()")
    assert not offences, offences


def test_a_first_import_inside_the_block_is_loading_code_not_io(monkeypatch) -> None:
    # datetime.strptime imports _strptime on first use: the import system's open is allowed, a check's is not
    import sys
    from datetime import datetime

    monkeypatch.delitem(sys.modules, "_strptime", raising=False)
    with audit.forbidden():
        assert datetime.strptime("2026/12/04", "%Y/%m/%d").year == 2026
        with pytest.raises(PermissionError):
            open(REPO / "README.md", encoding="utf-8")
