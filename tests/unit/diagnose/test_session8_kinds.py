"""Kinds built in the eighth session (issue 42), each tested on invented pastes in the shape of real reports."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES


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


def _q_section(name: str, header: str, lines: int) -> str:
    """``lines`` lines of a real `nvidia-smi -q` capture from its first ``header`` line, indentation kept."""
    text = (FIXTURES / "perf-throttle" / name).read_text().splitlines()
    start = next(i for i, line in enumerate(text) if line.strip() == header)
    return "\n".join(text[start:start + lines]) + "\n"


def test_a_q_excerpt_without_its_header_is_read(compat) -> None:
    """`nvidia-smi -q -d PERFORMANCE` cut to its reasons (a real H100 capture with HW Power Brake Slowdown
    active): read as the -q report's section, so the throttle check judges it."""
    text = ("Our H100 node trains 30% slower than the others:\n"
            + _q_section("h100-sxm-80gb-x8_535.161.08_hw-slowdown-active.txt", "Clocks Event Reasons", 10))
    assert "GPU_THROTTLED" in _categories(text, compat)


def test_a_link_info_excerpt_narrow_and_full(compat) -> None:
    """`nvidia-smi -q | grep -A 9 "GPU Link Info"`: a real A40's full x16 link at idle Gen1 is no problem; the
    same section reading x1 of x16 is a narrowed link."""
    real = _q_section("a40-x10_550.127.05_nvidia-smi-q.txt", "GPU Link Info", 10)
    assert "PCIE_LINK_DEGRADED" not in _categories("Data loading is slow.\n" + real, compat)
    narrowed = real.replace("Current                   : 16x", "Current                   : 1x")
    assert narrowed != real
    assert "PCIE_LINK_DEGRADED" in _categories("Data loading is slow.\n" + narrowed, compat)
