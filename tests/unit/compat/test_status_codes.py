"""compat_data/status_codes.json (issue 42): NVIDIA's status codes as their headers define them, each row cited,
and the statuses a text quotes (by name, by number beside its library's words, by the standard message)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envdoctor.compat import load_compat
from envdoctor.compat.status_codes import (
    LIBRARIES,
    StatusCodeError,
    parse_status_codes,
    status_table,
    statuses_in,
)
from envdoctor.model.catalogue import CATEGORIES

CUDA_INCLUDE = Path("/usr/local/cuda/include")


@pytest.fixture(scope="module")
def table():
    t = status_table(load_compat())
    assert t is not None
    return t


def test_every_library_is_there_and_every_row_is_cited(table):
    assert {r.library for r in table} == set(LIBRARIES)
    assert all(r.source.strip() for r in table)
    for r in table:
        assert (r.category is None) == (r.kind != "environment"), r.key
        assert r.category is None or r.category in CATEGORIES
        assert r.kind != "ambiguous" or r.ask, r.key


def test_the_rows_hold_what_nvidia_defines(table):
    """A few facts copied from NVIDIA's headers and libraries (CUDA 13.0, NCCL 2.30, cuDNN 9, nvidia-ml-py)."""
    by = {n: r for r in table for n in r.names}
    assert (by["cudaErrorNoDevice"].number, by["cudaErrorNoDevice"].message) == (100, "no CUDA-capable device is detected")
    assert by["cudaErrorInsufficientDriver"].message == "CUDA driver version is insufficient for CUDA runtime version"
    assert by["CUDA_ERROR_NO_BINARY_FOR_GPU"].number == 209
    assert by["ncclRemoteError"].number == 6
    assert by["NVML_ERROR_LIB_RM_VERSION_MISMATCH"].number == 18
    # cuDNN 9's deprecated names are the same rows as the names that replaced them
    assert by["CUDNN_STATUS_ARCH_MISMATCH"] is by["CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"]


@pytest.mark.parametrize("name, category", [
    ("CUDA_ERROR_NO_DEVICE", "NO_GPU_VISIBLE"), ("cudaErrorInsufficientDriver", "DRIVER_TOO_OLD_FOR_TORCH_CUDA"),
    ("CUDA_ERROR_NO_BINARY_FOR_GPU", "GPU_ARCH_NOT_IN_TORCH_BUILD"), ("CUDA_ERROR_SYSTEM_NOT_READY", "INTERCONNECT"),
    ("CUDA_ERROR_STUB_LIBRARY", "SYSTEM_LIB_SHADOWING"),
    ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", "DRIVER_LIBRARY_MISMATCH"),
    ("cudaErrorECCUncorrectable", "GPU_MEMORY_ERRORS"),
    ("cudaErrorIllegalAddress", None), ("ncclSystemError", None), ("CUDNN_STATUS_INTERNAL_ERROR", None),
])
def test_the_category_a_status_implies(table, name, category):
    assert table.names[name].category == category


def _enum(text: str, start: str, end: str, prefix: str):
    block = text[text.index(start):]
    block = block[:block.index(end)]
    return dict(re.findall(rf"^\s*({prefix}\w*)\s*=\s*(\d+)", block, re.M))


@pytest.mark.skipif(not (CUDA_INCLUDE / "driver_types.h").exists(), reason="no CUDA toolkit headers here")
def test_the_runtime_rows_match_the_local_header(table):
    header = _enum((CUDA_INCLUDE / "driver_types.h").read_text(), "enum __device_builtin__ cudaError\n", "};", "cuda")
    ours = {n: r.number for r in table if r.library == "cuda_runtime" for n in r.names}
    assert header and {n: int(v) for n, v in header.items()} == ours


