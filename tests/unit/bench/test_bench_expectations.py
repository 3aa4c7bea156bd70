"""compat_data/bench.json expectations: every row cited and judged the way the bench judges a result."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

from envdoctor.bench.expect import disk_kind, expect
from envdoctor.checks import all_checks, run_checks, select
from envdoctor.compat import load_compat
from envdoctor.compat.bench import GPU_KERNELS
from envdoctor.model.facts import Bench, BenchResult, DataPath, Facts, ProbeStatus, Storage
from tests.paths import FIXTURES, REPO
from tests.unit.checks.test_bench_sustained import _sustained, _sustained_codes

COMPAT = load_compat()
TABLE = COMPAT.bench
DOC = json.loads((REPO / "compat_data/bench.json").read_text())
# the GPUs issue 22 names, as a user types them, and the kernels each must have (fp8: compute capability >= 8.9)
NAMED = ["H100 SXM", "H100 PCIe", "H100 NVL", "H200", "H200 NVL", "A100-SXM4-80GB", "A100 PCIe 40GB", "L40S",
         "L4", "A10G", "RTX 4090", "RTX 5090", "V100", "T4", "GH200", "B200", "GB200",
         # filled in the second round: current consumer cards and the Blackwell Ultra parts
         "RTX 4080", "RTX 4070", "RTX 4060 Ti", "RTX 4090 D", "RTX 5080", "RTX 5070", "B300", "GB300"]


def h100() -> Facts:
    return Facts.from_json((FIXTURES / "snapshots/h100-sxm-x8-healthy.json").read_text())


FACTS = h100()


def _on(gpu_name: str, result: BenchResult, **gpu_changes) -> Facts:
    drv = FACTS.driver
    g = dataclasses.replace(drv.gpus[0], name=gpu_name, **gpu_changes)
    return dataclasses.replace(FACTS, driver=dataclasses.replace(drv, gpus=[g] + drv.gpus[1:]),
                               bench=Bench(status=ProbeStatus.OK, results=[result]))


GPUS = {r["name"]: r for r in json.loads((REPO / "compat_data/gpus.json").read_text())["rows"]}


def _nvml_name(row_name: str) -> str:
    for n in (GPUS[row_name].get("aliases") or []) + [row_name]:
        if COMPAT.gpu(n) is not None and COMPAT.gpu(n).name == row_name:
            return n
    raise AssertionError(f"no name resolves to {row_name}")


def _result(kernel: str, value: float, name: str) -> BenchResult:
    unit = "GB/s" if kernel == "membw_device" else "TFLOP/s"
    return BenchResult(kernel, ProbeStatus.OK, device="cuda:0", value=value, unit=unit,
                       params={"pci_bus_id": "0000:18:00", "gpu_name": name, "shape": [8192, 8192, 8192]})


def test_every_row_has_a_source_a_method_and_a_confidence():
    for table in ("rows", "links", "topologies"):
        for r in DOC[table]:
            assert r["source"] and len(r["source"]) <= 2, r
            assert r["method"].strip() and r["confidence"] in ("high", "medium", "low"), r
            assert not r["derived"] or r["basis"].strip(), r
    assert len(TABLE.gpu_rows) == len(DOC["rows"]) and len(DOC["rows"]) > 150


@pytest.mark.parametrize("row", TABLE.gpu_rows, ids=lambda r: f"{r.key}:{r.kernel}")
def test_a_healthy_result_at_the_achievable_figure_passes_and_60_percent_fails(row):
    name = _nvml_name(row.key)
    for value, verdict in ((row.expected, "ok"), (row.expected * 1.2, "ok"), (row.expected * 0.6, "error"),
                           (row.expected * 0.3, "error")):
        r = _result(row.kernel, value, name)
        e = expect(_on(name, r), COMPAT, r)
        assert e.verdict == verdict, (row.key, row.kernel, value, e)
        assert e.source == row.source and e.expected == pytest.approx(row.expected, abs=0.01)


@pytest.mark.parametrize("asked", NAMED)
def test_matrix_bench_names_every_kernel_of_the_named_gpus(asked):
    from envdoctor.services.matrix_bench import bench_expectations

    out = bench_expectations(COMPAT, asked)
    spec = COMPAT.gpu(out["gpu"])
    cc = tuple(int(x) for x in spec.compute_capability.split("."))
    want = [k for k in GPU_KERNELS if not (k == "matmul_fp8" and cc < (8, 9))
            and not (k in ("matmul_bf16", "matmul_tf32") and cc < (8, 0))]
    have = {k["name"] for k in out["kernels"]}
    gaps = {k["name"] for k in out["no_reference"] if TABLE.gap(spec.name, k["name"])}
    for k in want:
        assert k in have or k in gaps, (asked, k)  # an expectation, or a gap saying why there is none
    for k in out["kernels"]:
        assert k["sources"] and k["method"] and k["confidence"] and k["error_below"] < k["warning_below"]


def test_cli_matrix_bench_json_and_unknown_gpu():
    run = [sys.executable, "-m", "envdoctor", "matrix", "bench", "--gpu", "H100", "--format", "json"]
    proc = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["gpu"] == "H100 SXM5 80GB" and "H100 PCIe 80GB" in doc["other_models"]
    bf16 = next(k for k in doc["kernels"] if k["name"] == "matmul_bf16")
    assert set(bf16) >= {"name", "unit", "expected", "warning_below", "error_below", "method", "sources", "confidence"}
    assert bf16["unit"] == "TFLOP/s" and bf16["error_below"] == pytest.approx(0.6 * bf16["expected"], abs=0.01)
    bad = subprocess.run(run[:5] + ["--gpu", "Imaginary 9000"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "not in the matrix" in bad.stderr


def test_a_healthy_h200_at_the_square_shape_fp8_figure_passes():
    # Azure ND H200 v5 measured 1300.6 at 8192^3 (a square the payload runs); the row is its 16384^3 figure
    r = _result("matmul_fp8", 1300.6, "NVIDIA H200")
    e = expect(_on("NVIDIA H200", r), COMPAT, r)
    assert e.verdict == "ok" and e.expected == 1366.3


def test_a_gh200_host_copy_at_pcie_speed_fails():
    r = BenchResult("h2d_pinned", ProbeStatus.OK, device="cuda:0", value=52.0, unit="GB/s",
                    params={"pci_bus_id": "0000:18:00", "gpu_name": "NVIDIA GH200 480GB"})
    facts = _on("NVIDIA GH200 480GB", r, pcie_gen_max=5, pcie_width_max=16)
    e = expect(facts, COMPAT, r)
    assert e.verdict == "error" and "C2C" in e.basis
    (res,) = run_checks(facts, COMPAT, select(all_checks(), ["bench.host-copy"]))
    assert [f.severity for f in res.findings] == ["error"]
    ok = dataclasses.replace(r, value=340.0)
    assert expect(_on("NVIDIA GH200 480GB", ok), COMPAT, ok).verdict == "ok"


def _disk(path: DataPath, value: float):
    r = BenchResult("disk_seq_read", ProbeStatus.OK, device=path.path, value=value, unit="MB/s",
                    params={"path": path.path, "direct": True})
    facts = dataclasses.replace(FACTS, storage=Storage(status=ProbeStatus.OK, paths=[path]),
                                bench=Bench(status=ProbeStatus.OK, results=[r]))
    return facts, expect(facts, COMPAT, r)


def test_a_virtio_disk_is_not_called_an_hdd():
    p = DataPath("/data", status=ProbeStatus.OK, kind="local", fstype="ext4", block_device="vda", rotational=True,
                 transport="virtio")
    assert disk_kind(p) is None
    facts, e = _disk(p, 150.0)
    assert e.verdict == "no reference" and "unknown kind" in e.basis and "virtual" in e.basis
    (res,) = run_checks(facts, COMPAT, select(all_checks(), ["bench.disk"]))
    assert not res.findings  # measured, not blamed
    real = dataclasses.replace(p, block_device="sda", transport="sata")
    assert disk_kind(real) == "hdd"


def test_an_ebs_volume_is_judged_as_one_not_as_failing_local_nvme():
    p = DataPath("/data", status=ProbeStatus.OK, kind="local", fstype="xfs", block_device="nvme1n1",
                 rotational=False, transport="nvme", device_model="Amazon Elastic Block Store")
    assert disk_kind(p) == "network_block"
    _f, e = _disk(p, 130.0)  # a gp3 volume at its 125 MiB/s baseline: healthy
    assert e.verdict == "ok" and "network block volume" in e.basis
    local = dataclasses.replace(p, device_model="Samsung SSD 990 PRO 2TB")
    assert _disk(local, 130.0)[1].verdict == "warning"  # local NVMe that slow is below its kind
    assert _disk(p, 20.0)[1].verdict == "error"


def test_an_overridden_fp32_result_is_not_judged_as_fp32():
    r = _result("matmul_fp32", 300.0, "NVIDIA H100 80GB HBM3")
    r = dataclasses.replace(r, params={**r.params, "env_overrides": {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"}})
    facts = _on("NVIDIA H100 80GB HBM3", r)
    e = expect(facts, COMPAT, r)
    assert e.verdict == "no reference" and "tf32" in e.basis
    (res,) = run_checks(facts, COMPAT, select(all_checks(), ["bench.matmul"]))
    assert [f.code for f in res.findings] == ["bench.matmul/tf32-override"]


def _violations(**ns) -> dict:
    names = ("power", "thermal", "sync_boost", "board_limit", "low_utilization", "reliability")
    return {p: {"referenceTime": 1, "violationTime": ns.get(n, 0)} for p, n in enumerate(names)}


def test_the_sustained_run_watches_ecc_xid_replay_and_violation_counters():
    # the stand-in libnvidia-ml under the real pynvml: GPU 0 gets errors during the run, GPU 1 cannot register
    # Xid events (NOT_SUPPORTED) and has no ECC (a GeForce-like answer)
    import time

    from envdoctor.bench.sampler import GpuSampler, health_params
    from tests.fakes.nvml_lib import ERR, FakeNvmlLib, h100_sxm, installed

    g0 = h100_sxm(0, nvmlDeviceGetViolationStatus=_violations(power=5_000_000_000))
    g1 = h100_sxm(1, nvmlDeviceGetViolationStatus=_violations(), nvmlDeviceRegisterEvents=ERR("NOT_SUPPORTED"),
                  nvmlDeviceGetTotalEccErrors=ERR("NOT_SUPPORTED"))
    lib = FakeNvmlLib([g0, g1])
    with installed(lib) as nv:
        sampler = GpuSampler(nv, interval_s=0.01, watch_health=True)
        sampler.start()
        for _ in range(500):
            if len(sampler.samples.get("0000:28:00", [])) >= 1:
                break
            time.sleep(0.01)
        # during the load: a DBE, two SBEs, three replays, 40 ms of thermal and 9 s more of power violation
        g0.data["nvmlDeviceGetTotalEccErrors"] = {(0, 0): 2, (1, 0): 1, (0, 1): 5, (1, 1): 1}
        g0.data["nvmlDeviceGetPcieReplayCounter"] = 3
        g0.data["nvmlDeviceGetViolationStatus"] = _violations(power=14_000_000_000, thermal=40_000_000)
        lib.xid_event(0, 79)
        lib.xid_event(1, 13)  # not registered: never delivered
        sampler.stop()
    assert sampler.error is None and lib.event_sets == 0
    h0, h1 = sampler.health["0000:18:00"], sampler.health["0000:28:00"]
    assert h0["deltas"] == {"ecc_dbe_volatile": 1, "ecc_sbe_volatile": 2, "pcie_replays": 3,
                            "violation_board_limit_ns": 0, "violation_low_utilization_ns": 0,
                            "violation_power_ns": 9_000_000_000, "violation_reliability_ns": 0,
                            "violation_sync_boost_ns": 0, "violation_thermal_ns": 40_000_000}
    assert h0["xids"] == [79] and h0["xid_watched"]
    assert "ecc_dbe_volatile" not in h1["deltas"] and h1["xids"] == [] and not h1["xid_watched"]
    assert "xid_seen" not in health_params(h1)  # unwatched is not "none seen"

    flat = [{"t_s": i * 0.5, "tflops": 790.0, "sm_clock_mhz": 1755, "throttle_reasons": ["sw_power_cap"]}
            for i in range(40)]
    r = _sustained(flat, **health_params(h0))
    facts = dataclasses.replace(FACTS, bench=Bench(status=ProbeStatus.OK, results=[r]))
    (res,) = run_checks(facts, COMPAT, select(all_checks(), ["bench.sustained"]))
    got = {(f.code, f.severity, f.category): [e.path.rsplit(".", 1)[-1] for e in f.evidence] for f in res.findings}
    assert got == {
        ("bench.sustained/hardware-errors", "error", "GPU_MEMORY_ERRORS"): ["ecc_dbe_volatile"],
        ("bench.sustained/corrected-errors", "warning", "GPU_MEMORY_ERRORS"): ["ecc_sbe_volatile"],
        ("bench.sustained/pcie-replays", "warning", "PCIE_LINK_DEGRADED"): ["pcie_replays"],
        ("bench.sustained/clock-violations", "warning", "GPU_THROTTLED"): ["violation_thermal_ns"],
        ("bench.sustained/hardware-errors", "error", "GPU_XID_ERRORS"): ["xid_seen"],
    }
    thermal = next(f for f in res.findings if f.code.endswith("clock-violations"))
    assert "+40 ms" in thermal.summary and thermal.evidence[0].value == 40_000_000
    # the power-cap violation time alone (a healthy H100 at its default limit) is no finding
    calm = _sustained(flat, health_counters={"violation_power_ns": 9_000_000_000, "ecc_dbe_volatile": 0},
                      xid_seen=[])
    assert _sustained_codes(calm) == []


SUSTAIN_FAKE = r'''
import json, sys, time
plan = json.loads(sys.argv[sys.argv.index("--plan") + 1])
def emit(**o):
    o["envdoctor_bench"] = 1
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
emit(event="info", torch="fake", devices=[{"device": "cuda:0", "pci_bus_id": "0000:18:00"}])
for item in plan:
    t0 = time.monotonic()
    emit(event="start", name=item["name"], device="cuda:0", budget_s=item["budget_s"], t=t0)
    samples = []
    for i in range(8):
        time.sleep(0.1)
        samples.append({"t": time.monotonic(), "tflops": 790.0})
    emit(event="result", result={"name": item["name"], "device": "cuda:0", "status": "ok", "value": 790.0,
                                 "unit": "TFLOP/s", "samples": samples,
                                 "params": {"pci_bus_id": "0000:18:00", "dtype": "bfloat16"}})
emit(event="done")
'''


def test_bench_sustain_reports_counters_that_grew_during_the_run(tmp_path):
    # the whole path: run_bench -> the sampler's health watch -> the result's params -> the check's finding
    import ctypes

    from envdoctor.bench.run import BenchOptions, run_bench
    from envdoctor.model.facts import Driver, Gpu
    from tests.fakes.nvml_lib import FakeNvmlLib, h100_sxm, installed

    reads = {"n": 0}

    def ecc(gpu, args):  # every read of the volatile uncorrected count finds one more error
        err_type, counter = (getattr(a, "value", a) for a in args[1:3])
        n = 0
        if (err_type, counter) == (1, 0):
            reads["n"] += 1
            n = reads["n"]
        ctypes.cast(args[3], ctypes.POINTER(ctypes.c_ulonglong)).contents.value = n
        return 0

    script = tmp_path / "sustain_fake.py"
    script.write_text(SUSTAIN_FAKE)
    lib = FakeNvmlLib([h100_sxm(0, nvmlDeviceGetTotalEccErrors=ecc)])
    driver = Driver(status=ProbeStatus.OK, gpus=[Gpu(index=0, name="NVIDIA H100 80GB HBM3",
                                                     pci_bus_id="00000000:18:00.0")])
    with installed(lib) as nvml:
        bench = run_bench(BenchOptions(python=sys.executable, names=["sustained"], device="cuda", sustain_s=1.0),
                          driver, nvml=nvml, payload=script)
    (r,) = [r for r in bench.results if r.name == "sustained"]
    assert r.params["health_counters"]["ecc_dbe_volatile"] >= 1, r.params
    assert r.params["health_counters"]["ecc_sbe_volatile"] == 0 and r.params["xid_seen"] == []
    facts = dataclasses.replace(FACTS, bench=Bench(status=ProbeStatus.OK, results=[r]))
    (res,) = run_checks(facts, COMPAT, select(all_checks(), ["bench.sustained"]))
    assert [f.code for f in res.findings] == ["bench.sustained/hardware-errors"]


def test_the_health_watch_without_nvml_gives_nothing_and_says_why():
    from envdoctor.probes.nvml import HealthWatch
    from tests.fakes.nvml_lib import FakeNvmlLib, h100_sxm, installed

    with installed(FakeNvmlLib([h100_sxm(0)], init_error="DRIVER_NOT_LOADED")) as nv:
        w = HealthWatch(nv)
        w.start()
        assert w.stop() == {} and "DRIVER_NOT_LOADED" in w.error


@pytest.mark.slow
def test_payload_counts_corrupted_elements_of_a_product(cpu_venv):
    code = (
        f"import sys; sys.path.insert(0, {str(REPO / 'envdoctor')!r})\n"
        "import torch, _payload.bench as p\n"
        "a = torch.randn(64, 64); ref = a @ a; c = ref.clone()\n"
        "assert p.count_faulty(torch, c, ref) == 0\n"
        "c[3, 4] += 1.0; c[10, 10] = float('nan')\n"
        "print(p.count_faulty(torch, c, ref), p._parse_cpulist('0-3,8,10-11'))\n"
    )
    proc = subprocess.run([cpu_venv.python, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == "2 [0, 1, 2, 3, 8, 10, 11]"


@pytest.mark.slow
def test_payload_fp8_matmul_asks_for_fast_accumulation_as_its_expectations_were_measured(cpu_venv):
    # torch's CPU _scaled_mm takes the same arguments: the call the payload makes on a GPU is accepted, fast
    # accumulation included (Azure's cuBLASLt fp8 figures set CUBLASLT_MATMUL_DESC_FAST_ACCUM), and the CPU
    # kernel run skips fp8 with its reason
    code = (
        f"import sys; sys.path.insert(0, {str(REPO / 'envdoctor')!r})\n"
        "import torch, _payload.bench as p\n"
        "a = torch.randn(32, 64).to(torch.float8_e4m3fn); b = torch.randn(16, 64).to(torch.float8_e4m3fn).t()\n"
        "one = torch.ones((), dtype=torch.float32); c = torch.empty(32, 16, dtype=torch.bfloat16)\n"
        "r = p._scaled_mm(torch, a, b, one, c)\n"
        "ctx = p.Ctx(torch, None, 0.5)\n"
        "s = p.k_matmul(ctx, 'matmul_fp8', torch.device('cpu'), 0.0)\n"
        "print(p.FP8_FAST_ACCUM, tuple(r.shape), r.dtype, s['status'], s['reason'])\n"
    )
    proc = subprocess.run([cpu_venv.python, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("True (32, 16) torch.bfloat16 skipped fp8 matmul (torch._scaled_mm) runs on "
                                   "NVIDIA GPUs only")


def test_gpu_bench_peers_skips_with_a_reason_without_a_gpu(tmp_path):
    import os
    import shutil

    bin_dir = tmp_path / "bin"  # the tools the scripts use, but no nvidia-smi
    bin_dir.mkdir()
    for tool in ("dirname", "timeout", "bash"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    env = dict(os.environ, PATH=str(bin_dir))
    for argv in ([sys.executable, str(REPO / "scripts/gpu_bench_peers.py"), "--python", sys.executable,
                  "--out", str(tmp_path / "out")],
                 ["/bin/bash", str(REPO / "scripts/gpu_bench_peers.sh"), str(tmp_path / "out")]):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=REPO,
                              env=dict(env, ENVDOCTOR_TEST_CUDA_VENV=sys.executable, PYTHON=sys.executable))
        assert proc.returncode == 0, proc.stderr
        assert "skipped: no nvidia-smi on PATH" in proc.stdout
        assert not (tmp_path / "out.tar.gz").exists()
    # the short form scripts/gpu_check.sh runs (BUDGET_S, no --thorough run); a budget it cannot keep is refused
    proc = subprocess.run(["/bin/bash", str(REPO / "scripts/gpu_bench_peers.sh"), str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=60, cwd=REPO,
                          env=dict(env, ENVDOCTOR_TEST_CUDA_VENV=sys.executable, PYTHON=sys.executable, BUDGET_S="90"))
    assert proc.returncode == 0 and "skipped: no nvidia-smi on PATH" in proc.stdout, proc.stderr
    proc = subprocess.run([sys.executable, str(REPO / "scripts/gpu_bench_peers.py"), "--python", sys.executable,
                           "--budget", "5"], capture_output=True, text=True, timeout=60, cwd=REPO, env=env)
    assert proc.returncode == 2 and "--budget 5" in proc.stderr


def test_the_storage_check_names_a_network_volume_and_no_hdd_for_virtio():
    ebs = DataPath("/data", status=ProbeStatus.OK, exists=True, kind="local", fstype="xfs", mount_point="/data",
                   block_device="nvme1n1", rotational=False, transport="nvme",
                   device_model="Amazon Elastic Block Store", size_bytes=1 << 40, free_bytes=1 << 39)
    for path, want in ((ebs, "storage.data-path/network-volume"),
                       (dataclasses.replace(ebs, block_device="vda", transport="virtio", rotational=True,
                                            device_model=None), None)):
        facts = dataclasses.replace(FACTS, storage=Storage(status=ProbeStatus.OK, paths=[path]))
        (res,) = run_checks(facts, COMPAT, select(all_checks(), ["storage.data-path"]))
        codes = [f.code for f in res.findings]
        assert "storage.data-path/rotational" not in codes
        if want:
            assert want in codes


def test_a_kernel_the_gpu_cannot_run_is_not_applicable_not_unmeasured():
    # an A10G (8.6) has no fp8 tensor cores: the bench skips fp8 there, and matrix bench says so (it said "not
    # applicable to this GPU, or not measured publicly"); an H100 (9.0) has a figure
    from envdoctor.services.matrix_bench import bench_expectations

    a10g = {k["name"]: k["why"] for k in bench_expectations(COMPAT, "A10G")["no_reference"]}
    assert a10g["matmul_fp8"].startswith("not applicable") and "8.9" in a10g["matmul_fp8"]
    h100 = bench_expectations(COMPAT, "H100 SXM")
    assert "matmul_fp8" in {k["name"] for k in h100["kernels"]}


def test_measured_device_memory_rows_are_memcpy_copies_as_membw_device_runs_not_copy_kernels():
    # membw_device is torch's same-device copy_ (cudaMemcpyAsync), counted read + write: a measured row must come
    # from the same copy (NVIDIA DCGM's dcgmproftester -t 1005 cuMemcpy, or p2pBandwidthLatencyTest's diagonal),
    # never from a copy kernel (BabelStream's Copy reads 10-29% higher on the same GPU)
    memcpy = {"dcgm-skus", "cuda-samples-p2p", "nccl-1264", "nccl-1127", "nccl-814", "aikitoria-9", "ginkgo-164"}
    for r in DOC["rows"]:
        if r["kernel"] == "membw_device" and not r["derived"]:
            assert set(r["source"]) & memcpy and "BabelStream" not in r["method"], (r["gpu"], r["method"])
    by_gpu = {r["gpu"]: r for r in DOC["rows"] if r["kernel"] == "membw_device"}
    # the three the issue named, at DCGM's measured figures (nvvs/diag-skus.yaml.in)
    assert [by_gpu[g]["expected"] for g in ("H100 SXM5 80GB", "H200 SXM 141GB", "B200")] == [2540.0, 3110.0, 5430.0]
