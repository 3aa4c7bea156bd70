"""interconnect's checks: NVLink links, GPU-pair topology and P2P, the fabric manager, on real captures and the
healthy 8x H100 snapshot with one change each."""

from __future__ import annotations

import dataclasses

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import (
    Driver,
    Facts,
    Topology,
)
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.parsers.nvidia_smi_xml import parse_nvidia_smi_xml
from envdoctor.parsers.nvlink import parse_nvlink_status
from envdoctor.parsers.topo import parse_topo
from tests.unit.checks.health_facts import (
    finding,
    from_driver,
    healthy,
    one,
    replace_gpu,
    table_facts,
    text,
    with_gpus,
)


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _nv(rel: str):
    return parse_nvlink_status(text(rel))


def test_nvlink_inactive_v100(compat):
    links = _nv("nvlink/v100-sxm2-x8_nvlink-inactive.txt")
    base = table_facts("nvidia-smi-table/v100-sxm2-x8_460.32.03_inforom-corrupted.txt")
    f = with_gpus(base, [dataclasses.replace(g, nvlinks=links.get(g.index)) for g in base.driver.gpus])
    res = one(f, compat, "interconnect.nvlink")
    x = finding(res, "interconnect.nvlink/inactive")
    assert (x.category, x.severity) == ("INTERCONNECT", Severity.ERROR)
    assert "GPU 3 (Tesla V100-SXM2...): 2 of 6 NVLink links inactive (links 3, 5)" in x.summary
    assert [(e.path, e.value) for e in x.evidence] == [
        ("driver.gpus[3].nvlinks", "4 active of 6"), ("driver.gpus[4].nvlinks", "5 active of 6"),
        ("driver.gpus[5].nvlinks", "4 active of 6"), ("driver.gpus[6].nvlinks", "5 active of 6")]


def test_nvlink_all_links_inactive_a100_and_ok_sibling(compat):
    base = from_driver(parse_nvidia_smi_xml(text("nvidia-smi-xml/a100-sxm4-80gb_535.54.03.xml")))
    down = list(_nv("nvlink/a100-sxm4-80gb_gpu6_all-links-inactive.txt").values())[0]
    up = list(_nv("nvlink/a100-sxm4-80gb_gpu7_nvlink-ok.txt").values())[0]
    # the capture's GPUs run with MIG on: judge the links as they would be with MIG off
    assert base.driver.gpus[0].mig_mode_current is True
    whole = replace_gpu(base, 0, mig_mode_current=False)
    # the capture is one GPU of an HGX A100 board: on the board (its 6 NVSwitches seen) all links down is the fault
    on_board = dataclasses.replace(whole, driver=dataclasses.replace(whole.driver, nvswitch_count=6))
    bad = one(replace_gpu(on_board, 0, nvlinks=down), compat, "interconnect.nvlink")
    assert "all NVLink links inactive" in finding(bad, "interconnect.nvlink/inactive").summary
    # the same GPU alone (no NVSwitch, no peer, no fabric info: a 1-GPU VM) is told, not failed
    alone = one(replace_gpu(whole, 0, nvlinks=down), compat, "interconnect.nvlink")
    assert [(f.code, f.severity) for f in alone.findings] == [("interconnect.nvlink/not-configured", Severity.INFO)]
    assert one(replace_gpu(whole, 0, nvlinks=up), compat, "interconnect.nvlink").findings == []
    # with MIG on the same links are not an error (MIG instances do not use NVLink), but not hidden either
    mig = finding(one(replace_gpu(base, 0, nvlinks=down), compat, "interconnect.nvlink"), "interconnect.nvlink/mig")
    assert mig.severity == Severity.INFO and "MIG on" in mig.summary


def test_nvlink_fewer_links_than_model(compat):
    f = replace_gpu(healthy(), 6, nvlinks=healthy().driver.gpus[6].nvlinks[:12])
    x = finding(one(f, compat, "interconnect.nvlink"), "interconnect.nvlink/fewer-links")
    assert "12 NVLink links, the model has 18" in x.summary and "gpus.json" in x.evidence[0].source


def test_nvlink_pcie_part_without_nvlink_passes_and_skip(compat):
    l40s = _nv("nvlink/l40s_595.80_no-nvlink.txt")
    f = from_driver(Driver(gpus=[dataclasses.replace(healthy().driver.gpus[0], name="NVIDIA L40S",
                                                     nvlinks=list(l40s.values())[0] if l40s else [])]))
    assert one(f, compat, "interconnect.nvlink").findings == []
    assert one(replace_gpu(f, 0, nvlinks=None), compat, "interconnect.nvlink").status == CheckStatus.SKIPPED


