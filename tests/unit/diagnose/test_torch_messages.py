"""Issue 42, knowledge from sources (helper kbtorch): the environment-cause messages torch and its companions
(torchvision, torchaudio, Triton under inductor) print, each as the source formats it with realistic values, in
every wording its releases used, read to the catalogue row that names the cause; and a near miss per row (a
sentence that shares words with the message but is not it) that the row must leave alone.

Rows and wordings (compat_data/error_signatures.json, sources in docs/diagnose.md):
- torch.cuda's capability checks: torch >= 2.13 "Found GPU0 X which is of compute capability (CC) 6.1." with its
  "does not include kernels" / "No published PyTorch CUDA builds" tails; torch 0.4-1.x "which requires
  CUDA_VERSION >= 10000 to work properly" (0.3: "for optimal performance and fast startup time").
- torch.backends.cudnn: "cuDNN version incompatibility/mismatch ... compiled against 7102 but linked against 7005"
  (torch 0.4-1.x printed integers without parentheses); torchvision's "No such operator torchvision::nms" (torch
  1.x's wording of "operator ... does not exist"); "PyTorch was compiled without CUDA support".
- inductor/Triton: TritonMissing (2.0 and 2.x wordings), InvalidCxxCompiler, Triton's missing C compiler;
  torch.compile's Python ceiling (2.0 "Python 3.11+ not yet supported", Dynamo's "not supported on Python 3.12+",
  2.14 "torch.compile is not supported on Python 3.15+") and Windows (before 2.4).
- import torch: _preload_cuda_lib's "libcublas.so.*[0-9] not found in the system path", a source checkout's
  torch/_C folder, conda MKL >= 2024.1 (iJIT_NotifyEvent), NumPy 2 against a NumPy 1 build.
- torch.distributed's ProcessGroupNCCL without GPUs; cpp_extension's ninja, CUDA_HOME, unknown arch and host
  compiler range (2.x, and the older wording with the ceiling in parentheses); torchaudio's FFmpeg extension (with
  its "intialize" typo) and its I/O backends; torchvision's image extension (a low warning); a compiler below
  torch's ABI floor or not runnable (2.x log lines and 1.x/2.0 warnings), and a missing Python.h; a module built for
  a CUDA torch asking for libc10_cuda.so / libtorch_cuda.so, which a CPU torch does not ship.
- A Jetson Orin (CC 8.7) under the capability warning is a low warning: the generic wheel may still run there.
"""

from __future__ import annotations

import pytest

from tests.unit.diagnose.pastes import by_row

CC_214 = (
    "/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:374: UserWarning: Found GPU0 NVIDIA GeForce GTX 1080 "
    "which is of compute capability (CC) 6.1.\n"
    "The following list shows the CCs this version of PyTorch was built for and the hardware CCs it supports:\n"
    "- 7.5 which supports hardware CC >=7.5,<8.0\n- 8.0 which supports hardware CC >=8.0,<9.0 except {8.7}\n"
    "- 9.0 which supports hardware CC >=9.0,<10.0\n"
    "Your installed torch==2.14.1+cu130 does not include kernels for this GPU. Reinstall the same version against a "
    "CUDA build that does, e.g.:\n"
    "  For CUDA 12.6 use pip install torch==2.14.1 --index-url https://download.pytorch.org/whl/cu126\n")
CC_214_NONE = (
    "UserWarning: Found GPU0 Tesla K80 which is of compute capability (CC) 3.7.\n"
    "The following list shows the CCs this version of PyTorch was built for and the hardware CCs it supports:\n"
    "- 7.5 which supports hardware CC >=7.5,<8.0\n"
    "No published PyTorch CUDA builds for release 2.14.1+cu130 support this GPU. Visit "
    "https://pytorch.org/get-started/locally/ to find a compatible release.\n")
REQUIRES_CUDA = (
    "/usr/lib/python3.6/site-packages/torch/cuda/__init__.py:117: UserWarning:\n"
    "    Found GPU0 GeForce RTX 2080 Ti which requires CUDA_VERSION >= 10000 to\n"
    "     work properly, but your PyTorch was compiled\n"
    "     with CUDA_VERSION 9000. Please install the correct PyTorch binary\n"
    "     using instructions from https://pytorch.org\n")
