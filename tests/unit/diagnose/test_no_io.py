"""Every paste in the repository through `diagnose` with file, subprocess and socket access forbidden to the checks.

An audit hook (PEP 578) sees every open(), os.listdir/scandir, subprocess and socket call, whatever wraps them
(pathlib, io, shutil), so a check that reads a file cannot slip past it. Hooks cannot be removed once added, so
this one is added once per process and consults a flag that is set only while the checks run.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List

import pytest

import envdoctor.checks as checks_pkg
from envdoctor.compat import load_compat
from envdoctor.diagnose import diagnose_report
from tests.paths import TESTS

HERE = TESTS
SHARED = HERE.parents[1] / "shared" / "examples"
_FORBIDDEN = ("open", "os.listdir", "os.scandir", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
              "os.fork", "os.forkpty", "subprocess.Popen", "socket.connect", "socket.bind", "socket.getaddrinfo",
              "socket.__new__", "shutil.copyfile", "os.remove", "os.rename", "os.mkdir")
_STATE = {"active": False, "installed": False, "runs": 0}
_SEEN: List[str] = []


def _hook(event: str, args: tuple) -> None:
    if _STATE["active"] and (event in _FORBIDDEN or event.startswith("subprocess.")):
        _SEEN.append(f"{event} {args[:2]!r}")
        raise PermissionError(f"checks must do no I/O: {event}")


def _pastes() -> List[Path]:
    out = sorted((HERE / "fixtures").rglob("*.txt"))
    for folder in ("reports", "reports-batch2"):
        if (SHARED / folder).is_dir():
            out += sorted((SHARED / folder).glob("*.txt"))
    return out


@pytest.fixture(scope="module")
def guarded():
    if not _STATE["installed"]:
        sys.addaudithook(_hook)
        _STATE["installed"] = True
    real = checks_pkg.run_checks

    def run_guarded(*args, **kwargs):
        _STATE["active"] = True
        _STATE["runs"] += 1
        try:
            return real(*args, **kwargs)
        finally:
            _STATE["active"] = False

    checks_pkg.run_checks = run_guarded
    yield
    checks_pkg.run_checks = real


def test_the_hook_catches_pathlib() -> None:
    if not _STATE["installed"]:
        sys.addaudithook(_hook)
        _STATE["installed"] = True
    _STATE["active"] = True
    try:
        with pytest.raises(PermissionError):
            Path(__file__).read_text()
    finally:
        _STATE["active"] = False
    assert _SEEN and _SEEN.pop().startswith("open")


def test_every_paste_is_judged_without_io(guarded) -> None:
    _SEEN.clear()
    compat = load_compat()
    pastes = _pastes()
    assert len(pastes) > 40
    judged = 0
    for path in pastes:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            report = diagnose_report([text], compat)
        except ValueError:  # nothing recognisable (a fixture that is not a paste): nothing was judged
            continue
        judged += 1
        errored = [(r.id, r.reason) for r in report.checks if r.status == "errored"]
        assert not errored, (path.name, errored)
    assert not _SEEN, _SEEN
    assert judged > 40 and _STATE["runs"] >= judged  # the checks of every judged paste ran under the hook


def test_a_check_that_reads_a_file_is_caught(guarded) -> None:
    from envdoctor.checks.base import Check

    def reads_a_file(ctx):
        Path(__file__).read_text()
        return []

    report = diagnose_report(["torch: 2.0.1"], load_compat(), checks=[Check("test.io", "does I/O", reads_a_file)])
    assert [(r.id, r.status) for r in report.checks] == [("test.io", "errored")]
    assert _SEEN and _SEEN[-1].startswith("open")
    _SEEN.clear()
    Path(__file__).read_text()  # outside the checks the hook lets it through
    assert not _SEEN
