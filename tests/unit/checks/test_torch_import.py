"""torch.import and torch.interpreter (envdoctor/checks/torch_import.py): torch imports in the judged interpreter,
and that interpreter answered and has torch. A pass, the whole failing finding and the skips of each; the
interpreter cases that need real processes are in tests/unit/probes/ (test_torch_static, test_torch_interpreters)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, ProbeStatus, PythonEnv
from envdoctor.model.findings import CheckStatus, Severity
from tests import machines as m
from tests.unit.checks.judged import found

CUDNN_MISSING = ("Traceback (most recent call last):\n  File \"<string>\", line 1\n"
                 "ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory")


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _run(facts: Facts, check_id: str, compat):
    (res,) = run_checks(facts, compat, [c for c in all_checks() if c.id == check_id])
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def _import_failed(error: str = CUDNN_MISSING, **py_kw) -> Facts:
    f = m.healthy_a100()
    py = f.pythons[0]
    return replace(f, pythons=[replace(py, torch=replace(py.torch, import_error=error, imported=False), **py_kw)])


def test_torch_that_imports_passes(compat):
    assert _run(m.healthy_a100(), "torch.import", compat).status == CheckStatus.PASSED


def test_a_failed_import_is_an_error_with_its_last_line_and_a_reinstall_for_that_interpreter(compat):
    res = _run(_import_failed(), "torch.import", compat)
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("torch.import/failed", "TORCH_IMPORT_FAILED", Severity.ERROR)
    assert f.summary == ("`import torch` fails in /opt/venv/bin/python (torch 2.5.1+cu121): ImportError: "
                         "libcudnn.so.9: cannot open shared object file: No such file or directory")
    assert [(e.path, e.value) for e in f.evidence] == [("pythons[0].torch.import_error", CUDNN_MISSING),
                                                      ("pythons[0].torch.version", "2.5.1+cu121")]
    assert f.fix.commands == ["/opt/venv/bin/python -m pip install --force-reinstall torch==2.5.1 "
                              "--index-url https://download.pytorch.org/whl/cu121"]


def test_an_import_that_crashed_or_hung_says_so(compat):
    for failure, kind in (("crashed", "crashed"), ("timeout", "hung")):
        f = _import_failed("Fatal Python error: Segmentation fault", failure=failure, failure_stage="importing torch")
        (x,) = _run(f, "torch.import", compat).findings
        assert x.code == f"torch.import/{kind}", failure


def test_no_torch_import_tried_is_skipped(compat):
    f = m.healthy_a100()
    py = f.pythons[0]
    res = _run(replace(f, pythons=[replace(py, torch_inspected=False, torch=replace(py.torch, imported=False))]),
               "torch.import", compat)
    assert (res.status, res.reason, res.not_applicable) == (
        CheckStatus.SKIPPED, "torch was not imported (--no-torch)", "torch not imported (--no-torch)")


def test_an_interpreter_that_does_not_exist_is_an_unusable_target(compat):
    gone = PythonEnv(status=ProbeStatus.ABSENT, reason="no such file", executable="/opt/gone/bin/python",
                     requested_as="--python", failure="not_found")
    res = _run(replace(m.healthy_a100(), pythons=[gone]), "torch.interpreter", compat)
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("torch.interpreter/not-found", "TARGET_PYTHON_UNUSABLE",
                                                Severity.ERROR)
    assert "/opt/gone/bin/python" in f.summary and "does not exist" in f.summary
    assert {e.path: e.value for e in f.evidence}["pythons[0].failure"] == "not_found"


def test_an_interpreter_with_torch_passes_and_none_inspected_is_unknown(compat):
    assert _run(m.healthy_a100(), "torch.interpreter", compat).status == CheckStatus.PASSED
    res = _run(replace(m.healthy_a100(), pythons=[]), "torch.interpreter", compat)
    assert res.status == CheckStatus.SKIPPED and res.not_applicable is None


# on a Python with no torch (issue 17): the newest torch that has a wheel for it


def test_no_torch_fix_pins_the_newest_torch_with_a_wheel():
    (x,) = found(m.python_without_torch("3.9.18"), "torch.interpreter/no-torch")
    assert x.fix.commands == [f"{m.NO_TORCH_PY} -m pip install torch==2.8.0"]
    (y,) = found(m.python_without_torch("3.11.7"), "torch.interpreter/no-torch")
    assert y.fix.commands[0].startswith(f"{m.NO_TORCH_PY} -m pip install torch==2.14.") and "==" in y.fix.commands[0]
