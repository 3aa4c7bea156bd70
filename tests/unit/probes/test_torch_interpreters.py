"""Who is being judged: envdoctor's own environment and the interpreters with torch it can see elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, Package, ProbeStatus, PythonEnv, TorchInfo
from envdoctor.probes.python_env import who_is_judged
from envdoctor.probes.runner import RunResult
from envdoctor.probes.torch_interpreters import find_torch_interpreters, prefix_has_torch
from tests.fakes.runner import FakeRunner


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def make_venv(root: Path, torch: bool) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").write_text("#!/bin/sh\n")
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    site = root / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    if torch:
        (site / "torch").mkdir()
        (site / "torch" / "__init__.py").write_text("")
    return root


def test_venvs_with_torch_under_cwd_and_home_are_found(tmp_path: Path) -> None:
    cwd, home = tmp_path / "project", tmp_path / "home"
    with_torch = make_venv(cwd / ".venv", torch=True)
    make_venv(cwd / "tools" / "lint-env", torch=False)
    in_home = make_venv(home / ".virtualenvs" / "train", torch=True)
    deep = make_venv(home / "code" / "x" / "y" / "env", torch=True)  # three levels down: not looked at
    found = find_torch_interpreters({"HOME": str(home)}, FakeRunner({}), str(cwd))
    assert found == [str(with_torch / "bin" / "python"), str(in_home / "bin" / "python")]
    assert str(deep / "bin" / "python") not in found and prefix_has_torch(str(deep))


def test_the_judged_interpreter_is_not_listed_and_conda_envs_are(tmp_path: Path) -> None:
    judged = make_venv(tmp_path / "judged", torch=True)
    conda = tmp_path / "miniconda3"
    make_venv(conda / "envs" / "gpu", torch=True)
    (tmp_path / "home").mkdir()
    env = {"HOME": str(tmp_path / "home"), "CONDA_EXE": str(conda / "bin" / "conda")}
    found = find_torch_interpreters(env, FakeRunner({}), str(tmp_path), exclude=[str(judged)])
    assert found == [str(conda / "envs" / "gpu" / "bin" / "python")]


def test_python3_on_path_is_asked_without_importing_torch(tmp_path: Path) -> None:
    from envdoctor.probes.torch_interpreters import _FIND_TORCH

    argv = ("/opt/py/bin/python3", "-c", _FIND_TORCH)
    runner = FakeRunner({argv: RunResult(argv, 0, "yes", "")}, which={"python3": "/opt/py/bin/python3"})
    assert find_torch_interpreters({"HOME": str(tmp_path)}, runner, None) == ["/opt/py/bin/python3"]
    assert "import torch" not in _FIND_TORCH


def test_who_is_judged_marks_envdoctors_own_environment(tmp_path: Path) -> None:
    penv = PythonEnv(status=ProbeStatus.OK, executable=str(tmp_path / "bin" / "python"), prefix=str(tmp_path),
                     requested_as="$VIRTUAL_ENV")
    out = who_is_judged(penv, [penv], {"HOME": str(tmp_path)}, FakeRunner({}), own_prefix=str(tmp_path),
                        cwd=str(tmp_path))
    assert out.own_environment is True and out.torch_elsewhere == []
    with_torch = PythonEnv(status=ProbeStatus.OK, prefix="/elsewhere", torch=TorchInfo(version="2.13.0"))
    out = who_is_judged(with_torch, [with_torch], {}, FakeRunner({}), own_prefix=str(tmp_path), cwd=None)
    assert out.own_environment is False and out.torch_elsewhere is None  # torch here: nothing looked for


def _finding(penv: PythonEnv, compat):
    from envdoctor.services.collect import judge

    report = judge(Facts(pythons=[penv]), compat, only=["torch.interpreter"])
    return [f for f in report.findings if f.code.startswith("torch.interpreter/")]


def test_own_environment_is_one_warning_however_it_was_chosen(compat) -> None:
    for how in ("$VIRTUAL_ENV", "--python", "python3 on PATH", "envdoctor's own interpreter"):
        penv = PythonEnv(status=ProbeStatus.OK, executable="/v/bin/python", prefix="/v", requested_as=how,
                         own_environment=True, torch_elsewhere=["/work/venvs/cuda/bin/python"])
        (f,) = _finding(penv, compat)
        assert (f.code, f.severity) == ("torch.interpreter/not-a-torch-environment", "warning"), how
        assert "envdoctor's own environment" in f.summary
        assert f.fix.commands == ["envdoctor --python /work/venvs/cuda/bin/python"]
        assert not any("pip" in c for c in f.fix.commands)


def test_externally_managed_system_python_without_torch_is_not_told_to_pip_install(compat) -> None:
    penv = PythonEnv(status=ProbeStatus.OK, executable="/usr/bin/python3", prefix="/usr", requested_as="--python",
                     externally_managed=True, own_environment=False, torch_elsewhere=[])
    (f,) = _finding(penv, compat)
    assert f.severity == "warning" and "PEP 668" in f.summary
    assert f.fix.commands == ["envdoctor --python /path/to/venv/bin/python"]


def test_a_venv_without_torch_named_with_python_is_still_an_error(compat) -> None:
    penv = PythonEnv(status=ProbeStatus.OK, executable="/v/bin/python", prefix="/v", requested_as="--python",
                     own_environment=False, externally_managed=False,
                     packages=[Package("numpy", "2.0")])
    (f,) = _finding(penv, compat)
    assert (f.code, f.severity) == ("torch.interpreter/no-torch", "error")


def test_payload_reports_externally_managed() -> None:
    import json
    import subprocess
    import sys

    from envdoctor.probes.python_env import payload_path

    out = subprocess.run([sys.executable, str(payload_path()), "--no-torch"], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    result = json.loads(out.stdout.strip().splitlines()[-1])["result"]
    assert result["externally_managed"] is False  # a venv is never managed, whatever its base says
