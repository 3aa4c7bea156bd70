"""Driver probe: NVML through the real bindings over FakeNvmlLib, nvidia-smi fallback through FakeRunner, procfs under a temp root."""

from __future__ import annotations

from pathlib import Path

from envdoctor.model.facts import Facts, ProbeStatus
from envdoctor.probes.driver import probe_driver, probe_topology
from envdoctor.probes.nvml import probe_nvml
from envdoctor.probes.runner import Runner
from tests.fakes.nvml_lib import ERR, MISSING_BY_DRIVER, FakeNvmlLib, h100_sxm, installed, nvlinks
from tests.fakes.runner import FakeRunner, RecordingRunner
from tests.paths import FIXTURES

FIX = FIXTURES
XML = ("nvidia-smi", "-q", "-x")
TOPO = ("nvidia-smi", "topo", "-m")


def no_smi() -> FakeRunner:
    return FakeRunner({XML: FakeRunner.NOT_FOUND})


def make_root(tmp_path: Path, module: str = "550.54.14", fabric: bool = False, switches: int = 0) -> str:
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(
        f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {module}  Thu Feb 22 01:44:30 UTC 2024\n"
    )
    (tmp_path / "dev").mkdir()
    for n in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "null"):
        (tmp_path / "dev" / n).write_text("")
    (tmp_path / "proc/1").mkdir()
    (tmp_path / "proc/1/comm").write_text("systemd\n")
    if fabric:
        (tmp_path / "proc/733").mkdir()
        # what the kernel writes: comm keeps 15 characters (TASK_COMM_LEN 16 with the NUL)
        (tmp_path / "proc/733/comm").write_text("nv-fabricmanage\n")
    if switches:
        d = tmp_path / "proc/driver/nvidia-nvswitch/devices"
        d.mkdir(parents=True)
        for i in range(switches):
            (d / f"0000:0{i}:00.0").mkdir()
    return str(tmp_path)


# --------------------------------------------------------------------------- this machine, for real


def test_real_machine_without_driver_is_absent_without_waiting():
    runner = RecordingRunner()
    d = probe_driver(runner)
    if d.status == ProbeStatus.OK:  # pragma: no cover - only on a GPU machine
        assert d.gpus and d.version
        return
    # "absent" is decided from NVML and at most one nvidia-smi call that answered (or was not found),
    # never by waiting for a timeout: asserted on the commands run, not on a stopwatch
    assert [argv for argv, _, _ in runner.calls] in ([], [XML])
    assert not any(res.timed_out for _, _, res in runner.calls)
    assert d.status == ProbeStatus.ABSENT
    assert d.nvml_error in ("LIBRARY_NOT_FOUND", "DRIVER_NOT_LOADED")
    assert "no NVIDIA driver" in d.reason or "not loaded" in d.reason
    assert d.gpus == []


def test_real_topology_without_nvidia_smi_is_absent():
    t = probe_topology(Runner())
    if t.status != ProbeStatus.OK:
        assert t.status == ProbeStatus.ABSENT and "nvidia-smi" in t.reason


# --------------------------------------------------------------------------- NVML through the fake library


def _probe_driver(runner, lib: FakeNvmlLib, root: str):
    """probe_driver with the real pynvml bindings calling ``lib`` (tests/fakes/nvml_lib.py, the one NVML fake)."""
    with installed(lib) as nv:
        return probe_driver(runner, nvml=nv, root=root)


def _probe(lib: FakeNvmlLib):
    with installed(lib) as nv:
        return probe_nvml(nv)


