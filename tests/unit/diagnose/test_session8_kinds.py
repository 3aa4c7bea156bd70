"""Kinds built in the eighth session (issue 42), each tested on invented pastes in the shape of real reports."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _categories(text: str, compat):
    report = diagnose_report([text], compat)
    return {f.category for c in report.checks for f in c.findings if f.severity in ("warning", "error")}


@pytest.mark.parametrize("item", [
    "TensorFlow: 2.16.1 installed with pip",
    "- tf: 2.15",
    "tf.__version__ -> '2.12.0'",
    "1. TF version = 2.13",
])
def test_a_tensorflow_release_typed_as_a_setting_item(item, compat) -> None:
    """TensorFlow's release typed as a "key: value" item or printed by tf.__version__, on native Windows: the
    Windows package after 2.10 has no GPU build."""
    text = f"GPU not detected\nOS: Windows 11\n{item}\nprint(tf.config.list_physical_devices('GPU')) -> []\n"
    assert "FRAMEWORK_CPU_ONLY_BUILD" in _categories(text, compat)


@pytest.mark.parametrize("item", ["TensorFlow: 2.10.1", "tf: 2.16.1"])
def test_quiet_where_the_release_has_a_windows_gpu_build_or_the_host_is_linux(item, compat) -> None:
    os_line = "OS: Windows 10" if item.endswith("2.10.1") else "OS: Ubuntu 22.04"
    text = f"GPU not detected\n{os_line}\n{item}\n"
    assert "FRAMEWORK_CPU_ONLY_BUILD" not in _categories(text, compat)


OLLAMA = ('time=2024-06-10T08:00:01.020Z level=INFO source=gpu.go:308 msg="Discovered GPU libraries: '
          '[/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15]"\n'
          'time=2024-06-10T08:00:01.030Z level=WARN source=gpu.go:562 msg="unknown error initializing cuda driver library" '
          'library=/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15 error="cuda driver library init failure: {code}"\n'
          'time=2024-06-10T08:00:01.050Z level=INFO source=gpu.go:347 msg="no compatible GPUs were discovered"\n')


@pytest.mark.parametrize("code,category", [("999", "NO_GPU_VISIBLE"), ("100", "NO_GPU_VISIBLE"),
                                           ("46", "COMPUTE_MODE_RESTRICTED")])
def test_ollamas_init_failure_quotes_cuinits_status(code, category, compat) -> None:
    """Ollama's GPU discovery prints cuInit's CUresult as a number ("cuda driver library init failure: 999"): the
    status table reads it (999 after suspend/resume: the nvidia_uvm reload of Ollama's troubleshooting page)."""
    assert category in _categories(OLLAMA.format(code=code), compat)
