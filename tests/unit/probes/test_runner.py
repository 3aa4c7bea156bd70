"""The real Runner: a timeout kills the whole process tree."""

from __future__ import annotations


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
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, 9)
        raise AssertionError("the hung child of a timed-out command was left running")