def test_nvml_two_gpus(tmp_path):
    lib = FakeNvmlLib([h100_sxm(0), h100_sxm(1)], driver="550.54.14")
    d = _probe_driver(no_smi(), lib, make_root(tmp_path, fabric=True, switches=4))
    assert (d.status, d.source, d.version, d.cuda_driver_version) == ("ok", "nvml", "550.54.14", "12.4")
    assert d.nvml_error is None and "nvmlShutdown" in lib.called
    assert [g.pci_bus_id for g in d.gpus] == ["00000000:18:00.0", "00000000:28:00.0"]
    g = d.gpus[0]
    assert g.name == "NVIDIA H100 80GB HBM3" and g.architecture == "Hopper" and g.compute_capability == "9.0"
    assert g.pci_device_id == "0x233010DE"
    assert (g.pcie_gen_current, g.pcie_gen_max, g.pcie_gen_device_max, g.pcie_width_current) == (5, 5, 5, 16)
    assert g.persistence_mode is True and g.mig_mode_current is None and g.compute_mode == "Default"
    assert g.ecc_mode_current is True and g.ecc_aggregate_corrected == 3 and g.ecc_volatile_uncorrected == 0
    assert (g.retired_pages_single_bit, g.retired_pages_double_bit, g.retired_pages_pending) == (0, 0, False)
    assert g.remapped_rows_pending is False and g.inforom_valid is True
    assert (g.power_draw_w, g.power_limit_w, g.power_min_limit_w, g.power_max_limit_w) == (71.97, 700.0, 200.0, 700.0)
    assert (g.temperature_c, g.temperature_slowdown_c, g.temperature_shutdown_c) == (31, 89, 92)
    assert g.throttle_reasons == ["gpu_idle"] and g.performance_state == "P0"
    assert g.clocks_sm_max_mhz == 1980 and g.clocks_sm_app_mhz == 1755
    assert len(g.nvlinks) == 18 and all(ln.active for ln in g.nvlinks)
    assert g.fan_speed_pct is None and g.notes is None  # NotSupported is silent
    # procfs / devfs facts
    assert d.kernel_module_version == "550.54.14"
    assert d.device_nodes == ["/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl"]
    assert d.fabric_manager_running is True and d.nvswitch_count == 4
    # the snapshot round-trips
    facts = Facts(driver=d)
    assert Facts.from_json(facts.to_json()).driver == d


def test_nvml_not_supported_fields_become_none():
    nope = ERR("NOT_SUPPORTED")
    gpu = h100_sxm(0, nvmlDeviceGetPowerUsage=nope, nvmlDeviceGetEccMode=nope, nvmlDeviceGetRemappedRows=nope,
                   nvmlDeviceGetCurrentClocksEventReasons=nope, nvmlDeviceGetCurrentClocksThrottleReasons=nope,
                   nvmlDeviceGetGpuMaxPcieLinkGeneration=nope, nvmlDeviceValidateInforom=nope,
                   **nvlinks(0))  # a PCIe card: NotSupported on link 0
    d = _probe(FakeNvmlLib([gpu]))
    (g,) = d.gpus
    assert d.status == ProbeStatus.OK
    assert g.power_draw_w is None and g.power_limit_w == 700.0
    assert g.ecc_mode_current is None and g.ecc_aggregate_corrected is None
    assert g.remapped_rows_pending is None and g.throttle_reasons is None
    assert g.pcie_gen_device_max is None and g.pcie_gen_current == 5
    assert g.inforom_valid is None
    assert g.nvlinks == []
    assert g.name == "NVIDIA H100 80GB HBM3" and g.notes is None


def test_nvml_inactive_link_and_corrupted_inforom():
    links = nvlinks(12)
    links["nvmlDeviceGetNvLinkState"][3] = 0
    (g,) = _probe(FakeNvmlLib([h100_sxm(0, nvmlDeviceValidateInforom=ERR("CORRUPTED_INFOROM"), **links)])).gpus
    assert len(g.nvlinks) == 12 and [ln.link for ln in g.nvlinks if not ln.active] == [3]
    assert g.inforom_valid is False


def test_nvml_gpu_lost_at_once_keeps_the_others():
    gpus = [h100_sxm(0), h100_sxm(1), h100_sxm(2)]
    gpus[1].lost_after = 0  # not one answer
    d = _probe(FakeNvmlLib(gpus))
    assert d.status == ProbeStatus.OK and len(d.gpus) == 3
    assert d.gpus[1].nvml_error == "GPU_IS_LOST" and d.gpus[1].name is None
    assert d.gpus[0].nvml_error is None and d.gpus[2].name == "NVIDIA H100 80GB HBM3"
    assert "GPU 1 did not answer (GPU_IS_LOST)" in d.reason


def test_nvml_gpu_lost_mid_read_stops_asking_that_gpu():
    lib = FakeNvmlLib([h100_sxm(0, nvmlDeviceGetMemoryInfo=ERR("GPU_IS_LOST"))])
    (g,) = _probe(lib).gpus
    assert g.nvml_error == "GPU_IS_LOST" and g.memory_total_bytes is None
    assert g.notes == ["memory: NVML GPU_IS_LOST"]
    assert g.name is None  # asked after memory: not asked at all
    assert "nvmlDeviceGetPowerUsage" not in lib.called


def test_nvml_zero_devices_is_ok_and_empty():
    d = _probe(FakeNvmlLib([], driver="550.54.14"))
    assert d.status == ProbeStatus.OK and d.gpus == [] and d.version == "550.54.14"


