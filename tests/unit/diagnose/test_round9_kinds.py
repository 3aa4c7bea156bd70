"""Issue 42, round 9 after first sight (FIRST_SIGHT_O.md), helper round9fix.

A CUDA runtime library of an older major (``libcudart.so.10.2: cannot open shared object file``) asked for by
mmcv's compiled ``_ext`` (mmcv-005, open-mmlab/mmcv; llmdet-001 is the same cause without the traceback): mmcv is a
third-party torch extension (compat_data/torch_family.json), so the cause is that extension's build
(THIRD_PARTY_EXTENSION_MISMATCH), not torch's CUDA variants (CUDA_VARIANT_MIXED, the reading before).

A framework other than torch saying in its own words that its build lacks the GPU part: OpenCV's "DNN module was
not built with CUDA backend; switching to CPU" (opencv-001) and COLMAP's "ERROR: SiftGPU not fully supported"
(colmap-001, a COLMAP built without CUDA running SiftGPU's OpenGL shaders): FRAMEWORK_CPU_ONLY_BUILD warnings
headed by the framework's name."""

from __future__ import annotations

import pytest

from tests.unit.diagnose.pastes import findings as _findings
from tests.unit.diagnose.pastes import serious as _serious

# mmcv-005: the traceback through mmcv/ops and mmcv's ext_loader
MMCV_EXT = (
    "Traceback (most recent call last):\n"
    "  File \"<stdin>\", line 1, in <module>\n"
    "  File \"/opt/conda/lib/python3.7/site-packages/mmcv/ops/__init__.py\", line 1, in <module>\n"
    "    from .bbox import bbox_overlaps\n"
    "  File \"/opt/conda/lib/python3.7/site-packages/mmcv/ops/bbox.py\", line 3, in <module>\n"
    "    ext_module = ext_loader.load_ext('_ext', ['bbox_overlaps'])\n"
    "  File \"/opt/conda/lib/python3.7/site-packages/mmcv/utils/ext_loader.py\", line 12, in load_ext\n"
    "    ext = importlib.import_module('mmcv.' + name)\n"
    "ImportError: libcudart.so.10.2: cannot open shared object file: No such file or directory\n")


def test_an_old_cudart_asked_for_by_mmcvs_extension_is_that_extensions_build(compat) -> None:
    got = _serious(MMCV_EXT, compat)
    assert "THIRD_PARTY_EXTENSION_MISMATCH" in got, sorted(got)
    assert "CUDA_VARIANT_MIXED" not in got


def test_near_miss_mmcv_named_without_a_load_error_stays_quiet(compat) -> None:
    text = ("  File \"/opt/conda/lib/python3.7/site-packages/mmcv/ops/bbox.py\", line 3, in <module>\n"
            "    ext_module = ext_loader.load_ext('_ext', ['bbox_overlaps'])\n")
    assert not [f for f in _findings(text, compat) if f.category == "THIRD_PARTY_EXTENSION_MISMATCH"]


# ---- a framework other than torch says its own build has no GPU part (FRAMEWORK_CPU_ONLY_BUILD)

@pytest.mark.parametrize("text,name,code", [
    # opencv-001 (opencv/opencv#15858)
    ("dnn.cpp (1314) cv::dnn::dnn4_v20191024::Net::Impl::setUpNet DNN module was not built with CUDA backend; "
     "switching to CPU\n", "OpenCV", "opencv-dnn-not-built-with-cuda"),
    # colmap-001 (colmap/colmap#1485)
    ("Shader not supported by your hardware!\nERROR: SiftGPU not fully supported\nERROR: SiftGPU not fully "
     "supported\n", "COLMAP", "colmap-siftgpu-not-supported"),
])
def test_a_frameworks_own_line_says_its_build_lacks_the_gpu_part(text, name, code, compat) -> None:
    got = _serious(text, compat)
    f = got.get("FRAMEWORK_CPU_ONLY_BUILD")
    assert f is not None, sorted(got)
    assert f.code == f"messages.signature/{code}"
    assert f.summary.startswith(name) and "TORCH_CPU_ONLY_BUILD" not in got
    assert "UNRECOGNISED_ERROR" not in got


@pytest.mark.parametrize("text", [
    # the backend asked for in code, no message that it is missing
    "cvNet.setPreferableBackend(cv2.dnn.DNN_BACKEND_CUDA)\ncvNet.setPreferableTarget(cv2.dnn.DNN_TARGET_CUDA)\n",
    # COLMAP's SiftGPU named without its failure
    "I0101 12:00:00 feature_extraction.cc:250] Using SiftGPU for feature extraction\n",
])
def test_gpu_part_near_misses_stay_quiet(text, compat) -> None:
    assert "FRAMEWORK_CPU_ONLY_BUILD" not in {f.category for f in _findings(text, compat)}