@pytest.mark.skipif(not (CUDA_INCLUDE / "cuda.h").exists(), reason="no CUDA toolkit headers here")
def test_the_driver_rows_match_the_local_header(table):
    header = _enum((CUDA_INCLUDE / "cuda.h").read_text(), "typedef enum cudaError_enum {", "} CUresult;", "CUDA_")
    ours = {n: r.number for r in table if r.library == "cuda_driver" for n in r.names}
    assert header and {n: int(v) for n, v in header.items()} == ours


@pytest.mark.parametrize("text, key", [
    ("RuntimeError: cuInit failed: CUDA_ERROR_NO_DEVICE", "cuda_driver/CUDA_ERROR_NO_DEVICE"),
    ("cudaErrorNoDevice", "cuda_runtime/cudaErrorNoDevice"),
    ("CUDA error 100 at ggml-cuda.cu:100", "cuda_runtime/cudaErrorNoDevice"),
    ("RuntimeError: cuda error: code 35", "cuda_runtime/cudaErrorInsufficientDriver"),
    ("cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime version",
     "cuda_runtime/cudaErrorInsufficientDriver"),
    ("cuInit returned 100", "cuda_driver/CUDA_ERROR_NO_DEVICE"),
    ("RuntimeError: NCCL error 2", "nccl/ncclSystemError"),
    ("NCCL error in: ProcessGroupNCCL.cpp:825, unhandled system error, NCCL version 2.10.3", "nccl/ncclSystemError"),
    ("CUBLAS failure 1: CUBLAS_STATUS_NOT_INITIALIZED ; GPU=0", "cublas/CUBLAS_STATUS_NOT_INITIALIZED"),
    ("THCudaCheck FAIL file=x.cu line=1 error=8 : invalid device function",
     "cuda_runtime/cudaErrorInvalidDeviceFunction"),
])
def test_a_status_is_found_in_each_form(table, text, key):
    assert [m.row.key for m in statuses_in(text, table)] == [key]


@pytest.mark.parametrize("text", [
    "error 2", "exit code 100", "the current returned 3 values", "invalid argument", "unknown error",
    "CUDA_SUCCESS", "ncclSuccess", "CUDA Version: 12.2", "Cuda compilation tools, release 12.1, V12.1.105",
])
def test_no_status_without_its_library(table, text):
    assert statuses_in(text, table) == []


def test_a_number_the_message_contradicts_is_read_by_the_message(table):
    """Older runtimes numbered device-side asserts 59 (710 in CUDA 13): the string is what the library printed."""
    found = statuses_in("cuda runtime error (59) : device-side assert triggered", table)
    assert [m.row.key for m in found] == ["cuda_runtime/cudaErrorAssert"]


@pytest.mark.parametrize("row, says", [
    ({"library": "cuda_runtime", "names": ["cudaErrorX"], "number": 1, "kind": "environment", "category": None,
      "source": "x"}, "category"),
    ({"library": "cuda", "names": ["cudaErrorX"], "number": 1, "kind": "program", "category": None,
      "source": "x"}, "library"),
    ({"library": "nccl", "names": ["ncclX"], "number": 1, "kind": "ambiguous", "category": None, "meaning": "m",
      "source": "x"}, "ask"),
    ({"library": "nccl", "names": ["ncclX"], "number": 1, "kind": "environment", "category": "NO_GPU_VISIBLE",
      "meaning": "m", "source": "x"}, "confidence"),
])
def test_a_malformed_row_is_named_with_its_problem(row, says):
    with pytest.raises(StatusCodeError) as info:
        parse_status_codes({"rows": [row]})
    assert info.value.args[0].startswith("status_codes.json: rows[0]") and says in info.value.args[0]


def test_a_status_listed_twice_is_refused():
    row = {"library": "nccl", "names": ["ncclX"], "number": 1, "kind": "program", "category": None, "source": "x"}
    with pytest.raises(StatusCodeError, match="listed twice"):
        parse_status_codes({"rows": [row, dict(row, names=["ncclY"])]})
