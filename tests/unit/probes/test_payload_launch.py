"""The inspect payload started before envdoctor's own imports (probes/payload_launch.py): which command lines are
started for a parsed command line, that the probe adopts that process instead of starting a second one, that a wrong
guess is killed, and that an early payload initialises CUDA only once its stdin is closed (the NVML gate)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envdoctor.probes import payload_launch as pl
from envdoctor.probes import python_env as pe
from envdoctor.probes.runner import Runner

ENV = {"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent"}


def _fake_python(tmp_path: Path, name: str = "python") -> Path:
    """An interpreter that notes each start (one line per process) and is this Python otherwise."""
    log = tmp_path / f"{name}.starts"
    script = tmp_path / name
    script.write_text(f'#!/bin/sh\necho $$ >> {log}\nexec {sys.executable} "$@"\n')
    script.chmod(0o755)
    return script


def _planned(argv, env=None):
    """The payload command lines `envdoctor ARGV` starts early: the command line parsed once (cli.main's parser),
    then cli/check.py's plan from the parsed options; [] for a command or options that start none."""
    from envdoctor.cli import EARLY_STARTS, _command_names, _normalise_argv, build_parser
    from envdoctor.cli import check as cli_check

    parser = build_parser()
    args = parser.parse_args(_normalise_argv(argv, _command_names(parser)))
    if EARLY_STARTS.get(args.command) is not cli_check.start_early:
        return []
    plan = cli_check.early_payloads(args)
    return [] if plan is None else pl.inspect_argvs(**plan, env=env)


@pytest.mark.parametrize("argv, expect", [
    ([], "default"),
    (["check"], "default"),
    (["--format", "json", "-v"], "default"),
    (["check", "--no-torch"], "default --no-torch"),
    (["--python-timeout", "8"], "default 8"),
    (["--python-timeout=8", "--no-torch"], "default 8 --no-torch"),
    (["--smoke", "off"], "default off"), (["--smoke=thorough"], "default thorough"),
    (["--smoke", "thorough", "--python-timeout", "8"], "default 8 thorough"),
    (["bench"], None), (["diagnose", "x.txt"], None), (["check", "--facts", "s.json"], None),
    (["--bench"], None),
])
def test_what_the_command_line_starts(argv, expect, monkeypatch) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    got = _planned(argv)
    if expect is None:
        assert got == []
        return
    exe = pl.default_interpreter()[0]
    timeout = 8.0 if " 8" in expect else (pl.THOROUGH_TIMEOUT_S if "thorough" in expect else 60.0)
    tier = "thorough" if "thorough" in expect else ("off" if " off" in expect else "quick")
    args = ["--no-torch"] if "--no-torch" in expect else pl.smoke_args(tier)
    assert got == [pl.payload_argv(exe, "inspect", args, timeout)]


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["--python"], ["--python-timeout", "soon"],
                                  ["--python-timeout", "0"], ["check", "x"]])
def test_a_command_line_argparse_refuses_starts_nothing(argv) -> None:
    with pytest.raises(SystemExit):  # the parser exits before anything is started
        _planned(argv)


