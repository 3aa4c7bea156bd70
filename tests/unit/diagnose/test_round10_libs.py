"""Issue 42, round 10 (helper libs): a CUDA or cuDNN library a framework's build needs, missing or of another
release (CUDA_LIBRARY_VERSION_MISMATCH), against packages of different CUDA variants in one environment
(CUDA_VARIANT_MIXED) and a system library found before the right copy (SYSTEM_LIB_SHADOWING).

Kind 1, one framework's build wanting a CUDA major the environment lacks: onnxruntime's CUDA provider built for
CUDA 11 on a CUDA 12 machine (microsoft/onnxruntime#13932, #20745; pykeio/ort#548 the same for CUDA 12 on 13), MXNet
built against CUDA 7.5 after an upgrade to 8.0 (apache/mxnet#3829). One build is not two packages of different
variants: the `older_major_build` qualifier read CUDA_VARIANT_MIXED before. Where the paste names no framework (a
bare ``ImportError: libcudart.so.10.1`` line, LLMDet#32), the module is unknown and the row's extension lead stays.

Kind 2, "cuDNN loaded older than the build's" where the reporter names the installed cuDNN and it is the loaded
one (jax-ml/jax#6517: "I use CUDA 11.2 and cudnn 8.0.5"; PaddlePaddle/Paddle#37349: "cudnn 8.1.1" beside Paddle's
"compiled with CUDNN 8.2, but CUDNN version in your machine is 8.1"): no other copy was found first, the machine
lacks the cuDNN the build needs. A named cuDNN that differs from the loaded one (PaddlePaddle/Paddle#26954: 7.6.5
installed, 7.3 loaded) stays the shadowing reading.
"""

from __future__ import annotations

import pytest

from tests.unit.diagnose.pastes import findings as _findings
from tests.unit.diagnose.pastes import serious as _serious

# ---- kind 1: a framework's build for a CUDA major the environment lacks

ORT_CUDA11 = (  # onnxruntime-005 (microsoft/onnxruntime#13932), shortened
    "[dnn_onnxruntime @ 0x3f7ccc0] SessionOptionsAppendExecutionProvider_CUDA(): /onnxruntime_src/onnxruntime/core/"
    "session/provider_bridge_ort.cc:1069 onnxruntime::Provider& onnxruntime::ProviderLibrary::Get() "
    "[ONNXRuntimeError] : 1 : FAIL : Failed to load library libonnxruntime_providers_cuda.so with error: "
    "libcublasLt.so.11: cannot open shared object file: No such file or directory\n\n"
    "### Execution Provider Library Version\n\nCUDA 12.0\n")
MXNET_CUDA75 = (  # mxnet-001 (apache/mxnet#3829), shortened
    "Cuda compilation tools, release 8.0, V8.0.44\n"
    "i recompile the caffe and mxnet; the caffe work well,but the mxnet always remind me \"OSError: libcudart.so.7.5: "
    "cannot open shared object file: No such file or directory\"\n")
ORT_CUDA12_ON_13 = (  # onnxruntime-012 (pykeio/ort#548), shortened
    "message: \"/home/runner/work/ort-artifacts/ort-artifacts/onnxruntime/onnxruntime/core/session/provider_bridge_ort"
    ".cc:1952 Provider &onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : FAIL : Failed to load library "
    "/home/meh/target/debug/libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: cannot open shared "
    "object file: No such file or directory\\n\"\n"
    "/usr/local/cuda-13.1/targets/x86_64-linux/lib/libcublasLt.so.13\n")


@pytest.mark.parametrize("text", [ORT_CUDA11, MXNET_CUDA75, ORT_CUDA12_ON_13], ids=["onnxruntime", "mxnet", "ort-13"])
def test_a_framework_build_for_a_missing_cuda_major_is_a_library_mismatch(text, compat) -> None:
    got = _serious(text, compat)
    assert "CUDA_LIBRARY_VERSION_MISMATCH" in got and got["CUDA_LIBRARY_VERSION_MISMATCH"].severity == "error"
    # the same fault read as the variants it mixes (the build's CUDA major against the environment's): a low
    # lead beside it (shared example reports-batch4/305 labels it so), never an error
    assert got["CUDA_VARIANT_MIXED"].severity == "warning" and got["CUDA_VARIANT_MIXED"].confidence == "low"


