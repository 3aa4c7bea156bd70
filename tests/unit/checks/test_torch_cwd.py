"""torch.cwd-shadow: files in the working directory named like modules `import torch` loaded (issue 38), on facts
(fail, pass, skip, round trip) and from the payload's own reading of a real directory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from envdoctor._payload.torch_files import cwd_shadows
from envdoctor.compat import load_compat
from envdoctor.model.facts import (
    CwdShadows,
    Facts,
    ProbeStatus,
    PythonEnv,
    ShadowFile,
    Smoke,
    SmokeStep,
    TorchInfo,
    from_dict,
)
from envdoctor.model.findings import CheckStatus
from envdoctor.services.collect import judge

PY = "/srv/venv/bin/python"
STDLIB = "/usr/lib/python3.11"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def env(shadows, smoke=None) -> PythonEnv:
    return PythonEnv(status=ProbeStatus.OK, executable=PY, python_version="3.11.7",
                     torch=TorchInfo(version="2.13.0+cpu", arch_list=[], imported=True),
                     cwd_shadows=None if shadows is None else CwdShadows(cwd="/home/u/proj", shadows=shadows),
                     smoke=smoke)


def result(report):
    return next(c for c in report.checks if c.id == "torch.cwd-shadow")


def test_a_stdlib_module_named_file_in_the_working_directory_is_an_error(compat) -> None:
    facts = Facts(pythons=[env([ShadowFile("numbers", "/home/u/proj/numbers.py", f"{STDLIB}/numbers.py"),
                                ShadowFile("sympy", "/home/u/proj/sympy", "/srv/venv/lib/python3.11/site-packages/"
                                                                         "sympy/__init__.py")])])
    report = judge(Facts.from_json(facts.to_json()), compat)
    (f,) = [f for f in report.findings if f.code.startswith("torch.cwd-shadow/")]
    assert (f.code, f.category, f.severity) == ("torch.cwd-shadow/module", "PYTHON_PACKAGE_SHADOWED", "error")
    assert f.summary == ("a run started in /home/u/proj imports numbers, sympy from that directory, not the modules "
                         f"`import torch` loads: numbers.py (hides numbers from {STDLIB}/numbers.py), sympy (hides "
                         "sympy from /srv/venv/lib/python3.11/site-packages/sympy/__init__.py)")
    assert f.fix.commands == ["mv /home/u/proj/numbers.py /home/u/proj/numbers_local.py",
                              "mv /home/u/proj/sympy /home/u/proj/sympy_local", "rm -rf /home/u/proj/__pycache__"]
    assert f.subject == PY


def test_a_clean_directory_passes_and_torch_itself_is_left_to_the_smoke_tier(compat) -> None:
    assert result(judge(Facts(pythons=[env([])]), compat)).status == CheckStatus.PASSED
    # a torch.py there: the resolve step says it (with the installed version), this check does not say it again
    resolve = SmokeStep("resolve", "failed", 0.1, error_type="StepError",
                        detail={"cwd": "/home/u/proj", "modules": [{"module": "torch", "inside": False,
                                                                    "origin": "/home/u/proj/torch.py"}]})
    facts = Facts(pythons=[env([ShadowFile("torch", "/home/u/proj/torch.py", "/srv/venv/.../torch/__init__.py")],
                               smoke=Smoke(tier="quick", steps=[resolve]))])
    report = judge(facts, compat)
    assert result(report).status == CheckStatus.PASSED
    assert not [f for f in report.findings if f.code.startswith("torch.cwd-shadow/")]


def test_not_read_skips(compat) -> None:
    r = result(judge(Facts(pythons=[env(None)]), compat))
    assert r.status == CheckStatus.SKIPPED and "not compared" in r.reason


def test_the_payload_reads_a_real_directory(tmp_path: Path) -> None:
    # modules this test process has loaded from elsewhere: json (a package), numbers (a file); a folder without
    # __init__.py (a namespace portion loses to a regular module), a test.py (nothing loaded it), a json.txt
    (tmp_path / "numbers.py").write_text("x = 1\n")
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "__init__.py").write_text("")
    (tmp_path / "queue").mkdir()
    (tmp_path / "test_nothing_imports_this.py").write_text("")
    (tmp_path / "numbers.txt").write_text("")
    import json  # noqa: F401
    import numbers  # noqa: F401

    got = cwd_shadows(str(tmp_path))
    assert got is not None and got["cwd"] == str(tmp_path)
    mods = {s["module"]: s for s in got["shadows"]}
    assert set(mods) == {"json", "numbers"}
    assert mods["numbers"]["path"] == str(tmp_path / "numbers.py")
    assert mods["numbers"]["hides"] == sys.modules["numbers"].__file__
    # the fact round-trips from what the payload writes
    fact = from_dict(CwdShadows, got)
    assert [s.module for s in fact.shadows] == ["json", "numbers"]
    assert cwd_shadows(str(tmp_path / "missing")) is None
