"""torch.python-version and torch.interpreter/no-torch on a Python with no torch (issue 17): too old as well as too
new, with the newest torch that has a wheel for it, from compat_data/torch.json's cited Python ranges."""

from __future__ import annotations

from envdoctor.model.facts import Facts, ProbeStatus, PythonEnv, Targets
from envdoctor.model.findings import Severity
from envdoctor.services.collect import judge

PY = "/root/.pyenv/versions/3.9.18/bin/python3.9"


def no_torch(version: str, targets=None) -> Facts:
    py = PythonEnv(status=ProbeStatus.OK, executable=PY, python_version=version, platform="linux-x86_64",
                   requested_as="--python", packages=[])
    return Facts(envdoctor_version="test", origin="snapshot", pythons=[py], targets=targets)


def found(f: Facts, prefix: str):
    return [x for x in judge(f).findings if x.code.startswith(prefix)]


def test_python_39_without_torch_is_too_old_for_the_newest_torch():
    (x,) = found(no_torch("3.9.18"), "torch.python-version/")
    assert x.code == "torch.python-version/too-old" and x.severity == Severity.WARNING
    assert "3.10 to 3.15" in x.summary and "torch 2.8.0" in x.summary
    assert x.fix.commands == [f"{PY} -m pip install torch==2.8.0"]
    assert "python3.10 -m venv" in x.fix.summary
    assert x.evidence[0].source  # the torch.json row's citation


def test_no_torch_fix_pins_the_newest_torch_with_a_wheel():
    (x,) = found(no_torch("3.9.18"), "torch.interpreter/no-torch")
    assert x.fix.commands == [f"{PY} -m pip install torch==2.8.0"]
    (y,) = found(no_torch("3.11.7"), "torch.interpreter/no-torch")
    assert y.fix.commands[0].startswith(f"{PY} -m pip install torch==2.14.") and "==" in y.fix.commands[0]


def test_python_27_is_served_by_an_old_release_and_311_by_the_newest():
    (x,) = found(no_torch("2.7.18"), "torch.python-version/")
    assert "torch 1.4" in x.summary  # the last release with 2.7 wheels in the matrix (1.4: 2.7 .. 3.8)
    assert found(no_torch("3.11.7"), "torch.python-version/") == []


def test_too_new_python_names_the_range():
    (x,) = found(no_torch("3.16.0"), "torch.python-version/")
    assert x.code == "torch.python-version/too-new" and "3.10 to 3.15" in x.summary


def test_declared_torch_requirement_is_the_asked_for_torch():
    targets = Targets(requirements=["torch>=2.9"])
    (x,) = found(no_torch("3.9.18", targets), "torch.python-version/")
    assert "torch>=2.9" in x.summary and x.code == "torch.python-version/too-old"
    assert found(no_torch("3.9.18", Targets(requirements=["torch<2.9"])), "torch.python-version/") == []
