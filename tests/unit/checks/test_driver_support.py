"""driver.lifecycle (envdoctor/checks/driver_support.py): the driver branch against NVIDIA's lifecycle table
(compat_data/health.json): a supported LTSB passes, an ended branch is a finding with its dates and the branches
to move to, a feature branch is a note, an unknown driver version is skipped. The GPU-range kinds
(gpu-newer-than-driver, gpu-older-than-driver) are tested in test_driver_gpu_support.py."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Driver, Facts, ProbeStatus
from envdoctor.model.findings import CheckStatus, Severity
from tests import machines as m

H100 = [m.gpu(0, "NVIDIA H100 80GB HBM3", "9.0")]


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _on(version: str, collected_at: str = "2026-11-30T12:00:00Z") -> Facts:
    f = m.facts(m.driver(version, "12.4", H100), [])
    return dataclasses.replace(f, collected_at=collected_at, origin="snapshot")


def _run(facts: Facts, compat):
    (res,) = run_checks(facts, compat, [c for c in all_checks() if c.id == "driver.lifecycle"])
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def test_a_supported_long_term_branch_passes(compat):
    res = _run(_on("580.95.05"), compat)  # R580 LTSB, supported until 2028-06
    assert res.status == CheckStatus.PASSED and res.findings == []


def test_a_branch_ended_two_years_before_is_a_warning_with_where_to_go(compat):
    res = _run(_on("450.80.02"), compat)  # R450 LTSB, ended 2023-07: 40 months before the snapshot
    assert res.status == CheckStatus.FAILED
    (f,) = [x for x in res.findings if x.code == "driver.lifecycle/past-eol"]
    assert (f.category, f.severity) == ("DRIVER_OUTDATED", Severity.WARNING)
    assert f.summary == "Driver 450.80.02 is on branch R450 (LTSB), whose support ended 2023-07"
    (ev,) = f.evidence
    assert (ev.path, ev.value, ev.expected) == ("driver.version", "450.80.02", "a supported branch as of 2026-11-30")
    assert ev.source
    assert "R580 LTSB (until 2028-06)" in f.fix.summary and "R620 LTSB (until 2029-09)" in f.fix.summary
    assert any("580" in c for c in f.fix.commands)  # the oldest supported LTSB: the longest hardware coverage


def test_a_branch_ended_lately_is_only_a_note(compat):
    (f,) = _run(_on("570.172.08"), compat).findings  # R570 PB ended 2026-02: 9 months before
    assert (f.code, f.severity) == ("driver.lifecycle/past-eol", Severity.INFO)


def test_a_new_feature_branch_is_a_note(compat):
    (f,) = _run(_on("610.43.02"), compat).findings  # R610 NFB, supported until 2026-08: ended too
    assert f.code == "driver.lifecycle/past-eol"
    (g,) = _run(_on("610.43.02", collected_at="2026-05-01T00:00:00Z"), compat).findings
    assert (g.code, g.severity) == ("driver.lifecycle/feature-branch", Severity.INFO)
    assert g.summary == "Driver 610.43.02 is on R610, a short-lived New Feature Branch (supported until 2026-08)"


@pytest.mark.parametrize("driver, reason, label", [
    (Driver(status=ProbeStatus.ABSENT, reason="NVML library not found"),
     "driver version unknown (probe absent: NVML library not found)", "no NVIDIA driver"),
    (Driver(status=ProbeStatus.FAILED, reason="nvidia-smi timed out"),
     "driver version unknown (probe failed: nvidia-smi timed out)", None),
])
def test_without_a_driver_version_it_is_skipped(driver, reason, label, compat):
    res = _run(dataclasses.replace(_on("580.95.05"), driver=driver), compat)
    assert res.status == CheckStatus.SKIPPED and res.reason == reason and res.not_applicable == label
