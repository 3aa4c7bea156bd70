"""The smoke tier (issue 38) on real interpreters, each breakage made for real (no mock of the failure itself): a
build directory on a noexec mount (a private mount namespace), no C++ compiler on PATH, a torch.py in the working
directory, an open-files limit too low for the DataLoader; each gives a finding that names the cause with a fix. A
healthy CPU venv (with the common 1,024 open-files limit: a note) and the CUDA venv without a driver get no
warning of the tier. The breakages run the payload's own fresh interpreter on the steps they break (seconds); the
healthy venvs run the whole `envdoctor check`, once each."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from envdoctor._payload import smoke as payload_smoke
from envdoctor._payload import smoke_steps
from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, ProbeStatus, PythonEnv, Smoke, from_dict
from envdoctor.model.findings import Severity
from envdoctor.services.collect import judge

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _torch_target(python: str) -> List[Any]:
    """[name, version, location, module] of the venv's torch, read from its metadata (no import)."""
    out = subprocess.run([python, "-c", "import importlib.metadata as m, json; d = m.distribution('torch'); "
                          "print(json.dumps([d.version, str(d.locate_file(''))]))"],
                         capture_output=True, text=True, timeout=60)
    version, location = json.loads(out.stdout.strip().splitlines()[-1])
    return ["torch", version, location, "torch"]


def fresh(python: str, units: List[Any], cwd: Path, env: Dict[str, str], wrap: Optional[List[str]] = None,
          preexec: Any = None) -> Smoke:
    """The payload's fresh interpreter (the one `check` starts beside the import) on ``units``, answering on
    stdout; its records as the Smoke fact."""
    argv = payload_smoke.fresh_command(python, units, 1)
    proc = subprocess.run((wrap or []) + argv, cwd=str(cwd), env=env, capture_output=True, text=True, timeout=180,
                          preexec_fn=preexec)
    recs = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert recs and recs[-1] == {"end": True}, (proc.stdout, proc.stderr)
    return from_dict(Smoke, {"tier": "quick", "steps": [r for r in recs if "name" in r],
                             "open_files_limit": list(resource.getrlimit(resource.RLIMIT_NOFILE))})


def smoke_findings(python: str, smoke: Smoke, compat) -> List[Any]:
    py = PythonEnv(status=ProbeStatus.OK, executable=python, python_version="3.11", smoke=smoke)
    report = judge(Facts(pythons=[py]), compat)
    return [f for f in report.findings if f.code.startswith("smoke.")]


