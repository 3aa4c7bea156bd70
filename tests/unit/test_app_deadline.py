"""collect()'s overall deadline: a probe stuck where no subprocess timeout reaches becomes 'failed', on time."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

from envdoctor.model.facts import ProbeStatus, Storage
from envdoctor.services.collect import _run_with_deadline


def test_stuck_probe_fails_at_the_deadline_and_others_keep_their_results():
    never = threading.Event()
    jobs = {
        "storage": (lambda: never.wait() and None, lambda r: Storage(status=ProbeStatus.FAILED, reason=r)),
        "quick": (lambda: Storage(status=ProbeStatus.OK), lambda r: Storage(status=ProbeStatus.FAILED, reason=r)),
    }
    out = _run_with_deadline(jobs, 0.5)  # returns at all: `never` is never set (pytest-timeout guards a hang)
    value, run = out["storage"]
    assert value.status == ProbeStatus.FAILED and "did not finish within 0.5 s" in value.reason
    assert run.status == ProbeStatus.FAILED
    assert out["quick"][0].status == ProbeStatus.OK


def test_process_exits_even_with_a_stuck_probe_thread():
    code = textwrap.dedent("""
        import threading
        from envdoctor.services.collect import _run_with_deadline
        from envdoctor.model.facts import ProbeStatus, Storage
        never = threading.Event()
        out = _run_with_deadline({"s": (never.wait, lambda r: Storage(status=ProbeStatus.FAILED, reason=r))}, 0.3)
        print(out["s"][0].status)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stdout.strip() == "failed"