def test_a_bare_older_runtime_line_naming_no_framework_is_not_read_as_a_framework_build(compat) -> None:
    # llmdet-001 (iSEE-Laboratory/LLMDet#32): mmcv's build for CUDA 10.1, but the paste names no program
    text = ("bash dist_test.sh configs/grounding_dino_swin_t.py tiny.pth 8\n"
            "ImportError: libcudart.so.10.1: cannot open shared object file: No such file or directory\n"
            "ubuntu20.04+nvidia530.30+cuda12.1\n")
    got = _serious(text, compat)
    assert "CUDA_VARIANT_MIXED" not in got and "CUDA_LIBRARY_VERSION_MISMATCH" not in got
    assert got["THIRD_PARTY_EXTENSION_MISMATCH"].severity == "warning"
    # a framework named, but the library is of the environment's own CUDA major: no build for another major
    same = ("torch==2.0.1+cu118\n"
            "mxnet fails: OSError: libcudart.so.11.0: cannot open shared object file: No such file or directory\n")
    got = _serious(same, compat)
    assert "CUDA_LIBRARY_VERSION_MISMATCH" not in got and "CUDA_VARIANT_MIXED" not in got


def test_the_ort_provider_failing_alone_is_a_library_lead_not_a_variant_mix(compat) -> None:
    # onnxruntime-002 (microsoft/onnxruntime#19292) and -006 (#22809): the provider could not load the CUDA/cuDNN
    # its build needs
    text = ("'Failed to create CUDAExecutionProvider. Please reference https://onnxruntime.ai/docs/reference/"
            "execution-providers/CUDA-ExecutionProvider.html#requirements to ensure all dependencies are met.'\n\n"
            "onnxrumtime 1.16.2\nCUDA12.1\n")
    got = _serious(text, compat)
    assert got["CUDA_LIBRARY_VERSION_MISMATCH"].severity == "warning" and "CUDA_VARIANT_MIXED" not in got


# ---- kind 2: the only cuDNN the machine has is older than the build's

JAX_CUDNN = (  # jax-013 (jax-ml/jax#6517), shortened
    "2021-04-20 23:10:23.094910: E external/org_tensorflow/tensorflow/stream_executor/cuda/cuda_dnn.cc:352] Loaded "
    "runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0.  CuDNN library needs to have matching major "
    "version and equal or higher minor version.\n\n"
    "I use CUDA 11.2 and cudnn 8.0.5. I install the jax with:\n"
    "`pip install --upgrade jax jaxlib==0.1.65+cuda112 -f https://storage.googleapis.com/jax-releases/jax_releases.html`\n")
PADDLE_CUDNN = (  # paddle-002 (PaddlePaddle/Paddle#37349), shortened
    "W1119 10:28:25.503 device_context.cc:465] device: 0, cuDNN Version: 8.1.\n"
    "The installed Paddle is compiled with CUDNN 8.2, but CUDNN version in your machine is 8.1, which may cause "
    "serious incompatible bug. Please recompile or reinstall Paddle with compatible CUDNN version.\n"
    "python -m pip install paddlepaddle-gpu==2.2.0.post112 -f https://www.paddlepaddle.org.cn/whl/windows/mkl/avx/"
    "stable.html\n"
    "CUDA 11.2.152\ncudnn 8.1.1\n")


