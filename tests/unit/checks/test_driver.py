"""driver's checks (driver.hardware, driver.present, driver.library-match, driver.gpus-visible) judged on
machine snapshots: a passing, a failing and a skipped case each."""

from __future__ import annotations

from dataclasses import replace

from envdoctor.model.facts import Driver, ProbeStatus, Topology
from envdoctor.model.findings import CheckStatus, Severity
from envdoctor.services.collect import judge
from tests import machines as m
from tests.unit.checks.judged import problems, result


def test_no_driver_on_a_cpu_box_is_info_only():
    report = judge(m.cpu_torch_cuda_vision())
    (f,) = [x for x in report.findings if x.about == "NO_NVIDIA_DRIVER"]
    assert (f.severity, f.category) == (Severity.INFO, "NOTE")


def test_no_driver_with_nvcc_is_an_error():
    f = m.with_nvcc(replace(m.cpu_torch_cuda_vision(), pythons=[]), "13.0", "13.0.88")
    found = problems(f)
    assert found["NO_NVIDIA_DRIVER"].severity == Severity.ERROR
    assert any(e.path == "toolkits.on_path.version" for e in found["NO_NVIDIA_DRIVER"].evidence)


def test_library_mismatch_from_nvml_and_from_proc():
    base = m.healthy_a100()
    f = replace(base, driver=Driver(status=ProbeStatus.FAILED, reason="Driver/library version mismatch",
                                    nvml_error="LIB_RM_VERSION_MISMATCH", kernel_module_version="550.54.15",
                                    version="550.90.07"))
    x = problems(f)["DRIVER_LIBRARY_MISMATCH"]
    assert "550.54.15" in x.summary and "550.90.07" in x.summary
    assert result(base, "driver.library-match").status == CheckStatus.PASSED


# --------------------------------------------------------------------------- each check: passing, failing, skipped

NO_HARDWARE = replace(m.cpu_torch_cuda_vision(), topology=Topology(status=ProbeStatus.OK, nvidia_pci_devices=[]))


def test_hardware_expected_but_absent_fails_present_passes_and_unread_pci_bus_skips():
    res = result(NO_HARDWARE, "driver.hardware", expect_gpu=True)
    (f,) = res.findings
    assert (res.status, f.code, f.category, f.severity) == (CheckStatus.FAILED, "driver.hardware/none-expected",
                                                            "NO_GPU_VISIBLE", Severity.ERROR)
    assert f.summary.startswith("GPUs are expected here, but this machine has no NVIDIA hardware")
    assert [(e.path, e.value) for e in f.evidence] == [("topology.nvidia_pci_devices", [])]
    # without --expect-gpu the same machine is a healthy CPU box: a note, and the check passes
    calm = result(NO_HARDWARE, "driver.hardware")
    assert calm.status == CheckStatus.PASSED and [(x.code, x.category, x.severity) for x in calm.findings] == [
        ("driver.hardware/none", "HEALTHY", Severity.INFO)]
    assert (result(m.driverless_a100(), "driver.hardware").status, result(m.driverless_a100(), "driver.hardware").findings) \
        == (CheckStatus.PASSED, [])
    skipped = result(m.cpu_torch_cuda_vision(), "driver.hardware")  # /sys/bus/pci/devices not read
    assert skipped.status == CheckStatus.SKIPPED and "/sys/bus/pci/devices was not read" in skipped.reason


def test_driver_absent_beside_nvidia_hardware_is_the_whole_error():
    res = result(m.driverless_a100(), "driver.present")
    (f,) = res.findings
    assert (res.status, f.code, f.category, f.severity) == (CheckStatus.FAILED, "driver.present/absent",
                                                            "NO_NVIDIA_DRIVER", Severity.ERROR)
    assert f.summary == ("No NVIDIA driver found: NVML library (libnvidia-ml.so.1) not found; this is why torch "
                         "2.5.1+cu121 (CUDA 12.1) reports CUDA unavailable")
    assert [(e.path, e.value) for e in f.evidence] == [
        ("driver.status", "absent"), ("driver.reason", "NVML library (libnvidia-ml.so.1) not found"),
        ("pythons[0].torch.cuda_init_error", "Found no NVIDIA driver on your system.")]
    assert result(m.healthy_a100(), "driver.present").status == CheckStatus.PASSED
    failed = replace(m.healthy_a100(), driver=Driver(status=ProbeStatus.FAILED, reason="nvidia-smi timed out"))
    skipped = result(failed, "driver.present")
    assert (skipped.status, skipped.reason) == (CheckStatus.SKIPPED,
                                                "driver state unknown (probe failed: nvidia-smi timed out)")


def test_library_mismatch_whole_finding_and_nothing_to_compare_skips():
    f = replace(m.healthy_a100(), driver=Driver(status=ProbeStatus.FAILED, reason="Driver/library version mismatch",
                                                nvml_error="LIB_RM_VERSION_MISMATCH",
                                                kernel_module_version="550.54.15", version="550.90.07"))
    (x,) = result(f, "driver.library-match").findings
    assert (x.code, x.category, x.severity) == ("driver.library-match/mismatch", "DRIVER_LIBRARY_MISMATCH",
                                                Severity.ERROR)
    assert x.summary == ("NVIDIA driver and library versions do not match (kernel module 550.54.15, libraries "
                         "550.90.07)")
    assert [(e.path, e.value) for e in x.evidence] == [("driver.nvml_error", "LIB_RM_VERSION_MISMATCH"),
                                                       ("driver.kernel_module_version", "550.54.15")]
    skipped = result(m.driverless_a100(), "driver.library-match")
    assert skipped.status == CheckStatus.SKIPPED and skipped.reason.startswith("nothing to compare: driver absent")


def test_a_driver_that_reports_no_gpu_fails_one_that_lists_them_passes_and_no_driver_skips():
    base = m.healthy_a100()
    res = result(replace(base, driver=replace(base.driver, gpus=[])), "driver.gpus-visible")
    (f,) = res.findings
    assert (res.status, f.code, f.category, f.severity) == (CheckStatus.FAILED, "driver.gpus-visible/none",
                                                            "NO_GPU_VISIBLE", Severity.ERROR)
    assert f.summary == "Driver 550.54.15 is loaded but reports no GPU"
    assert [(e.path, e.value) for e in f.evidence] == [("driver.gpus", [])]
    assert (result(base, "driver.gpus-visible").status, result(base, "driver.gpus-visible").findings) == (
        CheckStatus.PASSED, [])
    skipped = result(m.driverless_a100(), "driver.gpus-visible")
    assert skipped.status == CheckStatus.SKIPPED and skipped.reason.startswith("driver not usable (probe absent")
