"""bench's checks: each measured figure against what its GPU, link or disk achieves in public measurements
(compat_data/bench.json), passing, failing (the whole finding) and skipped without a result; on the healthy 8x H100
SXM snapshot.

bench.gpu-to-gpu knows whether peer access exists: a GeForce pair without P2P (by design over PCIe) copies through
host memory and is measured, never called slow against the link's peer figure. Stand-in: the real dual RTX 2080
capture (tests/fixtures/nvidia-smi-xml/dual-rtx-2080_590.44.01.xml: two GeForce cards on PCIe Gen3 x16) with the PCIe
path between them as `nvidia-smi topo -m` prints it."""

from __future__ import annotations

import dataclasses

from envdoctor.bench.expect import expect
from envdoctor.checks import all_checks, run_checks, select
from envdoctor.compat import load_compat
from envdoctor.model.facts import Bench, BenchResult, Facts, ProbeStatus, Topology
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.parsers.nvidia_smi_xml import parse_nvidia_smi_xml
from tests.paths import FIXTURES

COMPAT = load_compat()
DRIVER = parse_nvidia_smi_xml((FIXTURES / "nvidia-smi-xml/dual-rtx-2080_590.44.01.xml").read_text())
GPU_TO_GPU = [c for c in all_checks() if c.id == "bench.gpu-to-gpu"]


def _facts(access, gbs: float = 6.1, p2p_matrix=None) -> Facts:
    params = {"src": "cuda:0", "dst": "cuda:1", "src_pci_bus_id": DRIVER.gpus[0].pci_bus_id,
              "dst_pci_bus_id": DRIVER.gpus[1].pci_bus_id}
    if access is not None:
        params["p2p_access"] = access
    r = BenchResult("p2p", ProbeStatus.OK, device="cuda:0->cuda:1", value=gbs, unit="GB/s", params=params)
    return Facts(driver=DRIVER, topology=Topology(status=ProbeStatus.OK, gpu_matrix=[["X", "PHB"], ["PHB", "X"]],
                                                  p2p_supported=p2p_matrix),
                 bench=Bench(status=ProbeStatus.OK, results=[r]))


def test_a_geforce_pair_without_peer_access_is_measured_not_flagged():
    f = _facts(False)
    e = expect(f, COMPAT, f.bench.results[0])
    assert e.expected is None and e.verdict == "no reference" and "no peer access" in e.basis
    (res,) = run_checks(f, COMPAT, GPU_TO_GPU)
    assert res.status == CheckStatus.SKIPPED and res.findings == [] and "no peer access" in res.reason


def test_the_topology_matrix_says_so_when_the_run_did_not():
    f = _facts(None, p2p_matrix=[[None, False], [False, None]])
    assert expect(f, COMPAT, f.bench.results[0]).verdict == "no reference"


def test_with_peer_access_the_same_figure_is_judged_against_the_gen3_link():
    f = _facts(True)
    e = expect(f, COMPAT, f.bench.results[0])
    assert e.expected == 12.0 and e.verdict == "warning"  # 51% of the Gen3 x16 figure
    (res,) = run_checks(f, COMPAT, GPU_TO_GPU)
    (finding,) = res.findings
    assert (finding.code, finding.category, finding.severity) == (
        "bench.gpu-to-gpu/p2p-below-expected", "PERF_BELOW_EXPECTED", Severity.WARNING)
    assert [(e.path, e.value) for e in finding.evidence][0] == ("bench.results[0].value", 6.1)
    assert run_checks(_facts(True, gbs=12.0), COMPAT, GPU_TO_GPU)[0].status == CheckStatus.PASSED
    no_result = Facts(driver=DRIVER, bench=Bench(status=ProbeStatus.OK, results=[]))
    assert run_checks(no_result, COMPAT, GPU_TO_GPU)[0].status == CheckStatus.SKIPPED


# --------------------------------------------------------------------------- all-reduce against the path it takes

A5000 = parse_nvidia_smi_xml((FIXTURES / "nvidia-smi-xml/dual-rtx-a5000_590.44.01.xml").read_text())


def _allreduce(driver, cell: str, busbw: float, **facts_kw) -> Facts:
    r = BenchResult("allreduce", ProbeStatus.OK, device="cuda", value=busbw, unit="GB/s",
                    params={"pci_bus_ids": [g.pci_bus_id for g in driver.gpus]})
    return Facts(driver=facts_kw.pop("drv", driver),
                 topology=Topology(status=ProbeStatus.OK, gpu_matrix=[["X", cell], [cell, "X"]]),
                 bench=Bench(status=ProbeStatus.OK, results=[r]), **facts_kw)


