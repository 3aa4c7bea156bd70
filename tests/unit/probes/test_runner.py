"""The real Runner: a timeout kills the whole process tree."""

from __future__ import annotations

import os

import pytest


def test_runner_timeout_kills_the_whole_process_tree(tmp_path):
    import os
    import time

    from envdoctor.probes.runner import Runner

    pidfile = tmp_path / "child.pid"
    script = tmp_path / "wrapper.sh"  # a wrapper whose child hangs: conda's python shim, an nvidia-smi wrapper
    script.write_text(f"#!/bin/sh\necho partial\nsleep 300 &\necho $! > {pidfile}\nwait\n")
    script.chmod(0o755)
    res = Runner().run([str(script)], timeout=1.0)
    assert res.timed_out  # the global pytest timeout is the hang guard; the child is checked below
    assert res.stdout.strip() == "partial"
    child = int(pidfile.read_text())
    for _ in range(1200):  # up to 60 s: a loaded machine reaps late; a child that lives on fails
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, 9)
        raise AssertionError("the hung child of a timed-out command was left running")


def _gone(pid: int) -> bool:
    """No such process, or a zombie (killed, not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_stream_hands_over_lines_moves_the_deadline_and_kills_the_tree_at_it(tmp_path):
    import time

    from envdoctor.probes.runner import Runner, live_children

    pidfile = tmp_path / "child.pid"
    # two lines at once, then a grandchild that hangs: the deadline the second line set (0.5 s) kills both
    script = tmp_path / "talker.sh"
    script.write_text(f"#!/bin/sh\necho one\necho two >&1\necho oops >&2\nsleep 300 &\necho $! > {pidfile}\nwait\n")
    script.chmod(0o755)
    seen = []

    def on_line(line):
        seen.append((line.rstrip("\n"), live_children()))
        return 0.5 if line.startswith("two") else None

    res = Runner().stream([str(script)], on_line, first_line_s=30.0)
    assert seen == [("one", 1), ("two", 1)]  # registered while it runs: stop_all_children would end it
    assert res.killed and res.returncode is None and res.error is None and "oops" in res.stderr
    assert live_children() == 0
    child = int(pidfile.read_text())
    for _ in range(1200):  # up to 60 s: a loaded machine reaps late; a child that lives on fails
        if _gone(child):
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the grandchild of a killed stream was left running")


def test_stream_reports_exit_code_and_a_command_that_does_not_start():
    import sys

    from envdoctor.probes.runner import Runner

    lines = []
    res = Runner().stream([sys.executable, "-c", "print('a'); import sys; sys.exit(3)"], lines.append, 30.0)
    assert (lines, res.returncode, res.killed, res.error) == (["a\n"], 3, False, None)
    missing = Runner().stream(["envdoctor-no-such-command-xyz"], lines.append, 30.0)
    assert (missing.error, missing.returncode, missing.killed) == ("not found", None, False)


def test_a_signal_that_lands_while_the_child_starts_kills_the_child(monkeypatch, tmp_path):
    """Ctrl-C raised inside Popen() after the fork (the parent waiting for the exec) leaves no orphan: the
    half-started child is killed and reaped before KeyboardInterrupt goes on (probes/runner.py _Popen)."""
    import subprocess as sp
    import sys
    import time

    from envdoctor.probes import runner as runner_mod

    original = sp.Popen._execute_child
    pids = []

    def started_then_interrupted(self, *args, **kwargs):
        original(self, *args, **kwargs)  # the child runs
        pids.append(self.pid)
        raise KeyboardInterrupt  # the signal, before Popen() returns the object

    monkeypatch.setattr(sp.Popen, "_execute_child", started_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        runner_mod.Runner().run([sys.executable, "-c", "import time; time.sleep(600)"], timeout=600)
    monkeypatch.undo()
    (pid,) = pids
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}"), "the half-started child outlived the interrupt"
    assert runner_mod.live_children() == 0
