"""The NVML probe driven through the REAL pynvml wrappers (nvidia-ml-py) over a stand-in libnvidia-ml (tests/fakes/nvml_lib.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import types
from pathlib import Path
from typing import List

import pytest

from envdoctor.model.facts import Facts, Host, ProbeStatus
from envdoctor.model.findings import Severity
from envdoctor.probes.driver import probe_driver
from envdoctor.probes.nvml import binding_problem, probe_nvml, sample_pcie_links
from envdoctor.services.collect import judge
from tests.fakes.nvml_lib import (
    ERR,
    MISSING_BY_DRIVER,
    FakeNvmlLib,
    a100_pcie,
    a100_sxm,
    fabric,
    h100_sxm,
    installed,
    nvlinks,
    rtx4090,
)
from tests.fakes.runner import FakeRunner

pytest.importorskip("pynvml")

NO_SMI = FakeRunner({("nvidia-smi", "-q", "-x"): FakeRunner.NOT_FOUND})


def probe(lib: FakeNvmlLib, timeout_s: float = 20.0, own=lambda pid: False):
    with installed(lib) as nv:
        return probe_nvml(nv, timeout_s=timeout_s, own=own)


def findings(facts: Facts, expect_gpu: bool = False):
    return [f for f in judge(facts, expect_gpu=expect_gpu).findings]


def at_least_warning(facts: Facts) -> List[str]:
    return [f"{f.severity} {f.code}: {f.summary}" for f in findings(facts) if f.severity != Severity.INFO]


def facts_of(driver) -> Facts:
    return Facts(driver=driver, host=Host(status="ok", os="Linux"), collected_at="2026-12-01T00:00:00Z")


# --------------------------------------------------------------------------- driver generations


@pytest.mark.parametrize("generation", ["450", "470"])
def test_driver_before_510_reads_processes_through_v2_and_keeps_nvlink(generation):
    # before the fix: nvmlDeviceGetComputeRunningProcesses raised NVMLLibraryMismatchError (a plain Exception)
    # and the whole probe failed ("NVML probe crashed"), losing NVLink state and infoROM validity
    gpus = [a100_sxm(0, nvmlDeviceGetComputeRunningProcesses=[(4242, 2 << 30)]), a100_sxm(1)]
    lib = FakeNvmlLib(gpus, driver=f"{generation}.256.02", missing=MISSING_BY_DRIVER[generation],
                      processes={4242: "/usr/bin/python3"})
    d = probe(lib)
    assert d.status == ProbeStatus.OK, d.reason
    assert "nvmlDeviceGetComputeRunningProcesses_v2" in lib.called
    assert "nvmlDeviceGetComputeRunningProcesses_v3" not in lib.called  # absent from that library
    g = d.gpus[0]
    assert [(p.pid, p.name) for p in g.processes] == [(4242, "/usr/bin/python3")]
    assert len(g.nvlinks) == 12 and all(lk.active for lk in g.nvlinks) and g.inforom_valid is True
    # the Throttle name is the only one these drivers export
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" in lib.called and g.throttle_reasons == ["gpu_idle"]
    assert g.notes is None
    # no false error; the warnings are true ones: the process listed, and R450/R470 past their support end
    codes = {line.split(":")[0] for line in at_least_warning(facts_of(d))}
    assert codes <= {"warning gpu.busy/processes", "warning driver.lifecycle/past-eol"}, codes
    assert "warning gpu.busy/processes" in codes


def test_driver_535_98_uses_the_unversioned_fabric_info_and_reads_everything():
    lib = FakeNvmlLib([h100_sxm(i) for i in range(8)], driver="535.98", missing=MISSING_BY_DRIVER["535"])
    d = probe(lib)
    assert d.status == ProbeStatus.OK and len(d.gpus) == 8
    assert "nvmlDeviceGetGpuFabricInfo" in lib.called and "nvmlDeviceGetGpuFabricInfoV" not in lib.called
    assert {(g.fabric_state, g.fabric_status) for g in d.gpus} == {("completed", "SUCCESS")}
    assert all(g.notes is None and g.processes == [] for g in d.gpus)
    assert at_least_warning(facts_of(d)) == []


def test_a_non_nvml_exception_in_one_field_loses_that_field_only(monkeypatch):
    import pynvml

    def broken(handle):
        raise RuntimeError("binding changed")

    monkeypatch.setattr(pynvml, "nvmlDeviceGetUUID", broken)
    d = probe(FakeNvmlLib([h100_sxm(0)]))
    g = d.gpus[0]
    assert d.status == ProbeStatus.OK and g.uuid is None and g.name == "NVIDIA H100 80GB HBM3"
    assert g.notes == ["uuid: RuntimeError: binding changed"]


# --------------------------------------------------------------------------- consumer GPUs, permissions, lost GPUs


def test_consumer_gpu_not_supported_fields_are_silent():
    d = probe(FakeNvmlLib([rtx4090(0)]))
    g = d.gpus[0]
    assert g.ecc_mode_current is None and g.remapped_rows_pending is None and g.inforom_valid is None
    assert g.nvlinks == [] and g.fabric_state is None and g.notes is None
    assert at_least_warning(facts_of(d)) == []


def test_no_permission_on_one_gpu_keeps_the_others_and_is_not_a_lost_gpu():
    gpus = [h100_sxm(0), h100_sxm(1), h100_sxm(2)]
    gpus[1].handle_error = "NO_PERMISSION"
    d = probe(FakeNvmlLib(gpus))
    assert [g.nvml_error for g in d.gpus] == [None, "NO_PERMISSION", None]
    got = {f.code: f for f in findings(facts_of(d))}
    assert got["gpu.reachable/not-accessible"].severity == Severity.INFO
    assert "gpu.reachable/lost" not in got


def test_gpu_lost_mid_read_is_an_error_finding_and_the_others_stay():
    gpus = [h100_sxm(0), h100_sxm(1)]
    gpus[1].lost_after = 6
    d = probe(FakeNvmlLib(gpus))
    assert d.gpus[1].nvml_error == "GPU_IS_LOST" and d.gpus[0].nvml_error is None
    assert d.gpus[1].nvlinks is None  # not asked once lost
    lost = [f for f in findings(facts_of(d)) if f.code == "gpu.reachable/lost"]
    assert len(lost) == 1 and lost[0].severity == Severity.ERROR and "GPU 1" in lost[0].summary
    assert lost[0].evidence[0].path == "driver.gpus[1].nvml_error"


def test_reset_required_counts_as_lost():
    gpus = [h100_sxm(0, nvmlDeviceGetMemoryInfo=ERR("RESET_REQUIRED"))]
    d = probe(FakeNvmlLib(gpus))
    assert d.gpus[0].nvml_error == "RESET_REQUIRED"
    assert any(f.code == "gpu.reachable/lost" for f in findings(facts_of(d)))


def test_hung_gpu_does_not_hide_the_healthy_ones():
    gate = threading.Event()
    gpus = [h100_sxm(0), h100_sxm(1), h100_sxm(2)]
    gpus[1].hang = gate
    try:
        # the healthy GPUs must answer within the deadline: 6 s, ample on a loaded machine (the hung one costs
        # the whole of it)
        d = probe(FakeNvmlLib(gpus), timeout_s=6.0)
    finally:
        gate.set()
    assert d.status == ProbeStatus.OK
    assert [g.nvml_error for g in d.gpus] == [None, "TIMEOUT", None]
    assert d.gpus[2].name == "NVIDIA H100 80GB HBM3" and "GPU 1 did not answer (TIMEOUT)" in d.reason


# --------------------------------------------------------------------------- NVLink


def test_bridgeless_a100_pcie_is_no_error():
    # before the fix: "NVLink links down" ERROR for a card that simply has no bridge
    d = probe(FakeNvmlLib([a100_pcie(0), a100_pcie(1)]))
    assert [len(g.nvlinks) for g in d.gpus] == [12, 12] and not any(lk.active for lk in d.gpus[0].nvlinks)
    assert at_least_warning(facts_of(d)) == []
    assert any(f.code == "interconnect.nvlink/no-bridge" for f in findings(facts_of(d)))


def test_a100_pcie_bridge_with_links_down_is_a_fault():
    d = probe(FakeNvmlLib([a100_pcie(0, bridge="partial"), a100_pcie(1, bridge="full")]))
    assert d.gpus[1].nvlinks[0].remote_device_type == "gpu"
    bad = [f for f in findings(facts_of(d)) if f.code == "interconnect.nvlink/inactive"]
    assert len(bad) == 1 and bad[0].severity == Severity.ERROR and "links 4, 5, 6, 7" in bad[0].summary


def test_nvlink_loop_continues_past_unsupported_indices():
    links = nvlinks(18, remote_type=2)
    for i in (0, 1, 2, 3):  # a cut-down SKU whose first indices have no link
        links["nvmlDeviceGetNvLinkState"][i] = ERR("NOT_SUPPORTED")
    d = probe(FakeNvmlLib([h100_sxm(0, **links)]))
    assert [lk.link for lk in d.gpus[0].nvlinks] == list(range(4, 18))
    assert d.gpus[0].nvlinks[0].remote_device_type == "switch"


# --------------------------------------------------------------------------- fabric manager


def nvswitch_root(tmp_path: Path, comm: str = "nv-fabricmanage", container: bool = False) -> str:
    (tmp_path / "proc/driver/nvidia-nvswitch/devices").mkdir(parents=True)
    for i in range(4):
        (tmp_path / f"proc/driver/nvidia-nvswitch/devices/0000:0{i}:00.0").mkdir()
    (tmp_path / "proc/1").mkdir()
    (tmp_path / "proc/1/comm").write_text("systemd\n" if not container else "bash\n")
    if comm:
        (tmp_path / "proc/4711").mkdir()
        (tmp_path / "proc/4711/comm").write_text(comm + "\n")
    (tmp_path / "proc/self/ns").mkdir(parents=True)
    os.symlink("pid:[4026531836]" if not container else "pid:[4026532291]", tmp_path / "proc/self/ns/pid")
    return str(tmp_path)


def test_nvswitch_box_with_fabric_manager_running_gets_no_error(tmp_path):
    lib = FakeNvmlLib([h100_sxm(i) for i in range(8)])
    with installed(lib) as nv:
        d = probe_driver(NO_SMI, nvml=nv, root=nvswitch_root(tmp_path))
    assert d.fabric_manager_running is True and d.nvswitch_count == 4
    assert at_least_warning(facts_of(d)) == []


def test_fabric_manager_seen_in_procfs_only_by_its_15_character_comm(tmp_path):
    from envdoctor.probes.driver import fabric_manager_running

    assert fabric_manager_running(nvswitch_root(tmp_path / "a", comm="nv-fabricmanage")) is True
    # not running on the host's PID namespace: False; inside a container's: unknown
    assert fabric_manager_running(nvswitch_root(tmp_path / "b", comm="")) is False
    assert fabric_manager_running(nvswitch_root(tmp_path / "c", comm="", container=True)) is None


def test_fabric_state_from_nvml_decides_inside_a_container(tmp_path):
    from envdoctor.model.facts import Container

    root = nvswitch_root(tmp_path, comm="", container=True)
    host = Host(status="ok", os="Linux", container=Container(runtime="docker", gpu_device_nodes=["/dev/nvidia0"]))
    with installed(FakeNvmlLib([h100_sxm(i) for i in range(8)])) as nv:
        ready = probe_driver(NO_SMI, nvml=nv, root=root)
    assert ready.fabric_manager_running is None
    f = Facts(driver=ready, host=host)
    assert [x.code for x in findings(f) if x.code.startswith("interconnect.fabric")] == []
    with installed(FakeNvmlLib([h100_sxm(i, **fabric(1)) for i in range(8)])) as nv:
        pending = probe_driver(NO_SMI, nvml=nv, root=root)
    got = [x for x in findings(Facts(driver=pending, host=host)) if x.code.startswith("interconnect.fabric")]
    assert [(x.code, x.severity) for x in got] == [("interconnect.fabric-manager/not-ready", Severity.ERROR)]
    assert "not_started" in got[0].summary


def test_fabric_health_is_judged_not_discarded(tmp_path):
    # nvml.h: healthMask DEGRADED_BW at shift 0 (TRUE 1, FALSE 2), ROUTE_UNHEALTHY at shift 4; healthSummary
    # LIMITED_CAPACITY 3, UNHEALTHY 2 (v3 struct): a registered fabric that reports them is judged
    root = nvswitch_root(tmp_path)
    R570 = "570.86.15"  # the v3 struct, with the health summary
    healthy_mask = 2 | 2 << 2 | 2 << 4 | 2 << 6 | 1 << 8  # every condition FALSE, configuration NONE
    with installed(FakeNvmlLib([h100_sxm(i, **fabric(3, health_mask=healthy_mask, health_summary=1))
                                for i in range(8)], driver=R570)) as nv:
        fine = probe_driver(NO_SMI, nvml=nv, root=root)
    assert {(tuple(g.fabric_health), g.fabric_health_summary) for g in fine.gpus} == {((), "healthy")}
    assert [x.code for x in findings(facts_of(fine)) if x.code.startswith("interconnect.fabric")] == []
    degraded = [h100_sxm(i, **fabric(3, health_mask=(1 if i == 5 else 2) | 2 << 4, health_summary=3 if i == 5 else 1))
                for i in range(8)]
    with installed(FakeNvmlLib(degraded, driver=R570)) as nv:
        d = probe_driver(NO_SMI, nvml=nv, root=root)
    assert d.gpus[5].fabric_health == ["degraded_bandwidth"] and d.gpus[5].fabric_health_summary == "limited_capacity"
    (f,) = [x for x in findings(facts_of(d)) if x.code.startswith("interconnect.fabric")]
    assert (f.code, f.category, f.severity) == ("interconnect.fabric-manager/degraded", "INTERCONNECT", Severity.WARNING)
    assert f.summary.endswith("GPU 5: degraded bandwidth")
    assert [(e.path, e.value) for e in f.evidence] == [("driver.gpus[5].fabric_health", ["degraded_bandwidth"]),
                                                      ("driver.gpus[5].fabric_health_summary", "limited_capacity")]
    lost = [h100_sxm(i, **fabric(3, health_mask=2 | (1 if i == 2 else 2) << 4, health_summary=2 if i == 2 else 1))
            for i in range(8)]
    with installed(FakeNvmlLib(lost, driver=R570)) as nv:
        d = probe_driver(NO_SMI, nvml=nv, root=root)
    (f,) = [x for x in findings(facts_of(d)) if x.code.startswith("interconnect.fabric")]
    assert (f.code, f.severity) == ("interconnect.fabric-manager/unhealthy", Severity.ERROR)
    assert "GPU 2: route unhealthy" in f.summary


def test_pre_hopper_nvswitch_box_in_a_container_is_unknown_not_an_error(tmp_path):
    from envdoctor.model.facts import Container

    root = nvswitch_root(tmp_path, comm="", container=True)
    host = Host(status="ok", os="Linux", container=Container(runtime="docker", gpu_device_nodes=["/dev/nvidia0"]))
    gpus = [h100_sxm(i, nvmlDeviceGetGpuFabricInfo=ERR("NOT_SUPPORTED"),
                     nvmlDeviceGetGpuFabricInfoV=ERR("NOT_SUPPORTED")) for i in range(2)]
    with installed(FakeNvmlLib(gpus)) as nv:
        d = probe_driver(NO_SMI, nvml=nv, root=root)
    got = [(x.code, x.severity) for x in findings(Facts(driver=d, host=host)) if x.code.startswith("interconnect.fab")]
    assert got == [("interconnect.fabric-manager/unknown", Severity.INFO)]


# --------------------------------------------------------------------------- MIG, clocks, power, processes


def test_mig_on_without_instances_fires_on_the_nvml_path():
    from tests.fakes.nvml_lib import FakeGpu

    empty = h100_sxm(0, nvmlDeviceGetMigMode=(1, 1), nvmlDeviceGetMaxMigDeviceCount=7,
                     nvmlDeviceGetRemappedRows=ERR("NOT_SUPPORTED"))
    sliced = h100_sxm(1, nvmlDeviceGetMigMode=(1, 1), nvmlDeviceGetMaxMigDeviceCount=7,
                      nvmlDeviceGetRemappedRows=ERR("NOT_SUPPORTED"))
    sliced.mig = [FakeGpu({}), FakeGpu({})]
    d = probe(FakeNvmlLib([empty, sliced]))
    assert [g.mig_device_count for g in d.gpus] == [0, 2]
    assert "while MIG is on (2 MIG instance(s))" in d.gpus[1].notes[0]
    got = {f.code: f for f in findings(facts_of(d))}
    assert "GPU 0" in got["gpu.mig/no-instances"].summary
    assert got["gpu.memory-errors/remap-unread-mig"].severity == Severity.INFO


def test_mig_devices_are_read_through_their_own_handles():
    # the slices of the real H100 MIG capture (tests/fixtures/pastes/nvidia-smi-table/h100-mig_590.48.01_load.txt):
    # a 3g.40gb with 60 SMs and two 1g.10gb with 16 SMs each; NVML names a MIG device "<board> MIG <profile>"
    from tests.fakes.nvml_lib import FakeGpu

    def slice_(profile: str, sms: int, mib: int, gi: int) -> FakeGpu:
        return FakeGpu({"nvmlDeviceGetName": f"NVIDIA H100 80GB HBM3 MIG {profile}",
                        "nvmlDeviceGetUUID": f"MIG-{gi:08d}-0000-0000-0000-000000000000",
                        "nvmlDeviceGetAttributes_v2": {"multiprocessorCount": sms, "memorySizeMB": mib},
                        "nvmlDeviceGetMemoryInfo": {"total": mib << 20, "used": 9 << 20, "free": (mib - 9) << 20},
                        "nvmlDeviceGetGpuInstanceId": gi, "nvmlDeviceGetComputeInstanceId": 0})

    g = h100_sxm(0, nvmlDeviceGetMigMode=(1, 1), nvmlDeviceGetMaxMigDeviceCount=7,
                 nvmlDeviceGetRemappedRows=ERR("NOT_SUPPORTED"))
    g.mig = [slice_("3g.40gb", 60, 40448, 2), slice_("1g.10gb", 16, 9984, 9), slice_("1g.10gb", 16, 9984, 10)]
    d = probe(FakeNvmlLib([g]))
    got = d.gpus[0]
    assert got.mig_device_count == 3
    assert [(m.index, m.profile, m.sm_count, m.gpu_instance_id, m.compute_instance_id) for m in got.mig_devices] == [
        (0, "3g.40gb", 60, 2, 0), (1, "1g.10gb", 16, 9, 0), (2, "1g.10gb", 16, 10, 0)]
    assert got.mig_devices[1].memory_total_bytes == 9984 << 20
    assert got.mig_devices[1].uuid == "MIG-00000009-0000-0000-0000-000000000000"


def test_a_process_keeps_the_mig_slice_nvml_reports_it_on():
    # nvmlProcessInfo_t's gpuInstanceId / computeInstanceId: the slice's ids on MIG, 0xFFFFFFFF off MIG (nvml.h)
    procs = [(4242, 2 << 30, 2, 0), (4243, 1 << 30)]
    d = probe(FakeNvmlLib([h100_sxm(0, nvmlDeviceGetComputeRunningProcesses=procs)], processes={4242: "python"}))
    assert [(p.pid, p.gpu_instance_id, p.compute_instance_id) for p in d.gpus[0].processes] == [
        (4242, 2, 0), (4243, None, None)]


def test_p2p_status_is_read_for_every_ordered_pair():
    # nvmlDeviceGetP2PStatus(READ): OK between the first two, IOH_TOPOLOGY_NOT_SUPPORTED (3) to the third, one pair
    # unanswered (NOT_SUPPORTED as an error: unknown, never "no P2P")
    a = h100_sxm(0, nvmlDeviceGetP2PStatus={1: 0, 2: 3})
    b = h100_sxm(1, nvmlDeviceGetP2PStatus={0: 0, 2: 3})
    c = h100_sxm(2, nvmlDeviceGetP2PStatus={0: 3})
    d = probe(FakeNvmlLib([a, b, c]))
    assert [(p.a, p.b, p.read) for p in d.p2p] == [
        (0, 1, "ok"), (0, 2, "topology_not_supported"), (1, 0, "ok"), (1, 2, "topology_not_supported"),
        (2, 0, "topology_not_supported"), (2, 1, None)]
    # the probe's answer is what interconnect.topology judges on a live run: H100s refusing P2P to GPU 2 (a
    # data-center board, so a warning naming the pairs)
    got = {f.code: f for f in findings(facts_of(d))}
    x = got["interconnect.topology/p2p-disabled"]
    assert x.severity == Severity.WARNING and x.summary.endswith("GPU0-GPU2, GPU1-GPU2")
    # one GPU: no pair to read; a driver without the call: unknown
    assert probe(FakeNvmlLib([h100_sxm(0)])).p2p == []
    assert probe(FakeNvmlLib([a, b], missing={"nvmlDeviceGetP2PStatus"})).p2p is None


def test_nvml_13_successors_are_used_where_the_driver_has_them_and_a_missing_pair_is_said():
    # nvmlDeviceGetTemperatureV and nvmlDeviceGetClock(APP_CLOCK_TARGET / APP_CLOCK_DEFAULT) answer first; the calls
    # they deprecate stay the fallback; with neither in the driver a note says so (not a silent unknown)
    new = h100_sxm(0, nvmlDeviceGetTemperatureV={"temperature": 45},
                   nvmlDeviceGetClock={(0, 1): 1980, (0, 2): 1755}, nvmlDeviceGetTemperature={0: 31})
    lib = FakeNvmlLib([new])
    g = probe(lib).gpus[0]
    # the successor is used only where the *binding* has its wrapper too: nvidia-ml-py 12.535 (the lowest the
    # package allows, tests/integration/test_lowest_binding.py) has nvmlDeviceGetClock but no
    # nvmlDeviceGetTemperatureV, so there the deprecated call answers, as it would on a user's machine
    import pynvml
    binding_has_v = hasattr(pynvml, "nvmlDeviceGetTemperatureV")
    assert (g.temperature_c, g.clocks_sm_app_mhz, g.clocks_sm_app_default_mhz) == (
        45 if binding_has_v else 31, 1980, 1755)
    assert ("nvmlDeviceGetTemperature" in lib.called) is not binding_has_v
    assert "nvmlDeviceGetApplicationsClock" not in lib.called
    old = probe(FakeNvmlLib([h100_sxm(0)])).gpus[0]  # a driver that answers only the deprecated calls
    assert (old.temperature_c, old.clocks_sm_app_mhz, old.clocks_sm_app_default_mhz) == (31, 1755, 1755)
    gone = probe(FakeNvmlLib([h100_sxm(0)], missing={"nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature"})).gpus[0]
    assert gone.temperature_c is None
    assert "temperature: neither nvmlDeviceGetTemperatureV nor nvmlDeviceGetTemperature exists in this driver or " \
           "binding" in gone.notes


def test_violation_times_come_from_nvml_13_field_values_where_the_driver_answers_them():
    from envdoctor.probes.nvml import read_health_counters

    def field_values(gpu, args):  # nvmlDeviceGetFieldValues(device, count, nvmlFieldValue_t *values)
        for fv in args[2]._obj:
            # a driver that knows the policy fields 74-78 only (reliability 79 and the successors: NOT_SUPPORTED)
            fv.nvmlReturn, fv.valueType = (0, 3) if 74 <= fv.fieldId <= 78 else (3, 3)
            fv.value.ullVal = {74: 7_000, 75: 40}.get(fv.fieldId, 0)
        return 0

    g = h100_sxm(0, nvmlDeviceGetFieldValues=field_values,
                 nvmlDeviceGetViolationStatus={p: {"referenceTime": 1, "violationTime": 99} for p in range(6)})
    lib = FakeNvmlLib([g])
    with installed(lib) as nv:
        nv.nvmlInit()
        got = read_health_counters(nv, nv.nvmlDeviceGetHandleByIndex(0))
        nv.nvmlShutdown()
    assert got["violation_power_ns"] == 7_000 and got["violation_thermal_ns"] == 40
    assert got["violation_reliability_ns"] == 99  # not a field here: the deprecated call answers it
    assert lib.called.count("nvmlDeviceGetViolationStatus") == 1


def test_r590_deprecated_application_clocks_are_one_note_per_gpu_not_four():
    # R590 (nvml.h API 13) answers NVML_ERROR_DEPRECATED (26) to the application-clock getters and to their
    # successor nvmlDeviceGetClock(APP_CLOCK_TARGET / _DEFAULT); its nvidia-smi -q prints "Requested functionality
    # has been deprecated" for both sections (tests/fixtures/other/h100-sxm-80gb_590.48.01_load_nvidia-smi-q.txt)
    gone = ERR("DEPRECATED")
    g = h100_sxm(0, nvmlDeviceGetClock={(0, 1): gone, (0, 2): gone},
                 nvmlDeviceGetApplicationsClock={0: gone, 1: gone}, nvmlDeviceGetDefaultApplicationsClock={0: gone})
    got = probe(FakeNvmlLib([g, h100_sxm(1, nvmlDeviceGetClock={(0, 1): gone, (0, 2): gone},
                                         nvmlDeviceGetApplicationsClock={0: gone},
                                         nvmlDeviceGetDefaultApplicationsClock={0: gone})])).gpus
    for gpu in got:
        assert (gpu.clocks_sm_app_mhz, gpu.clocks_sm_app_default_mhz) == (None, None)
        deprecated = [n for n in gpu.notes or [] if "DEPRECATED" in n]
        assert len(deprecated) == 1, gpu.notes
        assert deprecated[0].startswith("application clocks: not available on this driver (NVML answers DEPRECATED")
        assert "nvmlDeviceGetApplicationsClock" in deprecated[0] and "nvmlDeviceGetDefaultApplicationsClock" in \
            deprecated[0]
        assert not [n for n in gpu.notes if n.startswith(("clocks_app", "clocks_app_default"))], gpu.notes
    # nothing lowered can be judged from clocks the driver no longer reports
    assert "gpu.throttle/app-clocks-lowered" not in {f.code for f in findings(facts_of(probe(FakeNvmlLib([g]))))}


def test_violation_counters_read_the_successor_fields_nvml_h_names_and_the_hw_slowdown_counters():
    from envdoctor.probes.nvml import read_health_counters

    answers = {74: 7_000, 269: 55, 75: 40, 270: 3_000_000, 271: 0}

    def field_values(gpu, args):
        for fv in args[2]._obj:
            ok = fv.fieldId in answers
            fv.nvmlReturn, fv.valueType = (0, 3) if ok else (3, 3)
            fv.value.ullVal = answers.get(fv.fieldId, 0)
        return 0

    lib = FakeNvmlLib([h100_sxm(0, nvmlDeviceGetFieldValues=field_values,
                                nvmlDeviceGetViolationStatus={p: {"referenceTime": 1, "violationTime": 99}
                                                              for p in range(6)})])
    with installed(lib) as nv:
        nv.nvmlInit()
        got = read_health_counters(nv, nv.nvmlDeviceGetHandleByIndex(0))
        nv.nvmlShutdown()
    # SW thermal from its successor (269) before NVML_FI_DEV_PERF_POLICY_THERMAL (75); HW thermal and power brake
    assert got["violation_thermal_ns"] == 55 and got["violation_power_ns"] == 7_000
    assert got["violation_hw_thermal_ns"] == 3_000_000 and got["violation_hw_power_brake_ns"] == 0
    # a driver without 269 (R535-R570): the older field answers
    del answers[269]
    with installed(lib) as nv:
        nv.nvmlInit()
        older = read_health_counters(nv, nv.nvmlDeviceGetHandleByIndex(0))
        nv.nvmlShutdown()
    assert older["violation_thermal_ns"] == 40
    # no field answers at all (an old driver): the deprecated nvmlDeviceGetViolationStatus still does, for the six
    # policies it has; the two HW counters have no policy and stay unknown
    lib = FakeNvmlLib([h100_sxm(0, nvmlDeviceGetViolationStatus={p: {"referenceTime": 1, "violationTime": 99}
                                                                 for p in range(6)})])
    with installed(lib) as nv:
        nv.nvmlInit()
        old = read_health_counters(nv, nv.nvmlDeviceGetHandleByIndex(0))
        nv.nvmlShutdown()
    assert old["violation_thermal_ns"] == 99 and "violation_hw_thermal_ns" not in old


def test_hw_slowdown_in_one_reading_is_a_warning_and_unknown_bits_are_kept():
    d = probe(FakeNvmlLib([h100_sxm(0, nvmlDeviceGetCurrentClocksEventReasons=0x8 | 0x200 | 0x400)]))
    assert d.gpus[0].throttle_reasons == ["hw_slowdown", "unknown_0x200", "unknown_0x400"]
    got = {f.code: f.severity for f in findings(facts_of(d))}
    assert got["gpu.throttle/hw-slowdown-seen"] == Severity.WARNING
    assert got["gpu.throttle/unknown-reason"] == Severity.INFO
    assert "gpu.throttle/hw-slowdown" not in got
    power_brake = probe(FakeNvmlLib([h100_sxm(0, nvmlDeviceGetCurrentClocksEventReasons=0x80)]))
    assert {f.code: f.severity for f in findings(facts_of(power_brake))}["gpu.throttle/hw-slowdown"] == Severity.ERROR


def test_enforced_power_limit_and_lowered_application_clocks():
    d = probe(FakeNvmlLib([h100_sxm(0, nvmlDeviceGetEnforcedPowerLimit=500000,
                                    nvmlDeviceGetApplicationsClock={0: 1200})]))
    g = d.gpus[0]
    assert (g.power_limit_w, g.clocks_sm_app_mhz, g.clocks_sm_app_default_mhz) == (500.0, 1200, 1755)
    got = {f.code for f in findings(facts_of(d))}
    assert {"gpu.throttle/power-limit-lowered", "gpu.throttle/app-clocks-lowered"} <= got


def test_envdoctor_and_its_children_are_not_other_processes():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        procs = [(os.getpid(), 1 << 20), (child.pid, 1 << 20), (4242, 2 << 30)]
        with installed(FakeNvmlLib([h100_sxm(0, nvmlDeviceGetComputeRunningProcesses=procs)],
                                   processes={4242: "python"})) as nv:
            d = probe_nvml(nv, timeout_s=20)  # the default own-process test
    finally:
        child.kill()
        child.wait()
    assert [p.pid for p in d.gpus[0].processes] == [4242]
    assert "2 of envdoctor's own process(es) left out" in d.gpus[0].notes[0]


def test_pcie_sampler_skips_a_gpu_it_may_not_open():
    gpus = [h100_sxm(0), h100_sxm(1)]
    gpus[0].handle_error = "NO_PERMISSION"
    with installed(FakeNvmlLib(gpus)) as nv:
        best, samples, error = sample_pcie_links(nv, lambda: False)
    assert list(best.values()) == [(5, 16)] and samples == 1
    assert error == "not sampled: GPU 0: NO_PERMISSION"


# --------------------------------------------------------------------------- the binding itself


def test_the_imported_pynvml_is_nvidias_nvidia_ml_py_at_a_fixed_version():
    import pynvml

    # fails when an old third-party `pynvml` package (or nvidia-ml-py 12.535.77) is what `import pynvml` finds
    assert binding_problem(pynvml) is None


def test_a_third_party_pynvml_is_reported_not_trusted(tmp_path, monkeypatch):
    fake = types.ModuleType("pynvml")
    (tmp_path / "pynvml").mkdir()
    (tmp_path / "pynvml" / "__init__.py").write_text("")
    fake.__file__ = str(tmp_path / "pynvml" / "__init__.py")
    problem = binding_problem(fake)
    assert problem and "third-party pynvml" in problem
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    d = probe_nvml()
    assert d.status == ProbeStatus.UNSUPPORTED and "NVML not asked" in d.reason and d.nvml_error == "BINDING"


def test_old_nvidia_ml_py_is_refused():
    from envdoctor.domain.versions import release
    from envdoctor.probes.nvml import MIN_BINDING

    assert release("12.535.77") < MIN_BINDING <= release("12.535.108") < release("13.615.71")


def test_healthy_hgx_h100_on_550_through_the_real_bindings_has_no_warning(tmp_path):
    lib = FakeNvmlLib([h100_sxm(i) for i in range(8)], driver="550.54.15")
    with installed(lib) as nv:
        d = probe_driver(NO_SMI, nvml=nv, root=nvswitch_root(tmp_path))
    assert "nvmlDeviceGetGpuFabricInfoV" in lib.called and "nvmlDeviceGetEnforcedPowerLimit" in lib.called
    assert all(g.notes is None and len(g.nvlinks) == 18 for g in d.gpus)
    assert at_least_warning(facts_of(d)) == []


def test_the_gpu_recovery_action_comes_from_its_nvml_field_where_the_driver_answers_it():
    # NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (230, nvml.h API 13): 0 none .. 5 recover IMEX domain
    def field(value):
        def field_values(gpu, args):
            for fv in args[2]._obj:
                fv.nvmlReturn, fv.valueType = (0, 1) if fv.fieldId == 230 and value is not None else (3, 1)
                fv.value.uiVal = value or 0
            return 0
        return field_values

    got = [probe(FakeNvmlLib([h100_sxm(0, nvmlDeviceGetFieldValues=field(v))])).gpus[0].recovery_action
           for v in (0, 2, 4, 9, None)]
    assert got == ["none", "node_reboot", "drain_and_reset", "unknown_9", None]
    assert probe(FakeNvmlLib([h100_sxm(0)])).gpus[0].recovery_action is None  # a driver without the field
    rebooting = probe(FakeNvmlLib([h100_sxm(0, nvmlDeviceGetFieldValues=field(2))]))
    assert "gpu.xid/recovery-action" in {f.code for f in findings(facts_of(rebooting))}


def test_a_load_sample_reads_the_nvml_13_temperature_successor_first():
    import pynvml

    from envdoctor.probes.nvml import read_sample

    def sample(gpu):
        with installed(FakeNvmlLib([gpu])) as nv:
            nv.nvmlInit()
            got = read_sample(nv, nv.nvmlDeviceGetHandleByIndex(0))
            nv.nvmlShutdown()
        return got

    binding_has_v = hasattr(pynvml, "nvmlDeviceGetTemperatureV")
    # R590: the deprecated call answers DEPRECATED, the successor the temperature
    r590 = sample(h100_sxm(0, nvmlDeviceGetTemperatureV={"temperature": 45},
                           nvmlDeviceGetTemperature={0: ERR("DEPRECATED")}))
    assert r590["temperature_c"] == (45 if binding_has_v else None)
    assert r590["throttle_reasons"] == ["gpu_idle"] and r590["sm_clock_mhz"] == 1980
    assert sample(h100_sxm(0))["temperature_c"] == 31  # an older driver: only the deprecated call answers
