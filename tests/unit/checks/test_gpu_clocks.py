"""gpu.throttle and gpu.vgpu-license (envdoctor/checks/gpu_clocks.py): a board asserting HW slowdown is an error,
an unlicensed vGPU a warning; healthy GPUs pass and GPUs the driver did not read are skipped. The power-cap,
thermal and locked-clock kinds on real captures: tests/unit/checks/test_health.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Driver, Facts, ProbeStatus
from envdoctor.model.findings import CheckStatus, Severity
from tests import machines as m


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _h100s(*per_gpu) -> Facts:
    gpus = [replace(m.gpu(i, "NVIDIA H100 80GB HBM3", "9.0"), **{"power_limit_w": 700.0, **kw})
            for i, kw in enumerate(per_gpu)]
    return m.facts(m.driver("550.54.15", "12.4", gpus), [])


def _run(facts: Facts, check_id: str, compat):
    (res,) = run_checks(facts, compat, [c for c in all_checks() if c.id == check_id])
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def test_gpus_without_clock_events_pass(compat):
    res = _run(_h100s({"throttle_reasons": []}, {"throttle_reasons": ["gpu_idle"]}), "gpu.throttle", compat)
    assert res.status == CheckStatus.PASSED and res.findings == []


def test_a_power_brake_is_a_hardware_slowdown_error_with_the_reset(compat):
    res = _run(_h100s({"throttle_reasons": []}, {"throttle_reasons": ["hw_power_brake_slowdown"]}), "gpu.throttle",
               compat)
    assert res.status == CheckStatus.FAILED
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("gpu.throttle/hw-slowdown", "GPU_THROTTLED", Severity.ERROR)
    assert f.summary.startswith("Hardware slowdown active on GPU 1") and "GPU 1: " in f.summary
    (ev,) = f.evidence
    assert (ev.path, ev.value, ev.expected) == ("driver.gpus[1].throttle_reasons", ["hw_power_brake_slowdown"],
                                                "no hw_* reason active")
    assert f.fix.commands == ["nvidia-smi -q -d PERFORMANCE", "sudo nvidia-smi -i 1 -r"]


def test_throttle_reasons_the_driver_did_not_read_are_skipped(compat):
    absent = replace(_h100s({}), driver=Driver(status=ProbeStatus.ABSENT, reason="NVML library not found"))
    res = _run(absent, "gpu.throttle", compat)
    assert res.status == CheckStatus.SKIPPED and res.not_applicable == "no NVIDIA driver"
    res = _run(_h100s({"power_limit_w": None}), "gpu.throttle", compat)  # a GPU, no reading of any of them
    assert res.status == CheckStatus.SKIPPED and res.not_applicable is None


def test_an_unlicensed_vgpu_is_a_warning_and_a_licensed_one_passes(compat):
    res = _run(_h100s({"vgpu_license": "licensed"}, {"vgpu_license": "unlicensed"}), "gpu.vgpu-license", compat)
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("gpu.vgpu-license/unlicensed", "GPU_THROTTLED", Severity.WARNING)
    assert f.summary.startswith("vGPU without a license on GPU 1") and "20 minutes" in f.summary
    (ev,) = f.evidence
    assert (ev.path, ev.value, ev.expected) == ("driver.gpus[1].vgpu_license", "unlicensed", "licensed")
    assert _run(_h100s({"vgpu_license": "licensed"}), "gpu.vgpu-license", compat).status == CheckStatus.PASSED