def test_nvml_old_driver_throttle_reasons():
    # before R535 the library has no ...ClocksEventReasons symbol: the ...ThrottleReasons call answers
    gpu = h100_sxm(0, nvmlDeviceGetCurrentClocksThrottleReasons=0x4 | 0x80)
    (g,) = _probe(FakeNvmlLib([gpu], driver="470.256.02", missing=MISSING_BY_DRIVER["470"])).gpus
    assert g.throttle_reasons == ["sw_power_cap", "hw_power_brake_slowdown"]


def test_nvml_init_errors_mapped():
    lib = _probe(FakeNvmlLib([], init_error="LIBRARY_NOT_FOUND"))
    assert lib.status == ProbeStatus.ABSENT and lib.nvml_error == "LIBRARY_NOT_FOUND"
    assert lib.reason == "NVML library (libnvidia-ml.so.1) not found: no NVIDIA driver installed"
    assert _probe(FakeNvmlLib([], init_error="DRIVER_NOT_LOADED")).status == ProbeStatus.ABSENT
    perm = _probe(FakeNvmlLib([], init_error="NO_PERMISSION"))
    assert (perm.status, perm.nvml_error) == (ProbeStatus.FAILED, "NO_PERMISSION")
    unk = _probe(FakeNvmlLib([], init_error="UNKNOWN"))
    assert unk.status == ProbeStatus.FAILED and "UNKNOWN" in unk.reason


def test_lib_rm_version_mismatch_with_failing_nvidia_smi(tmp_path):
    runner = FakeRunner({XML: (18, "Failed to initialize NVML: Driver/library version mismatch\n", "")})
    d = _probe_driver(runner, FakeNvmlLib([], init_error="LIB_RM_VERSION_MISMATCH"), make_root(tmp_path, module="550.54.14"))
    assert d.status == ProbeStatus.FAILED and d.nvml_error == "LIB_RM_VERSION_MISMATCH"
    assert d.nvidia_smi_error == "Failed to initialize NVML: Driver/library version mismatch"
    assert "exited 18" in d.reason and d.kernel_module_version == "550.54.14"


def test_nvml_unusable_falls_back_to_nvidia_smi_xml(tmp_path):
    xml = (FIX / "nvidia-smi-xml/a100-sxm4-80gb_535.54.03.xml").read_text()
    runner = FakeRunner({XML: xml})
    d = _probe_driver(runner, FakeNvmlLib([], init_error="NO_PERMISSION"), make_root(tmp_path, module="535.54.03"))
    assert d.status == ProbeStatus.OK and d.source == "nvidia-smi-xml"
    assert d.nvml_error == "NO_PERMISSION" and "NVML unusable: NO_PERMISSION" in d.reason
    assert d.version == "535.54.03" == d.kernel_module_version
    assert d.gpus[0].name == "NVIDIA A100-SXM4-80GB" and d.gpus[0].mig_device_count == 4
    assert runner.calls == [XML]


def test_nvidia_smi_timeout_is_failed_with_reason():
    d = _probe_driver(FakeRunner({XML: FakeRunner.TIMEOUT}), FakeNvmlLib([], init_error="UNKNOWN"), "/nonexistent")
    assert d.status == ProbeStatus.FAILED
    assert "timed out after 10 s" in d.reason and "nvidia-smi -q -x" in d.reason
    assert d.kernel_module_version is None and d.device_nodes is None and d.fabric_manager_running is None


def test_no_driver_anywhere_stays_absent(tmp_path):
    d = _probe_driver(no_smi(), FakeNvmlLib([], init_error="LIBRARY_NOT_FOUND"), str(tmp_path))
    assert d.status == ProbeStatus.ABSENT and d.nvml_error == "LIBRARY_NOT_FOUND"
    assert d.device_nodes is None and d.fabric_manager_running is None and d.nvswitch_count is None
    assert d.reason == "NVML library (libnvidia-ml.so.1) not found: no NVIDIA driver installed"


def test_probe_never_raises_on_a_broken_binding():
    class Broken(FakeNvmlLib):
        def _c_nvmlDeviceGetCount_v2(self, out):
            raise RuntimeError("binding bug")

    d = _probe_driver(no_smi(), Broken([h100_sxm(0)]), "/nonexistent")
    assert d.status == ProbeStatus.FAILED and "RuntimeError: binding bug" in d.reason


