"""A signal at any moment of envdoctor's start-up ends with 128 + its number and one line, never a traceback.

tests/signal_harness.py runs `python -m envdoctor` and sends the process SIGINT or SIGTERM at a chosen function
call (counted, not timed): spread over the whole run, and at the two places that went wrong (issue 31): a
KeyboardInterrupt raised in `dataclasses.Field.__set_name__` while the command line's modules were imported
became "internal error: RuntimeError: Error calling __set_name__ on 'Field'", exit 3; and the handler's
Interrupted raised there while a command imported its modules became the same.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from typing import Dict, Optional

import pytest

from tests.paths import FIXTURES, TESTS

HARNESS = TESTS / "signal_harness.py"
SNAPSHOT = FIXTURES / "snapshots" / "dev-container-no-driver.json"
ARGS = ["check", "--facts", str(SNAPSHOT), "--format", "json"]  # imports the checks, compat and a renderer


def _run(sig: int = 0, at: int = 0, at_code: Optional[str] = None, start: str = "imports") -> subprocess.CompletedProcess:
    env: Dict[str, str] = {"SIG": str(sig), "AT": str(at), "START": start}
    if at_code:
        env["AT_CODE"] = at_code
    return subprocess.run([sys.executable, str(HARNESS), *ARGS], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env}, cwd=str(TESTS.parent), preexec_fn=_hangup_delivered)


def _hangup_delivered() -> None:
    """SIGHUP at its default in the child: a test run under nohup inherits it ignored (kept so by envdoctor)."""
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.fixture(scope="module")
def calls_in_run() -> int:
    proc = _run()
    assert proc.returncode in (0, 1), proc.stderr
    m = re.search(r"HARNESS: calls in run (\d+)", proc.stderr)
    assert m, proc.stderr
    return int(m.group(1))


def _assert_interrupted(proc: subprocess.CompletedProcess, sig: int) -> None:
    name = signal.Signals(sig).name
    assert "HARNESS: sent at call" in proc.stderr, proc.stderr  # the signal was sent
    assert proc.returncode == 128 + sig, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    said = [line for line in proc.stderr.splitlines() if line.startswith("envdoctor: ")]
    assert said and (f"interrupted by {name}" in said[-1] or f"{name} arrived while the report" in said[-1]), said


@pytest.mark.parametrize("start", ["imports", "main"])
def test_a_sigint_inside_a_records_class_creation(start: str) -> None:
    # "imports": the command line's own modules, before cli.main has its handlers; "main": a command's
    # lazily imported modules (the checks, the facts), under the handler that raises Interrupted
    _assert_interrupted(_run(signal.SIGINT, at_code="dataclasses.py:__set_name__", start=start), signal.SIGINT)


@pytest.mark.parametrize("sig, fraction", [(signal.SIGINT, f) for f in (0.0, 0.01, 0.05, 0.2, 0.5, 0.9)]
                         + [(signal.SIGTERM, f) for f in (0.0, 0.05, 0.5)]
                         + [(getattr(signal, "SIGHUP", signal.SIGTERM), f) for f in (0.0, 0.5)])
def test_a_signal_anywhere_in_the_run(calls_in_run: int, sig: int, fraction: float) -> None:
    # calls counted from the moment envdoctor holds signals (envdoctor/__main__.py) to the return of its run()
    _assert_interrupted(_run(sig, at=max(1, int(calls_in_run * fraction))), sig)
