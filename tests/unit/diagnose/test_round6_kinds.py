"""Issue 42, corpus round 6 (helper corpus6): the kinds fixed after the first-sight score (FIRST_SIGHT_L.md).

- An NGC-based image's start banner: the host driver is older than the driver release the image's CUDA needs and
  forward compatibility is unavailable (DRIVER_TOO_OLD_FOR_TORCH_CUDA; corpus rows tensorrt-005 from
  NVIDIA/TensorRT-LLM and ultralytics-010 from ultralytics/yolov5).
- The software says in its own words that the GPU generation is not in its build (GPU_ARCH_NOT_IN_TORCH_BUILD):
  TensorFlow skipping a GPU below its minimum compute capability (ai-lab-001 from tlkh/ai-lab, container-toolkit-031
  from NVIDIA/nvidia-docker), TensorRT's "Unsupported SM" (tensorrt-016), an NGC-based serving image refusing the
  GPU (fauxpilot-001).

Each kind on invented lines of the same shape (not copies of the corpus pastes), on the corpus rows it fixes, and
on a healthy paste that uses the same words and must not get an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor.compat import load_compat
from envdoctor.diagnose import diagnose_report
from envdoctor.model.findings import Severity

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"


def _report(text: str):
    return diagnose_report([text], load_compat())


def _by_category(report) -> dict:
    return {f.category: f for f in report.problems}


def _errors(report) -> list:
    return [f for f in report.problems if f.severity == Severity.ERROR]


def _evidence(finding) -> dict:
    return {e.path.rsplit(".", 1)[-1]: e.value for e in finding.evidence}


# ---- the NGC start banner: driver older than the image needs, no forward compatibility


def test_ngc_banner_driver_too_old() -> None:
    text = ("== PyTorch ==\n\nNVIDIA Release 23.05 (build 60708568)\n\n"
            "ERROR: This container was built for NVIDIA Driver Release 530.30 or later, but\n"
            "       version 515.105.01 was detected and compatibility mode is UNAVAILABLE.\n\n"
            "       [[CUDA Driver UNAVAILABLE (cuInit(0) returned 804)]]\n")
    f = _by_category(_report(text))["DRIVER_TOO_OLD_FOR_TORCH_CUDA"]
    assert (f.code, f.severity, f.confidence) == \
        ("messages.signature/ngc-container-driver-too-old", Severity.ERROR, "high")
    ev = _evidence(f)
    assert (ev["required"], ev["driver"]) == ("530.30", "515.105.01")
    assert "driver" in f.fix.summary and f.fix.summary.startswith("Upgrade the host driver")


def test_ngc_banner_with_forward_compatibility_is_no_driver_error() -> None:
    # the same image on a data-centre GPU whose old driver is bridged by the CUDA compat package, and a GPU newer
    # than the image: notes and warnings of the banner, no driver-too-old and no arch error
    text = ("== CUDA ==\n\nCUDA Version 12.1.1\n\n"
            "NOTE: CUDA Forward Compatibility mode ENABLED.\n"
            "  Using CUDA 12.1 driver version 530.30.02 with kernel driver version 470.199.02.\n"
            "  See https://docs.nvidia.com/deploy/cuda-compatibility/ for details.\n\n"
            "WARNING: Detected NVIDIA GeForce RTX 5090 GPU, which may not yet be supported in this version of the "
            "container\n")
    report = _report(text)
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" not in _by_category(report)
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" not in {f.category for f in _errors(report)}


# ---- the software names the GPU generation as outside its build


def test_tensorflow_skips_a_gpu_below_its_minimum_capability() -> None:
    text = ("2019-05-02 11:20:31.123456: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1640] Found device 0 "
            "with properties:\nname: Quadro K4000 major: 3 minor: 0 memoryClockRate(GHz): 0.8105\n"
            "2019-05-02 11:20:31.123999: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1700] Ignoring visible "
            "gpu device (device: 0, name: Quadro K4000, pci bus id: 0000:02:00.0, compute capability: 3.0) with "
            "Cuda compute capability 3.0. The minimum required Cuda capability is 3.5.\n")
    f = _by_category(_report(text))["GPU_ARCH_NOT_IN_TORCH_BUILD"]
    # a skipped GPU is a warning: TensorFlow goes on (on the CPU, or on the other GPUs)
    assert (f.code, f.severity, f.confidence) == \
        ("messages.signature/tf-gpu-below-min-capability", Severity.WARNING, "high")
    ev = _evidence(f)
    assert (ev["cc"], ev["min"]) == ("3.0", "3.5")


def test_tensorflow_using_its_gpu_is_quiet() -> None:
    text = ("2023-06-01 10:00:00.000001: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1635] Created device "
            "/job:localhost/replica:0/task:0/device:GPU:0 with 22302 MB memory:  -> device: 0, name: NVIDIA GeForce "
            "RTX 3090, pci bus id: 0000:01:00.0, compute capability: 8.6\n"
            "Num GPUs Available:  1\n")
    report = _report(text)
    assert _errors(report) == [] and "GPU_ARCH_NOT_IN_TORCH_BUILD" not in _by_category(report)


def test_tensorrt_unsupported_sm() -> None:
    text = ("[03/01/2023-10:11:12] [TRT] [E] 2: [caskUtils.cpp::trtSmToCask::147] Error Code 2: Internal Error "
            "(Assertion failed: Unsupported SM.)\n")
    f = _by_category(_report(text))["GPU_ARCH_NOT_IN_TORCH_BUILD"]
    assert (f.code, f.severity, f.confidence) == \
        ("messages.signature/tensorrt-unsupported-sm", Severity.ERROR, "medium")
    assert "TensorRT" in f.fix.summary


def test_serving_image_refuses_the_gpu() -> None:
    text = ("=============================\n== Triton Inference Server ==\n=============================\n\n"
            "ERROR: Detected NVIDIA Tesla K80 GPU, which is not supported by this container\n")
    f = _by_category(_report(text))["GPU_ARCH_NOT_IN_TORCH_BUILD"]
    assert (f.code, f.severity, f.confidence) == \
        ("messages.signature/container-gpu-not-supported", Severity.ERROR, "high")
    assert _evidence(f)["gpu"] == "Tesla K80"


# ---- the corpus rows these kinds fix (they left still_wrong_6.txt and round 3's list)


def _row(folder: str, rid: str):
    rows = json.loads((CORPUS / folder / "labels.json").read_text(encoding="utf-8"))
    row = next(r for r in rows if r["id"] == rid)
    return row, (CORPUS / folder / f"{rid}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("folder,rid,code", [
    ("ultralytics", "ultralytics-010", "messages.signature/ngc-container-driver-too-old"),
    ("tensorrt", "tensorrt-005", "messages.signature/ngc-container-driver-too-old"),
    ("ai-lab", "ai-lab-001", "messages.signature/tf-gpu-below-min-capability"),
    ("container-toolkit", "container-toolkit-031", "messages.signature/tf-gpu-below-min-capability"),
    ("tensorrt", "tensorrt-016", "messages.signature/tensorrt-unsupported-sm"),
    ("fauxpilot", "fauxpilot-001", "messages.signature/container-gpu-not-supported"),
])
def test_corpus_rows_of_these_kinds(folder: str, rid: str, code: str) -> None:
    row, text = _row(folder, rid)
    found = _by_category(_report(text))
    (label,) = row["labels"]
    assert found[label].code == code