def test_an_allreduce_without_peer_access_goes_through_host_memory_and_is_not_judged_against_a_link():
    # issue 39: a healthy GeForce box's all-reduce (no P2P: NCCL's SHM transport) was judged against the PCIe peer
    # figure and called an ERROR. NVML's P2P status says it; so does CUDA in the inspected interpreter.
    from envdoctor.domain.pci import bus_key
    from envdoctor.model.facts import P2pStatus, ProbeStatus, PythonEnv, TorchDevice, TorchInfo

    nvml = dataclasses.replace(DRIVER, p2p=[P2pStatus(0, 1, "chipset_not_supported"),
                                            P2pStatus(1, 0, "chipset_not_supported")])
    f = _allreduce(DRIVER, "PIX", 3.0, drv=nvml)
    e = expect(f, COMPAT, f.bench.results[0])
    assert e.verdict == "no reference" and "no peer access between GPU0-GPU1 (NVML" in e.basis
    assert "host memory" in e.basis
    (res,) = run_checks(f, COMPAT, GPU_TO_GPU)
    assert res.status == CheckStatus.SKIPPED and res.findings == []
    devs = [TorchDevice(i, g.name, "7.5", pci_bus_id=bus_key(g.pci_bus_id), peer_access=[])
            for i, g in enumerate(DRIVER.gpus)]
    cuda = _allreduce(DRIVER, "PIX", 3.0, pythons=[PythonEnv(status=ProbeStatus.OK, torch=TorchInfo(
        version="2.5.1", devices=devs))])
    assert "(CUDA (torch.cuda.can_device_access_peer))" in expect(cuda, COMPAT, cuda.bench.results[0]).basis
    # GeForce boards with peer access unknown (an older snapshot): not judged either, and said why
    unknown = _allreduce(DRIVER, "PIX", 3.0)
    assert "peer access unknown (not probed) between GeForce" in expect(unknown, COMPAT, unknown.bench.results[0]).basis


def test_an_allreduce_under_a_pcie_switch_with_peer_access_is_judged_and_across_the_cpu_it_is_not():
    from envdoctor.model.facts import P2pStatus

    ok = dataclasses.replace(A5000, p2p=[P2pStatus(0, 1, "ok"), P2pStatus(1, 0, "ok")])
    slow = _allreduce(A5000, "PXB", 10.0, drv=ok)
    e = expect(slow, COMPAT, slow.bench.results[0])
    assert (e.expected, e.verdict) == (21.8, "error")  # the Gen4 x16 peer figure (nvbandwidth-50); 46%
    (res,) = run_checks(slow, COMPAT, GPU_TO_GPU)
    (f,) = res.findings
    assert (f.code, f.severity) == ("bench.gpu-to-gpu/allreduce-below-expected", Severity.ERROR)
    # across the CPU NCCL does not use P2P by default (paths.cc ncclTopoCheckP2p: PXB): through host memory
    far = _allreduce(A5000, "SYS", 10.0, drv=ok)
    e = expect(far, COMPAT, far.bench.results[0])
    assert e.verdict == "no reference" and "across CPU sockets (SYS)" in e.basis


# --------------------------------------------------------------------------- one GPU, the host link, the disk

H100 = Facts.from_json((FIXTURES / "snapshots/h100-sxm-x8-healthy.json").read_text())
BUS = H100.driver.gpus[0].pci_bus_id


def _judged(check_id: str, *results: BenchResult):
    facts = dataclasses.replace(H100, bench=Bench(status=ProbeStatus.OK, results=list(results)))
    (res,) = run_checks(facts, COMPAT, select(all_checks(), [check_id]))
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


def _matmul(value: float) -> BenchResult:
    return BenchResult("matmul_bf16", ProbeStatus.OK, device="cuda:0", value=value, unit="TFLOP/s",
                       params={"pci_bus_id": BUS, "dtype": "bfloat16", "shape": [8192, 8192, 8192]})


def _gbs(kernel: str, value: float) -> BenchResult:
    return BenchResult(kernel, ProbeStatus.OK, device="cuda:0", value=value, unit="GB/s", params={"pci_bus_id": BUS})


def _disk(value: float) -> BenchResult:
    return BenchResult("disk_seq_read", ProbeStatus.OK, device="/data", value=value, unit="MB/s",
                       params={"path": "/data", "direct": True})


def test_matmul_below_the_h100_figure_fails_whole_at_it_passes_and_without_it_skips():
    res = _judged("bench.matmul", _matmul(300.0))
    (f,) = res.findings
    assert (res.status, f.code, f.category, f.severity) == (CheckStatus.FAILED, "bench.matmul/below-expected",
                                                            "PERF_BELOW_EXPECTED", Severity.ERROR)
    assert f.summary.startswith("matmul_bf16 on cuda:0 (NVIDIA H100 80GB HBM3): 300 TFLOP/s, 38% of the 783.7 "
                                "expected")
    assert [(e.path, e.value, e.expected) for e in f.evidence] == [("bench.results[0].value", 300.0,
                                                                    ">= 783.7 TFLOP/s")]
    assert _judged("bench.matmul", _matmul(790.0)).status == CheckStatus.PASSED
    skipped = _judged("bench.matmul", _gbs("membw_device", 3000.0))
    assert (skipped.status, skipped.reason) == (CheckStatus.SKIPPED, "no GPU matmul result")