def test_topology_from_nvidia_smi():
    text = (FIX / "topo/rtx-6000-ada-x4_pcie-sys-node-pix_nics.txt").read_text()
    t = probe_topology(FakeRunner({TOPO: text}))
    assert t.status == ProbeStatus.OK and t.gpu_matrix[0] == ["X", "NODE", "SYS", "SYS"]
    assert probe_topology(FakeRunner({TOPO: FakeRunner.NOT_FOUND})).status == ProbeStatus.ABSENT
    timed_out = probe_topology(FakeRunner({TOPO: FakeRunner.TIMEOUT}))
    assert timed_out.status == ProbeStatus.FAILED and "timed out" in timed_out.reason


def test_without_pynvml_and_nothing_else_is_absent(tmp_path, monkeypatch):
    import envdoctor.probes.nvml as nvml_mod

    def no_pynvml():
        raise ImportError("No module named 'pynvml'")

    monkeypatch.setattr(nvml_mod, "_import_pynvml", no_pynvml)
    monkeypatch.setattr(nvml_mod, "_pynvml_findable", lambda: False)
    d = probe_driver(no_smi(), root=str(tmp_path))
    assert d.status == ProbeStatus.ABSENT and "pynvml" in d.reason and "no /proc/driver/nvidia" in d.reason
    # with the kernel module loaded, "we could not ask" is not "absent"
    d = probe_driver(no_smi(), root=make_root(tmp_path / "m"))
    assert d.status == ProbeStatus.UNSUPPORTED and d.kernel_module_version == "550.54.14"


def test_unparseable_xml_falls_back_to_the_query_csv(tmp_path):
    """The CSV fallback the README promises: nvidia-smi answered -q -x with XML it cannot parse; the real H200
    --query-gpu capture (tests/fixtures/SOURCES.md) gives the driver and the GPU."""
    from envdoctor.probes.nvidia_smi import CSV_ARGV

    csv = (FIX / "nvidia-smi-query/h200_590.48.01_idle_query-gpu.csv").read_text()
    runner = FakeRunner({XML: "<nvidia_smi_log><gpu>", CSV_ARGV: csv})
    d = _probe_driver(runner, FakeNvmlLib([], init_error="NO_PERMISSION"), make_root(tmp_path, module="590.48.01"))
    assert d.status == ProbeStatus.OK and d.source == "nvidia-smi-csv"
    assert d.version == "590.48.01" == d.kernel_module_version
    assert "nvidia-smi XML does not parse" in d.reason and "NVML unusable: NO_PERMISSION" in d.reason
    (g,) = d.gpus
    assert g.name == "NVIDIA H200" and g.pci_bus_id == "00000000:83:00.0" and g.compute_capability == "9.0"
    assert runner.calls == [XML, CSV_ARGV]


def test_failed_csv_fallback_keeps_the_xml_failure(tmp_path):
    from envdoctor.probes.nvidia_smi import CSV_ARGV

    runner = FakeRunner({XML: "not xml", CSV_ARGV: (6, "", "Field \"x\" is not a valid field to query.\n")})
    d = _probe_driver(runner, FakeNvmlLib([], init_error="UNKNOWN"), str(tmp_path))
    assert d.status == ProbeStatus.FAILED and d.source == "nvml"  # NVML failed first; both reasons kept
    assert "nvidia-smi XML does not parse" in d.reason and "CSV fallback:" in d.reason and "exited 6" in d.reason


def test_without_the_nvml_library_pynvml_is_not_imported(monkeypatch):
    """No libnvidia-ml.so.1 (no driver): the answer NVML would give (LIBRARY_NOT_FOUND, absent), without
    importing pynvml; with the library there, pynvml is imported and asked as before."""
    import envdoctor.probes.nvml as nvml_mod

    imported = []
    with installed(FakeNvmlLib([])) as nv:
        monkeypatch.setattr(nvml_mod, "_import_pynvml", lambda: imported.append(1) or nv)
        monkeypatch.setattr(nvml_mod, "_pynvml_findable", lambda: True)
        monkeypatch.setattr(nvml_mod, "_no_library", lambda: True)
        d = nvml_mod.probe_nvml()
        assert (d.status, d.nvml_error, imported) == (ProbeStatus.ABSENT, "LIBRARY_NOT_FOUND", [])
        assert d.reason == nvml_mod._INIT_ERRORS["LIBRARY_NOT_FOUND"][1]
        monkeypatch.setattr(nvml_mod, "_no_library", lambda: False)
        monkeypatch.setattr(nvml_mod, "binding_problem", lambda _m: None)
        nvml_mod.probe_nvml()
    assert imported == [1]
