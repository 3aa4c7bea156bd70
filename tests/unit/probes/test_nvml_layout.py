"""NVML structs read at nvml.h byte offsets: the stand-in library (tests/fakes/nvml_lib.py) writes each result
with ctypes.memmove at the header's offsets into whatever struct the binding passed, so a binding (or envdoctor
code) whose layout differs from nvml.h reads the wrong bytes here, as on a real driver.

These tests run against the installed nvidia-ml-py and, in the slow tier, against the lowest one the pin
allows (test_lowest_binding.py)."""

from __future__ import annotations

import ctypes
import threading
import time

import pytest

from envdoctor.model.facts import Container, Facts, Host
from envdoctor.model.findings import Severity
from envdoctor.probes import nvml as nvml_probe
from envdoctor.probes.driver import probe_driver
from envdoctor.probes.nvml import probe_nvml
from envdoctor.services.collect import judge
from tests.fakes.nvml_lib import MISSING_BY_DRIVER, FakeNvmlLib, fabric, h100_sxm, installed, rtx4090
from tests.fakes.runner import FakeRunner

pytest.importorskip("pynvml")

NO_SMI = FakeRunner({("nvidia-smi", "-q", "-x"): FakeRunner.NOT_FOUND})
GIB = 1 << 30


def _probe(lib: FakeNvmlLib, **kw):
    kw.setdefault("own", lambda pid: False)
    with installed(lib) as nv:
        return probe_nvml(nv, timeout_s=20.0, **kw)


def _findings(driver, host=None):
    facts = Facts(driver=driver, host=host or Host(status="ok", os="Linux"), collected_at="2026-12-01T00:00:00Z")
    return judge(facts).findings


def test_envdoctors_structs_have_the_sizes_nvml_h_gives():
    # nvml.h (NVIDIA/go-nvml gen/nvml/nvml.h): nvmlGpuFabricInfo_t 28 bytes, _v2 36 (version 0x02000024),
    # _v3 40 (version 0x03000028), nvmlProcessInfo_t 24
    from envdoctor.probes.nvml import HEADER_SIZES

    assert sorted(HEADER_SIZES.values()) == [24, 28, 36, 40]
    for cls, size in HEADER_SIZES.items():
        assert ctypes.sizeof(cls) == size, cls.__name__
    assert nvml_probe._struct_version(nvml_probe._FabricInfoV2, 2) == 0x02000024
    assert nvml_probe._struct_version(nvml_probe._FabricInfoV3, 3) == 0x03000028


@pytest.mark.parametrize("state,expect", [(1, "not_started"), (3, "completed")])
def test_r535_fabric_state_is_read_at_the_header_offsets(state, expect):
    # R535 has only nvmlDeviceGetGpuFabricInfo (28 bytes written). Read through a 12.x binding's own
    # c_nvmlGpuFabricInfo_t (80-byte clusterUuid) the state came from zeros: "not_supported" on every box
    lib = FakeNvmlLib([h100_sxm(i, **fabric(state)) for i in range(2)], driver="535.183.01",
                      missing=MISSING_BY_DRIVER["535"])
    d = _probe(lib)
    assert [(g.fabric_state, g.fabric_status) for g in d.gpus] == [(expect, "SUCCESS")] * 2
    assert [w[:2] for w in lib.fabric_writes] == [("nvmlDeviceGetGpuFabricInfo", None)] * 2
    assert all(w[2] == 28 for w in lib.fabric_writes)  # the struct envdoctor passed is the header's size


def test_container_on_r535_with_a_fabric_that_never_started_is_an_error_not_info(tmp_path):
    lib = FakeNvmlLib([h100_sxm(i, **fabric(1)) for i in range(8)], driver="535.183.01",
                      missing=MISSING_BY_DRIVER["535"])
    host = Host(status="ok", os="Linux", container=Container(runtime="docker", gpu_device_nodes=["/dev/nvidia0"]))
    with installed(lib) as nv:
        d = probe_driver(NO_SMI, nvml=nv, root=tmp_path)
    got = [(f.code, f.severity) for f in _findings(d, host) if f.code.startswith("interconnect.fabric")]
    assert got == [("interconnect.fabric-manager/not-ready", Severity.ERROR)]