def test_device_memory_bandwidth_below_the_figure_fails_whole_at_it_passes_and_without_it_skips():
    res = _judged("bench.membw", _gbs("membw_device", 1200.0))
    (f,) = res.findings
    assert (res.status, f.code, f.category, f.severity) == (CheckStatus.FAILED, "bench.membw/below-expected",
                                                            "PERF_BELOW_EXPECTED", Severity.ERROR)
    assert f.summary.startswith("membw_device on cuda:0 (NVIDIA H100 80GB HBM3): 1200 GB/s, 47% of the 2540")
    assert [(e.path, e.value, e.expected) for e in f.evidence] == [("bench.results[0].value", 1200.0, ">= 2540 GB/s")]
    assert _judged("bench.membw", _gbs("membw_device", 3000.0)).status == CheckStatus.PASSED
    skipped = _judged("bench.membw", _matmul(790.0))
    assert (skipped.status, skipped.reason) == (CheckStatus.SKIPPED, "no GPU device memory result")


def test_host_copy_below_the_gen5_link_fails_whole_at_it_passes_and_without_it_skips():
    res = _judged("bench.host-copy", _gbs("h2d_pinned", 12.0))
    (f,) = res.findings
    assert (res.status, f.code, f.category, f.severity) == (CheckStatus.FAILED, "bench.host-copy/below-expected",
                                                            "PERF_BELOW_EXPECTED", Severity.ERROR)
    assert f.summary.startswith("h2d_pinned on cuda:0: 12 GB/s, 24% of the 51 GB/s expected")
    assert [(e.path, e.value) for e in f.evidence] == [("bench.results[0].value", 12.0),
                                                       ("driver.gpus[0].pcie_width_max", 16)]
    assert _judged("bench.host-copy", _gbs("h2d_pinned", 50.0)).status == CheckStatus.PASSED
    skipped = _judged("bench.host-copy", _matmul(790.0))
    assert (skipped.status, skipped.reason) == (CheckStatus.SKIPPED, "no host<->device copy result")


def test_a_slow_local_nvme_fails_whole_a_fast_one_passes_and_without_a_disk_result_skips():
    res = _judged("bench.disk", _disk(300.0))
    (f,) = res.findings
    assert (res.status, f.code, f.category, f.severity) == (CheckStatus.FAILED, "bench.disk/below-expected",
                                                            "PERF_BELOW_EXPECTED", Severity.WARNING)
    assert f.summary.startswith("Sequential read under /data: 300 MB/s, below the 450 MB/s expected")
    assert [(e.path, e.value) for e in f.evidence] == [("bench.results[0].value", 300.0),
                                                       ("storage.paths[0].transport", "nvme")]
    assert _judged("bench.disk", _disk(6000.0)).status == CheckStatus.PASSED
    skipped = _judged("bench.disk", _matmul(790.0))
    assert (skipped.status, skipped.reason) == (CheckStatus.SKIPPED, "no disk result")


def test_a_slow_host_copy_in_a_vm_at_x8_does_not_blame_the_x8_the_platform_gives():
    # the T4 of an AWS VM (tests/fixtures/nvidia-smi-xml/tesla-t4: Pass-Through on the guest's bus 00, Gen3 x8 of
    # x16): x8 is what the platform gives, so the expectation is set at x8 and x8 under load is no cause
    t4 = parse_nvidia_smi_xml((FIXTURES / "nvidia-smi-xml/tesla-t4_515.105.01.xml").read_text())
    g = t4.gpus[0]
    r = BenchResult("h2d_pinned", ProbeStatus.OK, device="cuda:0", value=2.0, unit="GB/s",
                    params={"pci_bus_id": g.pci_bus_id, "pcie_gen_under_load": 3, "pcie_width_under_load": 8})
    f = Facts(driver=dataclasses.replace(t4, status=ProbeStatus.OK), bench=Bench(status=ProbeStatus.OK, results=[r]))
    e = expect(f, COMPAT, r)
    assert e.expected == 6.0 and "x8 (what the platform gives: a virtual machine" in e.basis
    (res,) = run_checks(f, COMPAT, [c for c in all_checks() if c.id == "bench.host-copy"])
    (x,) = res.findings
    assert "link trained" not in x.summary and "x8" not in x.summary.split("likely cause")[1]


def test_a_peer_copy_across_cpu_sockets_is_measured_not_judged_against_a_pcie_figure():
    f = _facts(True)
    f = dataclasses.replace(f, topology=dataclasses.replace(f.topology, gpu_matrix=[["X", "SYS"], ["SYS", "X"]]))
    e = expect(f, COMPAT, f.bench.results[0])
    assert e.verdict == "no reference" and "across CPU sockets" in e.basis
