"""diagnose.runs-on-cpu and diagnose.framework-cuda-query (checks/diagnose_cpu_device.py, issue 42 round 10): a
program said to run on the CPU beside an NVIDIA GPU, and a framework's own CUDA query answering False, on invented
pastes; the failing, passing and skipped cases assert whole findings."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _check(text: str, compat, check_id: str):
    report = diagnose_report([text], compat)
    return next(c for c in report.checks if c.id == check_id)


SMI = "NVIDIA-SMI 550.54.14    Driver Version: 550.54.14    CUDA Version: 12.4\n"


def test_a_program_on_the_cpu_beside_a_gpu_table_is_a_cpu_torch_lead(compat) -> None:
    text = SMI + ">> Using device_type cpu\n>> Loading stable-diffusion-1.4 from models/ldm/model.ckpt\n"
    result = _check(text, compat, "diagnose.runs-on-cpu")
    assert [f.code for f in result.findings] == ["diagnose.runs-on-cpu/torch"]
    f = result.findings[0]
    assert (f.category, f.severity, f.confidence) == ("TORCH_CPU_ONLY_BUILD", "warning", "low")
    assert "torch.version.cuda" in " ".join(f.fix.commands)


def test_paddle_cpu_package_beside_a_gpu_is_its_cpu_build(compat) -> None:
    text = SMI + "paddlepaddle==2.6.1\npaddleocr==2.8.0\nIt is using cpu for inference, why?\n"
    result = _check(text, compat, "diagnose.runs-on-cpu")
    assert [f.code for f in result.findings] == ["diagnose.runs-on-cpu/paddle"]
    f = result.findings[0]
    assert (f.category, f.severity, f.confidence) == ("FRAMEWORK_CPU_ONLY_BUILD", "warning", "medium")
    assert "paddlepaddle 2.6.1" in f.summary


def test_the_program_saying_it_runs_on_cuda_passes(compat) -> None:
    text = SMI + "it seems it still uses CPU, but the log says Running on: cuda\n"
    result = _check(text, compat, "diagnose.runs-on-cpu")
    assert result.findings == [] and result.status == "passed"


def test_cpu_words_without_a_gpu_skip(compat) -> None:
    result = _check("UserWarning: FP16 is not supported on CPU; using FP32 instead\n", compat, "diagnose.runs-on-cpu")
    assert result.findings == [] and result.status == "skipped"


def test_open3d_on_windows_answering_false_is_its_cpu_build(compat) -> None:
    text = ("PS C:\\Users\\me\\recon> python\n>>> import open3d as o3d\n>>> print(o3d.core.cuda.is_available())\n"
            "False\n")
    result = _check(text, compat, "diagnose.framework-cuda-query")
    assert [f.code for f in result.findings] == ["diagnose.framework-cuda-query/open3d"]
    f = result.findings[0]
    assert (f.category, f.severity, f.confidence) == ("FRAMEWORK_CPU_ONLY_BUILD", "warning", "medium")


def test_dlib_compile_flag_false_is_a_build_without_cuda(compat) -> None:
    result = _check(">>> import dlib\n>>> dlib.DLIB_USE_CUDA\nFalse\n", compat, "diagnose.framework-cuda-query")
    assert [(f.code, f.confidence) for f in result.findings] == [("diagnose.framework-cuda-query/compile-flag",
                                                                  "high")]


def test_a_query_answering_true_skips_and_a_mac_passes(compat) -> None:
    result = _check(">>> dlib.DLIB_USE_CUDA\nTrue\n", compat, "diagnose.framework-cuda-query")
    assert result.findings == [] and result.status == "skipped"
    mac = ">>> print(o3d.core.cuda.is_available())\nFalse\nThis is a MacBook Pro, no NVIDIA GPU here.\n"
    result = _check(mac, compat, "diagnose.framework-cuda-query")
    assert result.findings == [] and result.status == "passed"