def test_r550_refuses_the_v3_struct_and_the_probe_falls_back_to_v2():
    lib = FakeNvmlLib([h100_sxm(0, **fabric(3, health_mask=0x1))], driver="550.54.15")
    assert lib.fabric_versions == {2}
    d = _probe(lib)
    assert (d.gpus[0].fabric_state, d.gpus[0].fabric_status) == ("completed", "SUCCESS")
    assert lib.called.count("nvmlDeviceGetGpuFabricInfoV") == 2  # v3: ARGUMENT_VERSION_MISMATCH, then v2
    assert [w[1:] for w in lib.fabric_writes] == [(2, 36, 36)]
    assert d.gpus[0].notes is None


def test_r570_takes_the_v3_struct():
    lib = FakeNvmlLib([h100_sxm(0, **fabric(2))], driver="570.86.15")
    d = _probe(lib)
    assert d.gpus[0].fabric_state == "in_progress"
    assert [w[1:] for w in lib.fabric_writes] == [(3, 40, 40)]


def test_a_v_call_that_refuses_every_version_falls_back_to_the_v1_call():
    lib = FakeNvmlLib([h100_sxm(0, **fabric(3))], driver="570.86.15", fabric_versions=set())
    d = _probe(lib)
    assert d.gpus[0].fabric_state == "completed"
    assert [w[:2] for w in lib.fabric_writes] == [("nvmlDeviceGetGpuFabricInfo", None)]


def test_fabric_status_error_is_kept():
    lib = FakeNvmlLib([h100_sxm(0, **fabric(3, status=999))], driver="570.86.15")
    assert _probe(lib).gpus[0].fabric_status == "UNKNOWN"


# --------------------------------------------------------------------------- processes


def test_process_entries_are_read_at_24_byte_strides():
    # nvidia-ml-py 12.535.77 declared nvmlProcessInfo_t with an extra field: the second and later PIDs were
    # garbage. envdoctor's own 24-byte struct reads every entry.
    procs = [(1111, 1 * GIB), (2222, 2 * GIB), (3333, 3 * GIB, 1, 0)]
    lib = FakeNvmlLib([h100_sxm(0, nvmlDeviceGetComputeRunningProcesses=procs)], processes={1111: "a", 2222: "b"})
    g = _probe(lib, host_pids=False).gpus[0]
    assert [(p.pid, p.used_memory_bytes, p.type, p.name) for p in g.processes] == [
        (1111, GIB, "C", "a"), (2222, 2 * GIB, "C", "b"), (3333, 3 * GIB, "C", None)]


def test_desktop_rtx4090_with_3_gib_held_by_xorg_is_not_memory_held():
    gpu = rtx4090(0, nvmlDeviceGetGraphicsRunningProcesses=[(1750, 3 * GIB)],
                  nvmlDeviceGetMemoryInfo={"total": 24 * GIB, "used": 3 * GIB + (300 << 20), "free": 20 * GIB})
    lib = FakeNvmlLib([gpu], processes={1750: "/usr/lib/xorg/Xorg"})
    d = _probe(lib, host_pids=False)
    assert [(p.pid, p.name, p.type) for p in d.gpus[0].processes] == [(1750, "/usr/lib/xorg/Xorg", "G")]
    codes = [f.code for f in _findings(d) if f.severity != Severity.INFO]
    assert not [c for c in codes if c.startswith("gpu.busy")], codes


