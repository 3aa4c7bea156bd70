"""A MIG slice is judged against the slice (its SMs and memory share), never against the whole board.

Stand-in: the real H100 capture in MIG mode (tests/fixtures/pastes/nvidia-smi-table/h100-mig_590.48.01_load.txt:
a 3g.40gb with 60 SMs, a 2g.20gb with 32 and two 1g.10gb with 16 each, of the board's 132), read by the table
parser, with results as the payload reports them on a slice (CUDA names a MIG device "<board> MIG <profile>"
and gives its own SM count and memory)."""

from __future__ import annotations

import dataclasses

from envdoctor.bench.expect import expect
from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Bench, BenchResult, Driver, Facts, ProbeStatus
from envdoctor.model.findings import Severity
from envdoctor.parsers.nvidia_smi_table import parse_nvidia_smi_table
from tests.paths import FIXTURES

COMPAT = load_compat()
TABLE = parse_nvidia_smi_table((FIXTURES / "pastes/nvidia-smi-table/h100-mig_590.48.01_load.txt").read_text())
BOARD = COMPAT.bench.gpu_row("H100 SXM5 80GB", "matmul_bf16").expected
BOARD_BW = COMPAT.bench.gpu_row("H100 SXM5 80GB", "membw_device").expected
MIB = 1 << 20


def _slice_result(kernel: str, value: float, profile: str = "1g.10gb", sms=16, mem_mib=9984,
                  **params) -> BenchResult:
    unit = "GB/s" if kernel == "membw_device" else "TFLOP/s"
    p = {"pci_bus_id": "00000000:00:09.0", "gpu_name": f"NVIDIA H100 80GB HBM3 MIG {profile}", "sm_count": sms,
         "memory_total_bytes": mem_mib * MIB if mem_mib else None}
    p.update(params)
    return BenchResult(kernel, ProbeStatus.OK, device="cuda:0", value=value, unit=unit,
                       params={k: v for k, v in p.items() if v is not None})


def _facts(*results: BenchResult) -> Facts:
    return Facts(driver=Driver(status="ok", source="paste", version=TABLE.driver_version, gpus=TABLE.gpus),
                 bench=Bench(status=ProbeStatus.OK, results=list(results)))


def test_a_healthy_1g_slice_is_judged_against_its_16_of_132_sms_and_gets_no_error():
    healthy = BOARD * 16 / 132
    mm = _slice_result("matmul_bf16", round(healthy, 1))
    bw = _slice_result("membw_device", round(BOARD_BW * 9984 / 81559, 1))
    facts = _facts(mm, bw)
    e = expect(facts, COMPAT, mm)
    assert e.verdict == "ok" and e.expected == round(healthy, 2) and "16 of 132 SMs" in e.basis
    e = expect(facts, COMPAT, bw)
    assert e.verdict == "ok" and "9984 of 81559 MiB" in e.basis
    results = run_checks(facts, COMPAT, all_checks())
    errors = [(f.code, f.summary) for r in results for f in r.findings if f.severity == Severity.ERROR]
    assert errors == []  # before: matmul_bf16 at 12% of the board's 783.7, an error and exit 1


def test_a_slow_slice_is_still_caught_at_its_own_scale():
    mm = _slice_result("matmul_bf16", round(BOARD * 16 / 132 * 0.5, 1))
    (res,) = run_checks(_facts(mm), COMPAT, [c for c in all_checks() if c.id == "bench.matmul"])
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("bench.matmul/below-expected", "PERF_BELOW_EXPECTED", Severity.ERROR)
    assert "50% of the" in f.summary and f.evidence[0].expected == f">= {round(BOARD * 16 / 132, 2):g} TFLOP/s"


