"""packages.metadata (issue 38) on snapshots: a venv whose python now starts another minor, two dist-infos of one
distribution in one site-packages, compiled files no RECORD claims. The same on real venvs:
tests/integration/test_static38_envs.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import (
    Facts,
    InterpreterLink,
    Package,
    PackageCopy,
    ProbeStatus,
    PythonEnv,
    TorchInfo,
    VenvConfig,
)
from envdoctor.services.collect import judge

PY = "/srv/venv/bin/python"
OWN = "/srv/venv/lib/python3.11/site-packages"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def env(*pkgs: Package, **kw) -> PythonEnv:
    base = dict(status=ProbeStatus.OK, executable=PY, requested_as="--python", python_version="3.11.7",
                platform="linux-x86_64", prefix="/srv/venv", is_venv=True, site_packages=[OWN], has_pip=True,
                torch=TorchInfo(version="2.5.1+cpu", cuda=None, arch_list=[], imported=True),
                packages=list(pkgs) or [Package("torch", "2.5.1+cpu", location=OWN, installer="pip")])
    base.update(kw)
    return PythonEnv(**base)


def result(report):
    return next(c for c in report.checks if c.id == "packages.metadata")


def findings(report):
    return [f for f in report.findings if f.code.startswith("packages.metadata/")]


VENV = VenvConfig(root="/srv/venv", version="3.11.7", include_system_site_packages=False, site_minors=["3.11"],
                  links=[InterpreterLink("/srv/venv/bin/python", "python3", True),
                         InterpreterLink("/srv/venv/bin/python3", "/usr/bin/python3", True)],
                  same_minor_python="/usr/bin/python3.11")


def test_a_healthy_venv_passes(compat) -> None:
    report = judge(Facts(pythons=[env(venv=VENV)]), compat)
    assert result(report).status == "passed" and findings(report) == []


def test_a_venv_whose_python_now_starts_another_minor(compat) -> None:
    py = env(venv=VENV, python_version="3.12.1", site_packages=["/srv/venv/lib/python3.12/site-packages"],
             torch=None, packages=[])
    report = judge(Facts(pythons=[py]), compat)
    (f,) = findings(report)
    assert (f.code, f.category, f.severity) == ("packages.metadata/venv-python", "INTERPRETER_METADATA_MISMATCH",
                                                "error")
    assert f.summary == (f"{PY} now starts Python 3.12.1, but the venv /srv/venv was made with Python 3.11.7 "
                         "(pyvenv.cfg): its packages sit in /srv/venv/lib/python3.11/site-packages, which Python "
                         "3.12 never reads")
    assert f.fix.commands == ["rm -f -- /srv/venv/bin/python /srv/venv/bin/python3",
                              "/usr/bin/python3.11 -m venv --upgrade /srv/venv"]
    # torch looks uninstalled: that follows from it
    no_torch = [g for g in report.findings if g.code == "torch.interpreter/no-torch"]
    assert no_torch and all(g.caused_by for g in no_torch)
    # its pip sits in lib/python3.11 too: not a pip problem of its own
    pipless = judge(Facts(pythons=[replace(py, has_pip=False)]), compat)
    assert not [g for g in pipless.findings if g.code == "packages.pip/missing"]


def test_two_dist_infos_in_one_site_packages(compat) -> None:
    torch = Package("torch", "2.13.0+cpu", location=OWN, installer="pip", dist_info="torch-2.13.0+cpu.dist-info",
                    shadowed=[PackageCopy(OWN, "2.12.0", dist_info="torch-2.12.0.dist-info")])
    (f,) = findings(judge(Facts(pythons=[env(torch)]), compat))
    assert (f.code, f.severity) == ("packages.metadata/two-dist-infos-torch", "error")
    assert f.summary == (f"{OWN} holds 2 metadata directories of torch (torch-2.13.0+cpu.dist-info, "
                         "torch-2.12.0.dist-info): pip and importlib.metadata see 2.13.0+cpu, the files are 2.5.1+cpu")
    # the files say 2.5.1 (torch/version.py via the import): both directories are stale
    assert f.fix.commands[0] == f"rm -rf -- {OWN}/torch-2.13.0+cpu.dist-info {OWN}/torch-2.12.0.dist-info"
    assert f.fix.commands[-1] == (f"{PY} -m pip install --force-reinstall --no-deps torch==2.5.1 --index-url "
                                  "https://download.pytorch.org/whl/cpu")
    # a copy in another site-packages (the base's, with include-system-site-packages) is not this
    other = Package("torch", "2.5.1+cpu", location=OWN, shadowed=[PackageCopy("/usr/lib/python3/dist-packages",
                                                                              "2.4.1")])
    assert findings(judge(Facts(pythons=[env(other)]), compat)) == []
    # one version described twice (Debian's python3-cryptography ships a dist-info and an egg-info): not this
    twice = Package("cryptography", "38.0.4", location=OWN, dist_info="cryptography-38.0.4.dist-info",
                    shadowed=[PackageCopy(OWN, "38.0.4", dist_info="cryptography.egg-info")])
    assert findings(judge(Facts(pythons=[env(twice)]), compat)) == []


def test_files_no_record_claims(compat) -> None:
    torch = Package("torch", "2.5.1+cpu", location=OWN, installer="pip",
                    unrecorded_files=["torch/lib/libtorch_cuda.so"])
    (f,) = findings(judge(Facts(pythons=[env(torch)]), compat))
    assert (f.code, f.severity) == ("packages.metadata/stray-files-torch", "warning")
    assert f.fix.commands == [f"rm -f -- {OWN}/torch/lib/libtorch_cuda.so",
                              f"{PY} -m pip install --force-reinstall --no-deps torch==2.5.1 --index-url "
                              "https://download.pytorch.org/whl/cpu"]


def test_skipped_without_an_answering_interpreter(compat) -> None:
    res = result(judge(Facts(pythons=[PythonEnv(status=ProbeStatus.FAILED, executable=PY)]), compat))
    assert res.status == "skipped"


def test_a_base_another_user_can_change_is_not_in_the_fix(compat) -> None:
    # issue 40: the only python3.11 on PATH sits where another user can write: no command runs it, nor its bare
    # name (the shell would find the same file); the detail says why and what to do
    venv = replace(VENV, same_minor_python=None, same_minor_untrusted="/tmp/bin/python3.11: /tmp/bin is writable by "
                                                                      "every user")
    py = env(venv=venv, python_version="3.12.1", site_packages=["/srv/venv/lib/python3.12/site-packages"],
             torch=None, packages=[])
    (f,) = findings(judge(Facts(pythons=[py]), compat))
    assert f.code == "packages.metadata/venv-python" and f.fix.commands == []
    assert "no python3.11 was found on PATH" not in f.detail
    assert f.detail.endswith("The python3.11 on PATH (/tmp/bin/python3.11: /tmp/bin is writable by every user) can "
                             "be changed by another user, so no command here runs it: install that Python from your "
                             "distribution or python.org and run `<its full path> -m venv --upgrade /srv/venv`.")