def test_a_process_in_both_lists_is_one_c_plus_g_entry():
    gpu = rtx4090(0, nvmlDeviceGetGraphicsRunningProcesses=[(77, 100 << 20)],
                  nvmlDeviceGetComputeRunningProcesses=[(77, 200 << 20)])
    g = _probe(FakeNvmlLib([gpu])).gpus[0]
    assert [(p.pid, p.type, p.used_memory_bytes) for p in g.processes] == [(77, "C+G", 200 << 20)]


def test_host_pids_in_a_container_are_kept_unnamed_and_said_to_be_the_hosts():
    lib = FakeNvmlLib([h100_sxm(0, nvmlDeviceGetComputeRunningProcesses=[(812345, GIB)])],
                      processes={812345: "the wrong process"})
    g = _probe(lib, host_pids=True, own=lambda pid: True).gpus[0]
    assert [(p.pid, p.name) for p in g.processes] == [(812345, None)]
    assert "nvmlSystemGetProcessName" not in lib.called
    assert any("PIDs are the host's" in n for n in g.notes)


class _PayloadAfterList(FakeNvmlLib):
    """A container: the payload (host PID 900001) holds a CUDA context once it has started."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.payload_started = threading.Event()

    def _processes(self, handle, count, array, name):
        if self.payload_started.is_set() and "Compute" in name:
            self._gpu(handle).data[name] = [(900001, 500 << 20)]
        return super()._processes(handle, count, array, name)


def test_container_with_host_pids_gets_no_warning_about_envdoctors_own_payload():
    lib = _PayloadAfterList([h100_sxm(i) for i in range(2)], processes={900001: "python3"})

    def payload():  # what probes/python_env.execute_payload does before it runs the inspect payload
        nvml_probe.wait_for_process_lists()
        lib.payload_started.set()

    nvml_probe.hold_process_lists()  # what collect() does before it starts the probes
    t = threading.Thread(target=payload)
    t.start()
    time.sleep(0.05)
    assert not lib.payload_started.is_set()  # the payload waits for the lists
    d = _probe(lib, host_pids=True)
    t.join(5)
    assert lib.payload_started.is_set()
    assert all(g.processes == [] for g in d.gpus)
    assert [f.code for f in _findings(d) if f.code.startswith("gpu.busy")] == []


def test_the_gate_opens_even_when_nvml_init_fails():
    nvml_probe.hold_process_lists()
    _probe(FakeNvmlLib([], init_error="DRIVER_NOT_LOADED"))
    assert nvml_probe.wait_for_process_lists(0)


def test_wsl2_memory_held_by_windows_is_info_worded_for_what_it_is():
    # under WSL2 NVML lists no process; the Windows desktop holds the memory
    gpu = rtx4090(0, nvmlDeviceGetMemoryInfo={"total": 24 * GIB, "used": 3 * GIB, "free": 21 * GIB},
                  nvmlDeviceGetUtilizationRates={"gpu": 60, "memory": 10})
    d = _probe(FakeNvmlLib([gpu]), host_pids=False)
    host = Host(status="ok", os="Linux", wsl=True, wsl_version=2)
    got = [(f.code, f.severity) for f in _findings(d, host) if f.code.startswith("gpu.busy")]
    assert got == [("gpu.busy/windows-memory", Severity.INFO)]
    # the same GPU on Linux with no process listed is memory held by someone unseen
    got = [(f.code, f.severity) for f in _findings(d) if f.code.startswith("gpu.busy")]
    assert ("gpu.busy/memory-held", Severity.WARNING) in got


def test_mig_gpu_is_judged_on_its_slices_not_the_parent_aggregate():
    # the parent of MIG slices reports every tenant's memory and processes: not this job's slice
    gpu = h100_sxm(0, nvmlDeviceGetMigMode=(1, 1), nvmlDeviceGetMaxMigDeviceCount=7,
                   nvmlDeviceGetMemoryInfo={"total": 80 * GIB, "used": 40 * GIB, "free": 40 * GIB},
                   nvmlDeviceGetComputeRunningProcesses=[(5001, 20 * GIB, 1, 0)])
    d = _probe(FakeNvmlLib([gpu]), host_pids=False)
    assert d.gpus[0].mig_mode_current is True
    busy = [(f.code, f.severity) for f in _findings(d) if f.code.startswith("gpu.busy")]
    assert busy == [("gpu.busy/mig-processes", Severity.INFO)]


@pytest.mark.parametrize("driver,field", [("470.256.02", "clocks_throttle_reasons.hw_slowdown"),
                                          ("535.183.01", "clocks_event_reasons.hw_slowdown"),
                                          ("570.86.15", "clocks_event_reasons.hw_slowdown")])
def test_throttle_fix_commands_use_the_query_field_this_nvidia_smi_knows(driver, field):
    # nvidia-smi before R535 knows only clocks_throttle_reasons.*; R535 renamed them clocks_event_reasons.*
    from tests.fakes.nvml_lib import a100_sxm

    gen = driver.split(".")[0]
    lib = FakeNvmlLib([a100_sxm(0, nvmlDeviceGetCurrentClocksEventReasons=0x8,
                                nvmlDeviceGetCurrentClocksThrottleReasons=0x8)], driver=driver,
                      missing=MISSING_BY_DRIVER.get(gen, set()))
    d = _probe(lib, host_pids=False)
    seen = [f for f in _findings(d) if f.code == "gpu.throttle/hw-slowdown-seen"]
    assert len(seen) == 1 and field in seen[0].fix.commands[0], seen[0].fix.commands


def _license_features(supported: int, states):
    """nvmlDeviceGetGridLicensableFeatures_v4 writing the nvml.h layout (featureState at 12 + 284 * i)."""
    import struct as st

    def write(gpu, args):
        image = bytearray(8 + 284 * 3)
        st.pack_into("<iI", image, 0, supported, len(states))
        for i, state in enumerate(states):
            st.pack_into("<II", image, 8 + 284 * i, 1, state)
        ctypes.memmove(ctypes.addressof(args[1]._obj), bytes(image), len(image))
        return 0
    return write


@pytest.mark.parametrize("states,expect", [([0], "unlicensed"), ([1], "licensed"), ([0, 1], "licensed")])
def test_vgpu_license_state_is_read_and_an_unlicensed_vgpu_is_reported(states, expect):
    gpu = h100_sxm(0, nvmlDeviceGetName="GRID A100-40C", nvmlDeviceGetVirtualizationMode=2,
                   nvmlDeviceGetGridLicensableFeatures_v4=_license_features(1, states))
    d = _probe(FakeNvmlLib([gpu]), host_pids=False)
    assert (d.gpus[0].virtualization_mode, d.gpus[0].vgpu_license) == ("vgpu", expect)
    got = [(f.code, f.severity) for f in _findings(d) if f.code.startswith("gpu.vgpu-license")]
    assert got == ([("gpu.vgpu-license/unlicensed", Severity.WARNING)] if expect == "unlicensed" else [])


def test_nvidia_smi_xml_reads_virtualization_mode_and_license_like_nvml():
    from envdoctor.parsers.nvidia_smi_xml import parse_nvidia_smi_xml
    from tests.paths import TESTS

    xml = TESTS / "fixtures" / "nvidia-smi-xml"
    modes = {name: [(g.virtualization_mode, g.vgpu_license) for g in
                    parse_nvidia_smi_xml((xml / name).read_text(encoding="utf-8")).gpus]
             for name in ("grid-p4-1q-vgpu_windows_513.46.xml", "a10g_515.105.01.xml",
                          "a100-sxm4-80gb_535.54.03.xml")}
    assert modes["grid-p4-1q-vgpu_windows_513.46.xml"] == [("vgpu", "licensed")]
    assert modes["a10g_515.105.01.xml"] == [("passthrough", None)]
    assert modes["a100-sxm4-80gb_535.54.03.xml"] == [("none", None)]  # "None" is a mode, not a missing value
