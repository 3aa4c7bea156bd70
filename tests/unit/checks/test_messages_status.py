"""messages.status-codes (envdoctor/checks/messages_status.py): a status of NVIDIA's libraries quoted in a paste is
a finding of the category its compat_data/status_codes.json row names, the message its evidence and the row its
citation; a status the program raises is an info; a paste without messages and a probed machine are skipped.
The forms a status takes in pastes: tests/unit/diagnose/test_status_codes.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.diagnose import read_paste
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.services.diagnose import diagnose_report
from tests import machines as m

NO_DEVICE = "Traceback (most recent call last):\nRuntimeError: cuInit failed: CUDA_ERROR_NO_DEVICE\n"
CHECK = "messages.status-codes"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _check(report):
    return next(c for c in report.checks if c.id == CHECK)


def test_a_status_naming_a_cause_is_a_finding_of_its_category_citing_its_row(compat):
    res = _check(diagnose_report([NO_DEVICE], compat))
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert (f.code, f.category, f.severity, f.confidence) == (
        "messages.status-codes/cuda-driver.cuda-error-no-device", "NO_GPU_VISIBLE", Severity.ERROR, "medium")
    assert f.summary == "Driver present, no GPU visible: the paste shows CUDA_ERROR_NO_DEVICE (CUDA driver API (CUresult) 100)"
    assert f.evidence[0].path.startswith("paste.messages[")
    assert f.evidence[0].expected == "CUDA_ERROR_NO_DEVICE (CUDA driver API (CUresult) 100)"
    assert "cuda.h" in f.evidence[0].source and "row cuda_driver/CUDA_ERROR_NO_DEVICE" in f.detail
    assert f.fix is not None and f.fix.url.startswith("https://docs.nvidia.com/")


def test_a_status_the_program_raises_passes_with_an_info(compat):
    res = _check(diagnose_report(["RuntimeError: CUDA error: an illegal memory access was encountered\n"], compat))
    assert res.status == CheckStatus.PASSED
    (f,) = res.findings
    assert (f.category, f.severity) == ("HEALTHY", Severity.INFO)
    assert "cudaErrorIllegalAddress" in f.summary and "CUDA_LAUNCH_BLOCKING=1" in f.fix.summary


def test_a_paste_without_messages_is_unknown_and_a_machine_does_not_apply(compat):
    facts, _ = read_paste([NO_DEVICE], compat)
    quiet = replace(facts, paste=replace(facts.paste, messages=[]))
    (res,) = run_checks(quiet, compat, [c for c in all_checks() if c.id == CHECK])
    assert (res.status, res.reason) == (CheckStatus.SKIPPED, "the paste holds no error or warning message")
    (live,) = run_checks(m.healthy_a100(), compat, [c for c in all_checks() if c.id == CHECK])
    assert live.status == CheckStatus.SKIPPED and live.not_applicable == "judged in pastes only"