def test_the_slice_is_found_in_the_parent_facts_when_the_result_names_only_its_sms():
    # no profile in the name: the SM count picks the slice of the capture (60 SMs: the 3g.40gb, GI 2)
    mm = _slice_result("membw_device", round(BOARD_BW * 40448 / 81559, 1), profile="", sms=60, mem_mib=None,
                       gpu_name="NVIDIA H100 80GB HBM3")
    e = expect(_facts(mm), COMPAT, mm)
    assert e.verdict == "ok" and "40448 of 81559 MiB" in e.basis


def test_a_slice_of_unknown_size_is_not_judged_against_the_board():
    mm = _slice_result("matmul_bf16", 95.0, profile="", sms=None, mem_mib=None, gpu_name="NVIDIA H100 80GB HBM3")
    e = expect(_facts(mm), COMPAT, mm)
    assert e.expected is None and e.verdict == "no reference" and "MIG slice" in e.basis
    # the same result on the GPU with MIG off is judged against the whole board, and fails
    whole = [dataclasses.replace(g, mig_mode_current=False, mig_devices=None) for g in TABLE.gpus]
    facts = dataclasses.replace(_facts(mm), driver=Driver(status="ok", gpus=whole))
    assert expect(facts, COMPAT, mm).verdict == "error"


def test_host_copies_on_a_slice_have_no_board_reference():
    r = _slice_result("h2d_pinned", 20.0)
    r = dataclasses.replace(r, name="h2d_pinned", unit="GB/s")
    e = expect(_facts(r), COMPAT, r)
    assert e.verdict == "no reference" and "copy engines" in e.basis


def _with_uuids(gpus):
    """The capture's slices with the MIG UUIDs NVML would give them (the table prints none)."""
    g = gpus[0]
    devs = [dataclasses.replace(d, uuid=f"MIG-{d.gpu_instance_id:08d}-0000-0000-0000-000000000000")
            for d in g.mig_devices]
    return [dataclasses.replace(g, mig_devices=devs)]


def test_only_the_slice_a_process_runs_on_is_busy():
    # issue 39: the processes on the 3g.40gb slice (GI 2) marked the whole H100 busy, so a bench on the user's
    # own 2g.20gb slice (GI 3) was skipped; now only GI 2's slice is busy, by its UUID as CUDA gives it
    from envdoctor.bench.run import busy_gpus

    drv = Driver(status="ok", gpus=_with_uuids(TABLE.gpus))
    busy = busy_gpus(drv)
    assert list(busy) == ["00000002-0000-0000-0000-000000000000"]
    assert busy["00000002-0000-0000-0000-000000000000"].startswith("pid 21180 (/root/tools/memhog)")
    # a process whose slice is unknown (no GI/CI ids: an older reader) keeps the whole GPU busy, as before
    g = drv.gpus[0]
    unknown = [dataclasses.replace(p, gpu_instance_id=None, compute_instance_id=None) for p in g.processes]
    assert list(busy_gpus(Driver(status="ok", gpus=[dataclasses.replace(g, processes=unknown)]))) == ["0000:00:09"]


def test_a_slow_slice_blames_processes_only_on_its_own_slice():
    gpus = _with_uuids(TABLE.gpus)
    facts = Facts(driver=Driver(status="ok", source="paste", gpus=gpus),
                  bench=Bench(status=ProbeStatus.OK, results=[
                      _slice_result("matmul_bf16", round(BOARD * 32 / 132 * 0.5, 1), "2g.20gb", 32, 20096,
                                    uuid="00000003-0000-0000-0000-000000000000"),
                      _slice_result("membw_device", round(BOARD_BW * 40448 / 81559 * 0.5, 1), "3g.40gb", 60,
                                    40448, uuid="00000002-0000-0000-0000-000000000000")]))
    got = {f.code.split("/")[0]: f for r in run_checks(facts, COMPAT, all_checks()) for f in r.findings
           if f.code.endswith("below-expected")}
    assert "process" not in got["bench.matmul"].summary and "no cause found" in got["bench.matmul"].summary
    assert "3 other process(es) were using this MIG slice" in got["bench.membw"].summary