def test_data_paths_reach_the_smoke_checkpoint(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    got = _planned(["--data", str(tmp_path)])
    assert got[0][-4:] == ["--smoke", "quick", "--smoke-dir", str(tmp_path)]
    assert _planned(["--data", str(tmp_path / "missing")]) == []  # refused by the CLI before probing
    assert _planned(["-o", str(tmp_path / "no-dir" / "r.json")]) == []  # an output the CLI refuses, too


def test_named_interpreters_once_each(tmp_path: Path) -> None:
    py = _fake_python(tmp_path)
    got = _planned(["--python", str(py), f"--python={py}", "--python", "sh"], ENV)
    assert [a[0] for a in got] == [str(py), "sh"]
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(py)
    assert [a[0] for a in _planned(["--python", str(venv)], ENV)] == [str(venv / "bin" / "python")]  # a prefix
    assert _planned(["--python", "no-such-python-here"], ENV) == []  # the CLI's usage error, nothing started


def test_the_probe_adopts_the_early_payload(tmp_path: Path) -> None:
    py = _fake_python(tmp_path)
    assert pl.start_early([str(py)], 30.0, inspect_torch=False) == 1
    env = pe.probe_python(str(py), Runner(), timeout_s=30.0, inspect_torch=False)
    assert env.status == "ok" and env.executable
    assert len((tmp_path / "python.starts").read_text().split()) == 1  # one payload process, not two
    assert pl.discard_early() == 0


def test_a_wrong_guess_is_not_adopted_and_is_killed(tmp_path: Path) -> None:
    py = _fake_python(tmp_path)
    assert pl.start_early([str(py)], 30.0) == 1  # torch inspected; the probe below asks --no-torch
    env = pe.probe_python(str(py), Runner(), timeout_s=30.0, inspect_torch=False)
    assert env.status == "ok"
    assert len((tmp_path / "python.starts").read_text().split()) == 2
    assert pl.discard_early() == 1
    assert pl.discard_early() == 0


def test_no_early_start_when_turned_off(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ENVDOCTOR_EARLY_PAYLOAD", "0")
    assert pl.start_early([str(_fake_python(tmp_path))], 30.0) == 0


FAKE_TORCH = '''
import os
__version__ = "9.9.9+cpu"
class cuda:
    @staticmethod
    def is_available():
        open(os.environ["CUDA_MARKER"], "w").close()
        return False
    @staticmethod
    def _lazy_init():
        raise RuntimeError("Torch not compiled with CUDA enabled")
    @staticmethod
    def device_count():
        return 0
'''


def _gated(tmp_path: Path, deadline: str = "30") -> subprocess.Popen:
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH)
    env = dict(os.environ, PYTHONPATH=str(site), CUDA_MARKER=str(tmp_path / "cuda-touched"))
    return subprocess.Popen([sys.executable, str(pl.payload_path()), "--task", "inspect", "--deadline-s", deadline,
                             "--cuda-gate"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)


def test_an_early_payload_initialises_cuda_only_after_its_stdin_closes(tmp_path: Path) -> None:
    proc = _gated(tmp_path)
    try:
        line = b"\n"
        while not line.strip():
            line = proc.stdout.readline()
        first = json.loads(line)  # the checkpoint written just before import torch
        assert first.get("checkpoint") is True
        time.sleep(0.5)  # the fake torch imports at once: the payload is now at the gate, or CUDA was touched
        assert not (tmp_path / "cuda-touched").exists()
        proc.stdin.close()
        proc.wait(timeout=60)
        out = proc.stdout.read()
    finally:
        proc.kill()
    final = json.loads(out.strip().splitlines()[-1])
    assert final["ok"] is True and final["result"]["torch"]["cuda_available"] is False
    assert (tmp_path / "cuda-touched").exists()


def test_a_gate_never_opened_is_a_named_timeout(tmp_path: Path) -> None:
    proc = _gated(tmp_path, deadline="1.5")
    try:
        proc.wait(timeout=60)  # stdin stays open (communicate() would close it)
        out = proc.stdout.read()
    finally:
        proc.kill()
    final = json.loads(out.strip().splitlines()[-1])
    assert final["timed_out"] is True and final["stage"] == "waiting for envdoctor to read the GPUs' process lists"
    assert not (tmp_path / "cuda-touched").exists()


@pytest.mark.parametrize("early", ["1", "0"])
def test_cli_main_starts_the_payload_early_and_the_probe_adopts_it(tmp_path: Path, monkeypatch, capsys,
                                                                   early) -> None:
    # the whole command (cli.main), not its parts: main starts the payload before its own imports, the pythons
    # probe adopts that very process (the same Started object, one start of the interpreter); turned off, the
    # probe starts the one process itself
    from envdoctor.cli import main

    started, adopted = [], []
    real_start, real_adopt = pl.start_early, pl.adopt_early

    def start_spy(*a, **kw):
        n = real_start(*a, **kw)
        started.extend(pl._EARLY.values())
        return n

    def adopt_spy(argv, runner, env):
        got = real_adopt(argv, runner, env)
        adopted.append(got)
        return got

    monkeypatch.setattr(pl, "start_early", start_spy)
    monkeypatch.setattr(pe, "adopt_early", adopt_spy)
    monkeypatch.setenv("ENVDOCTOR_EARLY_PAYLOAD", early)
    py = _fake_python(tmp_path)
    code = main(["check", "--python", str(py), "--no-torch", "--data", str(tmp_path), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code in (0, 1) and report["facts"]["pythons"][0]["status"] == "ok"
    assert len((tmp_path / "python.starts").read_text().split()) == 1  # one payload process
    if early == "1":
        assert len(started) == 1 and adopted == started  # the early process is the one the probe used
    else:
        assert started == [] and adopted == [None]
    assert pl._EARLY == {}  # nothing left running


def test_the_payload_starts_from_the_parsed_options_before_the_heavy_imports(tmp_path: Path) -> None:
    # what keeps the target's `import torch` the floor of a run (issue 40): cli.main parses the command line once,
    # then starts the payload, before envdoctor imports its facts, checks, compat data, services or rich
    import subprocess

    py = _fake_python(tmp_path)
    probe = (
        "import os, sys, json\n"
        "import envdoctor.probes.runner as runner\n"
        "def stop(self, argv, **kw):\n"
        "    heavy = [m for m in ('envdoctor.model.facts', 'envdoctor.services.collect', 'envdoctor.checks',\n"
        "                         'envdoctor.compat', 'envdoctor.judging', 'rich') if m in sys.modules]\n"
        "    sys.stdout.write(json.dumps({'argv': [str(a) for a in argv], 'heavy': heavy}) + '\\n')\n"
        "    sys.stdout.flush()\n"
        "    os._exit(0)\n"
        "runner.Runner.start = stop\n"
        "from envdoctor.__main__ import run\n"
        "sys.argv = ['envdoctor'] + sys.argv[1:]\n"
        "run()\n")
    env = {k: v for k, v in os.environ.items() if k != "ENVDOCTOR_EARLY_PAYLOAD"}
    proc = subprocess.run([sys.executable, "-c", probe, "--python", str(py), "--python-timeout", "9",
                           "--format", "json"], capture_output=True, text=True, timeout=120, env=env,
                          cwd=str(Path(__file__).resolve().parents[3]))
    got = json.loads(proc.stdout.strip().splitlines()[0])
    assert got["heavy"] == []
    assert got["argv"] == pl.payload_argv(str(py), "inspect", pl.smoke_args("quick"), 9.0)