def _env(**extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHINDUCTOR", "TRITON", "TORCH_EXT"))}
    env.update(extra)
    return env


def _need_mount_namespace(what: str) -> None:
    """Skip, with the reason, where this test cannot mount ``what`` in a private mount namespace."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip(f"needs unshare(1) and root to mount {what} in a private mount namespace")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a private mount namespace here: {probe.stderr.decode(errors='replace').strip()}")


def test_a_noexec_temp_directory_is_named_with_its_move(cpu_venv, compat, tmp_path) -> None:
    _need_mount_namespace("a noexec tmpfs")
    scratch = tmp_path / "noexec-tmp"
    scratch.mkdir()
    # the fresh interpreter is exec'd inside the namespace, after the noexec mount over TMPDIR
    wrap = ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o noexec tmpfs {scratch} && exec \"$@\"", "sh"]
    smoke = fresh(cpu_venv.python, [[[["compile", {}]], {"compile": 60}]], tmp_path,
                  _env(TMPDIR=str(scratch), HOME=str(tmp_path)), wrap=wrap)
    step = smoke.step("compile")
    assert step.status == "failed" and "failed to map segment" in step.error, step
    (f,) = smoke_findings(cpu_venv.python, smoke, compat)
    assert (f.code, f.category, f.severity) == ("smoke.steps/noexec", "TORCH_COMPILE_UNUSABLE", Severity.ERROR)
    assert f"{scratch} (temp)" in f.summary and f"{scratch}/torchinductor_" in f.summary
    assert "noexec" in f.summary
    assert any("export TMPDIR=" in c for c in f.fix.commands)
    # the fix works: its commands run in a shell (inside the namespace, where the noexec mount is), then the
    # same step with the environment they leave passes
    script = " && ".join(f.fix.commands[1:]) + " && env"
    ran = subprocess.run(wrap + ["sh", "-c", script], env=_env(TMPDIR=str(scratch), HOME=str(tmp_path)),
                         capture_output=True, text=True, timeout=60, check=True)
    fixed = dict(line.split("=", 1) for line in ran.stdout.splitlines() if "=" in line)
    assert fixed["TMPDIR"] != str(scratch)
    again = fresh(cpu_venv.python, [[[["compile", {}]], {"compile": 60}]], tmp_path,
                  _env(TMPDIR=fixed["TMPDIR"], HOME=str(tmp_path)), wrap=wrap)
    assert again.step("compile").status == "ok", again.step("compile")


def test_no_compiler_on_path_is_a_torch_compile_problem(cpu_venv, compat, tmp_path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    smoke = fresh(cpu_venv.python, [[[["compile", {}]], {"compile": 60}]], tmp_path,
                  _env(PATH=str(bare), HOME=str(tmp_path), CXX=""))
    step = smoke.step("compile")
    assert step.status == "failed" and step.detail["compiler_path"] is None
    (f,) = smoke_findings(cpu_venv.python, smoke, compat)
    assert (f.code, f.category) == ("smoke.steps/no-compiler", "TORCH_COMPILE_UNUSABLE")
    assert "'g++'" in f.summary and "not on the run's PATH" in f.summary
    assert "CXX" in f.fix.summary


def test_a_torch_py_in_the_working_directory_is_named(cpu_venv, compat, tmp_path) -> None:
    (tmp_path / "torch.py").write_text("print('my experiment')\n")
    target = _torch_target(cpu_venv.python)
    smoke = fresh(cpu_venv.python, [[[["resolve", {"targets": [target]}]], {"resolve": 60}]], tmp_path, _env())
    (f,) = smoke_findings(cpu_venv.python, smoke, compat)
    assert (f.code, f.category, f.severity) == ("smoke.steps/shadowed", "PYTHON_PACKAGE_SHADOWED", Severity.ERROR)
    assert f.summary == (f"`import torch` in {tmp_path} loads {tmp_path}/torch.py, not the installed torch "
                         f"{target[1]}")
    # the fix, run: the rename leaves the installed torch first again
    for cmd in f.fix.commands:
        subprocess.run(cmd, shell=True, check=True, cwd=str(tmp_path))
    again = fresh(cpu_venv.python, [[[["resolve", {"targets": [target]}]], {"resolve": 60}]], tmp_path, _env())
    assert again.step("resolve").status == "ok" and not smoke_findings(cpu_venv.python, again, compat)


DATALOADER_UNDER_LIMIT = (
    "import importlib.util as u, resource, sys, json\n"
    "import torch\n"
    "s = u.spec_from_file_location('_envdoctor_smoke_steps', {path!r})\n"
    "m = u.module_from_spec(s); s.loader.exec_module(m)\n"
    "resource.setrlimit(resource.RLIMIT_NOFILE, ({soft}, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
    "m.serve([([('dataloader', {{}})], {{'dataloader': 60}})], m.FUNCS, 1)\n"
)


def test_an_open_files_limit_the_dataloader_runs_out_of_is_an_error(cpu_venv, compat, tmp_path) -> None:
    code = DATALOADER_UNDER_LIMIT.format(path=smoke_steps.__file__, soft=64)
    proc = subprocess.run([cpu_venv.python, "-c", code], cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=180)
    recs = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    smoke = from_dict(Smoke, {"tier": "quick", "steps": [r for r in recs if "name" in r],
                              "open_files_limit": [64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]]})
    assert smoke.step("dataloader").status == "failed" and "Too many open files" in smoke.step("dataloader").error
    (f,) = smoke_findings(cpu_venv.python, smoke, compat)
    assert (f.code, f.category, f.severity) == ("smoke.open-files/dataloader-failed", "OPEN_FILES_LIMIT_LOW",
                                                Severity.ERROR)
    assert "soft limit 64" in f.summary and f.fix.commands[0].startswith("ulimit -n ")


def _check_json(python: str, tmp_path: Path, preexec: Any = None) -> Dict[str, Any]:
    env = dict(os.environ, ENVDOCTOR_EARLY_PAYLOAD="0")
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--python", python, "--format", "json",
                           "--python-timeout", "240"], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                          timeout=400, preexec_fn=preexec)
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def _limit_1024() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))


def test_a_healthy_cpu_venv_passes_every_step_and_notes_1024(cpu_venv, tmp_path) -> None:
    report = _check_json(cpu_venv.python, tmp_path, preexec=_limit_1024)
    smoke = report["facts"]["pythons"][0]["smoke"]
    assert smoke["tier"] == "quick"
    expected = {"resolve": "ok", "compile": "ok", "dataloader": "ok", "checkpoint": "ok", "distributed": "ok"}
    mixed = cpu_venv.torchvision_error is None and any(s["name"] == "import:torchvision" for s in smoke["steps"])
    if mixed:
        # the fixture's one real problem (conftest.MIXED_VARIANT_CHECKS): torchvision's CUDA 13.0 build beside
        # the +cpu torch does not import, which the smoke tier finds by trying, as a note under its cause
        expected["import:torchvision"] = "failed"
    assert {s["name"]: s["status"] for s in smoke["steps"]} == expected, smoke
    mine = [f for f in report["findings"] if f["code"].startswith("smoke.")]
    want = [("smoke.open-files/low", "info")] + ([("smoke.steps/import-torchvision-failed", "info")] if mixed else [])
    assert sorted((f["code"], f["severity"]) for f in mine) == sorted(want)
    assert "the smoke DataLoader passed" in next(f for f in mine if f["code"] == "smoke.open-files/low")["summary"]


@pytest.mark.parametrize("which", ["cuda"])
def test_the_cuda_venv_without_a_driver_has_no_smoke_warning(cuda_venv, tmp_path, which) -> None:
    report = _check_json(cuda_venv.python, tmp_path)
    smoke = report["facts"]["pythons"][0]["smoke"]
    steps = {s["name"]: s["status"] for s in smoke["steps"]}
    assert all(steps[n] == "ok" for n in ("resolve", "compile", "dataloader", "checkpoint", "distributed")), smoke
    assert all(steps[n] == "skipped" for n in ("cuda-kernel", "cublas", "cudnn", "autocast", "nccl")), smoke
    assert not [f for f in report["findings"] if f["code"].startswith("smoke.") and f["severity"] != "info"]


def test_a_dev_shm_too_small_for_the_workers_is_named_by_the_workers_error(cpu_venv, compat, tmp_path) -> None:
    # a 64 KiB /dev/shm (a private mount namespace): the DataLoader's workers cannot hand their batches over;
    # torch re-raises it as "Caught RuntimeError in DataLoader worker process 0." and the finding names /dev/shm
    _need_mount_namespace("a small /dev/shm")
    # the same step as above, at the limits the test runs with
    code = "".join(line for line in DATALOADER_UNDER_LIMIT.splitlines(keepends=True)
                   if "setrlimit" not in line).format(path=smoke_steps.__file__)
    assert "setrlimit" not in code
    wrap = ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /dev/shm && exec \"$@\"", "sh"]
    proc = subprocess.run(wrap + [cpu_venv.python, "-c", code], cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=180)
    recs = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    smoke = from_dict(Smoke, {"tier": "quick", "steps": [r for r in recs if "name" in r],
                              "open_files_limit": list(resource.getrlimit(resource.RLIMIT_NOFILE))})
    step = smoke.step("dataloader")
    assert step is not None and step.status == "failed", (proc.stdout, proc.stderr)
    (f,) = smoke_findings(cpu_venv.python, smoke, compat)
    assert (f.category, f.severity) == ("SHM_TOO_SMALL", Severity.ERROR), f
    assert "shared memory" in f.summary and "DataLoader worker" in f.summary


def test_a_stdlib_named_file_in_the_working_directory_is_found_and_its_fix_works(cpu_venv, tmp_path) -> None:
    # no list of names: the payload compares the directory with what its own `import torch` loaded
    (tmp_path / "numbers.py").write_text("ANSWER = 42\n")
    (tmp_path / "test.py").write_text("print('a test.py nothing imports')\n")
    broken = subprocess.run([cpu_venv.python, "-c", "import torch"], cwd=str(tmp_path), capture_output=True,
                            text=True, timeout=300)
    assert broken.returncode != 0 and "numbers" in broken.stderr  # the breakage is real
    report = _check_json(cpu_venv.python, tmp_path)
    (f,) = [f for f in report["findings"] if f["code"].startswith("torch.cwd-shadow/")]
    assert (f["code"], f["severity"]) == ("torch.cwd-shadow/module", "error")
    assert f"{tmp_path}/numbers.py" in f["summary"] or "numbers.py" in f["summary"]
    assert "test.py" not in f["summary"]
    subprocess.run(["sh", "-c", " && ".join(f["fix"]["commands"])], check=True, timeout=60)
    fixed = subprocess.run([cpu_venv.python, "-c", "import torch"], cwd=str(tmp_path), capture_output=True,
                           text=True, timeout=300)
    assert fixed.returncode == 0, fixed.stderr[-2000:]
