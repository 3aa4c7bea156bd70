"""Who is being judged: envdoctor's own environment and the interpreters with torch it can see elsewhere."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, Package, ProbeStatus, PythonEnv, TorchInfo
from envdoctor.probes.python_env import who_is_judged
from envdoctor.probes.runner import RunResult
from envdoctor.probes.torch_interpreters import find_torch_interpreters, prefix_has_torch
from envdoctor.probes.trust import untrusted_because
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


# --- planted interpreters (issue 40) ------------------------------------------------------------------------------

posix_only = pytest.mark.skipif(os.name != "posix", reason="owners and modes as POSIX has them")


@posix_only
def test_a_world_writable_directorys_interpreter_is_never_in_a_fix(tmp_path: Path, compat) -> None:
    # run from a world-writable directory, envdoctor found a venv another user planted there and printed
    # `envdoctor --python <it>`: pasted as root, that runs their code
    shared = tmp_path / "shared"
    planted = make_venv(shared / ".venv", torch=True)
    shared.chmod(0o777)
    exe = str(planted / "bin" / "python")
    refused: dict = {}
    assert find_torch_interpreters({"HOME": str(tmp_path / "home")}, FakeRunner({}), str(shared),
                                   refused=refused) == []
    assert refused == {exe: f"{shared} is writable by every user"}
    judged = PythonEnv(status=ProbeStatus.OK, executable="/usr/bin/python3", prefix="/usr", requested_as="python3 on PATH",
                       own_environment=False, externally_managed=False)
    penv = who_is_judged(judged, [judged], {"HOME": str(tmp_path / "home")}, FakeRunner({}), own_prefix="/nowhere",
                         cwd=str(shared))
    assert penv.torch_elsewhere == [] and penv.torch_elsewhere_refused == refused
    for f in _finding(penv, compat) + _finding(dataclasses.replace(penv, own_environment=True), compat):
        assert not any(exe in c for c in f.fix.commands), f.fix
        assert f"Not suggested: {exe} ({shared} is writable by every user)" in f.fix.summary, f.fix.summary
    assert Facts.from_json(Facts(pythons=[penv]).to_json()).pythons[0].torch_elsewhere_refused == refused


@posix_only
def test_a_sticky_directory_keeps_our_own_entries_trusted(tmp_path: Path) -> None:
    # /tmp: anyone may create entries, but only an entry's owner can replace it: ours stays ours
    sticky = tmp_path / "tmp"
    ours = make_venv(sticky / "mine", torch=True)
    sticky.chmod(0o1777)
    assert untrusted_because(str(ours / "bin" / "python")) is None
    assert find_torch_interpreters({"HOME": str(tmp_path)}, FakeRunner({}), str(sticky)) == [
        str(ours / "bin" / "python")]


@posix_only
def test_a_path_another_user_owns_is_untrusted(tmp_path: Path) -> None:
    exe = make_venv(tmp_path / "env", torch=True) / "bin" / "python"
    assert untrusted_because(str(exe)) is None  # ours (or root's) all the way down
    if os.geteuid() == 0:  # root can give the venv away: then it is another user's (uid 4242)
        os.chown(tmp_path / "env", 4242, -1)
        why, uid = untrusted_because(str(exe)), 4242
        assert why is not None and why.startswith(f"{tmp_path / 'env'} is owned by "), why
    else:  # seen as another user, the test's own directories are someone else's
        uid = os.geteuid()
        why = untrusted_because(str(exe), uid=uid + 4242)
        assert why is not None and " is owned by " in why, why
    assert f"uid {uid})" in why or why.endswith(f"uid {uid}"), why
    group = tmp_path / "group"
    group_exe = make_venv(group / "env", torch=True) / "bin" / "python"
    group.chmod(0o775)
    if os.geteuid() == 0:
        os.chown(group, -1, 4243)  # a group that is not ours
        assert untrusted_because(str(group_exe)) == f"{group} is writable by its group (gid 4243)"


@posix_only
def test_python3_in_a_world_writable_path_entry_is_not_even_run(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").write_text("#!/bin/sh\necho yes\n")
    (bindir / "python3").chmod(0o755)
    bindir.chmod(0o777)
    runner = FakeRunner({}, which={"python3": str(bindir / "python3")})
    refused: dict = {}
    assert find_torch_interpreters({"HOME": str(tmp_path)}, runner, None, refused=refused) == []
    assert runner.calls == [] and refused == {str(bindir / "python3"): f"{bindir} is writable by every user"}
