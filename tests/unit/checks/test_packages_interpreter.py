"""packages.pip and packages.system-site (issue 30) on snapshots: a passing, a failing and a skipped case each, and
the broken-venv kind of torch.interpreter. The same classes on real venvs: tests/unit/probes/test_interpreter_venvs.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import (
    Facts,
    InterpreterLink,
    Package,
    PackageCopy,
    PathPip,
    ProbeStatus,
    PythonEnv,
    TorchInfo,
    VenvConfig,
)
from envdoctor.services.collect import judge

PY = "/srv/venv/bin/python"
OWN = "/srv/venv/lib/python3.12/site-packages"
BASE = "/usr/lib/python3/dist-packages"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def env(**kw) -> PythonEnv:
    base = dict(status=ProbeStatus.OK, executable=PY, requested_as="--python", python_version="3.12.3",
                prefix="/srv/venv", is_venv=True, site_packages=[OWN], has_pip=True, has_ensurepip=True,
                torch=TorchInfo(version="2.5.1+cpu", cuda=None, arch_list=[], imported=True),
                packages=[Package("torch", "2.5.1+cpu", location=OWN, installer="pip")])
    base.update(kw)
    return PythonEnv(**base)


def result(report, check_id: str):
    return next(c for c in report.checks if c.id == check_id)


# --------------------------------------------------------------------------- packages.pip


def test_pip_present_passes_missing_is_a_warning_with_ensurepip_unknown_is_skipped(compat) -> None:
    assert result(judge(Facts(pythons=[env()]), compat), "packages.pip").status == "passed"
    report = judge(Facts(pythons=[env(has_pip=False)]), compat)
    (f,) = [f for f in report.findings if f.code.startswith("packages.pip/")]
    assert (f.code, f.category, f.severity) == ("packages.pip/missing", "PIP_UNAVAILABLE", "warning")
    assert [(e.path, e.value) for e in f.evidence] == [("pythons[0].has_pip", False), ("pythons[0].has_ensurepip", True)]
    assert f.fix.commands == [f"{PY} -m ensurepip --upgrade --default-pip"]
    skipped = result(judge(Facts(pythons=[env(has_pip=None)]), compat), "packages.pip")
    assert skipped.status == "skipped" and "unknown" in skipped.reason


def test_uv_environments_need_no_pip(compat) -> None:
    uv = env(has_pip=False, packages=[Package("torch", "2.5.1+cpu", location=OWN, installer="uv")])
    assert result(judge(Facts(pythons=[uv]), compat), "packages.pip").status == "passed"


def test_a_pip_on_path_that_runs_another_interpreter(compat) -> None:
    other = PathPip(path="/usr/bin/pip", interpreter="/usr/bin/python3", same_interpreter=False)
    active = env(requested_as="$VIRTUAL_ENV", path_pip=other)
    (f,) = [f for f in judge(Facts(pythons=[active]), compat).findings if f.code.startswith("packages.pip/")]
    assert (f.code, f.category, f.severity) == ("packages.pip/path-pip-elsewhere", "PIP_UNAVAILABLE", "warning")
    assert f.summary.startswith("`pip` on PATH (/usr/bin/pip) runs /usr/bin/python3, not /srv/venv/bin/python")
    assert f.fix.commands == [f"{PY} -m pip --version"]
    # judged with --python, the PATH was never this interpreter's and the fixes use its own `-m pip`: no finding
    named = judge(Facts(pythons=[env(path_pip=other)]), compat)
    assert not [g for g in named.findings if g.code == "packages.pip/path-pip-elsewhere"]
    assert result(named, "packages.pip").status == "passed"
    own = PathPip(path="/srv/venv/bin/pip", interpreter="/srv/venv/bin/python3", same_interpreter=True)
    assert result(judge(Facts(pythons=[env(path_pip=own)]), compat), "packages.pip").status == "passed"


def test_every_pip_fix_of_a_pipless_target_starts_with_ensurepip(compat) -> None:
    # a companion mismatch judged by packages.companions: its pip line is planned by the same remedies
    tv = Package("torchvision", "0.19.1+cpu", location=OWN, requires=["torch==2.4.1"])
    py = env(has_pip=False, packages=[Package("torch", "2.5.1+cpu", location=OWN), tv])
    (f,) = [f for f in judge(Facts(pythons=[py]), compat).findings if f.code == "packages.companions/torchvision"]
    assert all(c.startswith(f"{PY} -m ensurepip --upgrade --default-pip && {PY} -m pip ") for c in f.fix.commands)


# --------------------------------------------------------------------------- packages.system-site


def split_env(**kw) -> PythonEnv:
    return env(venv=VenvConfig(root="/srv/venv", include_system_site_packages=True), packages=[
        Package("torch", "2.5.1+cpu", location=OWN, shadowed=[PackageCopy(BASE, "2.4.1+cpu")]),
        Package("torchvision", "0.19.1+cpu", location=BASE, requires=["torch==2.4.1"])], **kw)


def test_a_base_companion_next_to_the_venvs_torch_names_both_sets(compat) -> None:
    report = judge(Facts(pythons=[split_env()]), compat)
    (f,) = [f for f in report.findings if f.category == "VENV_SYSTEM_SITE_MIXED"]
    assert (f.code, f.severity) == ("packages.system-site/torchvision", "error")
    assert f.summary == (f"{PY} imports torch 2.5.1+cpu from {OWN} but torchvision 0.19.1+cpu from {BASE}, which "
                         "pairs with torch 2.4.1+cpu there: two sets mixed")
    ev = {e.path: e.value for e in f.evidence}
    assert ev["pythons[0].packages.torch.shadowed"] == [f"2.4.1+cpu at {BASE}"]
    assert ev["pythons[0].venv.include_system_site_packages"] is True
    want = compat.companions("2.5.1").torchvision
    assert f.fix.commands == [f"{PY} -m pip install torch==2.5.1 torchvision=={want} "
                              "--index-url https://download.pytorch.org/whl/cpu"]
    assert not [g for g in report.findings if g.category == "COMPANION_VERSION_MISMATCH"]  # one cause, one finding


def test_a_venv_companion_hiding_a_matching_base_one_is_uninstalled(compat) -> None:
    py = env(venv=VenvConfig(root="/srv/venv", include_system_site_packages=True), packages=[
        Package("torch", "2.4.1+cpu", location=BASE),
        Package("torchvision", "0.20.1+cpu", location=OWN, requires=["torch==2.5.1"],
                shadowed=[PackageCopy(BASE, "0.19.1+cpu", ["torch==2.4.1"])])],
        torch=TorchInfo(version="2.4.1+cpu", arch_list=[], imported=True))
    (f,) = [f for f in judge(Facts(pythons=[py]), compat).findings if f.category == "VENV_SYSTEM_SITE_MIXED"]
    assert f.fix.commands == [f"{PY} -m pip uninstall -y torchvision"]


def test_one_consistent_set_passes_and_unknown_layout_is_skipped(compat) -> None:
    same = env(packages=[Package("torch", "2.5.1+cpu", location=OWN),
                         Package("torchvision", "0.20.1+cpu", location=OWN, requires=["torch==2.5.1"])])
    assert result(judge(Facts(pythons=[same]), compat), "packages.system-site").status == "passed"
    # two torches, one consistent set imported: a note naming both, with the way back to the base's
    two = replace(same, packages=[replace(same.packages[0], shadowed=[PackageCopy(BASE, "2.4.1+cpu")]),
                                  same.packages[1]])
    (f,) = [f for f in judge(Facts(pythons=[two]), compat).findings if f.code.startswith("packages.system-site/")]
    assert (f.code, f.severity) == ("packages.system-site/two-torches", "info")
    assert f.summary == (f"{PY} sees two torches: its own 2.5.1+cpu at {OWN} (imported) and the base's 2.4.1+cpu "
                         f"at {BASE} (hidden)")
    assert f.fix.commands == [f"{PY} -m pip uninstall -y torch"]
    # the base's torchvision that pairs with the venv's torch is one set too
    paired = replace(split_env(), packages=[split_env().packages[0],
                                            Package("torchvision", "0.20.1", location=BASE, requires=["torch==2.5.1"])])
    res = result(judge(Facts(pythons=[paired]), compat), "packages.system-site")
    assert res.status == "noted" and [f.code for f in res.findings] == ["packages.system-site/two-torches"]
    old = result(judge(Facts(pythons=[split_env(site_packages=None)]), compat), "packages.system-site")
    assert old.status == "skipped" and "site-packages" in old.reason


# --------------------------------------------------------------------------- torch.interpreter: the broken venv


def broken_venv(**kw) -> PythonEnv:
    venv = VenvConfig(
        root="/srv/venv", home="/opt/py312/bin", home_exists=False, version="3.12.3",
        include_system_site_packages=False, same_minor_python="/usr/bin/python3.12",
        links=[InterpreterLink("/srv/venv/bin/python", "python3.12", False),
               InterpreterLink("/srv/venv/bin/python3.12", "/opt/py312/bin/python3.12", False)])
    venv = replace(venv, **kw)
    return PythonEnv(status=ProbeStatus.ABSENT, executable=PY, requested_as="$VIRTUAL_ENV", failure="not_found",
                     reason="the venv's interpreter link is dangling", venv=venv)


def test_a_dangling_venv_link_is_repaired_not_replaced(compat) -> None:
    report = judge(Facts(pythons=[broken_venv()]), compat)
    (f,) = [f for f in report.findings if f.category == "TARGET_PYTHON_UNUSABLE"]
    assert (f.code, f.severity) == ("torch.interpreter/venv-base-missing", "error")
    assert f.summary == (f"{PY} is a link to /opt/py312/bin/python3.12, which no longer exists: the base Python of "
                         "the venv /srv/venv was removed or moved (pyvenv.cfg home = /opt/py312/bin, which is gone)")
    assert f.fix.commands == ["rm -f -- /srv/venv/bin/python /srv/venv/bin/python3.12",
                              "/usr/bin/python3.12 -m venv --upgrade /srv/venv"]
    ev = {e.path: e.value for e in f.evidence}
    assert ev["pythons[0].venv.links"] == ["/srv/venv/bin/python -> python3.12",
                                           "/srv/venv/bin/python3.12 -> /opt/py312/bin/python3.12"]
    # no python3.12 found: the name is given and the detail says to install it; the flag is kept
    g = next(f for f in judge(Facts(pythons=[broken_venv(same_minor_python=None, include_system_site_packages=True)]),
                              compat).findings if f.code == "torch.interpreter/venv-base-missing")
    assert g.fix.commands[1] == "python3.12 -m venv --upgrade --system-site-packages /srv/venv"
    assert "install Python 3.12.3 first" in g.detail
    # links that resolve: not this kind (the generic not-found finding)
    live = broken_venv(links=[InterpreterLink("/srv/venv/bin/python", "/usr/bin/python3.12", True)])
    (h,) = [f for f in judge(Facts(pythons=[live]), compat).findings if f.category == "TARGET_PYTHON_UNUSABLE"]
    assert h.code == "torch.interpreter/not-found"
    # issue 40: the only python3.12 on PATH can be changed by another user: no command runs it
    planted = next(f for f in judge(Facts(pythons=[broken_venv(
        same_minor_python=None, same_minor_untrusted="/srv/shared/python3.12: /srv/shared is writable by every user")]),
        compat).findings if f.code == "torch.interpreter/venv-base-missing")
    assert planted.fix.commands == [] and "install Python 3.12.3 first" not in planted.detail
    assert "(/srv/shared/python3.12: /srv/shared is writable by every user) can be changed by another user" in \
        planted.detail


def test_torch_in_an_externally_managed_python_is_said_once(compat) -> None:
    # issue 38: pip refuses to change a PEP 668 Python; every pip fix carries the override, and this note says why
    managed = env(externally_managed=True, is_venv=False, executable="/usr/bin/python3",
                  packages=[Package("torch", "2.5.1+cpu", location=OWN, installer="pip"), Package("pip", "23.0.1")])
    (f,) = [f for f in judge(Facts(pythons=[managed]), compat).findings if f.code.startswith("packages.pip/")]
    assert (f.code, f.severity) == ("packages.pip/externally-managed", "info")
    assert f.summary == ("/usr/bin/python3 is EXTERNALLY-MANAGED (PEP 668): pip refuses to install or uninstall "
                         "there, so every pip fix in this report carries --break-system-packages")
    assert f.fix.commands == ["/usr/bin/python3 -m venv --system-site-packages .venv"]
    # pip 23.0 enforces the marker without an override: no pip fix can run
    stuck = replace(managed, packages=[managed.packages[0], Package("pip", "23.0")])
    (w,) = [f for f in judge(Facts(pythons=[stuck]), compat).findings if f.code.startswith("packages.pip/")]
    assert (w.code, w.severity) == ("packages.pip/externally-managed-no-override", "warning")
    # not managed, or no torch there (torch.interpreter says that one): nothing
    assert not [f for f in judge(Facts(pythons=[env()]), compat).findings if f.code.startswith("packages.pip/")]