@pytest.mark.parametrize("text", [JAX_CUDNN, PADDLE_CUDNN], ids=["jax", "paddle"])
def test_the_named_cudnn_is_the_loaded_one_older_than_the_build(text, compat) -> None:
    got = _serious(text, compat)
    assert "CUDA_LIBRARY_VERSION_MISMATCH" in got and "SYSTEM_LIB_SHADOWING" not in got
    assert "cuDNN" in got["CUDA_LIBRARY_VERSION_MISMATCH"].fix.summary
    # near misses: paddle-006 (PaddlePaddle/Paddle#26954): 7.6.5 installed, 7.3 found first
    near = ("框架版本为1.8.3，查本机cudnn版本为7.6.5，但是在运行程序时会被识别为7.3。\n"
            "WARNING: device: 0. The installed Paddle is compiled with CUDNN 7.6, but CUDNN version in your machine "
            "is 7.3, which may cause serious incompatible bug. Please recompile or reinstall Paddle with compatible "
            "CUDNN version.\n")
    got = _serious(near, compat)
    assert "SYSTEM_LIB_SHADOWING" in got and "CUDA_LIBRARY_VERSION_MISMATCH" not in got
    # no cuDNN named at all: the bare line was a shadowing copy (jax-ml/jax#15268) and the only cuDNN, too old
    # (jax-ml/jax#16901): both readings, each a warning, neither an error (round 11, libs10)
    bare = JAX_CUDNN.split("\n\n")[0] + "\n"
    got = _serious(bare, compat)
    assert {"SYSTEM_LIB_SHADOWING", "CUDA_LIBRARY_VERSION_MISMATCH"} <= set(got)
    assert {got[c].severity for c in ("SYSTEM_LIB_SHADOWING", "CUDA_LIBRARY_VERSION_MISMATCH")} == {"warning"}


# ---- kind 3: a versioned CUDA or cuDNN library said, in words, not to be found

@pytest.mark.parametrize("text", [
    # ctranslate2-006 (SYSTRAN/faster-whisper#1080)
    "`ctranslate2` version is now bumped to 4.5.0,\n\nI got `cudnn ops64_9.dll is not found` error\n",
    # tensorflow-018 (david8862/tf-keras-stacked-hourglass-keypoint-detection#13)
    "Tensorflow GPU libarary Libcudart.so.11.0 not found\n\nI am using TensorFlow both CPU and GPU version 2.8\n",
    # video-subtitle-extractor-001 (YaoFANGUK/video-subtitle-extractor#48)
    "按照说明装的是cudn10.1和cudnn-7.6.5，对应的库应该是cudnn64_7.dll\n但GPU版本报错说找不到cudnn64_8.dll, 这个肯定是没有的\n",
], ids=["ctranslate2", "tensorflow", "paddle-app"])
def test_a_versioned_cuda_library_said_not_found_is_a_library_lead(text, compat) -> None:
    f = _serious(text, compat)["CUDA_LIBRARY_VERSION_MISMATCH"]
    assert f.code == "messages.signature/cuda-library-said-not-found" and f.severity == "warning"
    # near misses: the library found (a healthy TensorFlow log), and the loader's own CTranslate2 line, which
    # its own row reads (at error)
    healthy = ("2021-03-01 10:00:00.1: I tensorflow/stream_executor/platform/default/dso_loader.cc:49] "
               "Successfully opened dynamic library cudart64_110.dll\n")
    assert "CUDA_LIBRARY_VERSION_MISMATCH" not in _serious(healthy, compat)
    ct2 = "RuntimeError: Library libcublas.so.11 is not found or cannot be loaded\n"
    assert _serious(ct2, compat)["CUDA_LIBRARY_VERSION_MISMATCH"].code == "messages.signature/ct2-cuda-library-not-loaded"
    # ... and the new row does not match inside its library name ("lib" + "cublas.so.11 is not found")
    values = [e.value for g in _findings(ct2, compat) for e in g.evidence]
    assert "libcublas.so.11" in values and "cublas.so.11" not in values


# ---- kind 4: the CPU package onnxruntime beside onnxruntime-gpu, said in words

@pytest.mark.parametrize("text", [
    # facefusion-002 (facefusion/facefusion#278): the reporter's resolution
    "facefusion EXECUTION PROVIDERS NOT cuda options?\n\nMy problem has been resolved, solution:\nstep 1:\n"
    "python -m pip uninstall onnxruntime onnxruntime-gpu\nstep2:\npython -m pip install onnxruntime-gpu==1.15.1\n",
    # optimum-001 (huggingface/optimum#1064): an extra that pulls the CPU package after the GPU one
    "pip install optimum[onnxruntime-gpu]\n# at this point, ort.get_available_providers() still show CUDAExecutionProvider\n"
    "pip install optimum[exporters]\n# at this point the onnxruntime package is installed, and the GPU providers are gone\n",
], ids=["facefusion", "optimum"])
def test_the_cpu_onnxruntime_said_beside_the_gpu_one_is_a_variant_mix_lead(text, compat) -> None:
    f = _serious(text, compat)["CUDA_VARIANT_MIXED"]
    assert f.code == "messages.signature/ort-cpu-package-beside-gpu-said" and f.severity == "warning"
    # near miss: only the GPU package uninstalled and reinstalled (no CPU package named)
    near = "pip uninstall -y onnxruntime-gpu\npip install onnxruntime-gpu==1.15.1\n"
    assert "CUDA_VARIANT_MIXED" not in _serious(near, compat)


