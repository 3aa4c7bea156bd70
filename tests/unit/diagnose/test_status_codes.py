"""Statuses of NVIDIA's libraries quoted in a paste (issue 42: compat_data/status_codes.json, checks/messages_status.py).

Each form a status takes in real reports (its enum name, its number beside its library's words, its standard
message) names the cause its table row gives; a status the program's own call raises explains its line without an
error; an ambiguous one says what to paste and leaves the line unexplained; a line a catalogue signature explains
gets no second finding."""

from __future__ import annotations

import pytest

from envdoctor.compat.status_codes import status_table, statuses_in

from .pastes import findings

CODE = "messages.status-codes/"


def _status(text, compat):
    return [f for f in findings(text, compat) if f.code.startswith(CODE)]


@pytest.mark.parametrize("text, category", [
    # guppy/megalodon (tests/fixtures/corpus/megalodon/megalodon-001.txt) and TensorFlow's stream executor
    ("[guppy/error] <>::run_server: CUDA error at /builds/ont_core/common/cuda_common.cpp:234:\nCUDA_ERROR_NO_DEVICE. "
     "Error initialising basecall server using port: ipc:///tmp/d554. Aborting.", "NO_GPU_VISIBLE"),
    ("2018-01-01 10:00:00.000001: E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit: "
     "CUDA_ERROR_NO_DEVICE", "NO_GPU_VISIBLE"),
    # a runtime name, a number beside "CUDA error", a driver entry point's return value
    ("RuntimeError: CUDA call failed lazily at initialization with error: cudaErrorNoDevice", "NO_GPU_VISIBLE"),
    ("ggml_cuda_init: failed to initialize CUDA: CUDA error 100 at ggml-cuda.cu:100", "NO_GPU_VISIBLE"),
    ("cuInit returned 100", "NO_GPU_VISIBLE"),
    # JAX on a machine whose libcuda is the toolkit's stub
    ("RuntimeError: Unable to initialize backend 'cuda': INTERNAL: no supported devices found for platform CUDA: "
     "CUDA_ERROR_STUB_LIBRARY", "SYSTEM_LIB_SHADOWING"),
    ("pynvml.NVMLError_LibRmVersionMismatch: NVML_ERROR_LIB_RM_VERSION_MISMATCH", "DRIVER_LIBRARY_MISMATCH"),
    ("nvmlDeviceGetHandleByIndex() failed: NVML_ERROR_GPU_IS_LOST", "GPU_XID_ERRORS"),
    ("cudaGetDeviceCount returned 35", "DRIVER_TOO_OLD_FOR_TORCH_CUDA"),
    ("E0101 10:00:00.000 123 gpu.cc:10] cuDNN: CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH", "GPU_ARCH_NOT_IN_TORCH_BUILD"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH", "CUDA_LIBRARY_VERSION_MISMATCH"),
])
def test_a_status_names_its_cause(compat, text, category):
    found = [f for f in _status(text, compat) if f.severity in ("warning", "error")]
    assert [f.category for f in found] == [category], [(f.code, f.summary) for f in findings(text, compat)]
    # the finding cites the table row and its source
    assert "compat_data/status_codes.json row" in found[0].detail
    assert all(e.source and e.source in found[0].detail for e in found[0].evidence)


@pytest.mark.parametrize("text", [
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call",
    "ValueError: cudaErrorInvalidValue: invalid argument",
    "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, invalid usage (run with NCCL_DEBUG=WARN for details)",
])
def test_a_status_the_program_raises_is_explained_without_an_error(compat, text):
    everything = findings(text, compat)
    assert not [f for f in everything if f.severity == "error"]
    assert not [f for f in everything if f.category == "UNRECOGNISED_ERROR"], [f.summary for f in everything]
    ours = _status(text, compat)
    assert ours and all(f.severity == "info" and f.category == "HEALTHY" for f in ours)


def test_an_ambiguous_status_says_what_to_paste_and_judges_nothing(compat):
    text = "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR"
    everything = findings(text, compat)
    assert not [f for f in everything if f.severity == "error"]
    note = [f for f in _status(text, compat) if f.category == "NOTE"]
    assert note and "nvidia-smi" in note[0].fix.summary
    # the line stays unexplained: the status alone does not make the paste judged
    assert [f for f in everything if f.category == "UNRECOGNISED_ERROR"]


@pytest.mark.parametrize("text", [
    "RuntimeError: CUDA error: no kernel image is available for execution on the device",  # no-binary-for-gpu
    "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version",
    "E tensorflow/stream_executor/cuda/cuda_driver.cc:406] failed call to cuInit: CUDA_ERROR_SYSTEM_NOT_READY",
    "gpustat: NVML_ERROR_DRIVER_NOT_LOADED",  # nvidia-module-load-failed
])
def test_a_line_a_signature_explains_gets_no_second_finding(compat, text):
    assert statuses_in(text, status_table(compat))  # the table knows the status; the signature's row wins
    assert _status(text, compat) == []
    assert [f for f in findings(text, compat) if f.code.startswith("messages.signature/")]


@pytest.mark.parametrize("text", [
    "error 2\nexit code 100",
    "| NVIDIA-SMI 535.54.03    Driver Version: 535.54.03    CUDA Version: 12.2     |",
    "Cuda compilation tools, release 12.1, V12.1.105",
    "ncclSuccess",
])
def test_no_status_without_its_library(compat, text):
    assert status_table(compat) is not None
    assert _status(text, compat) == []