REQUIRES_CUDA_03 = (
    "UserWarning:\n    Found GPU0 Tesla V100-PCIE-16GB which requires CUDA_VERSION >= 9000 for\n"
    "    optimal performance and fast startup time, but your PyTorch was compiled\n"
    "    with CUDA_VERSION 8000. Please install the correct PyTorch binary\n"
    "    using instructions from http://pytorch.org\n")

CASES = [
    ("torch-gpu-cc-not-in-build", "GPU_ARCH_NOT_IN_TORCH_BUILD", CC_214),
    ("torch-gpu-cc-not-in-build", "GPU_ARCH_NOT_IN_TORCH_BUILD", CC_214_NONE),
    ("gpu-needs-newer-cuda-than-torch-build", "GPU_ARCH_NOT_IN_TORCH_BUILD", REQUIRES_CUDA),
    ("gpu-needs-newer-cuda-than-torch-build", "GPU_ARCH_NOT_IN_TORCH_BUILD", REQUIRES_CUDA_03),
    ("cudnn-version-incompatibility", "SYSTEM_LIB_SHADOWING",
     "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against 7102 but linked against 7005\n"),
    ("cudnn-version-incompatibility", "SYSTEM_LIB_SHADOWING",
     "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7005 but linked against 6021\n"),
    ("torchvision-operator-missing", "COMPANION_VERSION_MISMATCH",
     "  File \"/opt/conda/lib/python3.7/site-packages/torchvision/ops/boxes.py\", line 36, in nms\n"
     "    return torch.ops.torchvision.nms(boxes, scores, iou_threshold)\n"
     "RuntimeError: No such operator torchvision::nms\n"),
    ("torch-not-compiled-with-cuda", "TORCH_CPU_ONLY_BUILD",
     "  File \"/venv/lib/python3.11/site-packages/torch/cuda/__init__.py\", line 183, in _exchange_device\n"
     "    raise RuntimeError(\"PyTorch was compiled without CUDA support\")\n"
     "RuntimeError: PyTorch was compiled without CUDA support\n"),
    ("inductor-triton-missing", "TORCH_COMPILE_UNUSABLE",
     "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
     "RuntimeError: Cannot find a working triton installation. Either the package is not installed or it is too "
     "old. More information on installing Triton can be found at: https://github.com/triton-lang/triton\n"),
    ("inductor-triton-missing", "TORCH_COMPILE_UNUSABLE",
     "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nRuntimeError: Cannot find a working "
     "triton installation. More information on installing Triton can be found at https://github.com/openai/triton\n"),
    ("inductor-no-cxx-compiler", "TORCH_COMPILE_UNUSABLE",
     "torch._inductor.exc.InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx: "
     "(None, 'g++')\n"),
    ("triton-no-c-compiler", "TORCH_COMPILE_UNUSABLE",
     "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
     "RuntimeError: Failed to find C compiler. Please specify via CC environment variable.\n"),
    ("torch-compile-python-unsupported", "PYTHON_VERSION_UNSUPPORTED",
     "RuntimeError: Python 3.11+ not yet supported for torch.compile\n"),
    ("torch-compile-python-unsupported", "PYTHON_VERSION_UNSUPPORTED",
     "RuntimeError: Dynamo is not supported on Python 3.12+\n"),
    ("torch-compile-python-unsupported", "PYTHON_VERSION_UNSUPPORTED",
     "RuntimeError: torch.compile is not supported on Python 3.15+\n"),
    ("torch-compile-windows-unsupported", "TORCH_COMPILE_UNUSABLE",
     "RuntimeError: Windows not yet supported for torch.compile\n"),
    ("processgroupnccl-no-gpus", "NO_GPU_VISIBLE",
     "torch.distributed.DistBackendError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!\n"),
    ("torch-preload-cuda-lib-not-in-path", "CUDA_LIBRARY_VERSION_MISMATCH",
     "ValueError: libcublas.so.*[0-9] not found in the system path ['/app', "
     "'/usr/local/lib/python311.zip', '/usr/local/lib/python3.11/site-packages']\n"),
    ("torch-preload-cuda-lib-not-in-path", "CUDA_LIBRARY_VERSION_MISMATCH",
     "ValueError: libnvrtc.so.*[0-9].* not found in the system path ['/home/u/proj', "
     "'/home/u/venv/lib/python3.10/site-packages']\n"),
    ("torch-c-extensions-source-tree", "PYTHON_PACKAGE_SHADOWED",
     "ImportError: \nFailed to load PyTorch C extensions:\n    It appears that PyTorch has loaded the `torch/_C` "
     "folder\n    of the PyTorch repository rather than the C extensions which\n    are expected in the `torch._C` "
     "namespace. This can occur when\n    using the `install` workflow. e.g.\n"
     "        $ python setup.py install && python -c \"import torch\"\n"),
    ("libtorch-cpu-ijit-undefined", "DEPENDENCY_UNMET",
     "ImportError: /home/u/miniconda3/envs/t/lib/python3.10/site-packages/torch/lib/libtorch_cpu.so: undefined "
     "symbol: iJIT_NotifyEvent\n"),
    ("torch-numpy-abi-mismatch", "DEPENDENCY_UNMET",
     "/venv/lib/python3.10/site-packages/torch/nn/modules/transformer.py:20: UserWarning: Failed to initialize "
     "NumPy: _ARRAY_API not found (Triggered internally at ../torch/csrc/utils/tensor_numpy.cpp:84.)\n"),
    ("torch-numpy-abi-mismatch", "DEPENDENCY_UNMET",
     "A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.0 as it may crash. To support both 1.x "
     "and 2.x\nversions of NumPy, modules must be compiled with NumPy 2.0.\n"),
    ("torchaudio-ffmpeg-not-loaded", "DEPENDENCY_UNMET",
     "ImportError: Failed to intialize FFmpeg extension. Tried versions: ['6', '5', '4', '']. Enable DEBUG "
     "logging to see more details about the error.\n"),
    ("torchaudio-no-io-backend", "DEPENDENCY_UNMET",
     "RuntimeError: Couldn't find appropriate backend to handle uri sample.wav and format None.\n"),
    ("torchaudio-no-io-backend", "DEPENDENCY_UNMET", "RuntimeError: No audio I/O backend is available.\n"),
    ("cpp-extension-ninja-missing", "TORCH_COMPILE_UNUSABLE",
     "RuntimeError: Ninja is required to load C++ extensions (pip install ninja to get it)\n"),
    ("cpp-extension-ninja-missing", "TORCH_COMPILE_UNUSABLE", "RuntimeError: Ninja is required to load C++ extensions\n"),
    ("cpp-extension-cuda-home-unset", "TORCH_COMPILE_UNUSABLE",
     "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.\n"),
    ("cpp-extension-unknown-cuda-arch", "GPU_ARCH_NOT_IN_TORCH_BUILD",
     "ValueError: Unknown CUDA arch (12.0) or GPU not supported\n"),
    ("cpp-extension-compiler-above-cuda-max", "HOST_COMPILER_TOO_NEW",
     "RuntimeError: The current installed version of /home/u/.conda/envs/t/bin/x86_64-conda-linux-gnu-c++ (14.3.0) "
     "is greater than the maximum required version by CUDA 12.8. Please make sure to use an adequate version of "
     "/home/u/.conda/envs/t/bin/x86_64-conda-linux-gnu-c++ (>=6.0.0, <14.0).\n"),
    ("cpp-extension-compiler-above-cuda-max", "HOST_COMPILER_TOO_NEW",
     "RuntimeError: The current installed version of gcc (13.3.0) is greater than the maximum required version by "
     "CUDA 11.7 (11.5.0)\n"),
    ("cpp-extension-compiler-below-cuda-min", "TORCH_COMPILE_UNUSABLE",
     "RuntimeError: The current installed version of g++ (4.8.5) is less than the minimum required version by CUDA "
     "11.8 (6.0.0). Please make sure to use an adequate version of g++ (>=6.0.0, <12.0).\n"),
    ("torchvision-image-extension-not-loaded", "COMPANION_VERSION_MISMATCH",
     "UserWarning: Failed to load image Python extension: Could not find module "
     "'C:\\Python39\\Lib\\site-packages\\torchvision\\image.pyd' (or one of its dependencies). Try using the full "
     "path with constructor syntax.\n  warn(f\"Failed to load image Python extension: {e}\")\n"),
    ("cpp-extension-compiler-abi-too-old", "TORCH_COMPILE_UNUSABLE",
     "                               !! WARNING !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
     "Your compiler (g++ 4.8.5) may be ABI-incompatible with PyTorch!Please use a compiler that is ABI-compatible "
     "with GCC 5.0 and above.See https://gcc.gnu.org/onlinedocs/libstdc++/manual/abi.html.\n"),
    ("cpp-extension-compiler-abi-too-old", "TORCH_COMPILE_UNUSABLE",
     "UserWarning: \n\n                               !! WARNING !!\n\n"
     "Your compiler (g++ 4.8.5) may be ABI-incompatible with PyTorch!\n"
     "Please use a compiler that is ABI-compatible with GCC 5.0 and above.\n"),
    ("cpp-extension-compiler-not-runnable", "TORCH_COMPILE_UNUSABLE",
     "C:\\Users\\me\\miniconda3\\envs\\awq\\lib\\site-packages\\torch\\utils\\cpp_extension.py:359: UserWarning: "
     "Error checking compiler version for cl: [WinError 2] The system cannot find the file specified\n"
     "  warnings.warn(f'Error checking compiler version for {compiler}: {error}')\n"),
    ("cpp-extension-compiler-not-runnable", "TORCH_COMPILE_UNUSABLE",
     "WARNING:torch.utils.cpp_extension:Error checking compiler version for c++\nTraceback (most recent call last):\n"
     "FileNotFoundError: [Errno 2] No such file or directory: 'c++'\n"),
    ("torch-cuda-lib-missing-cpu-torch", "THIRD_PARTY_EXTENSION_MISMATCH",
     "Traceback (most recent call last):\n  File \"run.py\", line 2, in <module>\n    import mmcv._ext\n"
     "ImportError: libtorch_cuda.so: cannot open shared object file: No such file or directory\n"),
    ("torch-cuda-lib-missing-cpu-torch", "CUDA_VARIANT_MIXED",
     ">>> import torchvision\nTraceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n"
     "  File \"/home/u/venv/lib/python3.10/site-packages/torchvision/__init__.py\", line 5, in <module>\n"
     "    from .extension import _HAS_OPS\n"
     "OSError: libc10_cuda.so: cannot open shared object file: No such file or directory\n"),
    ("python-h-missing", "TORCH_COMPILE_UNUSABLE",
     "/tmp/tmpx8a1f3/main.c:5:10: fatal error: Python.h: No such file or directory\n    5 | #include <Python.h>\n"
     "      |          ^~~~~~~~~~\ncompilation terminated.\n"),
]

