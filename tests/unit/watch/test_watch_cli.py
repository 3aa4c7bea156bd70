"""`envdoctor watch` as a user runs it: exit codes, --pid, -o then check --facts, Ctrl-C, --duration, bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from envdoctor.cli import main
from tests.paths import FIXTURES, REPO

ENV = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1")
WATCH = [sys.executable, "-m", "envdoctor", "watch"]
GPU_BOUND = str(FIXTURES / "timeseries" / "015-v100-32gb-aau-aicloud-job-query-gpu-l5.txt")


def run(*args, timeout=120, **kw):
    return subprocess.run([*WATCH, *args], capture_output=True, text=True, env=ENV, timeout=timeout, **kw)


def test_the_commands_exit_code_passes_through():
    p = run("--interval", "0.2", "--format", "json", "--", sys.executable, "-c", "import time, sys; time.sleep(0.5); sys.exit(3)")
    assert p.returncode == 3, p.stderr
    out = json.loads(p.stdout)
    w = out["facts"]["watch"]
    # one sample at least, by construction (the loop samples before it looks at the command); how many more fit
    # in the command's 0.5 s depends on the machine's load, which no test asserts on
    assert w["exit_code"] == 3 and w["summary"]["sample_count"] >= 1 and os.path.basename(w["command"][0]).startswith("python")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_command_killed_by_a_signal_exits_as_a_shell_says(sig):
    # watch's status is 128 + N as the shell's `$?` after a command killed by signal N (was 254 / 241: -N mod 256)
    kill = f"import os, signal; signal.signal({int(sig)}, signal.SIG_DFL); os.kill(os.getpid(), {int(sig)})"
    p = run("--interval", "0.2", "--format", "json", "--", sys.executable, "-c", kill)
    assert p.returncode == 128 + sig, p.stderr
    assert json.loads(p.stdout)["facts"]["watch"]["exit_code"] == -sig  # the facts keep the return code itself


def test_a_command_that_exits_at_once_still_gets_its_report():
    p = run("--", sys.executable, "-c", "pass")
    assert p.returncode == 0 and "envdoctor watch:" in p.stdout and "samples over" in p.stdout


def test_fail_on_turns_a_warning_verdict_into_exit_1(tmp_path, capsys):
    text = "# gpu   sm   mem\n# Idx    %     %\n" + "".join(f"    0   {u}    10\n" for u in [95, 10] * 10)
    f = tmp_path / "dmon.txt"
    f.write_text(text)
    assert main(["watch", "--replay", str(f)]) == 0
    assert main(["watch", "--replay", str(f), "--fail-on", "warning"]) == 1
    assert "INPUT_BOUND" in capsys.readouterr().out


def test_replay_writes_a_recording_that_check_judges(tmp_path, capsys):
    rec = tmp_path / "rec.json"
    assert main(["watch", "--replay", GPU_BOUND, "--format", "markdown", "-o", str(rec)]) == 0
    out = capsys.readouterr().out
    assert "### Timeline" in out and "GPU 0 util %" in out
    assert main(["check", "--facts", str(rec), "--only", "watch.*", "--format", "json"]) == 0
    assert [f["about"] for f in json.loads(capsys.readouterr().out)["findings"]] == ["GPU_BOUND"]


@pytest.mark.parametrize("args, words", [
    (["--replay", "/nonexistent/rec.txt"], "cannot read"),
    (["--replay", str(REPO / "LICENSE")], "no recording found"),
    (["--pid", "999999999"], "no such process"),
    (["--interval", "-1"], "positive"),
    (["--replay", GPU_BOUND, "--", "true"], "takes no command"),
    (["--data", "/nonexistent/data", "--", "true"], "no such file"),
])
def test_bad_input_is_a_usage_error_not_a_traceback(args, words, capsys):
    try:
        code = main(["watch", *args])
    except SystemExit as e:  # argparse's own usage errors
        code = e.code
    assert code == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_pid_is_watched_never_signalled():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        p = run("--pid", str(sleeper.pid), "--duration", "1.5", "--interval", "0.25", "--format", "json")
        assert p.returncode == 0, p.stderr
        assert sleeper.poll() is None  # still running
        procs = [s["procs"] for s in json.loads(p.stdout)["facts"]["watch"]["samples"] if "procs" in s]
        assert procs and all(x["count"] == 1 for x in procs)
    finally:
        sleeper.kill()
        sleeper.wait()


CHILD = """
import signal, sys, time
got = []
signal.signal(signal.SIGINT, lambda *a: got.append(1))
print("ready", flush=True)
end = time.monotonic() + 120
while not got and time.monotonic() < end:
    time.sleep(0.05)
