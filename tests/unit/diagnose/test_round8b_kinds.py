"""Issue 42, corpus round 8 after first sight (helper round8fix): kinds of still-wrong rows fixed generally, each
read from the pasted lines the corpus rows hold (quoted below verbatim), with near misses that must stay quiet.

An "insufficient driver" error that the paste's own driver contradicts. immich-001 (imagegenius/docker-immich#349)
pastes "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version" beside "Nvidia Driver:
v550.78 (Quadro RTX 4000 should fine for CUDA 12)": 550.78 runs every CUDA 12.x runtime (minor-version
compatibility from 525.60.13), so the error is not the driver's age (the cause was a stray space in the container's
NVIDIA variables). It was a DRIVER_TOO_OLD_FOR_TORCH_CUDA error; it is now a CONTAINER_NO_GPU_RUNTIME warning of
low confidence that says the driver is new enough. Old drivers (375.66 with CUDA 9, 384.130) stay DRIVER_TOO_OLD.
"""

from __future__ import annotations

import pytest

from tests.unit.diagnose.pastes import findings as _findings
from tests.unit.diagnose.pastes import serious as _serious

# ---- an insufficient-driver error the pasted driver contradicts

IMMICH = ("Receiving the following error when trying to utilize CUDA for machine learning...\n\n"
          "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version\n\n"
          "OS: UnRAID 6.12.10\nNvidia Driver: v550.78 (Quadro RTX 4000 should fine for CUDA 12)\nImmich: v1.102.3\n")


def test_driver_new_enough_for_the_named_cuda_major_is_not_too_old(compat):
    got = _serious(IMMICH, compat)
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" not in got
    f = got["CONTAINER_NO_GPU_RUNTIME"]
    assert f.severity == "warning" and f.confidence == "low"
    assert "new enough" in (f.detail or "")