NEAR = [
    ("torch-gpu-cc-not-in-build", "Found GPU0 NVIDIA A100 with compute capability 8.0, all good.\n"),
    ("gpu-needs-newer-cuda-than-torch-build", "The RTX 2080 Ti requires CUDA 10 or newer, says the README.\n"),
    ("cudnn-version-incompatibility", "RuntimeError: cuDNN version 7102 found, PyTorch was compiled against it\n"),
    ("torchvision-operator-missing", "RuntimeError: No such operator mylib::nms\n"),
    ("torch-not-compiled-with-cuda", "PyTorch was compiled with CUDA support 12.1 here.\n"),
    ("inductor-triton-missing", "Found a working triton installation at /venv/lib/python3.11/site-packages\n"),
    ("inductor-no-cxx-compiler", "Using C++ compiler g++ from torch._inductor.config.cpp.cxx\n"),
    ("triton-no-c-compiler", "Please specify the CC environment variable to pick a compiler.\n"),
    ("torch-compile-python-unsupported", "torch.compile is supported on Python 3.11 since torch 2.1.\n"),
    ("torch-compile-windows-unsupported", "Windows is supported for torch.compile since 2.4.\n"),
    ("processgroupnccl-no-gpus", "ProcessGroupNCCL created with 8 GPUs.\n"),
    ("torch-preload-cuda-lib-not-in-path", "ValueError: config.json not found in the system path ['/app']\n"),
    ("torch-c-extensions-source-tree", "Failed to load the C extension of mylib from the torch/_C folder.\n"),
    ("libtorch-cpu-ijit-undefined", "libtorch_cpu.so loaded; iJIT_NotifyEvent is exported by mkl 2024.0\n"),
    ("torch-numpy-abi-mismatch", "NumPy 2.0.0 initialised; the module was compiled using NumPy 2.0.\n"),
    ("torchaudio-ffmpeg-not-loaded", "Loaded FFmpeg extension version 6.\n"),
    ("torchaudio-no-io-backend", "Found backend ffmpeg to handle uri sample.wav.\n"),
    ("cpp-extension-ninja-missing", "Ninja found at /usr/bin/ninja, building C++ extensions.\n"),
    ("cpp-extension-cuda-home-unset", "CUDA_HOME environment variable is set to /usr/local/cuda-12.4.\n"),
    ("cpp-extension-unknown-cuda-arch", "TORCH_CUDA_ARCH_LIST=12.0 is a known CUDA arch for torch 2.7.\n"),
    ("cpp-extension-compiler-above-cuda-max", "The current installed version of g++ (12.3.0) is fine for CUDA 12.8.\n"),
    ("cpp-extension-compiler-below-cuda-min", "The installed version of g++ (11.4.0) is above the minimum for CUDA 11.8.\n"),
    ("torchvision-image-extension-not-loaded", "Loaded the image Python extension of torchvision 0.16.0.\n"),
    ("cpp-extension-compiler-abi-too-old", "Your compiler (g++ 11.4.0) is ABI-compatible with PyTorch.\n"),
    ("cpp-extension-compiler-not-runnable", "Checking compiler version for c++: 11.4.0\n"),
    ("torch-cuda-lib-missing-cpu-torch", "ls torch/lib shows libc10_cuda.so and libtorch_cuda.so, both present.\n"),
    ("python-h-missing", "#include <Python.h> found in /usr/include/python3.10\n"),
]


