"""The P2P expectation knows whether peer access exists: a GeForce pair without P2P (by design over PCIe) copies
through host memory and is measured, never called slow against the link's peer figure.

Stand-in: the real dual RTX 2080 capture (tests/fixtures/nvidia-smi-xml/dual-rtx-2080_590.44.01.xml: two GeForce
cards on PCIe Gen3 x16) with the PCIe path between them as `nvidia-smi topo -m` prints it."""

from __future__ import annotations

from envdoctor.bench.expect import expect
from envdoctor.checks import all_checks, run_checks
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
