"""Adversarial cases found by breaking envdoctor like a user would: hung, broken and stray tools, odd inputs."""

from __future__ import annotations

from pathlib import Path

from envdoctor.facts import ProbeStatus
from envdoctor.probes.driver import probe_driver, probe_topology
from envdoctor.probes.host import probe_host
from tests.fakes.nvml import FakeNvml
from tests.fakes.runner import FakeRunner

XML = ("nvidia-smi", "-q", "-x")
TOPO = ("nvidia-smi", "topo", "-m")
NO_COMM = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
           "Make sure that the latest NVIDIA driver is installed and running.\n")


# --------------------------------------------------------------------------- a stray or broken nvidia-smi


def test_hung_nvidia_smi_does_not_hide_a_missing_driver(tmp_path):
    # no libnvidia-ml at all: a hung nvidia-smi on PATH cannot mean a working driver
    d = probe_driver(FakeRunner({XML: FakeRunner.TIMEOUT}), nvml=FakeNvml(init_error="LIBRARY_NOT_FOUND"),
                     root=str(tmp_path))
    assert d.status == ProbeStatus.ABSENT
    assert "timed out after 10 s" in d.reason and "libnvidia-ml" in d.reason


def test_nvidia_smi_that_cannot_reach_the_driver_is_absent(tmp_path):
    d = probe_driver(FakeRunner({XML: (9, NO_COMM, "")}), nvml=FakeNvml(init_error="LIBRARY_NOT_FOUND"),
                     root=str(tmp_path))
    assert d.status == ProbeStatus.ABSENT and d.nvidia_smi_error.startswith("NVIDIA-SMI has failed")
    # NVML could not tell (an unknown init error), nvidia-smi's own words can: no driver loaded
    d = probe_driver(FakeRunner({XML: (9, NO_COMM, "")}), nvml=FakeNvml(init_error="UNKNOWN"), root=str(tmp_path))
    assert d.status == ProbeStatus.ABSENT and "exited 9" in d.reason


def test_broken_nvidia_smi_with_a_loaded_driver_stays_failed(tmp_path):
    # the kernel module answers but the library is the wrong version: that is not "no driver"
    runner = FakeRunner({XML: (18, "Failed to initialize NVML: Driver/library version mismatch\n", "")})
    d = probe_driver(runner, nvml=FakeNvml(init_error="LIB_RM_VERSION_MISMATCH"), root=str(tmp_path))
    assert d.status == ProbeStatus.FAILED


def test_topology_reason_quotes_nvidia_smi_once():
    t = probe_topology(FakeRunner({TOPO: (9, NO_COMM, "")}))
    assert t.status == ProbeStatus.FAILED
    assert t.reason.count("couldn't communicate") == 1, t.reason