def _by_code(text, compat):
    return {row: f for row, f in by_row(text, compat).items() if f.severity in ("warning", "error")}


@pytest.mark.parametrize("row,category,text", CASES, ids=[f"{r}-{i}" for i, (r, _c, _t) in enumerate(CASES)])
def test_torch_message_reads_to_its_row(row, category, text, compat) -> None:
    got = _by_code(text, compat)
    assert row in got, sorted(got)
    assert got[row].category == category


@pytest.mark.parametrize("row,text", NEAR, ids=[r for r, _t in NEAR])
def test_near_miss_leaves_the_row_alone(row, text, compat) -> None:
    assert row not in _by_code(text, compat)


def test_jetson_orin_cc_8_7_is_a_low_warning_not_an_error(compat) -> None:
    orin = ("UserWarning: Found GPU0 Orin which is of compute capability (CC) 8.7.\n"
            "The following list shows the CCs this version of PyTorch was built for and the hardware CCs it supports:\n"
            "- 8.0 which supports hardware CC >=8.0,<9.0 except {8.7}\n- 9.0 which supports hardware CC >=9.0,<10.0\n"
            "No published PyTorch CUDA builds for release 2.13.0+cu132 support this GPU.\n")
    got = _by_code(orin, compat)["torch-gpu-cc-not-in-build"]
    assert got.category == "GPU_ARCH_NOT_IN_TORCH_BUILD" and got.severity == "warning"
    assert _by_code(CC_214, compat)["torch-gpu-cc-not-in-build"].severity == "error"


def test_capability_rows_carry_the_gpu_and_its_cc(compat) -> None:
    from envdoctor.diagnose.engine import build_facts, read_all

    f = build_facts(read_all(CC_214, compat), CC_214)
    gpus = f.driver.gpus
    assert gpus and gpus[0].name == "NVIDIA GeForce GTX 1080"
    assert gpus[0].compute_capability == "6.1"