@pytest.mark.parametrize("text", [
    # the same error with the driver too old for the named major (CUDA 12 needs 525.60.13)
    "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version\nNvidia Driver: v470.82 (CUDA 12)\n",
    # a driver of the 12.x branches, the program's major not named: a CUDA 13 program needs 580
    "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version\nNvidia Driver: v550.78\n",
    # the named major is 13 (a cu130 build) and the driver is of the 550 branch
    "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version\nNvidia Driver: v550.78\n"
    "pip install torch --index-url https://download.pytorch.org/whl/cu130\n",
    # nvidia-smi's "CUDA Version" is the driver's ceiling, not the program's need (jade-hpc-002's driver)
    "cudaErrorInsufficientDriver\n| NVIDIA-SMI 375.66                 Driver Version: 375.66                    |\n",
])
def test_driver_too_old_stays_where_the_driver_does_not_run_the_program(text, compat):
    got = _serious(text, compat)
    assert got["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].severity == "error"
    assert "CONTAINER_NO_GPU_RUNTIME" not in got


# ---- a framework other than torch installed without its GPU part

@pytest.mark.parametrize("text,severity", [
    # lightgbm-004 (lightgbm-org/LightGBM#650)
    ("I tried just setting 'device=gpu' and got the following error: 'GPU Tree Learner was not enabled in this "
     "build. Recompile with CMake option -DUSE_GPU=1'.\n", "error"),
    # machine-learning-for-trading-001 (stefan-jansen/machine-learning-for-trading#196)
    ("lightgbm.basic.LightGBMError: GPU Tree Learner was not enabled in this build.\n"
     "Please recompile with CMake option -DUSE_GPU=1\n", "error"),
    # catboost-004 (catboost/catboost#449): CatBoost's own line also names the driver, so a warning
    ("CatboostError: catboost/libs/train_lib/train_model.cpp:800: Can't load GPU learning library. Module was not "
     "compiled or CUDA version/driver  is incompatible with package\n", "warning"),
])
def test_framework_without_its_gpu_part(text, severity, compat):
    f = _serious(text, compat)["FRAMEWORK_CPU_ONLY_BUILD"]
    assert f.severity == severity
    assert "torch" not in f.summary.split(":")[0].lower()  # the headline names the framework, not torch


@pytest.mark.parametrize("text", [
    # lightgbm-001's words: a GPU build that runs, slowly
    "after building LightGBM for GPU ... while during the training GPU utilisation does not exceed 2-5%\n",
    "[LightGBM] [Info] This is the GPU trainer!!\n[LightGBM] [Info] Total Bins 6143\n",
    # LightGBM's CPU learner named without the failure
    "[LightGBM] [Warning] Using the serial tree learner\n",
])
def test_lightgbm_lines_without_the_failure_stay_quiet(text, compat):
    assert "FRAMEWORK_CPU_ONLY_BUILD" not in _serious(text, compat)


# ---- a GPU older than an attention library's kernels (a torch extension: THIRD_PARTY_EXTENSION_MISMATCH)

@pytest.mark.parametrize("text,severity", [
    # flash-attention-010 (Dao-AILab/flash-attention#762)
    ("RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n", "error"),
    # flash-attention-012 (Dao-AILab/flash-attention#524)
    ("V100 GPU\nWhen using it, a problem occurs:\n\n**GPU with CUDA capability 7 0 is not supported！**\n", "error"),
    # xformers-009 (facebookresearch/xformers#891)
    ("ValueError: Operator `memory_efficient_attention` does not support inputs:\n"
     "     query       : shape=(1, 4101, 32, 128) (torch.float16)\n"
     "`flshattF` is not supported because:\n    requires a GPU with compute capability > 7.5\n", "warning"),
])
def test_gpu_older_than_the_attention_kernels(text, severity, compat):
    assert _serious(text, compat)["THIRD_PARTY_EXTENSION_MISMATCH"].severity == severity


def test_xformers_capability_reason_beside_a_build_mismatch_is_not_the_cause(compat):
    # xformers-006's lines (kijai/ComfyUI-SUPIR#167): the build is the cause, the capability reasons follow from it
    text = ("xFormers wasn't build with CUDA support\n"
            "`fa2F@0.0.0` is not supported because:\n"
            "    requires device with capability > (8, 0) but your GPU has capability (7, 5) (too old)\n")
    own = [f for f in _findings(text, compat) if f.code.endswith("xformers-operator-needs-newer-gpu")]
    assert own and all(f.severity == "info" for f in own)


def test_a_question_about_flash_attention_support_stays_quiet(compat):
    text = "Does FlashAttention support Turing GPUs? The README says Ampere, Ada or Hopper GPUs.\n"
    assert "THIRD_PARTY_EXTENSION_MISMATCH" not in _serious(text, compat)


# ---- CUDA versions of stacks other than Python's torch

@pytest.mark.parametrize("text,category", [
    # cuda-jl-001 (JuliaGPU/CUDA.jl#2231)
    ("Trying to install this package however getting error: Error: CUDA driver 8.0.0 is not compatible with any "
     "supported CUDA toolkit (11.4.4, 11.5.2, 11.6.2, 11.7.1, 11.8.0, 12.0.1, 12.1.1, 12.2.2 or 12.3.1)\n",
     "DRIVER_TOO_OLD_FOR_TORCH_CUDA"),
    # djl-001 (deepjavalibrary/djl#2775): no native build for CUDA 11.2
    ("# No matching cuda flavor for win found: cu112mkl/sm_86.\n", "CUDA_LIBRARY_VERSION_MISMATCH"),
    # qupath-001 (qupath/qupath-extension-djl#46): cu065 is no CUDA release, the CPU-only library is downloaded
    ("DJL fails to detect the RTX 5090 GPU correctly. The log shows:\n\n"
     "    No matching cuda flavor for win-x86_64 found: cu065\n", "TORCH_CPU_ONLY_BUILD"),
    # mlverse-torch-001 (mlverse/torch#737)
    ('"Error in lantern_install_libs(version, type, path, install_config) : \n'
     '  The 11.4 installation type is currently unsupported."\n', "CUDA_LIBRARY_VERSION_MISMATCH"),
    # tensorrt-017 (jkjung-avt/tensorrt_demos#517)
    (" ImportError: libnvinfer.so.8: cannot open shared object file: No such file or directory\n",
     "CUDA_LIBRARY_VERSION_MISMATCH"),
])
def test_cuda_versions_of_other_stacks(text, category, compat):
    assert _serious(text, compat)[category].severity == "error"


def test_tensorflow_optional_tensorrt_lines_stay_quiet(compat):
    # sd-webui-010 (HEALTHY): TensorFlow's dso_loader about its optional TF-TRT libraries
    text = (": W tensorflow/compiler/xla/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic "
            "library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object file: No such file or "
            "directory; LD_LIBRARY_PATH: /usr/lib64-nvidia\n")
    assert "CUDA_LIBRARY_VERSION_MISMATCH" not in _serious(text, compat)


# ---- torch's arch warning, only its source line pasted (rvc-001, RVC-Project/...-WebUI#2507)

def test_torch_arch_warning_source_line(compat):
    text = ("I just got 50 series (RTX 5080) and I can't run the RVC properly.\nI get the following message:\n\n"
            "  warnings.warn(incompatible_device_warn.format(device_name, capability, \" \".join(arch_list), "
            "device_name))\n2025-03-05 00:37:01 | INFO | configs.config | Found GPU NVIDIA GeForce RTX 5080\n")
    assert _serious(text, compat)["GPU_ARCH_NOT_IN_TORCH_BUILD"].severity == "error"


def test_other_warnings_source_lines_stay_quiet(compat):
    text = '  warnings.warn("FP16 is not supported on CPU; using FP32 instead")\n'
    assert "GPU_ARCH_NOT_IN_TORCH_BUILD" not in _serious(text, compat)


# ---- torch on the CPU instead of the GPU, said in words (a CPU-only torch, the usual cause)

@pytest.mark.parametrize("text", [
    # invokeai-005 (invoke-ai/InvokeAI#1763)
    "Starting invoke.bat is always saying that it uses the CPU instead of my GPU (And it indeed tries to generate "
    "with the CPU).\n",
    # invokeai-007 (invoke-ai/InvokeAI#5128)
    "seems to fix the issue, the webui now starts, but then it runs on CPU instead of my 4090...\n",
])
def test_runs_on_cpu_instead_of_gpu_said(text, compat):
    f = _serious(text, compat)["TORCH_CPU_ONLY_BUILD"]
    assert f.severity == "warning" and f.confidence == "low"


@pytest.mark.parametrize("text", [
    # fedora-001: a desktop's rendering, no torch
    "This means the system is using **CPU rendering (fallback)** instead of the GPU.\n",
    # sd-webui-013 (HEALTHY): an application setting
    "I noticed that the VRAM usage doesn't go past 24%, meaning the update is relying heavily on the CPU instead "
    "of the GPU.\n",
    "Should I use the CPU instead of the GPU for such a small model?\n",
])
def test_other_cpu_instead_of_gpu_sentences_stay_quiet(text, compat):
    assert "TORCH_CPU_ONLY_BUILD" not in _serious(text, compat)


def test_wishing_for_the_cpu_stays_quiet(compat):
    text = "For this test I want to use the CPU instead of the GPU.\n"
    assert "TORCH_CPU_ONLY_BUILD" not in _serious(text, compat)
