"""Hardware and platform health checks on real captures and on a healthy 8x H100 SXM snapshot with one change each
(the checks of gpu_errors, interconnect and interconnect_nccl have their own files; the helpers are health_facts.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import List, Optional

import pytest

from envdoctor.compat import CompatDataError, load_compat, validate_file
from envdoctor.compat.health import health_table, parse_health
from envdoctor.model.facts import (
    Container,
    DataPath,
    Driver,
    Facts,
    GpuProcess,
    Host,
    NvlinkLink,
    PcieLink,
    Storage,
    Topology,
)
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.parsers.lsblk import flatten, parse_lsblk
from envdoctor.parsers.lspci import nvidia_gpu_links, parse_lspci_vv
from envdoctor.parsers.nvidia_smi_xml import parse_nvidia_smi_xml
from tests import audit
from tests.unit.checks.health_facts import (
    GIB,
    MIB,
    bad_categories,
    codes,
    finding,
    from_driver,
    healthy,
    one,
    q,
    replace_gpu,
    run,
    table_facts,
    text,
    with_gpus,
    with_host,
)


@pytest.fixture(scope="module")
def compat():
    return load_compat()


# --------------------------------------------------------------------------- the healthy snapshot and one change each


def test_healthy_h100_snapshot_has_no_warning_or_error(compat):
    results = run(healthy(), compat)
    assert not any(r.status == CheckStatus.ERRORED for r in results), [r.reason for r in results]
    assert bad_categories(results) == set()
    assert all(r.status == CheckStatus.PASSED for r in results), [(r.id, r.status, r.reason) for r in results]


def _link_down(f: Facts) -> Facts:
    links = list(f.driver.gpus[3].nvlinks)
    links[5] = dataclasses.replace(links[5], active=False, speed_gbps=None)
    return replace_gpu(f, 3, nvlinks=links)


def _hdd(f: Facts) -> Facts:
    p = dataclasses.replace(f.storage.paths[0], block_device="sda", rotational=True, transport="sata",
                            device_model="ST16000NM001G")
    return dataclasses.replace(f, storage=dataclasses.replace(f.storage, paths=[p]))


@pytest.mark.parametrize("change, category", [
    (_link_down, "INTERCONNECT"),
    (lambda f: replace_gpu(f, 2, pcie_width_current=8), "PCIE_LINK_DEGRADED"),
    (lambda f: replace_gpu(f, 1, throttle_reasons=["sw_thermal_slowdown"], temperature_c=87.0), "GPU_THROTTLED"),
    (lambda f: with_host(f, shm_total_bytes=64 * MIB, shm_free_bytes=64 * MIB,
                     container=Container(runtime="docker")), "SHM_TOO_SMALL"),
    (_hdd, "SLOW_STORAGE"),
    (lambda f: with_host(f, cgroup_cpu_quota=4.0), "CPU_STARVED"),
], ids=["nvlink-down", "x8", "sw-thermal", "shm-64mb", "hdd", "quota-4"])
def test_one_change_gives_exactly_its_category(compat, change, category):
    results = run(change(healthy()), compat)
    assert not any(r.status == CheckStatus.ERRORED for r in results), [r.reason for r in results]
    assert bad_categories(results) == {category}


# --------------------------------------------------------------------------- GPU_THROTTLED


def test_throttle_hw_slowdown_and_power_brake_on_8x_h100(compat):
    res = one(q("perf-throttle/h100-sxm-80gb-x8_535.161.08_hw-slowdown-active.txt"), compat, "gpu.throttle")
    f = finding(res, "gpu.throttle/hw-slowdown")
    assert (f.category, f.severity) == ("GPU_THROTTLED", Severity.ERROR)
    assert len(f.evidence) == 8
    assert "hw_slowdown" in f.evidence[0].value and "hw_power_brake_slowdown" in f.evidence[0].value
    assert "HW Power Brake Slowdown" in f.summary
    assert any("-r" in c for c in f.fix.commands)


def test_throttle_sw_thermal_and_power_brake_on_one_h100(compat):
    res = one(q("perf-throttle/h100-sxm-80gb-x8_535.183.01_sw-thermal-power-cap.txt"), compat, "gpu.throttle")
    hw = finding(res, "gpu.throttle/hw-slowdown")
    assert hw.severity == Severity.ERROR and [e.path for e in hw.evidence] == ["driver.gpus[2].throttle_reasons"]
    th = finding(res, "gpu.throttle/thermal")
    assert (th.category, th.severity) == ("GPU_THROTTLED", Severity.WARNING)
    assert th.evidence[0].path == "driver.gpus[2].throttle_reasons"


def test_throttle_power_cap_under_load_on_4090(compat):
    # two GPUs drawing ~445 W of their default 450 W: SW Power Cap is how a GPU at its limit runs (NVML), a note
    res = one(q("perf-throttle/rtx-4090-x8_535.154.05_sw-power-cap.txt"), compat, "gpu.throttle")
    f = finding(res, "gpu.throttle/power-cap-at-limit")
    assert (f.category, f.about, f.severity) == ("NOTE", "GPU_THROTTLED", Severity.INFO)
    assert sum(1 for e in f.evidence if e.path.endswith("power_limit_w")) == 2
    assert res.status == CheckStatus.PASSED
    # the same under a lowered limit is a warning
    low = replace_gpu(q("perf-throttle/rtx-4090-x8_535.154.05_sw-power-cap.txt"), 1, power_limit_w=300.0,
                      power_draw_w=298.0)
    got = {x.code: x.severity for x in one(low, compat, "gpu.throttle").findings}
    assert got["gpu.throttle/power-cap"] == Severity.WARNING
    assert got["gpu.throttle/power-limit-lowered"] == Severity.WARNING


def test_throttle_clock_setting_under_load_fires_without_a_lock_reading(compat):
    # no source gives the locked-clock value itself; the Applications Clocks Setting reason under load does
    f = replace_gpu(healthy(), 2, throttle_reasons=["applications_clocks_setting"], under_load=True,
                    clocks_sm_mhz=1200, clocks_sm_max_mhz=1980)
    res = one(f, compat, "gpu.throttle")
    c = finding(res, "gpu.throttle/clock-setting")
    assert (c.category, c.severity) == ("GPU_THROTTLED", Severity.WARNING)
    assert c.evidence[0].path == "driver.gpus[2].throttle_reasons" and c.evidence[1].value == 1200
    assert c.fix.commands == ["sudo nvidia-smi -i 2 -rgc", "sudo nvidia-smi -i 2 -rac"]
    at_max = replace_gpu(f, 2, clocks_sm_mhz=1980)
    assert "gpu.throttle/clock-setting" not in codes(one(at_max, compat, "gpu.throttle"))


@pytest.mark.parametrize("rel", [
    "perf-throttle/rtx-5090_570.124.06_nvidia-smi-q.txt",
    "perf-throttle/a40-x10_550.127.05_nvidia-smi-q.txt",
    "perf-throttle/rtx-a6000-x9_550.127.05_nvidia-smi-q.txt",
])
def test_throttle_power_cap_at_idle_is_info_not_fault(compat, rel):
    # These captures report SW Power Cap in P8 at 15-30 W: the category, but only as an unverified note
    res = one(q(rel), compat, "gpu.throttle")
    f = finding(res, "gpu.throttle/power-cap-idle")
    assert (f.category, f.about, f.severity) == ("NOTE", "GPU_THROTTLED", Severity.INFO)
    assert res.status == CheckStatus.PASSED


def test_throttle_idle_reason_passes_and_under_load_power_cap_fails(compat):
    f = q("other/h100-sxm-80gb_590.48.01_load_nvidia-smi-q.txt")
    assert one(f, compat, "gpu.throttle").findings == []
    a10 = q("other/a10_535.129.03_row-remap-pending_nvidia-smi-q.txt")  # gpu_idle active
    assert one(a10, compat, "gpu.throttle").findings == []
    capped = replace_gpu(a10, 0, throttle_reasons=["sw_power_cap"], under_load=True)
    assert codes(one(capped, compat, "gpu.throttle")) == ["gpu.throttle/power-cap-at-limit"]
    lowered = replace_gpu(capped, 0, power_limit_w=0.8 * capped.driver.gpus[0].power_default_limit_w)
    assert "gpu.throttle/power-cap" in codes(one(lowered, compat, "gpu.throttle"))


def test_throttle_lowered_power_limit_and_locked_clocks(compat):
    f = replace_gpu(healthy(), 4, power_limit_w=500.0, clocks_sm_locked_max_mhz=1000, clocks_sm_max_mhz=1980)
    res = one(f, compat, "gpu.throttle")
    pl = finding(res, "gpu.throttle/power-limit-lowered")
    assert pl.severity == Severity.WARNING and pl.fix.commands == ["sudo nvidia-smi -i 4 -pl 700"]
    assert finding(res, "gpu.throttle/clocks-locked").fix.commands == ["sudo nvidia-smi -i 4 -rgc"]


def test_throttle_skips_without_driver(compat):
    res = one(Facts(), compat, "gpu.throttle")
    assert res.status == CheckStatus.SKIPPED and "throttle reasons unknown" in res.reason


# --------------------------------------------------------------------------- GPU_MEMORY_ERRORS


# --------------------------------------------------------------------------- GPU_BUSY, MIG, persistence, compute mode


def test_busy_other_processes_on_h100(compat):
    # a capture taken while gpu_burn and memhog ran: from envdoctor's side, other processes hold the GPU
    res = one(q("other/h100-sxm-80gb_590.48.01_load_nvidia-smi-q.txt"), compat, "gpu.busy")
    f = finding(res, "gpu.busy/processes")
    assert (f.category, f.severity) == ("GPU_BUSY", Severity.WARNING)
    assert f.evidence[0].value == [11327, 11328, 11345] and "gpu_burn" in f.summary


def test_busy_passes_on_healthy_and_skips_without_data(compat):
    assert one(healthy(), compat, "gpu.busy").findings == []
    bare = replace_gpu(healthy(), 0, processes=None, memory_used_bytes=None, utilization_gpu_pct=None)
    bare = with_gpus(bare, bare.driver.gpus[:1])
    assert one(bare, compat, "gpu.busy").status == CheckStatus.SKIPPED


def test_busy_memory_held_by_invisible_process(compat):
    f = replace_gpu(healthy(), 0, under_load=False, memory_used_bytes=40 * GIB, utilization_gpu_pct=0.0)
    assert codes(one(f, compat, "gpu.busy")) == ["gpu.busy/memory-held"]


def test_mig_enabled_table(compat):
    res = one(table_facts("nvidia-smi-table/h100-mig_590.48.01_load.txt"), compat, "gpu.mig")
    f = finding(res, "gpu.mig/enabled")
    assert (f.category, f.about, f.severity) == ("NOTE", "MIG_ENABLED", Severity.INFO)
    assert "sudo nvidia-smi -i 0 -mig 0" in f.fix.commands


def test_mig_without_instances_warns_and_healthy_passes_and_skip(compat):
    f = replace_gpu(healthy(), 0, mig_mode_current=True, mig_device_count=0)
    assert finding(one(f, compat, "gpu.mig"), "gpu.mig/no-instances").severity == Severity.WARNING
    assert one(healthy(), compat, "gpu.mig").findings == []
    assert one(table_facts("nvidia-smi-table/v100-sxm2-x8_460.32.03_inforom-corrupted.txt"), compat,
               "gpu.mig").status == CheckStatus.SKIPPED


def test_persistence_off_v100_and_skip_on_windows(compat):
    f = table_facts("nvidia-smi-table/v100-sxm2-x8_460.32.03_inforom-corrupted.txt")
    res = one(f, compat, "gpu.persistence")
    p = finding(res, "gpu.persistence/off")
    assert (p.category, p.about, p.severity) == ("NOTE", "PERSISTENCE_MODE_OFF", Severity.INFO)
    assert "sudo nvidia-smi -pm 1" in p.fix.commands
    assert one(healthy(), compat, "gpu.persistence").findings == []
    win = dataclasses.replace(f, host=Host(status="ok", os="Windows"))
    assert one(win, compat, "gpu.persistence").status == CheckStatus.SKIPPED


def test_compute_mode_exclusive_process(compat):
    res = one(table_facts("nvidia-smi-table/geforce-24gb_525.125.06_fan-err.txt"), compat, "gpu.compute-mode")
    f = finding(res, "gpu.compute-mode/exclusive")
    assert (f.category, f.severity) == ("COMPUTE_MODE_RESTRICTED", Severity.WARNING)
    assert f.fix.commands == ["sudo nvidia-smi -i 0 -c DEFAULT"]
    assert one(healthy(), compat, "gpu.compute-mode").findings == []
    prohibited = replace_gpu(healthy(), 0, compute_mode="Prohibited")
    assert finding(one(prohibited, compat, "gpu.compute-mode"), "gpu.compute-mode/prohibited").severity == Severity.ERROR
    assert one(Facts(), compat, "gpu.compute-mode").status == CheckStatus.SKIPPED


# --------------------------------------------------------------------------- PCIE_LINK_DEGRADED


@pytest.mark.parametrize("rel", ["nvidia-smi-xml/a10g_515.105.01.xml", "nvidia-smi-xml/tesla-t4_515.105.01.xml"])
def test_pcie_x8_of_x16_on_a_cloud_vm_is_the_platform_not_a_fault(compat, rel):
    # both AWS captures are of a VM: NVML says Pass-Through, and the GPU sits on the guest's root bus
    # (00000000:00:1E.0) with no port above it; its wiring gives x8 (issue 39: "move the GPU to an x16 slot" was
    # no advice for a rented VM)
    drv = parse_nvidia_smi_xml(text(rel))
    res = one(from_driver(drv), compat, "pcie.link")
    assert "pcie.link/width" not in [f.code for f in res.findings]
    f = finding(res, "pcie.link/platform-width")
    assert f.severity == Severity.INFO and "x8 of the card's x16, a virtual machine (" in f.summary
    assert f.evidence[0].path == "driver.gpus[0].pcie_width_current" and f.evidence[0].value == 8
    # without the passthrough mode (an older reader), the root bus alone says it
    g = dataclasses.replace(drv.gpus[0], virtualization_mode=None)
    res = one(from_driver(dataclasses.replace(drv, gpus=[g])), compat, "pcie.link")
    f = finding(res, "pcie.link/platform-width")
    assert "(on the root bus (00000000:00:1E.0) with no PCIe port above it)" in f.summary
    assert f.evidence[-1].path == "driver.gpus[0].pci_bus_id"


@pytest.mark.parametrize("rel", ["nvidia-smi-xml/a10g_515.105.01.xml", "nvidia-smi-xml/tesla-t4_515.105.01.xml"])
def test_pcie_x8_of_x16_on_bare_metal_stays_a_warning(compat, rel):
    # the same reading on a bus a root port numbers (bare metal, no hypervisor): below what the slot supports
    drv = parse_nvidia_smi_xml(text(rel))
    g = dataclasses.replace(drv.gpus[0], pci_bus_id="00000000:3B:00.0", virtualization_mode=None)
    res = one(from_driver(dataclasses.replace(drv, gpus=[g])), compat, "pcie.link")
    f = finding(res, "pcie.link/width")
    assert (f.category, f.severity) == ("PCIE_LINK_DEGRADED", Severity.WARNING)
    assert "x8 of x16" in f.summary
    assert f.evidence[0].path == "driver.gpus[0].pcie_width_current" and f.evidence[0].value == 8


def test_pcie_a10g_idle_gen1_is_not_a_fault(compat):
    res = one(from_driver(parse_nvidia_smi_xml(text("nvidia-smi-xml/a10g_515.105.01.xml"))), compat, "pcie.link")
    f = finding(res, "pcie.link/gen-idle")
    assert f.severity == Severity.INFO and "Gen1 of Gen4" in f.summary and "idle, not verified" in f.summary


def test_pcie_rtx5090_x8_from_q(compat):
    res = one(q("perf-throttle/rtx-5090_570.124.06_nvidia-smi-q.txt"), compat, "pcie.link")
    assert "x8 of x16" in finding(res, "pcie.link/width").summary


def test_pcie_low_gen_under_load_is_a_fault(compat):
    res = one(replace_gpu(healthy(), 5, pcie_gen_current=3), compat, "pcie.link")
    f = finding(res, "pcie.link/gen")
    assert (f.category, f.severity) == ("PCIE_LINK_DEGRADED", Severity.WARNING)
    assert "Gen3 of Gen5 under load" in f.summary


def test_pcie_lspci_downgraded_speed_at_idle_is_info(compat):
    links = nvidia_gpu_links(text("lspci/rtx-6000-ada_lspci-vvv_link-downgraded-2.5GT.txt"))
    res = one(Facts(topology=Topology(status="ok", pcie_links=links)), compat, "pcie.link")
    assert res.status == CheckStatus.PASSED
    assert codes(res) == ["pcie.link/gen-idle"]


def test_pcie_lspci_width_downgraded_non_gpu_is_info(compat):
    links = parse_lspci_vv(text("lspci/highpoint-ssd7540_lspci-vvv_width-downgraded.txt"))
    res = one(Facts(topology=Topology(status="ok", pcie_links=links)), compat, "pcie.link")
    f = finding(res, "pcie.link/other-device")
    assert f.severity == Severity.INFO and "x1 of x2" in f.summary


def test_pcie_h100_lspci_gpus_at_full_link_pass(compat):
    links = nvidia_gpu_links(text("lspci/h100-x8_lspci-vvv.txt"))
    res = one(Facts(topology=Topology(status="ok", pcie_links=links)), compat, "pcie.link")
    assert bad_categories([res]) == set()


def test_pcie_names_narrower_upstream_bridge(compat):
    gpu = PcieLink(bdf="0000:17:00.0", description="3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB]",
                   cap_speed_gts=32.0, cap_width=16, sta_speed_gts=32.0, sta_width=16, upstream_bdf="0000:16:00.0")
    bridge = PcieLink(bdf="0000:16:00.0", description="PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch",
                      cap_speed_gts=32.0, cap_width=16, sta_speed_gts=32.0, sta_width=8, downgraded=True)
    f = replace_gpu(healthy(), 0, pci_bus_id="00000000:17:00.0")
    f = dataclasses.replace(f, topology=dataclasses.replace(f.topology, pcie_links=[gpu, bridge]))
    w = finding(one(f, compat, "pcie.link"), "pcie.link/width")
    assert "upstream bridge/switch 0000:16:00.0" in w.summary and "x8" in w.summary
    assert any(e.path == "topology.pcie_links[1].sta_width" and e.value == 8 for e in w.evidence)


def test_pcie_in_a_pod_judges_only_the_gpus_it_was_given(compat):
    # a Kubernetes pod given GPU 0 sees all eight of the host's GPUs in sysfs; one it was not given runs at x8
    from envdoctor.model.facts import Container

    mine = PcieLink(bdf="0000:17:00.0", description="3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB]",
                    cap_speed_gts=32.0, cap_width=16, sta_speed_gts=32.0, sta_width=16)
    other = PcieLink(bdf="0000:27:00.0", description="3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB]",
                     cap_speed_gts=32.0, cap_width=16, sta_speed_gts=32.0, sta_width=8)
    f = replace_gpu(healthy(), 0, pci_bus_id="00000000:17:00.0")
    f = dataclasses.replace(f, driver=dataclasses.replace(f.driver, gpus=f.driver.gpus[:1]),
                            topology=dataclasses.replace(f.topology, pcie_links=[mine, other]))
    assert finding(one(f, compat, "pcie.link"), "pcie.link/width")  # on the host: that GPU is judged
    pod = dataclasses.replace(f, host=dataclasses.replace(f.host, container=Container(
        runtime="kubernetes", gpu_device_nodes=["/dev/nvidia0", "/dev/nvidiactl"], nvidia_visible_devices="GPU-1")))
    assert bad_categories([one(pod, compat, "pcie.link")]) == set()


def test_pcie_skips_without_link_facts(compat):
    assert one(Facts(), compat, "pcie.link").status == CheckStatus.SKIPPED


# --------------------------------------------------------------------------- INTERCONNECT


# --------------------------------------------------------------------------- SLOW_STORAGE


def _storage(*paths: DataPath, host: Optional[Host] = None) -> Facts:
    return Facts(storage=Storage(status="ok", paths=list(paths)), host=host or Host(status="ok", os="Linux"))


def test_storage_virtio_reports_rotational_is_info(compat):
    vda = next(d for d in flatten(parse_lsblk(text("lsblk/cloud-vm-virtio_lsblk.json"))) if d.name == "/dev/vda1")
    assert vda.rotational is True
    p = DataPath(path="/data", status="ok", exists=True, mount_point="/", fstype="ext4", kind="local",
                 block_device="vda1", rotational=vda.rotational, transport=vda.transport or "virtio",
                 free_bytes=100 * GIB)
    res = one(_storage(p, host=Host(status="ok", virtualization="kvm")), compat, "storage.data-path")
    f = finding(res, "storage.data-path/virtual-rotational")
    assert f.severity == Severity.INFO and "virtio reports rotational; cannot tell" in f.summary
    assert res.status == CheckStatus.PASSED


def test_storage_hdd_network_fuse_overlay_and_low_space(compat):
    hdd = dataclasses.replace(healthy().storage.paths[0], block_device="sdb", rotational=True, transport="sata")
    x = finding(one(_storage(hdd), compat, "storage.data-path"), "storage.data-path/rotational")
    assert (x.category, x.severity) == ("SLOW_STORAGE", Severity.WARNING)
    assert x.evidence[0].path == "storage.paths[0].rotational"
    nfs = DataPath(path="/mnt/ds", status="ok", exists=True, mount_point="/mnt", fstype="nfs4",
                   mount_source="filer:/export", kind="network", free_bytes=10**13)
    assert "(nfs4)" in finding(one(_storage(nfs), compat, "storage.data-path"), "storage.data-path/network").summary
    lustre = dataclasses.replace(nfs, fstype="lustre")
    assert finding(one(_storage(lustre), compat, "storage.data-path"), "storage.data-path/network").severity == \
        Severity.INFO
    s3 = DataPath(path="/s3", status="ok", exists=True, mount_point="/s3", fstype="fuse.s3fs", kind="fuse")
    assert "s3fs" in finding(one(_storage(s3), compat, "storage.data-path"), "storage.data-path/fuse").summary
    ov = DataPath(path="/workspace", status="ok", exists=True, mount_point="/", fstype="overlay", kind="overlay",
                  free_bytes=500 * GIB)
    host = Host(status="ok", container=Container(runtime="docker"))
    o = finding(one(_storage(ov, host=host), compat, "storage.data-path"), "storage.data-path/overlay")
    assert o.severity == Severity.WARNING
    full = dataclasses.replace(healthy().storage.paths[0], free_bytes=3 * GIB)
    assert finding(one(_storage(full), compat, "storage.data-path"),
                   "storage.data-path/low-free-space").severity == Severity.WARNING


def test_storage_skips_without_probe(compat):
    assert one(Facts(), compat, "storage.data-path").status == CheckStatus.SKIPPED


# --------------------------------------------------------------------------- SHM, CPU, memory


def test_shm_64mb_in_docker(compat):
    f = with_host(healthy(), shm_total_bytes=64 * MIB, container=Container(runtime="docker"))
    x = finding(one(f, compat, "host.shm"), "host.shm/too-small")
    assert (x.category, x.severity) == ("SHM_TOO_SMALL", Severity.WARNING)
    assert x.evidence[0].path == "host.shm_total_bytes" and x.evidence[0].value == 64 * MIB
    assert "docker run --shm-size=16g ..." in x.fix.commands and "docker run --ipc=host ..." in x.fix.commands
    assert one(healthy(), compat, "host.shm").findings == []
    assert one(with_host(healthy(), shm_total_bytes=None), compat, "host.shm").status == CheckStatus.SKIPPED


def test_cpu_quota_4_for_8_gpus(compat):
    res = one(with_host(healthy(), cgroup_cpu_quota=4.0), compat, "host.cpu")
    q4 = finding(res, "host.cpu/cgroup-quota")
    assert (q4.category, q4.severity) == ("CPU_STARVED", Severity.WARNING)
    assert q4.evidence[0].path == "host.cgroup_cpu_quota" and q4.evidence[0].value == 4.0
    per = finding(res, "host.cpu/per-gpu")
    assert "4 usable CPUs for 8 GPUs" in per.summary and per.severity == Severity.WARNING


def test_cpu_healthy_passes_and_skip(compat):
    assert one(healthy(), compat, "host.cpu").findings == []
    bare = with_host(healthy(), cpu_logical_count=None, cpu_affinity_count=None)
    assert one(bare, compat, "host.cpu").status == CheckStatus.SKIPPED


def test_memory_low_per_gpu_and_cgroup_limit(compat):
    res = one(with_host(healthy(), cgroup_memory_limit_bytes=128 * GIB), compat, "host.memory")
    x = finding(res, "host.memory/per-gpu")
    assert (x.category, x.severity) == ("HOST_MEMORY_LOW", Severity.WARNING)
    assert x.evidence[0].path == "host.cgroup_memory_limit_bytes"
    assert one(healthy(), compat, "host.memory").findings == []
    assert one(with_host(healthy(), memory_total_bytes=None), compat, "host.memory").status == CheckStatus.SKIPPED


def test_a_16_gib_l4_vm_is_no_warning(compat):
    # issue 39: the providers' smallest L4 shape (AWS g6.xlarge: 4 vCPU, 16 GiB) reads ~15.6 GiB in MemTotal
    # (physical RAM less the kernel's reservations); a 16 GiB-per-GPU minimum warned it. The medium class's
    # minimum is 12 GiB now (compat health.json), the 32 GiB recommendation stays a note
    from envdoctor.parsers.nvidia_smi_table import parse_nvidia_smi_table

    l4 = parse_nvidia_smi_table(text("pastes/nvidia-smi-table/l4_550.90.07.txt")).gpus[0]
    vm = from_driver(Driver(gpus=[l4]), host=Host(status="ok", os="Linux", cpu_logical_count=4, cpu_affinity_count=4,
                                                  memory_total_bytes=int(15.6 * GIB), shm_total_bytes=8 * GIB))
    res = one(vm, compat, "host.memory")
    (f,) = res.findings
    assert (f.code, f.severity) == ("host.memory/per-gpu-below-recommended", Severity.INFO)
    # 8 GiB for the same L4: below anything a provider sells with it, still the warning
    low = from_driver(Driver(gpus=[l4]), host=Host(status="ok", os="Linux", cpu_logical_count=4,
                                                   cpu_affinity_count=4, memory_total_bytes=8 * GIB))
    assert finding(one(low, compat, "host.memory"), "host.memory/per-gpu").severity == Severity.WARNING


def test_small_gpus_need_less(compat):
    # two T4s (15 GiB each) with 8 CPUs and 32 GiB: fine for the small class
    t4 = parse_nvidia_smi_xml(text("nvidia-smi-xml/tesla-t4_515.105.01.xml")).gpus[0]
    f = from_driver(Driver(gpus=[t4, dataclasses.replace(t4, index=1)]),
                    host=Host(status="ok", os="Linux", cpu_logical_count=8, cpu_affinity_count=8,
                              memory_total_bytes=32 * GIB, shm_total_bytes=16 * GIB))
    results = [r for r in run(f, compat) if r.area == "host"]
    assert [r.id for r in results] == ["host.shm", "host.cpu", "host.memory", "host.numa"]
    assert results[-1].status == CheckStatus.SKIPPED  # no sysfs locality in this snapshot
    assert bad_categories(results) == set()


# --------------------------------------------------------------------------- DRIVER_OUTDATED


def _driver(version: str) -> Facts:
    return dataclasses.replace(healthy(), driver=dataclasses.replace(healthy().driver, version=version))


def test_driver_past_eol_535(compat):
    x = finding(one(_driver("535.161.08"), compat, "driver.lifecycle"), "driver.lifecycle/past-eol")
    # ended five months before the snapshot: a note, not yet a warning
    assert (x.category, x.about, x.severity) == ("NOTE", "DRIVER_OUTDATED", Severity.INFO)
    assert "R535" in x.summary and "2026-06" in x.summary
    assert "docs.nvidia.com" in x.evidence[0].source
    assert any("580" in c for c in x.fix.commands)


def test_driver_supported_feature_old_and_defect(compat):
    assert one(_driver("580.95.05"), compat, "driver.lifecycle").findings == []
    fb = finding(one(_driver("590.48.01"), compat, "driver.lifecycle"), "driver.lifecycle/feature-branch")
    assert fb.severity == Severity.INFO
    assert finding(one(_driver("470.256.02"), compat, "driver.lifecycle"),
                   "driver.lifecycle/past-eol").severity == Severity.INFO
    # R460 ended January 2022: long past, a warning
    old = finding(one(_driver("460.32.03"), compat, "driver.lifecycle"), "driver.lifecycle/past-eol")
    assert (old.severity, old.category) == (Severity.WARNING, "DRIVER_OUTDATED")
    assert "2022-01" in old.summary and old.fix.commands
    r570 = one(_driver("570.124.06"), compat, "driver.lifecycle")
    assert sorted(codes(r570)) == ["driver.lifecycle/known-defect", "driver.lifecycle/past-eol"]
    # before R570's end of life (February 2026) only the defect remains
    early = dataclasses.replace(_driver("570.124.06"), collected_at="2025-06-01T00:00:00Z")
    assert codes(one(early, compat, "driver.lifecycle")) == ["driver.lifecycle/known-defect"]


def test_driver_lifecycle_skips_without_version(compat):
    assert one(Facts(), compat, "driver.lifecycle").status == CheckStatus.SKIPPED


# --------------------------------------------------------------------------- compat data and purity


def test_health_json_is_valid_and_cited(compat):
    doc = validate_file(Path(compat.data_dir) / "health.json")
    t = parse_health(doc)
    assert health_table(compat).as_of == doc["as_of"]
    for name in ("rows", "thresholds", "driver_branches", "driver_defects"):
        assert all(r.get("source") for r in doc[name]), name
    assert [t.resources_for(int(g * GIB)).gpu_class for g in (8, 15, 16, 24, 40, 80, 141)] == \
        ["small", "small", "medium", "medium", "large", "large", "large"]
    # the rule of thumb for A100-class GPUs
    large = t.resources_for(80 * GIB)
    assert (large.cpu_cores_per_gpu_recommended, large.ram_gib_per_gpu_recommended) == (16, 64)
    branches = [b.branch for b in t.driver_branches]
    assert branches == sorted(set(branches))


def test_overlapping_rows_are_rejected(compat):
    doc = dict(compat.table("health"))
    rows = [dict(r) for r in doc["rows"]]
    rows[1]["gpu_memory_gib_max"] = 50
    with pytest.raises(CompatDataError, match="overlap"):
        parse_health({**doc, "rows": rows})


def _all_snapshots() -> List[Facts]:
    snaps = [healthy()]
    for fn in (_link_down, _hdd):
        snaps.append(fn(healthy()))
    snaps.append(q("other/a10_535.129.03_row-remap-pending_nvidia-smi-q.txt"))
    snaps.append(Facts())
    return snaps


def test_checks_are_pure(compat):
    snaps = _all_snapshots()  # the loaded matrix is data in memory; nothing below may touch the machine
    audit.SEEN.clear()
    for s in snaps:
        with audit.forbidden():
            results = run(s, compat)
        for r in results:
            assert r.status != CheckStatus.ERRORED, (r.id, r.reason)
    assert not audit.SEEN, audit.SEEN


def test_every_health_finding_has_a_fix_when_it_warns(compat):
    snaps = _all_snapshots() + [
        q("perf-throttle/h100-sxm-80gb-x8_535.161.08_hw-slowdown-active.txt"),
        with_host(healthy(), shm_total_bytes=64 * MIB, cgroup_cpu_quota=4.0, cgroup_memory_limit_bytes=64 * GIB,
              env={"NCCL_P2P_DISABLE": "1"}, kernel_modules=[]),
        replace_gpu(healthy(), 0, processes=[GpuProcess(pid=42, name="python", used_memory_bytes=GIB, type="C")],
                    nvlinks=[NvlinkLink(link=-1, active=False)]),
    ]
    for s in snaps:
        for r in run(s, compat):
            for f in r.findings:
                if f.severity != Severity.INFO:
                    assert f.fix is not None and f.fix.summary, f.code
                    assert f.evidence, f.code


@pytest.mark.parametrize("affinity", range(8, 257, 8))
def test_cpu_evidence_names_the_count_that_limits(compat, affinity):
    # the usable count came from the affinity mask (os.cpu_count() says more): every per-GPU finding names it
    res = one(with_host(healthy(), cpu_logical_count=512, cpu_affinity_count=affinity), compat, "host.cpu")
    for f in res.findings:
        assert f.evidence[0].path == "host.cpu_affinity_count" and f.evidence[0].value == affinity, f


def test_cpu_below_recommended_is_a_note_on_the_affinity_count(compat):
    notes = [f for a in range(8, 257, 8)
             for f in one(with_host(healthy(), cpu_logical_count=512, cpu_affinity_count=a), compat, "host.cpu").findings
             if f.code == "host.cpu/per-gpu-below-recommended"]
    assert notes and all(f.severity == Severity.INFO for f in notes)
