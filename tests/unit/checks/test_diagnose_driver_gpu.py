"""checks/diagnose_driver_gpu.py: a report that says the driver does not drive an old GPU, with no driver version
shown (issue 42, round 10, helper kernel): the branch it names, or no supported branch, against the GPU's last
branch (compat_data/driver_gpu_support.json). A failing, a passing and a skipped case; the corpus excerpts are in
tests/unit/diagnose/test_round10_kernel.py."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _result(text: str, compat):
    report = diagnose_report([text], compat)
    return next(c for c in report.checks if c.id == "diagnose.driver-gpu")


def test_a_branch_past_the_gpus_last_fails(compat) -> None:
    r = _result("GPU: Quadro K4000\nnvidia-driver-550 ignored the GPU at boot.\n", compat)
    (f,) = r.findings
    assert f.category == "DRIVER_DROPPED_GPU" and f.code == "diagnose.driver-gpu/named-branch"
    assert "R470" in f.summary and "R550" in f.summary
    assert {e.path for e in f.evidence} >= {"paste.driver_branches", "paste.driver_refuses_gpu"}


def test_a_branch_that_still_drives_the_gpu_passes(compat) -> None:
    r = _result("GPU: Quadro K4000\nnvidia-driver-470 ignored the GPU at boot.\n", compat)
    assert r.findings == [] and r.status not in ("skipped", "errored"), r


@pytest.mark.parametrize("text,why", [
    ("GPU: Quadro K4000\nIt works with nvidia-driver-550.\n", "does not say"),
    ("nvidia-driver-550 ignored the GPU at boot.\n", "no GPU named"),
    ("| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |\n"
     "GPU: Quadro K4000\nnvidia-driver-550 ignored the GPU at boot.\n", "driver version"),
])
def test_skips_without_the_words_a_gpu_or_with_a_driver_version(text, why, compat) -> None:
    r = _result(text, compat)
    assert r.status == "skipped" and why in (r.reason or ""), r
