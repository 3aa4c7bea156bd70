"""bench_sustained's checks: a sustained run on every GPU (bench.sustained: throttling, a uniformly slow GPU, wrong
results) and vGPU slices (bench.gpu-virtualized), passing, failing (the whole finding) and skipped; on the healthy
8x H100 SXM snapshot."""

from __future__ import annotations

import dataclasses

from envdoctor.checks import all_checks, run_checks, select
from envdoctor.compat import load_compat
from envdoctor.model.facts import Bench, BenchResult, Driver, Facts, ProbeStatus
from envdoctor.model.findings import CheckStatus, Severity
from tests.paths import FIXTURES

COMPAT = load_compat()
FACTS = Facts.from_json((FIXTURES / "snapshots/h100-sxm-x8-healthy.json").read_text())


def _result(check_id: str, facts: Facts, *results: BenchResult):
    facts = dataclasses.replace(facts, bench=Bench(status=ProbeStatus.OK, results=list(results)))
    (res,) = run_checks(facts, COMPAT, select(all_checks(), [check_id]))
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def _sustained(series, **params):
    from envdoctor.bench.sampler import sustained_summary

    summary = sustained_summary(series)
    return BenchResult("sustained", ProbeStatus.OK, device="cuda:0", value=series[-1]["tflops"], unit="TFLOP/s",
                       params={"pci_bus_id": "0000:18:00", "dtype": "bfloat16", **summary, **params},
                       samples=series)


def _sustained_codes(r):
    return [f.code for f in _result("bench.sustained", FACTS, r).findings]


def test_a_flat_power_capped_series_is_not_throttled_a_thermal_one_is():
    flat = [{"t_s": i * 0.5, "tflops": 790.0, "sm_clock_mhz": 1755, "throttle_reasons": ["sw_power_cap"]}
            for i in range(40)]
    assert _sustained_codes(_sustained(flat)) == []
    hot = [{"t_s": i * 0.5, "tflops": 790.0 if i < 20 else 600.0, "sm_clock_mhz": 1980 if i < 20 else 1500,
            "throttle_reasons": [] if i < 20 else ["hw_thermal_slowdown"]} for i in range(40)]
    assert "bench.sustained/throttled" in _sustained_codes(_sustained(hot))


def test_a_uniformly_slow_gpu_is_caught_against_the_absolute_figure():
    slow = [{"t_s": i * 0.5, "tflops": 400.0, "sm_clock_mhz": 1200, "throttle_reasons": ["sw_power_cap"]}
            for i in range(40)]
    assert _sustained_codes(_sustained(slow)) == ["bench.sustained/below-expected"]


def test_a_result_matrix_with_corrupted_elements_fails():
    flat = [{"t_s": i * 0.5, "tflops": 790.0, "sm_clock_mhz": 1980, "throttle_reasons": []} for i in range(10)]
    codes = _sustained_codes(_sustained(flat, faulty_elements=12, checked_elements=67108864))
    assert codes == ["bench.sustained/wrong-results"]


def test_a_thermal_drop_is_the_whole_finding_a_flat_run_passes_and_no_sustained_run_skips():
    hot = [{"t_s": i * 0.5, "tflops": 790.0 if i < 20 else 600.0, "sm_clock_mhz": 1980 if i < 20 else 1500,
            "throttle_reasons": [] if i < 20 else ["hw_thermal_slowdown"]} for i in range(40)]
    res = _result("bench.sustained", FACTS, _sustained(hot))
    f = next(f for f in res.findings if f.code == "bench.sustained/throttled")
    assert (res.status, f.category, f.severity) == (CheckStatus.FAILED, "PERF_BELOW_EXPECTED", Severity.WARNING)
    assert f.summary == ("cuda:0 under sustained load: throughput fell 24.1% (790.0 -> 600.0 TFLOP/s); HW Thermal "
                         "Slowdown from 10 s")
    assert [(e.path, e.value) for e in f.evidence] == [
        ("bench.results[0].params.throttle_reasons_seen", ["hw_thermal_slowdown"]),
        ("bench.results[0].params.drop_pct", 24.1)]
    flat = [{"t_s": i * 0.5, "tflops": 790.0, "sm_clock_mhz": 1755, "throttle_reasons": ["sw_power_cap"]}
            for i in range(40)]
    assert _result("bench.sustained", FACTS, _sustained(flat)).status == CheckStatus.PASSED
    skipped = _result("bench.sustained", FACTS)
    assert (skipped.status, skipped.reason) == (CheckStatus.SKIPPED, "no sustained run (`envdoctor bench --sustain "
                                                                     "60`)")


def test_a_vgpu_is_a_whole_note_whole_gpus_pass_and_no_gpu_facts_skip():
    gpus = FACTS.driver.gpus
    vgpu = dataclasses.replace(FACTS, driver=dataclasses.replace(FACTS.driver, gpus=[
        dataclasses.replace(gpus[0], virtualization_mode="vgpu")] + list(gpus[1:])))
    res = _result("bench.gpu-virtualized", vgpu)
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("bench.gpu-virtualized/vgpu", "GPU_VIRTUALIZED", Severity.INFO)
    assert f.summary == "GPU 0 (NVIDIA H100 80GB HBM3) is a vGPU: a slice of a physical GPU behind a hypervisor"
    assert [(e.path, e.value) for e in f.evidence] == [("driver.gpus[0].virtualization_mode", "vgpu"),
                                                       ("driver.gpus[0].name", "NVIDIA H100 80GB HBM3")]
    whole = _result("bench.gpu-virtualized", FACTS)
    assert (whole.status, whole.findings) == (CheckStatus.PASSED, [])
    skipped = _result("bench.gpu-virtualized", dataclasses.replace(FACTS, driver=Driver(status=ProbeStatus.ABSENT)))
    assert (skipped.status, skipped.reason) == (CheckStatus.SKIPPED, "no GPU facts")


def test_time_in_hw_thermal_or_power_brake_slowdown_under_load_is_an_error_and_none_passes():
    flat = [{"t_s": i * 0.5, "tflops": 790.0, "sm_clock_mhz": 1755, "throttle_reasons": ["sw_power_cap"]}
            for i in range(40)]
    r = _sustained(flat, health_counters={"violation_hw_thermal_ns": 2_000_000, "violation_hw_power_brake_ns": 0,
                                          "violation_power_ns": 9_000_000_000}, xid_seen=[])
    res = _result("bench.sustained", FACTS, r)
    (f,) = res.findings
    assert (f.code, f.severity, f.category) == ("bench.sustained/clock-violations", Severity.ERROR, "GPU_THROTTLED")
    assert [(e.path, e.value) for e in f.evidence] == [
        ("bench.results[0].params.health_counters.violation_hw_thermal_ns", 2_000_000)]
    assert "HW thermal slowdown" in f.summary and "+2 ms" in f.summary
    calm = _sustained(flat, health_counters={"violation_hw_thermal_ns": 0, "violation_hw_power_brake_ns": 0},
                      xid_seen=[])
    assert _result("bench.sustained", FACTS, calm).findings == []
