"""The test tiers: `gpu` tests run only where an NVIDIA GPU answers, and say why they skip elsewhere."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import gpu_unavailable_reason


def test_no_control_node_is_a_reason_to_skip(tmp_path):
    reason = gpu_unavailable_reason(str(tmp_path))
    assert reason and "nvidiactl is absent" in reason


def test_a_control_node_without_nvml_is_a_reason_to_skip(tmp_path, monkeypatch):
    (tmp_path / "nvidiactl").write_text("")
    import pynvml

    def broken() -> None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", broken)
    reason = gpu_unavailable_reason(str(tmp_path))
    assert reason and "NVML is unusable" in reason


@pytest.mark.gpu
def test_collect_sees_every_gpu_that_nvml_sees():
    import pynvml

    pynvml.nvmlInit()
    try:
        count = pynvml.nvmlDeviceGetCount()
    finally:
        pynvml.nvmlShutdown()
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "collect", "--no-torch"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    driver = json.loads(proc.stdout)["driver"]
    assert driver["status"] == "ok" and driver["version"]
    assert len(driver["gpus"]) == count