# ---- kind 5: onnxruntime without its CUDA provider: which package is installed decides the category

@pytest.mark.parametrize("text", [
    # onnxruntime-009 (microsoft/onnxruntime#26994, a source build without --use_cuda)
    "/home/u/.local/lib/python3.12/site-packages/onnxruntime/capi/onnxruntime_inference_collection.py:123: "
    "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider names.Available providers: "
    "'CPUExecutionProvider'\n",
    # onnxruntime-007 (TaterTotterson/microWakeWord-Trainer-Nvidia-Docker#1, the CPU package in the way)
    "🔧 ONNX Runtime Providers:\n  • ['AzureExecutionProvider', 'CPUExecutionProvider']\n"
    "⚠️  CUDAExecutionProvider not available — ONNX will fall back to CPU.\n",
], ids=["source-build", "app-line"])
def test_a_cpu_onnxruntime_with_no_package_list_is_two_leads_not_an_error(text, compat) -> None:
    got = _serious(text, compat)
    assert got["FRAMEWORK_CPU_ONLY_BUILD"].severity == "warning" and got["CUDA_VARIANT_MIXED"].severity == "warning"
    # the package list settles it
    alone = _serious(text + "onnxruntime==1.20.1\nnumpy==1.26.4\n", compat)
    assert alone["FRAMEWORK_CPU_ONLY_BUILD"].severity == "error" and "CUDA_VARIANT_MIXED" not in alone
    both = _serious(text + "onnxruntime==1.20.1\nonnxruntime-gpu==1.20.1\n", compat)
    assert both["CUDA_VARIANT_MIXED"].severity == "error" and "FRAMEWORK_CPU_ONLY_BUILD" not in both


# ---- kind 6: a torchvision operator with CPU kernels and no CUDA kernel: a CPU torchvision beside a CUDA torch

@pytest.mark.parametrize("text", [
    # ultralytics-005 (ultralytics/ultralytics#5059), shortened
    "NotImplementedError: Could not run 'torchvision::nms' with arguments from the 'CUDA' backend. This could be "
    "because the operator doesn't exist for this backend. 'torchvision::nms' is only available for these backends: "
    "[CPU, QuantizedCPU, BackendSelect, Python, AutogradCPU, AutogradCUDA, AutocastCPU, AutocastCUDA, Tracer].\n",
    # comfyui-001 (ltdrdata/ComfyUI-Impact-Pack#915), shortened
    "Could not run 'torchvision::nms' with arguments from the 'CUDA' backend. 'torchvision::nms' is only available "
    "for these backends: [CPU, Meta, QuantizedCPU, BackendSelect, AutogradCUDA, AutocastCUDA, PythonDispatcher].\n",
], ids=["ultralytics", "comfyui"])
def test_a_torchvision_op_with_no_cuda_kernel_names_the_cpu_torchvision(text, compat) -> None:
    got = _serious(text, compat)
    # both readings are leads: ultralytics-005 was a CPU torchvision, comfyui-001 one of another build (precision
    # audit, tests/unit/diagnose/test_precision_audit.py)
    assert got["CUDA_VARIANT_MIXED"].severity == "warning" and got["COMPANION_VERSION_MISMATCH"].severity == "warning"
    # near miss: the list has a CUDA kernel (another cause), or no list at all
    near = text.replace("[CPU,", "[CPU, CUDA,")
    assert "CUDA_VARIANT_MIXED" not in _serious(near, compat)
    bare = "Could not run 'torchvision::nms' with arguments from the 'CUDA' backend.\n"
    assert "CUDA_VARIANT_MIXED" not in _serious(bare, compat)
