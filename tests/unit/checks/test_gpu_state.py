"""gpu.* state checks (envdoctor/checks/gpu_state.py), the compute mode and persistence mode here: a Prohibited
GPU is an error, an exclusive one a warning, persistence off a note; Default and on pass; unread modes and a
non-Linux host are skipped. gpu.reachable, gpu.busy and gpu.mig on NVML data: tests/unit/probes/test_nvml*.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts
from envdoctor.model.findings import CheckStatus, Severity
from tests import machines as m


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _a100s(*modes, persistence=(True, True), **host) -> Facts:
    gpus = [replace(m.gpu(i, "NVIDIA A100-SXM4-80GB", "8.0"), compute_mode=mode, persistence_mode=p)
            for i, (mode, p) in enumerate(zip(modes, persistence))]
    return m.facts(m.driver("550.54.15", "12.4", gpus), [], host=m.host(**host))


def _run(facts: Facts, check_id: str, compat):
    (res,) = run_checks(facts, compat, [c for c in all_checks() if c.id == check_id])
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def test_default_compute_mode_passes(compat):
    assert _run(_a100s("Default", "Default"), "gpu.compute-mode", compat).status == CheckStatus.PASSED


def test_a_prohibited_gpu_is_an_error_and_an_exclusive_one_a_warning(compat):
    res = _run(_a100s("Exclusive_Process", "Prohibited"), "gpu.compute-mode", compat)
    assert res.status == CheckStatus.FAILED
    prohibited, exclusive = res.findings
    assert (prohibited.code, prohibited.category, prohibited.severity) == (
        "gpu.compute-mode/prohibited", "COMPUTE_MODE_RESTRICTED", Severity.ERROR)
    assert prohibited.summary == "Compute mode Prohibited on GPU 1: no process can create a CUDA context there"
    assert [(e.path, e.value, e.expected) for e in prohibited.evidence] == [
        ("driver.gpus[1].compute_mode", "Prohibited", "Default")]
    assert prohibited.fix.commands == ["sudo nvidia-smi -i 1 -c DEFAULT"]
    assert (exclusive.code, exclusive.severity) == ("gpu.compute-mode/exclusive", Severity.WARNING)
    assert exclusive.fix.commands == ["sudo nvidia-smi -i 0 -c DEFAULT"]


def test_persistence_off_is_a_note_with_the_daemon(compat):
    assert _run(_a100s("Default", "Default"), "gpu.persistence", compat).status == CheckStatus.PASSED
    (f,) = _run(_a100s("Default", "Default", persistence=(True, False)), "gpu.persistence", compat).findings
    assert (f.code, f.category, f.about, f.severity) == ("gpu.persistence/off", "NOTE", "PERSISTENCE_MODE_OFF",
                                                         Severity.INFO)  # an info is a NOTE about its category
    assert f.summary == "Persistence mode off on GPU 1"
    assert f.fix.commands == ["sudo systemctl enable --now nvidia-persistenced", "sudo nvidia-smi -pm 1"]


def test_unread_modes_and_windows_are_skipped(compat):
    unread = _run(_a100s(None, None), "gpu.compute-mode", compat)
    assert unread.status == CheckStatus.SKIPPED and "compute mode" in unread.reason and unread.not_applicable is None
    win = _run(_a100s("Default", "Default", os="Windows"), "gpu.persistence", compat)
    assert (win.status, win.reason) == (CheckStatus.SKIPPED, "persistence mode is a Linux setting (this is Windows)")
