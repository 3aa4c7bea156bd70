"""`envdoctor bench`: plan, streamed payload with deadlines, disk reads, expectations data, checks, CLI (timer-free)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from envdoctor.bench import disk as diskmod
from envdoctor.bench.run import busy_gpus, run_torch_kernels, stream_payload
from envdoctor.bench.sampler import merge_sustained, sustained_summary
from envdoctor.bench.suite import KERNELS, PlanError, expand_names, plan
from envdoctor.checks import all_checks, run_checks, select
from envdoctor.compat import CompatDataError, load_compat
from envdoctor.compat.bench import bench_table, validate_bench
from envdoctor.model.facts import Bench, BenchResult, Facts, GpuProcess, ProbeStatus
from envdoctor.model.findings import CheckStatus, Severity
from tests import audit
from tests.paths import FIXTURES, REPO

FIXTURES = FIXTURES
REPO = REPO


def h100() -> Facts:
    return Facts.from_json((FIXTURES / "snapshots/h100-sxm-x8-healthy.json").read_text())


def _with_results(facts: Facts, results, gpu_changes=None, path_changes=None) -> Facts:
    drv = facts.driver
    if gpu_changes:
        drv = dataclasses.replace(drv, gpus=[dataclasses.replace(drv.gpus[0], **gpu_changes)] + drv.gpus[1:])
    st = facts.storage
    if path_changes:
        st = dataclasses.replace(st, paths=[dataclasses.replace(st.paths[0], **path_changes)])
    return dataclasses.replace(facts, driver=drv, storage=st,
                               bench=Bench(status=ProbeStatus.OK, results=list(results)))


def _run(facts: Facts, check_id: str):
    (res,) = run_checks(facts, load_compat(), select(all_checks(), [check_id]))
    return res


def _mm(value: float, facts: Facts) -> BenchResult:
    g = facts.driver.gpus[0]
    return BenchResult("matmul_bf16", ProbeStatus.OK, device="cuda:0", value=value, unit="TFLOP/s",
                       params={"pci_bus_id": "0000:18:00", "gpu_name": g.name, "shape": [8192, 8192, 8192]})


# --------------------------------------------------------------------------- checks on published numbers


def test_h100_sxm_at_780_bf16_tflops_passes():
    facts = h100()
    res = _run(_with_results(facts, [_mm(780.0, facts)]), "bench.matmul")
    assert res.status == CheckStatus.PASSED and res.findings == []


def test_h100_at_500_with_sw_thermal_slowdown_names_the_throttle():
    facts = h100()
    snap = _with_results(facts, [_mm(500.0, facts)], gpu_changes={"throttle_reasons": ["sw_thermal_slowdown"]})
    res = _run(snap, "bench.matmul")
    (f,) = res.findings
    assert (f.code, f.category, f.severity) == ("bench.matmul/below-expected", "PERF_BELOW_EXPECTED", Severity.WARNING)
    assert "SW Thermal Slowdown" in f.summary
    assert f.evidence[0].path == "bench.results[0].value" and f.evidence[0].value == 500.0
    assert "stas00/ml-engineering" in (f.evidence[0].source or "")
    assert any(e.path == "driver.gpus[0].throttle_reasons" for e in f.evidence)


def test_far_below_is_an_error_and_no_reference_gpu_skips():
    facts = h100()
    (f,) = _run(_with_results(facts, [_mm(300.0, facts)]), "bench.matmul").findings
    assert f.severity == Severity.ERROR
    odd = _with_results(facts, [_mm(10.0, facts)], gpu_changes={"name": "NVIDIA Imaginary 9000"})
    odd = dataclasses.replace(odd, bench=Bench(status=ProbeStatus.OK, results=[dataclasses.replace(
        _mm(10.0, facts), params={"pci_bus_id": "0000:18:00", "gpu_name": "NVIDIA Imaginary 9000"})]))
    res = _run(odd, "bench.matmul")
    # said in the report, never passed quietly
    assert [f.code for f in res.findings] == ["bench.matmul/no-reference"]
    assert "no reference for this GPU" in res.findings[0].summary


def test_h2d_12_gbs_on_a_gen4_x8_link_names_the_link():
    facts = h100()
    r = BenchResult("h2d_pinned", ProbeStatus.OK, device="cuda:0", value=12.0, unit="GB/s",
                    params={"pci_bus_id": "0000:18:00", "pcie_gen_under_load": 4, "pcie_width_under_load": 8})
    snap = _with_results(facts, [r], gpu_changes={"pcie_gen_max": 4, "pcie_width_max": 16})
    (f,) = _run(snap, "bench.host-copy").findings
    assert f.category == "PERF_BELOW_EXPECTED" and f.severity == Severity.ERROR  # 48% of 25.1: under half
    assert "Gen4 x8 under load, below its maximum Gen4 x16" in f.summary
    ok = _with_results(facts, [dataclasses.replace(r, value=24.0)], gpu_changes={"pcie_gen_max": 4,
                                                                                  "pcie_width_max": 16})
    assert _run(ok, "bench.host-copy").status == CheckStatus.PASSED


def test_disk_120_mbs_on_a_rotational_device_names_the_disk():
    facts = h100()
    r = BenchResult("disk_seq_read", ProbeStatus.OK, device="/data", value=120.0, unit="MB/s",
                    params={"path": "/data", "direct": True})
    snap = _with_results(facts, [r], path_changes={"rotational": True, "transport": "sata", "block_device": "sda"})
    (f,) = _run(snap, "bench.disk").findings
    assert f.category == "PERF_BELOW_EXPECTED" and "rotational disk (sda)" in f.summary
    nvme = _with_results(facts, [dataclasses.replace(r, value=2500.0)])
    assert _run(nvme, "bench.disk").status == CheckStatus.PASSED


def test_sustained_throttle_and_straggler():
    facts = h100()
    series = [{"t_s": i * 0.5, "tflops": 700.0 if i < 10 else 550.0, "sm_clock_mhz": 1980 if i < 10 else 1600,
               "throttle_reasons": [] if i < 10 else ["sw_thermal_slowdown"]} for i in range(20)]
    summary = sustained_summary(series)
    assert summary["throttle_onset_s"] == 5.0 and summary["drop_pct"] > 10
    a = BenchResult("sustained", ProbeStatus.OK, device="cuda:0", value=600.0, unit="TFLOP/s",
                    params={"pci_bus_id": "0000:18:00", **summary}, samples=series)
    others = [BenchResult("sustained", ProbeStatus.OK, device=f"cuda:{i}", value=700.0, unit="TFLOP/s",
                          params={"drop_pct": 0.0, "throttle_onset_s": None}) for i in (1, 2)]
    codes = sorted(f.code for f in _run(_with_results(facts, [a] + others), "bench.sustained").findings)
    assert codes == ["bench.sustained/straggler", "bench.sustained/throttled"]


def test_gpu_virtualized_by_mode_and_by_profile_name():
    facts = h100()
    (f,) = _run(_with_results(facts, [], gpu_changes={"virtualization_mode": "vgpu"}), "bench.gpu-virtualized").findings
    assert (f.category, f.severity) == ("GPU_VIRTUALIZED", Severity.INFO)
    (f,) = _run(_with_results(facts, [], gpu_changes={"name": "GRID A100-4C"}), "bench.gpu-virtualized").findings
    assert "vGPU" in f.summary
    assert _run(facts, "bench.gpu-virtualized").findings == []


def test_bench_checks_skip_without_a_run():
    for cid in ("bench.matmul", "bench.host-copy", "bench.disk", "bench.sustained"):
        res = _run(h100(), cid)
        assert res.status == CheckStatus.SKIPPED and "envdoctor bench" in res.reason


# --------------------------------------------------------------------------- data


def test_bench_data_is_cited_and_validated():
    compat = load_compat()
    table = bench_table(compat)
    assert table.gpu_row("H100 SXM5 80GB", "matmul_bf16").expected == pytest.approx(783.7)
    assert table.host_copy("pcie", 4, 8)[0] == pytest.approx(25.1 / 2)
    assert table.host_copy("pcie", 2, 16) is None  # no row: no guess
    doc = json.loads((REPO / "compat_data/bench.json").read_text())
    gpus = json.loads((REPO / "compat_data/gpus.json").read_text())
    validate_bench(doc, gpus)
    for bad, msg in ((dict(doc["rows"][0], gpu="Nope 1"), "not a gpus.json row"),
                     (dict(doc["rows"][0], kernel="matmul_int4"), "kernel"),
                     (dict(doc["rows"][0], confidence=None), "confidence"),
                     (dict(doc["rows"][0], method=""), "no method"),
                     (dict(doc["rows"][0], source=[]), "source"),
                     (dict(doc["rows"][0], derived=True, basis=None), "basis"),
                     (dict(doc["rows"][0], expected=10 * (doc["rows"][0]["peak"] or 1)), "110%")):
        with pytest.raises(CompatDataError, match=msg):
            validate_bench(dict(doc, rows=[bad]), gpus)


# --------------------------------------------------------------------------- plan


def test_plan_quick_cpu_and_budget():
    quick = expand_names([])
    assert "matmul_bf16" in quick and "sustained" not in quick
    # fp8 is quick where a GPU has fp8 (8.9+), or where no capability is known (the payload skips it, saying why)
    assert "matmul_fp8" in quick and "matmul_fp8" in expand_names([], [(9, 0)])
    assert "matmul_fp8" in expand_names([], [(8, 0), (8, 9)]) and "matmul_fp8" not in expand_names([], [(8, 0)])
    assert "matmul_fp8" not in [i.name for i in plan([], "cuda", gpu_ccs=[(7, 5)])]
    assert "matmul_fp8" in [i.name for i in plan([], "cuda", gpu_ccs=[(12, 0)])]
    cpu = plan([], "cpu")
    names = {i.name for i in cpu}
    # --device cpu: every torch code path, fp16/fp8 included
    assert {"matmul_fp16", "matmul_fp8", "membw_device", "membw_host"} <= names
    assert all(i.device == "cpu" for i in cpu)
    scaled = plan([], "cpu", budget_s=3.0)
    assert sum(i.budget_s for i in scaled) == pytest.approx(3.0, rel=0.05)
    assert [i.name for i in plan(["matmul_fp32"], "cuda", sustain_s=10)] == ["matmul_fp32", "sustained"]
    with pytest.raises(PlanError, match="unknown benchmark"):
        expand_names(["matmul_int3"])
    gpu_budget = sum(KERNELS[i.name].gpu_budget_s for i in plan([], "cuda") if not KERNELS[i.name].multi_gpu)
    assert gpu_budget < 25  # the one-GPU quick suite is designed to fit in 30 s with startup


def test_busy_gpus_come_from_compute_processes():
    facts = h100()
    g = dataclasses.replace(facts.driver.gpus[0], processes=[GpuProcess(pid=42, name="python", type="C"),
                                                              GpuProcess(pid=7, name="Xorg", type="G")])
    drv = dataclasses.replace(facts.driver, gpus=[g])
    assert busy_gpus(drv) == {"0000:18:00": "pid 42 (python)"}


# --------------------------------------------------------------------------- streamed payload


FAKE = r'''
import json, sys, time
plan = json.loads(sys.argv[sys.argv.index("--plan") + 1])
skip = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--skip"]
def emit(**o):
    o["envdoctor_bench"] = 1
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
emit(event="info", torch="fake", devices=[])
for item in plan:
    key = item["name"] + "@cpu"
    if key in skip:
        continue
    emit(event="start", name=item["name"], device="cpu", budget_s=item["budget_s"])
    if item["name"] == "matmul_fp16":
        time.sleep(600)  # a hung kernel
    emit(event="result", result={"name": item["name"], "device": "cpu", "status": "ok", "value": 1.0,
                                 "unit": "TFLOP/s", "params": {"n": 8}})
emit(event="done")
'''


def test_a_hung_kernel_is_killed_at_its_deadline_and_the_others_still_report(tmp_path, monkeypatch):
    script = tmp_path / "fake_payload.py"
    script.write_text(FAKE)
    import envdoctor.bench.run as runmod

    monkeypatch.setattr(runmod, "kill_grace_s", lambda budget: 0.5)
    items = plan(["matmul_bf16", "matmul_fp16", "matmul_fp32"], "cpu", budget_s=0.6)
    events = []
    results, info, notes = run_torch_kernels(sys.executable, items, 0.5, {}, events.append, payload=script)
    by = {r.name: r for r in results}
    assert by["matmul_bf16"].status == by["matmul_fp32"].status == ProbeStatus.OK
    assert by["matmul_fp16"].status == ProbeStatus.FAILED and "killed" in by["matmul_fp16"].reason
    assert info.get("torch") == "fake"
    assert [e["event"] for e in events].count("start") == 3


def test_payload_without_torch_reports_every_kernel_skipped():
    argv = [sys.executable, str(REPO / "envdoctor/_payload"), "--task", "bench", "--plan",
            json.dumps([{"name": "matmul_fp32", "device": "cpu", "budget_s": 0.1}])]
    try:
        import torch  # noqa: F401
        pytest.skip("this interpreter has torch")
    except ImportError:
        pass
    events = []
    out = stream_payload(argv, events.append, startup_timeout_s=30)
    assert out.finished and out.killed is None
    (res,) = [e["result"] for e in events if e["event"] == "result"]
    assert res["status"] == "skipped" and "import torch failed" in res["reason"]


def test_merge_sustained_aligns_nvml_samples_with_batches():
    batches = [{"t": 10.0 + i, "tflops": 100.0 + i} for i in range(4)]
    nvml = [{"t": 10.5 + i, "sm_clock_mhz": 1900, "throttle_reasons": []} for i in range(6)]
    series = merge_sustained(batches, nvml, 10.0)
    assert [s["tflops"] for s in series] == [101.0, 102.0, 103.0]  # samples after the load ended are dropped
    assert series[0]["t_s"] == 0.5


# --------------------------------------------------------------------------- disks


def test_disk_bench_writes_a_temporary_file_and_removes_it(tmp_path, monkeypatch):
    monkeypatch.setattr(diskmod, "FREE_MARGIN_BYTES", 0)
    results = diskmod.bench_disk(str(tmp_path), 0.05, 0.05, temp_bytes=8 << 20)
    by = {r.name: r for r in results}
    assert by["disk_seq_read"].status == ProbeStatus.OK and by["disk_seq_read"].unit == "MB/s"
    assert by["disk_rand_read"].unit == "IOPS" and by["disk_rand_read"].value > 0
    assert by["disk_seq_read"].params["temporary_file"] is True
    assert "wrote a temporary" in by["disk_seq_read"].params["target"]
    assert isinstance(by["disk_seq_read"].params["direct"], bool)
    assert list(tmp_path.iterdir()) == []


def test_disk_bench_removes_its_file_on_ctrl_c(tmp_path, monkeypatch):
    monkeypatch.setattr(diskmod, "FREE_MARGIN_BYTES", 0)

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(diskmod, "seq_read", interrupted)
    with pytest.raises(KeyboardInterrupt):
        diskmod.bench_disk(str(tmp_path), 0.05, 0.05, temp_bytes=4 << 20)
    assert list(tmp_path.iterdir()) == []


def test_disk_bench_reads_an_existing_large_file_and_never_writes(tmp_path, monkeypatch):
    big = tmp_path / "shard.bin"
    with open(big, "wb") as fh:
        fh.truncate(8 << 20)
    monkeypatch.setattr(diskmod, "MIN_FILE_BYTES", 4 << 20)
    res = diskmod.bench_disk(str(tmp_path), 0.05, 0.05, allow_write=False)
    assert all(r.status == ProbeStatus.OK and r.params["file"] == str(big) and not r.params["temporary_file"]
               for r in res)
    empty = tmp_path / "empty"
    empty.mkdir()
    skipped = diskmod.bench_disk(str(empty), 0.05, 0.05, allow_write=False)
    assert all(r.status == ProbeStatus.SKIPPED and "--no-write" in r.reason for r in skipped)


def test_disk_bench_refuses_to_fill_a_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(diskmod, "FREE_MARGIN_BYTES", 1 << 60)
    res = diskmod.bench_disk(str(tmp_path), 0.05, 0.05)
    assert all(r.status == ProbeStatus.SKIPPED and "free" in r.reason for r in res)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- CLI


def _cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(REPO))


def test_cli_bench_list_and_usage_errors():
    p = _cli("bench", "--list")
    assert p.returncode == 0 and "matmul_bf16" in p.stdout and "disk_rand_read" in p.stdout
    assert _cli("bench", "matmul_int3").returncode == 2
    p = _cli("bench", "--sustain", "-1")
    assert p.returncode == 2 and "--sustain" in p.stderr


@pytest.mark.slow
def test_cli_bench_device_cpu_runs_the_torch_code_paths(cpu_venv, tmp_path):
    p = _cli("bench", "--python", cpu_venv.python, "--device", "cpu", "--budget", "3", "--data", str(tmp_path),
             "--format", "json", timeout=300)
    assert p.returncode in (0, 1), p.stderr
    bench = json.loads(p.stdout)["facts"]["bench"]
    by = {r["name"]: r for r in bench["results"]}
    for name in ("matmul_fp32", "matmul_bf16", "membw_device", "membw_host"):
        assert by[name]["status"] == "ok" and by[name]["value"] > 0, by[name]
    assert by["matmul_fp32"]["params"]["n"] > 0 and by["matmul_fp32"]["params"]["threads"] >= 1
    assert by["membw_host"]["params"]["n"] > 0
    assert by["matmul_tf32"]["status"] == "skipped" and by["h2d_pinned"]["status"] == "skipped"
    assert by["disk_seq_read"]["status"] in ("ok", "skipped")
    assert list(tmp_path.iterdir()) == []  # the temporary disk file is gone


@pytest.mark.gpu
def test_gpu_bench_quick_suite_structure():
    python = os.environ.get("ENVDOCTOR_TEST_CUDA_VENV")
    if not python or not os.path.exists("/dev/nvidiactl"):
        pytest.skip("needs an NVIDIA GPU and ENVDOCTOR_TEST_CUDA_VENV")
    p = _cli("bench", "--python", python, "--format", "json", timeout=600)
    assert p.returncode in (0, 1), p.stderr
    results = json.loads(p.stdout)["facts"]["bench"]["results"]
    mm = [r for r in results if r["name"] == "matmul_bf16" and r["device"].startswith("cuda")]
    assert mm and all(r["status"] == "ok" and r["value"] > 1 and r["params"]["timer"] == "cuda events" for r in mm)
    h2d = [r for r in results if r["name"] == "h2d_pinned" and r["status"] == "ok"]
    assert all("pci_bus_id" in r["params"] for r in h2d)


# each kernel lasts until the parent's NVML sampler for it has read the GPU (a marker the fake NVML touches),
# not a fixed time: a loaded machine may take any time to start the sampler's thread. The links sampler alone reads
# the link width (during h2d_/d2h_ kernels); the GPU sampler reads the clock-event reasons (every CUDA kernel).
GPU_FAKE = r'''
import json, os, sys, time
plan = json.loads(sys.argv[sys.argv.index("--plan") + 1])
MARKS = os.environ["FAKE_NVML_MARKS"]
def emit(**o):
    o["envdoctor_bench"] = 1
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
emit(event="info", torch="fake", devices=[{"device": "cuda:0", "pci_bus_id": "0000:18:00"}])
for item in plan:
    mark = os.path.join(MARKS, "width" if item["name"].startswith(("h2d_", "d2h_")) else "reasons")
    emit(event="start", name=item["name"], device="cuda:0", budget_s=item["budget_s"], t=time.monotonic())
    end = time.monotonic() + 120
    while not os.path.exists(mark) and time.monotonic() < end:
        time.sleep(0.02)
    emit(event="result", result={"name": item["name"], "device": "cuda:0", "status": "ok", "value": 10.0,
                                 "unit": "GB/s", "params": {"pci_bus_id": "0000:18:00"}})
emit(event="done")
'''


def _marking(marks, name, value):
    """A fake NVML getter that answers ``value`` and leaves the marker ``name`` (it has been read)."""
    def read(gpu, args):
        args[1]._obj.value = value
        (marks / name).touch()
        return 0
    return read


def test_nvml_is_read_during_gpu_kernels_links_and_throttles(tmp_path, monkeypatch):
    # the stand-in libnvidia-ml under the real pynvml: links sampled during copies, clock events during kernels
    from envdoctor.bench.run import BenchOptions, run_bench
    from envdoctor.model.facts import Driver, Gpu
    from tests.fakes.nvml_lib import FakeNvmlLib, h100_sxm, installed

    script = tmp_path / "gpu_fake.py"
    script.write_text(GPU_FAKE)
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("FAKE_NVML_MARKS", str(marks))
    lib = FakeNvmlLib([h100_sxm(0, nvmlDeviceGetCurrPcieLinkWidth=_marking(marks, "width", 8),
                                nvmlDeviceGetCurrentClocksEventReasons=_marking(marks, "reasons", 0x20))])
    driver = Driver(status=ProbeStatus.OK, gpus=[Gpu(index=0, name="NVIDIA H100 80GB HBM3",
                                                     pci_bus_id="00000000:18:00.0")])
    with installed(lib) as nvml:
        bench = run_bench(BenchOptions(python=sys.executable, names=["matmul_bf16", "h2d_pinned"], device="cuda"),
                          driver, nvml=nvml, payload=script)
    # matmul first: no earlier kernel's sampler has left the reasons marker before matmul's own sampler reads
    assert [r.name for r in bench.results] == ["matmul_bf16", "h2d_pinned"]
    by = {r.name: r for r in bench.results}
    assert by["h2d_pinned"].params["pcie_gen_under_load"] == 5
    assert by["h2d_pinned"].params["pcie_width_under_load"] == 8
    assert by["matmul_bf16"].params["throttle_reasons_seen"] == ["sw_thermal_slowdown"]
    assert by["matmul_bf16"].params["nvml_samples"] >= 1


def test_ctrl_c_kills_the_payload(tmp_path):
    script = tmp_path / "sleepy.py"
    script.write_text("import json, os, sys, time\n"
                      "print(json.dumps({'envdoctor_bench': 1, 'event': 'info', 'pid': os.getpid()}), flush=True)\n"
                      "time.sleep(600)\n")
    seen = {}

    def on_event(obj):
        seen.update(obj)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        stream_payload([sys.executable, str(script)], on_event, startup_timeout_s=30)
    pid = seen["pid"]
    import time as _time

    def gone() -> bool:  # no such process, or a zombie: killed and not yet reaped
        try:
            with open(f"/proc/{pid}/stat") as fh:
                return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    for _ in range(50):
        if gone():
            break
        _time.sleep(0.1)
    assert gone()


def test_load_pcie_gbs_becomes_a_bench_result(monkeypatch):
    import envdoctor.probes.pcie_load as pl
    from envdoctor.model.facts import Driver, Gpu
    from envdoctor.services import collect as app

    copies = [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": "0000:19:00", "gb_per_s": 52.1,
               "bytes": 1 << 30}]
    monkeypatch.setattr(pl, "probe_pcie_load", lambda *a, **k: pl.PcieLoad(
        ProbeStatus.OK, "1 GPU link(s) sampled", {"0000:19:00": (5, 16)}, copies=copies, seconds=1.5))
    drv = Driver(status="ok", gpus=[Gpu(index=0, name="NVIDIA H100 80GB HBM3", pci_bus_id="00000000:19:00.0")])
    drv2, run, results = app._load_pcie(drv, [], app.CollectOptions(pythons=["/venv/bin/python"], load_pcie=True),
                                        None, {})
    (r,) = results
    assert (r.name, r.device, r.value, r.unit) == ("pcie_load", "cuda:0", 52.1, "GB/s")
    assert r.params["pci_bus_id"] == "0000:19:00" and drv2.gpus[0].pcie_gen_under_load == 5


def test_check_bench_with_facts_is_a_usage_error(tmp_path):
    snap = tmp_path / "snap.json"
    snap.write_text(h100().to_json())
    p = _cli("check", "--facts", str(snap), "--bench")
    assert p.returncode == 2 and "--bench" in p.stderr


@pytest.mark.gpu
def test_gpu_sustained_samples_clocks_over_time():
    python = os.environ.get("ENVDOCTOR_TEST_CUDA_VENV")
    if not python or not os.path.exists("/dev/nvidiactl"):
        pytest.skip("needs an NVIDIA GPU and ENVDOCTOR_TEST_CUDA_VENV")
    p = _cli("bench", "--python", python, "--sustain", "5", "sustained", "--format", "json", timeout=300)
    assert p.returncode in (0, 1), p.stderr
    results = [r for r in json.loads(p.stdout)["facts"]["bench"]["results"] if r["name"] == "sustained"]
    assert results and all(r["status"] == "ok" for r in results)
    for r in results:
        assert len(r["samples"]) >= 3 and all("t_s" in s and "tflops" in s for s in r["samples"])
        assert "throttle_onset_s" in r["params"] and "sm_clock_min_mhz" in r["params"]


# (every module of the payload folder, bench.py and bench_run.py included, is parsed as Python 3.8 and held to
# stdlib-only imports by tests/unit/probes/test_payload.py::test_every_payload_module_is_python38_and_stdlib_only)


def test_published_numbers_snapshot_judged_end_to_end():
    facts = Facts.from_json((FIXTURES / "snapshots/h100-bench-published.json").read_text())
    results = run_checks(facts, load_compat(), select(all_checks(), ["bench.*"]))
    codes = sorted(f.code for r in results for f in r.findings)
    assert codes == ["bench.disk/below-expected", "bench.host-copy/below-expected", "bench.matmul/below-expected",
                     "bench.sustained/straggler", "bench.sustained/throttled"]
    mm = next(f for r in results for f in r.findings if f.code == "bench.matmul/below-expected")
    assert "cuda:0" in mm.summary and "SW Thermal Slowdown" in mm.summary  # cuda:1 at 780 passes
    assert any(e.path.endswith("params.throttle_reasons_seen") for e in mm.evidence)


def test_bench_checks_do_no_io():
    compat = load_compat()
    facts = Facts.from_json((FIXTURES / "snapshots/h100-bench-published.json").read_text())
    audit.SEEN.clear()
    with audit.forbidden():
        results = run_checks(facts, compat, select(all_checks(), ["bench.*"]))
    assert all(r.status != CheckStatus.ERRORED for r in results), [(r.id, r.reason) for r in results]
    assert not audit.SEEN, audit.SEEN




def test_sampler_keeps_every_clock_event_bit_the_probe_keeps():
    # the sampler had its own copy of the bit table and dropped bits the probe keeps (0x200, 0x400); now both
    # read through probes/nvml.py: the same stand-in GPU gives the same names to the probe and to the sampler
    import time

    from envdoctor.bench.sampler import GpuSampler
    from envdoctor.probes.nvml import decode_reasons, probe_nvml
    from tests.fakes.nvml_lib import FakeNvmlLib, h100_sxm, installed

    for mask in (0x4 | 0x200, 0x1FF | 0x400 | 0x8000, 0x0):
        lib = FakeNvmlLib([h100_sxm(0, nvmlDeviceGetCurrentClocksEventReasons=mask)])
        with installed(lib) as nv:
            probed = probe_nvml(nv).gpus[0].throttle_reasons
            sampler = GpuSampler(nv, interval_s=0.01)
            sampler.start()
            for _ in range(500):
                if sampler.samples.get("0000:18:00"):
                    break
                time.sleep(0.01)
            sampler.stop()
        sampled = sampler.samples["0000:18:00"][0]["throttle_reasons"]
        assert sampled == probed == decode_reasons(mask), (hex(mask), sampled, probed)
    assert "unknown_0x400" in decode_reasons(0x400) and len(decode_reasons(0x1FF | 0x400 | 0x8000)) == 11
