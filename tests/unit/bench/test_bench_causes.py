"""What a slow GPU result names as its likely cause, read as NVML documents the clock-event reasons: SW Power Cap
at the default limit is how a GPU at full load runs, and a HW Slowdown in one sample may be a P-state change."""

from __future__ import annotations

import dataclasses

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Bench, BenchResult, Facts, ProbeStatus
from envdoctor.model.findings import Severity
from tests.paths import FIXTURES

COMPAT = load_compat()
FACTS = Facts.from_json((FIXTURES / "snapshots/h100-sxm-x8-healthy.json").read_text())
MATMUL = [c for c in all_checks() if c.id == "bench.matmul"]


def _slow(counts, samples=30, **gpu):
    params = {"pci_bus_id": "0000:18:00", "gpu_name": "NVIDIA H100 80GB HBM3", "shape": [8192, 8192, 8192],
              "throttle_reasons_seen": sorted(counts), "throttle_reason_samples": counts, "nvml_samples": samples}
    r = BenchResult("matmul_bf16", ProbeStatus.OK, device="cuda:0", value=550.0, unit="TFLOP/s", params=params)
    drv = FACTS.driver
    g = dataclasses.replace(drv.gpus[0], **gpu)
    facts = dataclasses.replace(FACTS, driver=dataclasses.replace(drv, gpus=[g] + drv.gpus[1:]),
                                bench=Bench(status=ProbeStatus.OK, results=[r]))
    (res,) = run_checks(facts, COMPAT, MATMUL)
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("bench.matmul/below-expected", "PERF_BELOW_EXPECTED",
                                                Severity.WARNING)
    return f


def test_sw_power_cap_at_full_load_is_not_the_likely_cause():
    f = _slow({"sw_power_cap": 30})
    assert f.summary.endswith("likely cause: no cause found in this run's facts")
    assert "SW Power Cap (normal at full load at the power limit)" in f.detail
    assert "sudo" not in " ".join(f.fix.commands) and "nvidia-smi -q -d POWER" not in f.fix.commands


def test_a_lowered_power_limit_is_the_cause_not_the_power_cap_reason():
    f = _slow({"sw_power_cap": 30}, power_limit_w=500.0)
    assert "likely cause: power limit 500 W is below the default 700 W" in f.summary
    assert f.fix.commands == ["nvidia-smi -q -d POWER"]


def test_one_hw_slowdown_sample_is_not_throttling_a_held_one_is():
    one = _slow({"hw_slowdown": 1})
    assert "no cause found" in one.summary and "HW Slowdown in a single reading" in one.detail
    held = _slow({"hw_slowdown": 12})
    assert "likely cause: clocks held back: HW Slowdown active" in held.summary
    assert held.evidence[1].path == "bench.results[0].params.throttle_reasons_seen"


def test_a_thermal_slowdown_that_held_is_the_cause():
    f = _slow({"sw_thermal_slowdown": 20, "sw_power_cap": 30})
    assert "likely cause: clocks held back: SW Thermal Slowdown active" in f.summary
    assert "SW Power Cap (normal" in f.detail
    assert "cooling" in f.fix.summary
