"""Gpu.driver_model_current/pending: the Windows driver model (WDDM, TCC, MCDM), from NVML and every nvidia-smi
output (XML, -q text, --query-gpu CSV), on real captures; None on Linux, where nvidia-smi prints N/A."""

from __future__ import annotations

import re

import pytest

from envdoctor.parsers.nvidia_smi_csv import gpus_from_query_csv
from envdoctor.parsers.nvidia_smi_q import parse_nvidia_smi_q
from envdoctor.parsers.nvidia_smi_xml import parse_nvidia_smi_xml
from envdoctor.probes.nvml import read_gpu
from tests.paths import SHARED

REAL = SHARED / "fixtures" / "real"


def _real(*parts: str) -> str:
    path = REAL.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is not here (the shared fixtures sit beside the clone)")
    return path.read_text(errors="replace")


def test_a_windows_capture_says_wddm_and_a_linux_one_nothing():
    (t4,) = parse_nvidia_smi_xml(_real("nvidia-smi-xml", "tesla-t4_windows_512.78.xml")).gpus
    assert (t4.driver_model_current, t4.driver_model_pending) == ("WDDM", "WDDM")
    (a10g,) = parse_nvidia_smi_xml(_real("nvidia-smi-xml", "a10g_515.105.01.xml")).gpus
    assert (a10g.driver_model_current, a10g.driver_model_pending) == (None, None)  # "N/A" on Linux


def test_the_q_text_reads_the_same_field_and_n_a_is_unknown():
    text = _real("perf-throttle", "a40-x10_550.127.05_nvidia-smi-q.txt")
    assert "Driver Model" in text
    gpus = parse_nvidia_smi_q(text).gpus
    assert gpus and all(g.driver_model_current is None for g in gpus)
    # a Windows -q block, the same layout with the values a TCC GPU prints
    tcc = re.sub(r"(Driver Model\n\s+Current\s+: )N/A(\n\s+Pending\s+: )N/A", r"\1TCC\2WDDM", text, count=1)
    assert tcc != text
    first = parse_nvidia_smi_q(tcc).gpus[0]
    assert (first.driver_model_current, first.driver_model_pending) == ("TCC", "WDDM")


def test_the_query_gpu_csv_columns():
    csv = "index, name, driver_model.current, driver_model.pending\n0, NVIDIA RTX A6000, MCDM, WDDM\n"
    (g,) = gpus_from_query_csv(csv)
    assert (g.driver_model_current, g.driver_model_pending) == ("MCDM", "WDDM")


def test_nvml_gives_the_same_words():
    class NvmlError(Exception):
        pass

    class Nvml:  # only what the driver model needs: every other field is a missing function, so None
        NVMLError = NvmlError

        def nvmlDeviceGetHandleByIndex(self, index):  # noqa: N802 - NVML's names
            return object()

        def nvmlDeviceGetDriverModel(self, handle):  # noqa: N802
            return [1, 2]  # NVML_DRIVER_WDM (TCC) now, NVML_DRIVER_MCDM after the reboot

    g = read_gpu(Nvml(), 0)
    assert (g.driver_model_current, g.driver_model_pending) == ("TCC", "MCDM")