def test_topology_pcie_box_without_nvlink_passes_but_sxm_names_fail(compat):
    topo = parse_topo(text("topo/rtx-6000-ada-x4_pcie-sys-node-pix_nics.txt"))
    n = len(topo.gpus)
    ada = [dataclasses.replace(healthy().driver.gpus[0], index=i, name="NVIDIA RTX 6000 Ada Generation")
           for i in range(n)]
    f = from_driver(Driver(gpus=ada), topology=Topology(status="ok", gpu_matrix=topo.matrix))
    assert one(f, compat, "interconnect.topology").findings == []
    sxm = with_gpus(f, [dataclasses.replace(g, name="NVIDIA H100 80GB HBM3") for g in ada])
    x = finding(one(sxm, compat, "interconnect.topology"), "interconnect.topology/pcie-path")
    assert (x.category, x.severity) == ("INTERCONNECT", Severity.WARNING) and "SYS" in x.summary
    assert ("topology.gpu_matrix[0][2]", "SYS") in [(e.path, e.value) for e in x.evidence] and len(x.evidence) == 6
    assert one(Facts(), compat, "interconnect.topology").status == CheckStatus.SKIPPED


def test_p2p_disabled(compat):
    f = healthy()
    p2p = [list(r) for r in f.topology.p2p_supported]
    p2p[0][1] = p2p[1][0] = False
    f = dataclasses.replace(f, topology=dataclasses.replace(f.topology, p2p_supported=p2p))
    x = finding(one(f, compat, "interconnect.topology"), "interconnect.topology/p2p-disabled")
    assert x.severity == Severity.WARNING and x.evidence[0].path == "topology.p2p_supported[0][1]"


def test_p2p_disabled_from_nvml_and_from_cuda_on_a_live_run(compat):
    # issue 39: nothing probed P2P, so p2p-disabled never fired on a live run; NVML's P2P status
    # (nvmlDeviceGetP2PStatus) and CUDA's answer in the inspected interpreter (can_device_access_peer) now say it
    from envdoctor.domain.pci import bus_key
    from envdoctor.model.facts import P2pStatus, ProbeStatus, PythonEnv, TorchDevice, TorchInfo

    f = healthy()
    f = dataclasses.replace(f, topology=dataclasses.replace(f.topology, p2p_supported=None))
    n = len(f.driver.gpus)
    pairs = [P2pStatus(a, b, "ok" if {a, b} != {0, 1} else "topology_not_supported")
             for a in range(n) for b in range(n) if a != b]
    nvml = dataclasses.replace(f, driver=dataclasses.replace(f.driver, p2p=pairs))
    x = finding(one(nvml, compat, "interconnect.topology"), "interconnect.topology/p2p-disabled")
    assert x.severity == Severity.WARNING and "GPU0-GPU1" in x.summary and "GPU0-GPU2" not in x.summary
    assert [(e.path, e.value, e.source) for e in x.evidence] == [
        ("driver.p2p[0].read", "topology_not_supported", "NVML nvmlDeviceGetP2PStatus (read)")]
    devs = [TorchDevice(i, g.name, "9.0", pci_bus_id=bus_key(g.pci_bus_id),
                        peer_access=[j for j in range(n) if j != i and {i, j} != {2, 3}])
            for i, g in enumerate(f.driver.gpus)]
    cuda = dataclasses.replace(f, pythons=[PythonEnv(status=ProbeStatus.OK, torch=TorchInfo(version="2.5.1",
                                                                                          devices=devs))])
    x = finding(one(cuda, compat, "interconnect.topology"), "interconnect.topology/p2p-disabled")
    assert "GPU2-GPU3" in x.summary and x.evidence[0].path == "pythons[0].torch.devices[2].peer_access"
    # every pair with peer access: no finding
    assert not [r for r in one(dataclasses.replace(f, driver=dataclasses.replace(
        f.driver, p2p=[P2pStatus(a, b, "ok") for a in range(n) for b in range(n) if a != b])), compat,
        "interconnect.topology").findings if r.code.endswith("p2p-disabled")]


def test_fabric_manager_not_running(compat):
    f = dataclasses.replace(healthy(), driver=dataclasses.replace(healthy().driver, fabric_manager_running=False))
    x = finding(one(f, compat, "interconnect.fabric-manager"), "interconnect.fabric-manager/not-running")
    assert (x.category, x.severity) == ("INTERCONNECT", Severity.ERROR)
    assert [(e.path, e.value) for e in x.evidence] == [("driver.nvswitch_count", 4),
                                                       ("driver.fabric_manager_running", False)]
    assert "sudo systemctl enable --now nvidia-fabricmanager" in x.fix.commands
    assert one(healthy(), compat, "interconnect.fabric-manager").findings == []
    unknown = dataclasses.replace(healthy(), driver=dataclasses.replace(healthy().driver, nvswitch_count=None))
    assert one(unknown, compat, "interconnect.fabric-manager").status == CheckStatus.SKIPPED


def test_nvlink_a100_x8_all_twelve_links_up(compat):
    links = _nv("nvlink/a100-sxm4-80gb-x8_nvlink-status.txt")
    base = from_driver(parse_nvidia_smi_xml(text("nvidia-smi-xml/a100-sxm4-80gb_535.54.03.xml")))
    g0 = base.driver.gpus[0]
    f = with_gpus(base, [dataclasses.replace(g0, index=i, nvlinks=lk) for i, lk in sorted(links.items())])
    assert len(f.driver.gpus) == 8 and all(len(g.nvlinks) == 12 for g in f.driver.gpus)
    res = one(f, compat, "interconnect.nvlink")
    assert res.status == CheckStatus.PASSED and res.findings == []
