"""Issue 42, corpus round 6 (helper corpus6): the kinds fixed after the first-sight score (FIRST_SIGHT_L.md).

- An NGC-based image's start banner: the host driver is older than the driver release the image's CUDA needs and
  forward compatibility is unavailable (DRIVER_TOO_OLD_FOR_TORCH_CUDA; corpus rows tensorrt-005 from
  NVIDIA/TensorRT-LLM and ultralytics-010 from ultralytics/yolov5).
- The software says in its own words that the GPU generation is not in its build (GPU_ARCH_NOT_IN_TORCH_BUILD):
  TensorFlow skipping a GPU below its minimum compute capability (ai-lab-001 from tlkh/ai-lab, container-toolkit-031
  from NVIDIA/nvidia-docker), TensorRT's "Unsupported SM" (tensorrt-016), an NGC-based serving image refusing the
  GPU (fauxpilot-001).

- A run-time loader that finds no cuBLAS/cuDNN of the major it was built for (CTranslate2 under faster-whisper and
  whisperX, cuDNN loading its sub-libraries): CUDA_LIBRARY_VERSION_MISMATCH, the label of twelve earlier rows from six
  trackers (SYSTRAN/faster-whisper, Softcatala/whisper-ctranslate2, pavelzbornik/whisperX-FastAPI,
  reriiasu/speech-to-text, jhj0517/Whisper-WebUI, Purfview/whisper-standalone-win).
- A serialized TensorRT engine loaded by another TensorRT release (CUDA_LIBRARY_VERSION_MISMATCH) or on a GPU of
  another compute capability (GPU_ARCH_NOT_IN_TORCH_BUILD): eight earlier rows from five trackers (NVIDIA/TensorRT,
  NVIDIA/retinanet-examples, GeekAlexis/FastMOT, seanavery/yolov5-tensorrt, mingj2021/segment-anything-tensorrt).

- nvidia-docker 1's version check (the driver's CUDA below the image's): DRIVER_TOO_OLD_FOR_TORCH_CUDA, three rows from
  NVIDIA/nvidia-docker and h2oai/h2o4gpu.
- Triton's compiler cannot target the GPU (too old for Triton, or newer than the ptxas it bundles):
  GPU_ARCH_NOT_IN_TORCH_BUILD, four rows from triton-lang/triton, ModelTC/LightLLM and MIC-DKFZ/nnUNet.

Each kind on invented lines of the same shape (not copies of the corpus pastes), on the corpus rows it fixes, and
on a healthy paste that uses the same words and must not get an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor.compat import load_compat
from envdoctor.diagnose import NothingRecognised
from envdoctor.model.findings import Severity
from envdoctor.services.diagnose import diagnose_report

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"


def _report(text: str):
    return diagnose_report([text], load_compat())


def _by_category(report) -> dict:
    return {f.category: f for f in report.problems}


def _errors(report) -> list:
    return [f for f in report.problems if f.severity == Severity.ERROR]


def _quiet(text: str) -> list:
    """The error findings of a healthy paste; a paste with nothing envdoctor reads has none (the CLI exits 2)."""
    try:
        report = _report(text)
    except NothingRecognised:
        return []
    return [f for f in report.problems if f.severity == Severity.ERROR or f.category in _KINDS]


_KINDS = {"CUDA_LIBRARY_VERSION_MISMATCH", "GPU_ARCH_NOT_IN_TORCH_BUILD", "DRIVER_TOO_OLD_FOR_TORCH_CUDA"}


_SMI = ("| NVIDIA-SMI 550.54.14              Driver Version: 550.54.14      CUDA Version: 12.4     |\n"
        "|   0  NVIDIA GeForce RTX 4090        Off |   00000000:01:00.0 Off |                  Off |\n")


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


# ---- a run-time loader without the CUDA library major it was built for


@pytest.mark.parametrize("line,lib", [
    ("RuntimeError: Library libcublas.so.12 is not found or cannot be loaded", "libcublas.so.12"),
    ("RuntimeError: Library cublas64_12.dll is not found or cannot be loaded", "cublas64_12.dll"),
    ("Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object file: "
     "No such file or directory", "libcudnn_cnn_infer.so.8"),
    ("Could not locate cudnn_cnn_infer64_8.dll. Please make sure it is in your library path!", "cudnn_cnn_infer64_8.dll"),
    ("Unable to load any of {libcudnn_graph.so.9.2.1, libcudnn_graph.so.9.2, libcudnn_graph.so.9, libcudnn_graph.so}",
     "libcudnn_graph.so"),
])
def test_loader_without_the_cuda_library_major(line: str, lib: str) -> None:
    text = ("$ whisper-ctranslate2 --model small talk.wav\nDetected language 'German' with probability 0.98\n"
            + line + "\nAborted (core dumped)\n")
    f = _by_category(_report(text))["CUDA_LIBRARY_VERSION_MISMATCH"]
    assert (f.severity, f.confidence) == (Severity.ERROR, "medium")
    assert f.code in {"messages.signature/ct2-cuda-library-not-loaded", "messages.signature/cudnn-sublibrary-not-located",
                      "messages.signature/cudnn-unable-to-load-any"}
    assert lib in _evidence(f).values()


def test_cuda_libraries_listed_by_the_loader_are_quiet() -> None:
    # the same library names in a healthy listing: ldconfig's cache and a working transcription
    text = _SMI + ("$ ldconfig -p | grep -e libcudnn -e libcublas\n"
            "\tlibcudnn_ops.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn_ops.so.9\n"
            "\tlibcudnn_cnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn_cnn.so.9\n"
            "\tlibcublas.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcublas.so.12\n"
            "$ whisper-ctranslate2 --model small --device cuda talk.wav\n"
            "Detected language 'German' with probability 0.98\n[00:00.000 --> 00:04.000] Guten Tag.\n")
    _report(text)  # the nvidia-smi lines make it a report (no NothingRecognised)
    assert _quiet(text) == []


# ---- a serialized TensorRT engine from another release or another GPU


def test_tensorrt_engine_from_another_release() -> None:
    text = ("[11/02/2023-09:10:11] [TRT] [E] 1: [stdArchiveReader.cpp::StdArchiveReader::42] Error Code 1: "
            "Serialization (Serialization assertion stdVersionRead == serializationVersion failed.Version tag does not "
            "match. Note: Current Version: 228, Serialized Engine Version: 213)\n"
            "[11/02/2023-09:10:11] [TRT] [E] 4: [runtime.cpp::deserializeCudaEngine::66] Error Code 4: Internal Error "
            "(Engine deserialization failed.)\n")
    f = _by_category(_report(text))["CUDA_LIBRARY_VERSION_MISMATCH"]
    assert (f.code, f.severity, f.confidence) == \
        ("messages.signature/tensorrt-engine-other-version", Severity.ERROR, "high")
    assert "Rebuild the engine" in f.fix.summary
    older = "6: The engine plan file is not compatible with this version of TensorRT, expecting library version 8.2.1 got 8.4.3, please rebuild.\n"
    g = _by_category(_report(older))["CUDA_LIBRARY_VERSION_MISMATCH"]
    assert (_evidence(g)["expected"], _evidence(g)["got"]) == ("8.2.1", "8.4.3")


def test_tensorrt_engine_from_another_gpu() -> None:
    text = ("[TensorRT] ERROR: INVALID_CONFIG: The engine plan file is generated on an incompatible device, "
            "expecting compute 8.9 got compute 8.6, please rebuild.\n")
    f = _by_category(_report(text))["GPU_ARCH_NOT_IN_TORCH_BUILD"]
    assert (f.code, f.severity, f.confidence) == \
        ("messages.signature/tensorrt-engine-other-device", Severity.ERROR, "high")
    assert (_evidence(f)["expected"], _evidence(f)["got"]) == ("8.9", "8.6")


def test_tensorrt_engine_loaded_and_run_is_quiet() -> None:
    text = _SMI + ("[11/02/2023-09:10:11] [TRT] [I] Loaded engine size: 54 MiB\n"
            "[11/02/2023-09:10:11] [TRT] [I] [MemUsageChange] TensorRT-managed allocation in engine deserialization: "
            "CPU +0, GPU +52, now: CPU 0, GPU 52 (MiB)\n"
            "[11/02/2023-09:10:12] [TRT] [I] [MemUsageChange] TensorRT-managed allocation in IExecutionContext "
            "creation: CPU +0, GPU +10, now: CPU 0, GPU 62 (MiB)\n"
            "&&&& PASSED TensorRT.trtexec [TensorRT v8601] # trtexec --loadEngine=model.engine\n")
    _report(text)
    assert _quiet(text) == []


# ---- nvidia-docker 1's version check; Triton's compiler and the GPU


def test_nvidia_docker1_refuses_an_image_newer_than_the_driver() -> None:
    text = ("$ nvidia-docker run --rm nvidia/cuda nvidia-smi\n"
            "nvidia-docker | 2017/03/02 10:11:12 Error: unsupported CUDA version: driver 8.0 < image 9.1.85\n")
    f = _by_category(_report(text))["DRIVER_TOO_OLD_FOR_TORCH_CUDA"]
    assert (f.code, f.severity, f.confidence) == \
        ("messages.signature/nvidia-docker1-cuda-version-check", Severity.ERROR, "high")
    assert _evidence(f)["versions"] == "driver 8.0 < image 9.1.85"


def test_nvidia_docker1_driver_not_read_is_not_called_too_old() -> None:
    # "driver 0.0": nvidia-docker could not read the driver at all, another cause than an old driver
    text = _SMI + "nvidia-docker | 2017/05/22 10:11:12 Error: unsupported CUDA version: driver 0.0 < image 8.0.61\n"
    report = _report(text)
    assert "messages.signature/nvidia-docker1-cuda-version-check" not in {f.code for f in report.problems}


def test_triton_compiler_and_an_old_gpu() -> None:
    text = ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
            "RuntimeError: Found Tesla P100-PCIE-16GB which is too old to be supported by the triton GPU compiler, "
            "which is used as the backend. Triton only supports devices of CUDA Capability >= 7.0, but your device "
            "is of CUDA capability 6.0\n")
    f = _by_category(_report(text))["GPU_ARCH_NOT_IN_TORCH_BUILD"]
    assert (f.code, f.severity, f.confidence) == ("messages.signature/triton-gpu-too-old", Severity.ERROR, "high")
    assert _evidence(f)["gpu"] == "Tesla P100-PCIE-16GB"


def test_triton_ptxas_older_than_the_gpu() -> None:
    text = ("triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error\n"
            "`ptxas` stderr:\nptxas fatal   : Value 'sm_120a' is not defined for option 'gpu-name'\n")
    f = _by_category(_report(text))["GPU_ARCH_NOT_IN_TORCH_BUILD"]
    assert (f.code, f.severity, f.confidence) == \
        ("messages.signature/ptxas-unknown-gpu-name", Severity.ERROR, "medium")
    assert _evidence(f)["sm"] == "sm_120a"


def test_triton_compiling_for_its_gpu_is_quiet() -> None:
    text = _SMI + ("$ TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas python train.py --compile\n"
                   "ptxas info    : Used 40 registers, 384 bytes smem, 400 bytes cmem[0]\n"
                   "step 10 loss 2.31\n")
    _report(text)
    assert _quiet(text) == []


# ---- the corpus rows these kinds fix (they left still_wrong_6.txt and the earlier rounds' lists)


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
    ("ctranslate2", "ctranslate2-003", "messages.signature/ct2-cuda-library-not-loaded"),
    ("ctranslate2", "ctranslate2-001", "messages.signature/ct2-cuda-library-not-loaded"),
    ("whisper", "whisper-004", "messages.signature/cudnn-sublibrary-not-located"),
    ("ctranslate2", "ctranslate2-008", "messages.signature/cudnn-unable-to-load-any"),
    ("tensorrt", "tensorrt-012", "messages.signature/tensorrt-engine-other-version"),
    ("tensorrt", "tensorrt-009", "messages.signature/tensorrt-engine-other-version"),
    ("tensorrt", "tensorrt-010", "messages.signature/tensorrt-engine-other-device"),
    ("container-toolkit", "container-toolkit-021", "messages.signature/nvidia-docker1-cuda-version-check"),
    ("container-toolkit", "container-toolkit-014", "messages.signature/nvidia-docker1-cuda-version-check"),
    ("triton", "triton-004", "messages.signature/triton-gpu-too-old"),
    ("triton", "triton-001", "messages.signature/ptxas-unknown-gpu-name"),
    ("triton", "triton-002", "messages.signature/ptxas-unknown-gpu-name"),
])
def test_corpus_rows_of_these_kinds(folder: str, rid: str, code: str) -> None:
    row, text = _row(folder, rid)
    found = _by_category(_report(text))
    (label,) = row["labels"]
    assert found[label].code == code
