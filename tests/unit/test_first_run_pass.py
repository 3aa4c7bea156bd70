"""Issue 19's pass over the first run: config, deleted cwd, the timeout as given, --no-config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.model import config
from envdoctor.probes import python_env as pe
from envdoctor.probes.runner import RunResult
from tests.fakes.runner import FakeRunner

ROOT = Path(__file__).resolve().parents[2]


def test_a_broken_pyproject_without_our_table_is_a_warning(tmp_path, capsys) -> None:
    (tmp_path / "pyproject.toml").write_text("[project\nname = 'x'\n")  # another tool's broken file
    assert config.find_config(tmp_path) is None
    assert "warning" in capsys.readouterr().err


def test_a_broken_pyproject_with_our_table_stops_and_preflight_raises_preflight_error(tmp_path, monkeypatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.envdoctor]\nrequire = [\n")
    with pytest.raises(config.ConfigError):
        config.find_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    import envdoctor

    with pytest.raises(envdoctor.PreflightError, match="pyproject.toml"):
        envdoctor.preflight()


def test_the_payload_watchdog_timeout_is_reported_as_the_users_timeout() -> None:
    argv = tuple(pe.payload_argv("/opt/py", "inspect", [], 8.0))
    envelope = {"envdoctor_payload": pe.PAYLOAD_VERSION, "ok": False, "timed_out": True, "stage": "importing torch",
                "error": "timed out after 6.4 s while importing torch", "result": {"python_version": "3.11.7"}}
    runner = FakeRunner({argv: RunResult(argv, 3, json.dumps(envelope) + "\n", "")})
    env = pe.probe_python("/opt/py", runner, timeout_s=8.0)
    assert "timed out after 8 s while importing torch" in (env.reason or ""), env.reason


def _envdoctor(*args: str, cwd: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=dict(env or os.environ, PYTHONPATH=str(ROOT)))


def test_a_deleted_current_directory_is_one_line(tmp_path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    code = ("import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); from envdoctor.cli import main; "
            "sys.exit(main(['--no-torch']))")
    proc = subprocess.run([sys.executable, "-c", code, str(gone)], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "current directory" in proc.stderr


def test_no_config_ignores_the_project_file(tmp_path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.envdoctor]\nbogus-key = 1\n")
    bad = _envdoctor("check", "--no-torch", "--only", "host.shm", cwd=str(tmp_path))
    assert bad.returncode == 2 and "bogus-key" in bad.stderr
    ok = _envdoctor("check", "--no-config", "--no-torch", "--only", "host.shm", cwd=str(tmp_path))
    assert ok.returncode == 0, ok.stderr


def test_bench_list_as_json_and_bench_no_torch(tmp_path) -> None:
    listed = _envdoctor("bench", "--list", "--format", "json", cwd=str(tmp_path))
    assert listed.returncode == 0, listed.stderr
    names = {b["name"]: b for b in json.loads(listed.stdout)["benchmarks"]}
    assert names["disk_seq_read"]["kind"] == "disk" and names["matmul_bf16"]["kind"] == "torch"
    refused = _envdoctor("bench", "--no-torch", "matmul_bf16", cwd=str(tmp_path))
    assert refused.returncode == 2 and "--no-torch" in refused.stderr
    disks = _envdoctor("bench", "--no-torch", "--no-write", "--format", "json", "--data", str(tmp_path),
                       cwd=str(tmp_path))
    assert disks.returncode in (0, 1), disks.stderr
    results = json.loads(disks.stdout)["facts"]["bench"]["results"]
    assert results and {r["name"] for r in results} <= {"disk_seq_read", "disk_rand_read"}


def test_the_disk_skip_reason_names_the_free_space_margin(tmp_path, monkeypatch) -> None:
    import collections

    from envdoctor.bench import disk

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(disk.shutil, "disk_usage", lambda _p: usage(10 << 30, 0, 2500 << 20))
    target, why = disk.choose_target(str(tmp_path), True, lambda _p: None, temp_bytes=1 << 30)
    assert target is None and "2500 MiB free" in why and f"{disk.FREE_MARGIN_BYTES >> 20} MiB" in why


def test_the_suggested_fio_command_removes_its_file() -> None:
    from envdoctor.remedies.system import random_read_test

    assert "--unlink=1" in random_read_test("/data")  # fio deletes its job file when done


def test_key_facts_never_say_at_unknown() -> None:
    from envdoctor.model.facts import CudaToolkit, Facts, ProbeStatus, PythonEnv, Toolkits
    from envdoctor.report.facts_view import key_fact_rows

    facts = Facts(pythons=[PythonEnv(status=ProbeStatus.OK, python_version="3.12.1")],
                  toolkits=Toolkits(status=ProbeStatus.OK, on_path=CudaToolkit(version="12.4")))
    text = "\n".join(v for _k, v in key_fact_rows(facts))
    assert "at unknown" not in text and "3.12.1 (path unknown)" in text


def test_a_missing_command_behind_an_unsearchable_path_entry_is_not_found(tmp_path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root searches every directory: no EACCES to meet")
    from envdoctor.probes.runner import Runner

    locked = tmp_path / "locked"
    locked.mkdir(mode=0o000)
    try:
        rr = Runner({"PATH": f"{locked}{os.pathsep}/usr/bin"}).run(["nvidia-smi-does-not-exist"], timeout=5)
    finally:
        locked.chmod(0o755)
    assert rr.error == "not found"


def test_nowhere_on_path() -> None:
    from envdoctor.probes.runner import _nowhere_on_path

    assert _nowhere_on_path("nvidia-smi-does-not-exist", "/usr/bin:/bin")
    assert not _nowhere_on_path("sh", "/usr/bin:/bin") and not _nowhere_on_path("/usr/bin/x", "/bin")
