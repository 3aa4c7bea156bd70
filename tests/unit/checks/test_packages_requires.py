"""packages.requires-dist (issue 38): every Requires-Dist of torch and of the packages that depend on it, judged on
snapshots; the same on a real venv with typing-extensions below torch's requirement:
tests/integration/test_static38_envs.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, Package, ProbeStatus, PythonEnv, TorchInfo
from envdoctor.services.collect import judge

PY = "/srv/venv/bin/python"
OWN = "/srv/venv/lib/python3.12/site-packages"
TORCH_REQUIRES = ["filelock", "typing-extensions>=4.10.0", "sympy>=1.13.3", "jinja2",
                  "nvidia-cudnn-cu12==9.1.0.70; platform_system == \"Linux\"",
                  "triton==3.1.0; platform_system == \"Linux\"", "opt-einsum>=3.3; extra == \"opt-einsum\"",
                  "setuptools; python_version >= \"3.12\"", "pywin32; sys_platform == \"win32\""]


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def env(*extra: Package, torch_requires=TORCH_REQUIRES, import_error=None, **kw) -> PythonEnv:
    pkgs = {p.name: p for p in [
        Package("torch", "2.5.1+cpu", location=OWN, installer="pip", requires=torch_requires),
        Package("filelock", "3.16.1"), Package("typing-extensions", "4.12.2"), Package("sympy", "1.13.3"),
        Package("jinja2", "3.1.4"), Package("setuptools", "75.1.0")]}
    pkgs.update({p.name: p for p in extra})
    base = dict(status=ProbeStatus.OK, executable=PY, requested_as="--python", python_version="3.12.3",
                platform="linux-x86_64", prefix="/srv/venv", is_venv=True, site_packages=[OWN], has_pip=True,
                torch=TorchInfo(version="2.5.1+cpu", cuda=None, arch_list=[], imported=import_error is None,
                                import_error=import_error),
                packages=list(pkgs.values()))
    base.update(kw)
    return PythonEnv(**base)


def result(report, check_id: str):
    return next(c for c in report.checks if c.id == check_id)


def findings(report):
    return [f for f in report.findings if f.code.startswith("packages.requires-dist/")]


def test_met_requirements_pass_markers_and_extras_judged_for_the_target(compat) -> None:
    # nvidia-* and triton are other checks'; the extra, the Windows-only and (here met) 3.12-only lines are judged
    # as the target's markers say
    report = judge(Facts(pythons=[env()]), compat)
    assert result(report, "packages.requires-dist").status == "passed"
    assert findings(report) == []
    # the setuptools line applies only from Python 3.12: missing on 3.11 it is not required
    older = env(python_version="3.11.9")
    older = replace(older, packages=[p for p in older.packages if p.name != "setuptools"])
    assert findings(judge(Facts(pythons=[older]), compat)) == []
    (f,) = findings(judge(Facts(pythons=[replace(older, python_version="3.12.3")]), compat))
    assert f.code == "packages.requires-dist/setuptools"


def test_a_requirement_below_its_range_names_the_package_the_range_and_who_asks(compat) -> None:
    report = judge(Facts(pythons=[env(Package("typing-extensions", "4.5.0"))]), compat)
    (f,) = findings(report)
    assert (f.code, f.category, f.severity) == ("packages.requires-dist/typing-extensions", "DEPENDENCY_UNMET",
                                                "warning")
    assert f.summary == (f"torch 2.5.1+cpu require(s) typing-extensions>=4.10.0: typing-extensions 4.5.0 in {PY} "
                         "does not meet it")
    assert [(e.path, e.value, e.expected, e.source) for e in f.evidence] == [
        ("pythons[0].packages.typing-extensions", "4.5.0", ">=4.10.0",
         "Requires-Dist of torch 2.5.1+cpu: typing-extensions>=4.10.0")]
    # the requirement is installed, torch pinned beside it so that pip never swaps it; torch is not reinstalled
    assert f.fix.commands == [f"{PY} -m pip install 'typing-extensions>=4.10.0' torch==2.5.1"]


def test_an_import_error_naming_it_makes_it_an_error(compat) -> None:
    err = "ImportError: cannot import name 'TypeIs' from 'typing_extensions' (/srv/venv/.../typing_extensions.py)"
    (f,) = findings(judge(Facts(pythons=[env(Package("typing-extensions", "4.5.0"), import_error=err)]), compat))
    assert f.severity == "error"
    assert f.evidence[-1].path == "pythons[0].torch.import_error" and "TypeIs" in f.evidence[-1].value


def test_an_extensions_requirements_are_judged_and_merged_with_torchs(compat) -> None:
    ds = Package("deepspeed", "0.16.4", location=OWN, requires=[
        "einops", "numpy", "torch", "typing-extensions>=4.11", "pytest<8.4.0,>=7.2.0; extra == \"dev\""])
    report = judge(Facts(pythons=[env(ds, Package("numpy", "2.1.0"), Package("typing-extensions", "4.5.0"))]),
                   compat)
    by = {f.code: f for f in findings(report)}
    assert sorted(by) == ["packages.requires-dist/einops", "packages.requires-dist/typing-extensions"]
    missing = by["packages.requires-dist/einops"]
    assert missing.severity == "error"
    assert missing.summary == f"deepspeed 0.16.4 require(s) einops: einops is not installed in {PY}"
    assert missing.fix.commands == [f"{PY} -m pip install einops torch==2.5.1"]
    both = by["packages.requires-dist/typing-extensions"]
    assert both.summary.startswith("torch 2.5.1+cpu, deepspeed 0.16.4 require(s) typing-extensions")
    assert "'typing-extensions>=4.10.0,>=4.11'" in both.fix.commands[0] or \
        "'typing-extensions>=4.11,>=4.10.0'" in both.fix.commands[0]


def test_skipped_without_requirements(compat) -> None:
    res = result(judge(Facts(pythons=[env(torch_requires=None)]), compat), "packages.requires-dist")
    assert res.status == "skipped" and "Requires-Dist" in res.reason
    assert res.not_applicable == "no requirements read"