def test_hung_gcc_is_asked_once(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("processor\t: 0\n")
    runner = FakeRunner({("gcc", "-dumpfullversion"): FakeRunner.TIMEOUT}, which={"gcc": "/usr/bin/gcc"})
    h = probe_host(runner, root=str(tmp_path), env={})
    assert h.gcc_version is None
    assert runner.calls == [("gcc", "-dumpfullversion")]  # not a second 10 s wait on -dumpversion


# --------------------------------------------------------------------------- the real runner


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


# --------------------------------------------------------------------------- --python


def _cli(*argv: str) -> int:
    from envdoctor.cli import main

    return main(list(argv))


def test_python_typo_is_a_usage_error_not_a_clean_report(tmp_path, capsys):
    # `--python /opt/venv/bin/pyhton --only 'torch.*'` used to print "No problems found" and exit 0
    (tmp_path / "notexec").write_text("")
    for bad, why in ((str(tmp_path / "missing"), "no such file"), (str(tmp_path), "is a directory"),
                     (str(tmp_path / "notexec"), "not executable"),
                     ("no-such-python-on-path", "no such command on PATH")):
        assert _cli("--python", bad, "--only", "torch.*", "--format", "json") == 2, bad
        err = capsys.readouterr().err
        assert why in err and "Traceback" not in err and err.count("\n") == 1


def test_python_venv_prefix_and_duplicates_are_inspected_once(tmp_path, monkeypatch):
    import sys

    from envdoctor import app
    from envdoctor.cli import _python_target  # the CLI wraps app.python_target

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin/python").symlink_to(sys.executable)
    assert _python_target(str(venv)) == str(venv / "bin/python")
    seen = []

    def fake_probe(exe, runner, timeout, inspect_torch, how):
        from envdoctor.facts import ProbeStatus, PythonEnv

        seen.append(exe)
        return PythonEnv(status=ProbeStatus.OK, executable=exe)

    import envdoctor.probes.python_env as pe

    monkeypatch.setattr(pe, "probe_python", fake_probe)
    monkeypatch.chdir(tmp_path)
    facts = app.collect(app.CollectOptions(pythons=[str(venv / "bin/python"), "venv/bin/python",
                                                    "./venv/bin/../bin/python"], kernel_log=False))
    assert seen == [str(venv / "bin/python")] and len(facts.pythons) == 1


def test_missing_data_path_is_a_usage_error(tmp_path, capsys):
    # used to skip storage.data-path and exit 0: a volume that is not mounted looked like a clean bill
    assert _cli("--data", str(tmp_path / "not-mounted"), "--no-torch", "--only", "storage.*") == 2
    err = capsys.readouterr().err
    assert "not-mounted: no such file or directory" in err and err.count("\n") == 1
    odd = tmp_path / "dir with spaces" / "データ"
    odd.mkdir(parents=True)
    assert _cli("--data", str(odd), "--no-torch", "--only", "storage.*", "--format", "json") in (0, 1)


# --------------------------------------------------------------------------- diagnose: encodings

PASTES = Path(__file__).parent / "fixtures" / "pastes"


def _categories(capsys) -> list:
    import json

    return [f["category"] for f in json.loads(capsys.readouterr().out)["findings"]]


def test_diagnose_reads_the_utf16_a_windows_shell_redirect_writes(tmp_path, capsys):
    # PowerShell 5: `python -m torch.utils.collect_env > env.txt` writes UTF-16LE with a BOM; it used to be
    # rejected as "binary (NUL bytes)"
    text = (PASTES / "gpu-arch.txt").read_text(encoding="utf-8")
    assert _cli("diagnose", str(PASTES / "gpu-arch.txt"), "--format", "json") == 1
    expected = _categories(capsys)
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" in expected
    for name, data in (("bom.txt", text.encode("utf-16")), ("le.txt", text.encode("utf-16-le")),
                       ("be.txt", b"\xfe\xff" + text.encode("utf-16-be")),
                       ("u8bom.txt", b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())):
        (tmp_path / name).write_bytes(data)
        assert _cli("diagnose", str(tmp_path / name), "--format", "json") == 1, name
        assert _categories(capsys) == expected, name
    assert _cli("diagnose", "/bin/ls") == 2  # real binary is still "nothing recognisable"


def test_facts_snapshot_saved_as_utf16_loads(tmp_path, capsys):
    from envdoctor.facts import Facts

    snap = tmp_path / "snap.json"
    snap.write_text(Facts().to_json(), encoding="utf-16")
    assert _cli("check", "--facts", str(snap), "--format", "json") in (0, 1)
    assert "not valid JSON" not in capsys.readouterr().err


def test_diagnose_reads_through_terminal_colour_codes(tmp_path, capsys):
    import re

    text = (PASTES / "gpu-arch.txt").read_text(encoding="utf-8")
    assert _cli("diagnose", str(PASTES / "gpu-arch.txt"), "--format", "json") == 1
    expected = _categories(capsys)
    coloured = re.sub(r"(torch|NVIDIA|Driver Version|sm_\d+|\d+\.\d+)", "\x1b[1;32m\\1\x1b[0m", text)
    coloured = "\x1b]0;title\x07\x1b[2K" + coloured  # a window title and a line erase, as a CI log has
    (tmp_path / "ansi.txt").write_text(coloured)
    assert _cli("diagnose", str(tmp_path / "ansi.txt"), "--format", "json") == 1  # was: nothing recognisable
    assert _categories(capsys) == expected
    (tmp_path / "no-esc.txt").write_text(coloured.replace("\x1b", ""))  # the ESC byte lost in a copy
    assert _cli("diagnose", str(tmp_path / "no-esc.txt"), "--format", "json") == 1
    assert _categories(capsys) == expected


# --------------------------------------------------------------------------- --only / --ignore


def test_only_or_ignore_glob_matching_no_check_is_a_usage_error(capsys, monkeypatch):
    import envdoctor.app as app

    def no_collect(*a, **k):  # the typo is reported before any probing
        raise AssertionError("collected facts for a command line that is a usage error")

    monkeypatch.setattr(app, "collect", no_collect)
    # `--only 'drvier.*'` used to run no check and print "No problems found" with exit code 0
    assert _cli("--only", "drvier.*") == 2
    assert "--only drvier.*: matches no check id" in capsys.readouterr().err
    assert _cli("--ignore", "driver.presnt") == 2
    assert _cli("diagnose", str(PASTES / "gpu-arch.txt"), "--only", "nosuch") == 2
    capsys.readouterr()
    assert _cli("diagnose", str(PASTES / "gpu-arch.txt"), "--only", "torch.*,driver.present", "--format",
                "json") == 1


def test_a_full_disk_under_stdout_is_not_an_internal_error(monkeypatch, capsys):
    import errno
    import io
    import sys

    class Full(io.StringIO):
        def write(self, s):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sys, "stdout", Full())
    # `envdoctor list-checks > /dev/full` used to exit 3 with "internal error: OSError"
    assert _cli("list-checks") == 2
    assert capsys.readouterr().err == "envdoctor: cannot write the output: No space left on device\n"


