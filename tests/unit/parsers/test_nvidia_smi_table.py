"""The default nvidia-smi table parser, on every real table in tests/fixtures/pastes/nvidia-smi-table/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envdoctor.parsers.nvidia_smi_table import parse_nvidia_smi_table
from tests.paths import FIXTURES

TABLES = sorted((FIXTURES / "pastes" / "nvidia-smi-table").glob("*.txt"))


@pytest.mark.parametrize("path", TABLES, ids=[p.stem for p in TABLES])
def test_every_real_table(path: Path) -> None:
    t = parse_nvidia_smi_table(path.read_text())
    assert t is not None
    driver = re.search(r"_(\d{3}\.\d+(?:\.\d+)?)", path.stem).group(1)
    assert t.driver_version == driver
    assert t.cuda_version and re.match(r"^\d+\.\d+$", t.cuda_version)
    assert t.gpus, "at least one GPU row"
    for g in t.gpus:
        assert g.name and g.pci_bus_id
        assert g.memory_total_bytes and g.memory_total_bytes > 1024 ** 3
    assert [g.index for g in t.gpus] == list(range(len(t.gpus)))


def test_counts_and_details() -> None:
    by = {p.stem: parse_nvidia_smi_table(p.read_text()) for p in TABLES}
    assert len(by["h100-x8_550.90.07"].gpus) == 8
    assert len(by["rtx-a6000-x9_550.127.05"].gpus) == 9
    win = by["rtx-2080-super_windows_610.62_load"]
    assert win.windows and win.driver_version == "610.62" and win.cuda_version == "13.3"
    assert len(win.gpus[0].processes) > 5
    mig = by["h100-mig_590.48.01_load"]
    assert mig.gpus[0].mig_mode_current is True and len(mig.gpus[0].processes) == 3
    err = by["geforce-24gb_525.125.06_fan-err"].gpus[0]
    assert err.compute_mode == "Exclusive_Process" and "fan speed: ERR!" in err.notes
    bad = by["v100-sxm2-x8_460.32.03_inforom-corrupted"].gpus
    assert [g.inforom_valid for g in bad].count(False) == 1 and bad[7].inforom_valid is False


def test_mig_devices_table_of_a_real_h100_capture() -> None:
    # the H100 in MIG mode (utkuozdemir/nvidia_gpu_exporter capture): a 3g, a 2g and two 1g slices, each with its
    # own SMs and memory; the processes below the MIG table still belong to the GPU
    g = parse_nvidia_smi_table((FIXTURES / "pastes" / "nvidia-smi-table" / "h100-mig_590.48.01_load.txt")
                               .read_text()).gpus[0]
    assert g.mig_device_count == 4
    assert [(m.index, m.gpu_instance_id, m.compute_instance_id, m.sm_count) for m in g.mig_devices] == [
        (0, 2, 0, 60), (1, 3, 0, 32), (2, 9, 0, 16), (3, 10, 0, 16)]
    assert g.mig_devices[2].memory_total_bytes == 9984 * 1024 * 1024
    assert g.mig_devices[0].memory_used_bytes == 11091 * 1024 * 1024
    assert len(g.processes) == 3 and g.processes[0].pid == 21180
    # the process table's GI / CI columns: all three run on the 3g.40gb slice (GI 2), none on the others
    assert {(p.gpu_instance_id, p.compute_instance_id) for p in g.processes} == {(2, 0)}


def test_old_header_without_cuda_version() -> None:
    text = ("+-----------------------------------------------------------------------------+\n"
            "| NVIDIA-SMI 384.111                Driver Version: 384.111                   |\n")
    t = parse_nvidia_smi_table(text)
    assert t.driver_version == "384.111" and t.cuda_version is None


def test_failures() -> None:
    assert parse_nvidia_smi_table("No devices were found\n").no_devices
    t = parse_nvidia_smi_table("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                               "Make sure that the latest NVIDIA driver is installed and running.\n")
    assert t.nvml_error == "DRIVER_NOT_LOADED" and t.error.startswith("NVIDIA-SMI has failed")
    t = parse_nvidia_smi_table("Failed to initialize NVML: Driver/library version mismatch\n"
                               "NVML library version: 550.144\n")
    assert t.nvml_error == "LIB_RM_VERSION_MISMATCH" and t.nvml_library_version == "550.144"
    assert parse_nvidia_smi_table("hello world") is None
