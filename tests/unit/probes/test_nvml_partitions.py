"""One GPU of an HGX board in a VM or partition of its own, through the real pynvml wrappers over the stand-in
library: NVLink "not configured" is a note; all links down on a GPU that a fabric or NVSwitch claims is a fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.model.facts import Facts, Host
from envdoctor.model.findings import Severity
from envdoctor.probes.driver import probe_driver
from envdoctor.services.collect import judge
from tests.fakes.nvml_lib import FakeNvmlLib, fabric, installed, sxm_alone
from tests.fakes.runner import FakeRunner

pytest.importorskip("pynvml")

NO_SMI = FakeRunner({("nvidia-smi", "-q", "-x"): FakeRunner.NOT_FOUND})


def _judge(lib: FakeNvmlLib, root: Path):
    with installed(lib) as nv:
        d = probe_driver(NO_SMI, nvml=nv, root=str(root))
    return d, judge(Facts(driver=d, host=Host(status="ok", os="Linux"), collected_at="2026-12-01T00:00:00Z")).findings


def _nvswitches(root: Path, n: int = 4) -> Path:
    for i in range(n):
        (root / f"proc/driver/nvidia-nvswitch/devices/0000:0{i}:00.0").mkdir(parents=True)
    return root


def test_1x_h200_sxm_vm_gets_no_error_and_one_info(tmp_path):
    lib = FakeNvmlLib([sxm_alone("NVIDIA H200", 0x233510DE, 9, (9, 0))], driver="570.86.15")
    d, found = _judge(lib, tmp_path)
    g = d.gpus[0]
    assert len(g.nvlinks) == 18 and not any(lk.active for lk in g.nvlinks)
    assert g.fabric_state is None and d.nvswitch_count is None
    assert [f"{f.severity} {f.code}" for f in found if f.severity != Severity.INFO] == []
    nvlink = [f for f in found if f.code.startswith("interconnect.nvlink")]
    assert [(f.code, f.severity) for f in nvlink] == [("interconnect.nvlink/not-configured", Severity.INFO)]
    assert "NVLink is not configured for this VM/partition" in nvlink[0].summary


@pytest.mark.parametrize("name,device_id,arch,cc,links,extra,switches", [
    # Blackwell Ultra and Hopper parts the matrix counted no links for before; NVML says they are on a fabric
    ("NVIDIA B300 SXM6 AC", 0x310510DE, 10, (10, 3), 18, fabric(1), 0),
    ("NVIDIA H20", 0x232910DE, 9, (9, 0), 18, fabric(3), 0),
    # Ampere has no NVML fabric info: the NVSwitches the nvswitch driver lists say it
    ("NVIDIA A800-SXM4-80GB", 0x20F310DE, 7, (8, 0), 12, {}, 6),
])
def test_sxm_part_with_all_links_down_on_a_fabric_is_an_error(tmp_path, name, device_id, arch, cc, links, extra,
                                                              switches):
    root = _nvswitches(tmp_path, switches) if switches else tmp_path
    lib = FakeNvmlLib([sxm_alone(name, device_id, arch, cc, links, **extra)], driver="570.86.15")
    d, found = _judge(lib, root)
    errors = [f for f in found if f.code == "interconnect.nvlink/inactive"]
    assert len(errors) == 1 and errors[0].severity == Severity.ERROR, [f.code for f in found]
    assert "all NVLink links inactive" in errors[0].summary
    assert not [f for f in found if f.code in ("interconnect.nvlink/no-bridge", "interconnect.nvlink/not-configured")]


def test_the_same_b300_alone_is_not_configured_not_no_bridge(tmp_path):
    lib = FakeNvmlLib([sxm_alone("NVIDIA B300 SXM6 AC", 0x310510DE, 10, (10, 3))], driver="570.86.15")
    _, found = _judge(lib, tmp_path)
    assert [f.code for f in found if f.code.startswith("interconnect.nvlink")] == ["interconnect.nvlink/not-configured"]


def test_two_sxm_gpus_in_one_vm_with_all_links_down_is_an_error(tmp_path):
    gpus = [sxm_alone("NVIDIA H200", 0x233510DE, 9, (9, 0)) for _ in range(2)]
    gpus[1].data["nvmlDeviceGetPciInfo_v3"] = dict(gpus[1].data["nvmlDeviceGetPciInfo_v3"], busId="00000000:00:08.0")
    _, found = _judge(FakeNvmlLib(gpus, driver="570.86.15"), tmp_path)
    assert [f.severity for f in found if f.code == "interconnect.nvlink/inactive"] == [Severity.ERROR]


def test_a_pcie_board_without_bridge_is_still_no_bridge(tmp_path):
    from tests.fakes.nvml_lib import a100_pcie

    _, found = _judge(FakeNvmlLib([a100_pcie(0)]), tmp_path)
    assert [f.code for f in found if f.code.startswith("interconnect.nvlink")] == ["interconnect.nvlink/no-bridge"]


def _proc(root: Path, mounts: str, container: bool = False) -> Path:
    import os

    (root / "proc/1").mkdir(parents=True, exist_ok=True)
    (root / "proc/1/comm").write_text("systemd\n")
    (root / "proc/mounts").write_text(mounts)
    (root / "proc/self/ns").mkdir(parents=True, exist_ok=True)
    os.symlink("pid:[4026532291]" if container else "pid:[4026531836]", root / "proc/self/ns/pid")
    return root


@pytest.mark.parametrize("option,expect", [("hidepid=2", None), ("hidepid=invisible", None), ("hidepid=0", False)])
def test_hidepid_makes_an_unseen_fabric_manager_unknown(tmp_path, option, expect):
    from tests.fakes.nvml_lib import a100_sxm

    root = _proc(_nvswitches(tmp_path, 6), f"proc /proc proc rw,nosuid,nodev,noexec,relatime,{option} 0 0\n")
    d, found = _judge(FakeNvmlLib([a100_sxm(i) for i in range(8)]), root)
    assert d.fabric_manager_running is expect
    fm = [(f.code, f.severity) for f in found if f.code.startswith("interconnect.fabric")]
    if expect is None:
        assert fm == [("interconnect.fabric-manager/unknown", Severity.INFO)]
    else:
        assert fm == [("interconnect.fabric-manager/not-running", Severity.ERROR)]


def test_gb200_compute_tray_is_not_told_to_start_a_fabric_manager(tmp_path):
    gpus = [sxm_alone("NVIDIA GB200", 0x294110DE, 10, (10, 0), **fabric(1)) for _ in range(4)]
    for i, g in enumerate(gpus):
        g.data["nvmlDeviceGetPciInfo_v3"] = dict(g.data["nvmlDeviceGetPciInfo_v3"], busId=f"00000008:0{i}:00.0")
    _, found = _judge(FakeNvmlLib(gpus, driver="570.86.15"), tmp_path)
    fm = [f for f in found if f.code.startswith("interconnect.fabric")]
    assert [(f.code, f.severity) for f in fm] == [("interconnect.fabric-manager/not-ready", Severity.ERROR)]
    assert not any("nvidia-fabricmanager" in c for c in fm[0].fix.commands)
    assert "switch trays" in fm[0].detail and "not_started" in fm[0].summary