time.sleep(0.3)  # a second SIGINT, if one came, would land here
sys.stderr.write(f"child got {len(got)} SIGINT\\n")
sys.exit(5)
"""


def test_ctrl_c_is_forwarded_once_and_the_verdict_still_printed():
    p = subprocess.Popen([*WATCH, "--interval", "0.2", "--", sys.executable, "-c", CHILD], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert p.stdout.readline().strip() == "ready"
        # at once (no sleep to let watch settle): watch's handler is in place before the command starts
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert "child got 1 SIGINT" in err
    assert p.returncode == 5 and "envdoctor watch:" in out and "exit code 5" in out


def test_duration_stops_a_launched_command_as_ctrl_c_would():
    p = run("--duration", "1", "--interval", "0.25", "--format", "json", "--", sys.executable, "-c",
            "import time; time.sleep(60)")
    w = json.loads(p.stdout)["facts"]["watch"]
    assert p.returncode == 0 and w["summary"]["stopped_by"] == "duration"


def _running(marker: str) -> list:
    """Pids whose command line holds ``marker`` (Linux /proc)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        out.append(int(d))
            except OSError:
                continue
    return out


def _hangup_delivered() -> None:
    """In watch's process: SIGHUP at its default, as under a terminal (a test run under nohup inherits it ignored,
    and watch rightly keeps an ignored SIGHUP ignored)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


# the training run: a DataLoader-like worker in its process group that ignores the hang-up, then "ready"
HANGUP_RUN = """
import signal, subprocess, sys, time
marker, stubborn = sys.argv[1], sys.argv[2] == "1"
if stubborn:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
worker = subprocess.Popen([sys.executable, "-c", "import signal, sys, time; signal.signal(signal.SIGHUP, "
                           "signal.SIG_IGN); print('up', flush=True); time.sleep(600)", marker + "-worker"],
                          stdout=subprocess.PIPE)
worker.stdout.readline()
print("ready", flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGHUP, and /proc to find what is left")
@pytest.mark.parametrize("stubborn", [False, True])
def test_a_hangup_ends_the_watched_run_and_its_workers(stubborn):
    # an SSH drop: the shell sends SIGHUP to watch's process group; the command runs in its own group, which
    # the hang-up never reaches, so watch must end it, and what is left of its group, itself (issue 40)
    marker = f"envdoctor-test-hup-{os.getpid()}-{int(stubborn)}"
    p = subprocess.Popen([*WATCH, "--interval", "0.2", "--", sys.executable, "-c", HANGUP_RUN, marker,
                          "1" if stubborn else "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=ENV, preexec_fn=_hangup_delivered)
    try:
        assert p.stdout.readline().strip() == "ready"
        assert len(set(_running(marker)) - {p.pid}) == 2  # the run and its worker (watch names the marker too)
        p.send_signal(signal.SIGHUP)
        # a run that ignores the hang-up too is stopped harder, STOP_GRACE_S apart: well under this
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
        deadline = time.monotonic() + 30  # SIGKILLed: gone at once; allow a loaded kernel a moment to reap
        while set(_running(marker)) - {p.pid} and time.monotonic() < deadline:
            time.sleep(0.05)
        leftover = set(_running(marker)) - {p.pid}
        for pid in leftover:  # what a failing run left behind must not outlive the test either
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    assert "internal error" not in err, err  # (the stubborn run's own KeyboardInterrupt traceback is its own)
    if stubborn:
        assert "envdoctor watch: stopping" in err, err  # after STOP_GRACE_S: SIGINT, SIGTERM, SIGKILL
    else:
        assert p.returncode == 128 + signal.SIGHUP, err  # the run's own end: killed by the hang-up
    assert "envdoctor watch:" in out
    assert not leftover, "the watched run or its worker outlived a hang-up"