# --------------------------------------------------------------------------- explain


def test_every_finding_code_the_fixtures_produce_can_be_explained(capsys):
    # `envdoctor explain messages.signature/...`, copied from diagnose's own output, used to be "unknown code"
    from envdoctor.compat import load_compat
    from envdoctor.diagnose import NothingRecognised, diagnose_report

    compat = load_compat()
    codes = {f"messages.signature/{s.id}" for s in load_compat().signatures}
    for paste in sorted(PASTES.glob("*.txt")):
        try:
            report = diagnose_report([paste.read_text(encoding="utf-8")], compat)
        except NothingRecognised:
            continue
        codes |= {f.code for f in report.findings}
    assert any(c.startswith("messages.signature/") for c in codes)
    for code in sorted(codes):
        assert _cli("explain", code) == 0, (code, capsys.readouterr().err)
    out = capsys.readouterr().out
    assert "Category: DRIVER_TOO_OLD_FOR_TORCH_CUDA" in out
    assert _cli("explain", "messages.signature/no-such-signature") == 2


# --------------------------------------------------------------------------- the target interpreter


def test_interpreter_crashing_in_import_torch_names_the_signal():
    import json

    from envdoctor.probes.python_env import PAYLOAD_VERSION, payload_argv, probe_python
    from envdoctor.probes.runner import RunResult

    argv = tuple(payload_argv("/opt/py", "inspect", [], 60.0))
    # the payload writes a checkpoint just before `import torch`; the crash leaves it as the last word
    checkpoint = json.dumps({"envdoctor_payload": PAYLOAD_VERSION, "checkpoint": True, "stage": "importing torch",
                             "result": {"python_version": "3.11.7"}})
    penv = probe_python("/opt/py", FakeRunner({argv: RunResult(argv, -11, checkpoint + "\n", "")}), 60.0)
    assert penv.status == ProbeStatus.FAILED
    assert penv.reason == "killed by SIGSEGV (segmentation fault) while importing torch"
    assert penv.failure == "crashed" and penv.python_version == "3.11.7"


def test_torch_module_without_version_is_not_called_torch_none():
    from envdoctor.facts import PythonEnv, TorchInfo
    from envdoctor.probes.python_env import _ok_reason

    reason = _ok_reason(PythonEnv(torch=TorchInfo(import_seconds=0.01)), True)
    assert "None" not in reason and "no __version__" in reason
