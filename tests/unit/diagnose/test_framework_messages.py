"""Issue 42 (helper kbframe): the environment-cause messages frameworks print, taken from their source code.

Each catalogue row below was written from the framework's own format string (TensorFlow/XLA, JAX, CuPy, Numba,
bitsandbytes, DeepSpeed, ggml/llama.cpp, Ollama, ONNX Runtime, PaddlePaddle, MXNet, Triton), not from one
paste: the message is filled in with realistic values the way the source formats it, and must give the row's
category at warning or error; a near-miss (a healthy line, a sibling message with another meaning, a value the
row must not read) must not fire the row. Each case fails without its row (the finding's code names the row).
"""

from __future__ import annotations

import textwrap

import pytest

from tests.unit.diagnose.pastes import findings

# (row id, category, the message as the source prints it, a near-miss that must not fire the row)
CASES = [
    ("tf-cannot-dlopen-gpu-libraries", "CUDA_LIBRARY_VERSION_MISMATCH",
     "2023-01-01 10:00:00.000000: W tensorflow/core/common_runtime/gpu/gpu_device.cc:2251] Cannot dlopen some GPU "
     "libraries. Please make sure the missing libraries mentioned above are installed properly if you would like to "
     "use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to download and setup the required "
     "libraries for your platform.\nSkipping registering GPU devices...\n",
     "2023-02-12 02:34:13.661201: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Cannot "
     "dlopen some TensorRT libraries. If you would like to use Nvidia GPU with TensorRT, please make sure the missing "
     "libraries mentioned above are installed properly.\n"),
    ("tf-cudart-stub-no-cuda-drivers", "CUDA_LIBRARY_VERSION_MISMATCH",
     "2023-10-10 10:00:00.000000: I tensorflow/tsl/cuda/cudart_stub.cc:28] Could not find cuda drivers on your "
     "machine, GPU will not be used.\n",
     "2023-10-10 10:00:00.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1886] Created device "
     "/job:localhost/replica:0/task:0/device:GPU:0 with 22282 MB memory:  -> device: 0, name: NVIDIA GeForce RTX "
     "3090, pci bus id: 0000:01:00.0, compute capability: 8.6\n"),
    ("tf-no-kernel-binaries-for-cc", "GPU_ARCH_NOT_IN_TORCH_BUILD",
     "2021-01-01 10:00:00.000000: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1600] TensorFlow was not built "
     "with CUDA kernel binaries compatible with compute capability 8.6. CUDA kernels will be jit-compiled from PTX, "
     "which could take 30 minutes or longer.\n",
     "2021-01-01 10:00:00.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1733] Found device 0 with "
     "properties: pciBusID: 0000:01:00.0 name: GeForce RTX 3090 computeCapability: 8.6\n"),
    ("xla-driver-older-than-ptxas", "DRIVER_TOO_OLD_FOR_TORCH_CUDA",
     "2024-05-28 04:48:02.870689: W external/xla/xla/service/gpu/nvptx_compiler.cc:760] The NVIDIA driver's CUDA "
     "version is 12.4 which is older than the ptxas CUDA version (12.5.40). Because the driver is older than the "
     "ptxas version, XLA is disabling parallel compilation, which may slow down compilation. You should update your "
     "NVIDIA driver or use the NVIDIA-provided CUDA forward compatibility packages.\n",
     "I0000 00:00:1716868082.870689 12 service.cc:145] XLA service 0x55d0 initialized for platform CUDA (this does "
     "not guarantee that XLA will be used). Devices:\n"),
    ("xla-kernel-driver-not-running", "NO_NVIDIA_DRIVER",
     "2020-11-21 15:37:17.759803: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:156] kernel driver does not "
     "appear to be running on this host (59fb3b9908d3): /proc/driver/nvidia/version does not exist\n",
     "2020-11-21 15:37:17.759803: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:176] hostname: 59fb3b9908d3\n"
     "kernel reported version is: 535.104.5\n"),
    ("xla-libdevice-dir-not-found", "CUDA_LIBRARY_VERSION_MISMATCH",
     "2023-05-06 16:19:54.078251: W tensorflow/compiler/xla/service/gpu/llvm_gpu_backend/gpu_backend_lib.cc:530] "
     "Can't find libdevice directory ${CUDA_DIR}/nvvm/libdevice. This may result in compilation or runtime failures, "
     "if the program we try to run uses routines from libdevice.\nSearched for CUDA in the following directories:\n"
     "  ./cuda_sdk_lib\n  /usr/local/cuda-11.8\n  /usr/local/cuda\n  .\n",
     "I0000 00:00:1716868082.870689 12 nvptx_compiler.cc:100] Linking with libdevice from: "
     "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc\n"),
    ("xla-libdevice-not-found-at", "CUDA_LIBRARY_VERSION_MISMATCH",
     "tensorflow.python.framework.errors_impl.InternalError: libdevice not found at ./libdevice.10.bc "
     "[Op:__inference_train_function_1234]\n",
     "Found libdevice dir /usr/local/cuda/nvvm/libdevice\n"),
    ("tf-windows-cuda-dll-missing", "CUDA_LIBRARY_VERSION_MISMATCH",
     "ImportError: Could not find 'cudart64_100.dll'. TensorFlow requires that this DLL be installed in a directory "
     "that is named in your %PATH% environment variable. Download and install CUDA 10.0 from this URL: "
     "https://developer.nvidia.com/cuda-90-download-archive\n",
     "2019-06-01 10:00:00.000000: I tensorflow/stream_executor/platform/default/dso_loader.cc:42] Successfully opened "
     "dynamic library cudart64_100.dll\n"),
    ("tf-windows-nvcuda-dll-missing", "NO_NVIDIA_DRIVER",
     "ImportError: Could not find 'nvcuda.dll'. TensorFlow requires that this DLL be installed in a directory that is "
     "named in your %PATH% environment variable. Typically it is installed in 'C:\\Windows\\System32'. If it is not "
     "present, ensure that you have a CUDA-capable GPU with the correct driver installed.\n",
     "2019-06-01 10:00:00.000000: I tensorflow/stream_executor/platform/default/dso_loader.cc:42] Successfully opened "
     "dynamic library nvcuda.dll\n"),
    ("jax-jaxlib-older-than-required", "COMPANION_VERSION_MISMATCH",
     "RuntimeError: jaxlib is version 0.4.1, but this version of jax requires version >= 0.4.7.\n",
     "jax: 0.4.30\njaxlib: 0.4.30\nnumpy: 1.26.4\n"),
    ("jax-jaxlib-newer-than-jax", "COMPANION_VERSION_MISMATCH",
     "RuntimeError: jaxlib version 0.4.30 is newer than and incompatible with jax version 0.4.26. Please update your "
     "jax and/or jaxlib packages.\n",
     "jaxlib version 0.4.30 is the same as jax version 0.4.30\n"),
    ("jax-requires-jaxlib-version", "COMPANION_VERSION_MISMATCH",
     "ImportError: This version of jax requires jaxlib version >= 0.4.14.\n",
     "Successfully installed jax-0.4.14 jaxlib-0.4.14\n"),
    ("jax-requires-jaxlib-installed", "DEPENDENCY_UNMET",
     "ModuleNotFoundError: jax requires jaxlib to be installed. See https://github.com/jax-ml/jax#installation for "
     "installation instructions.\n",
     "Successfully installed jax-0.4.30 jaxlib-0.4.30 ml-dtypes-0.4.0\n"),
    ("jax-unable-to-load-cuda-component", "CUDA_LIBRARY_VERSION_MISMATCH",
     "RuntimeError: Unable to use CUDA because of the following issues with CUDA components:\n"
     "Unable to load cuSPARSE. Is it installed?\n",
     "Package: cuSPARSE\nVersion JAX was built against: 12300\nMinimum supported: 12100\nInstalled version: 12300\n"),
    ("jax-plugin-not-compatible-with-jaxlib", "COMPANION_VERSION_MISMATCH",
     "/usr/lib/python3.11/site-packages/jax/_src/xla_bridge.py:800: RuntimeWarning: JAX plugin jax_cuda12_plugin "
     "version 0.4.30 is installed, but it is not compatible with the installed jaxlib version 0.4.31, so it will not "
     "be used.\n",
     "jax_cuda12_plugin 0.4.31\njax_cuda12_pjrt 0.4.31\njaxlib 0.4.31\n"),
    ("jax-cuda-backend-no-visible-gpu", "NO_GPU_VISIBLE",
     "2023-09-10 13:47:04 - INFO - Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU "
     "devices.\n",
     "RuntimeError: Unable to initialize backend 'rocm': FAILED_PRECONDITION: No visible GPU devices.\n"),
    ("cupy-multiple-packages-installed", "CUDA_VARIANT_MIXED",
     "UserWarning:\n--------------------------------------------------------------------------------\n\n"
     "  CuPy may not function correctly because multiple CuPy packages are installed\n  in your environment:\n\n"
     "    cupy-cuda11x, cupy-cuda12x\n",
     "cupy-cuda12x              13.3.0\n"),
    ("cupy-failed-to-import", "CUDA_LIBRARY_VERSION_MISMATCH",
     "ImportError:\n================================================================\nFailed to import CuPy.\n\n"
     "If you installed CuPy via wheels (cupy-cudaXXX or cupy-rocm-X-X), make sure that the package matches with the "
     "version of CUDA or ROCm installed.\n",
     "Successfully imported CuPy 13.3.0\n"),
    ("cupy-not-correctly-installed", "CUDA_LIBRARY_VERSION_MISMATCH",
     "ImportError: CuPy is not correctly installed.\n\nIf you are using wheel distribution (cupy-cudaXX), make sure "
     "that the version of CuPy you installed matches with the version of CUDA on your host.\n",
     "CuPy is installed: cupy-cuda12x 13.3.0\n"),
    ("cupy-failed-to-load-library", "CUDA_LIBRARY_VERSION_MISMATCH",
     "UserWarning: CuPy failed to load nvrtc64_120_0.dll: FileNotFoundError: Could not find module "
     "'nvrtc64_120_0.dll' (or one of its dependencies). Try using the full path with constructor syntax.\n",
     "CuPy failed to load an image: the file is not a PNG\n"),
    ("numba-cuda-driver-library-not-found", "NO_NVIDIA_DRIVER",
     "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: \nCUDA driver library cannot be found.\n"
     "If you are sure that a CUDA driver is installed,\ntry setting environment variable NUMBA_CUDA_DRIVER\n"
     "with the file path of the CUDA driver shared library.\n",
     "__CUDA Information__\nCUDA Device Initialized                : True\nCUDA Driver Version                    : 12.4\n"),
    ("numba-cuda-driver-load-error", "NO_NVIDIA_DRIVER",
     "numba.cuda.cudadrv.error.CudaSupportError: Error at driver init: \nPossible CUDA driver libraries are found "
     "but error occurred during load:\n/usr/lib/i386-linux-gnu/libcuda.so: wrong ELF class: ELFCLASS32\n",
     "Found driver at /usr/lib/x86_64-linux-gnu/libcuda.so.1 (loaded)\n"),
    ("numba-device-below-min-cc", "GPU_ARCH_NOT_IN_TORCH_BUILD",
     "numba.cuda.cudadrv.error.CudaSupportError: <CUDA device 0 'b'GeForce GTX 680''> has compute capability < (3, 5)\n",
     "<CUDA device 0 'b'NVIDIA GeForce RTX 3090''> [SUPPORTED]\n"),
    ("numba-nvvm-cc-not-supported", "GPU_ARCH_NOT_IN_TORCH_BUILD",
     "numba.cuda.cudadrv.error.NvvmSupportError: GPU compute capability 3.0 is not supported(requires >=3.5)\n",
     "Compute Capability: 8.6 (supported)\n"),
    ("numba-cuda-toolkit-below-minimum", "CUDA_LIBRARY_VERSION_MISMATCH",
     "/opt/conda/lib/python3.10/site-packages/numba/cuda/cudadrv/nvvm.py:368: UserWarning: CUDA Toolkit 10.2 is "
     "unsupported by Numba - 11.2 is the minimum required version.\n",
     "CUDA Runtime Version                 : 12.4\nCUDA NVIDIA Bindings Available       : True\n"),
    ("numba-detect-cc-not-supported", "GPU_ARCH_NOT_IN_TORCH_BUILD",
     "Found 1 CUDA devices\nid 0      b'GeForce GT 730'                              [NOT SUPPORTED: CC < 3.5]\n"
     "Summary:\n\t0/1 devices are supported\n",
     "Found 1 CUDA devices\nid 0    b'NVIDIA GeForce RTX 3090'                              [SUPPORTED]\n"
     "Summary:\n\t1/1 devices are supported\n"),
    ("numba-libnvvm-not-found", "CUDA_LIBRARY_VERSION_MISMATCH",
     "numba.cuda.cudadrv.error.NvvmSupportError: libNVVM cannot be found. Do `conda install cudatoolkit`:\n"
     "libnvvm.so: cannot open shared object file: No such file or directory\n",
     "NVVM version (2, 0)\nFinding nvvm from CUDA_HOME\n\tnamed  libnvvm.so.4.0.0\n"),
    ("numba-cuda-disabled-by-env", "ENV_VAR_HARMFUL",
     "numba.cuda.cudadrv.error.CudaSupportError: CUDA is disabled due to setting NUMBA_DISABLE_CUDA=1 in the "
     "environment, or because CUDA is unsupported on 32-bit systems.\n",
     "NUMBA_DISABLE_CUDA=0\n"),
    ("bnb-cuda-version-not-shipped", "THIRD_PARTY_EXTENSION_MISMATCH",
     "\U0001f6a8 CUDA VERSION MISMATCH \U0001f6a8\nRequested CUDA version:          12.9\n"
     "Detected PyTorch CUDA version:   12.9\nAvailable pre-compiled versions: \n  - 11.8\n  - 12.1\n",
     "bitsandbytes library load error: none\nCUDA specs: CUDASpecs(highest_compute_capability=(8, 6), "
     "cuda_version_string='121', cuda_version_tuple=(12, 1))\n"),
    ("bnb-cuda-runtime-dependency-missing", "CUDA_LIBRARY_VERSION_MISMATCH",
     "\U0001f6a8 CUDA SETUP ERROR: Missing dependency: libcudart.so.12 \U0001f6a8\n\n"
     "CUDA 12.x runtime libraries were not found in the LD_LIBRARY_PATH.\n",
     "Missing dependency: none (all 14 packages satisfied)\n"),
    ("bnb-native-library-not-available", "THIRD_PARTY_EXTENSION_MISMATCH",
     "RuntimeError: Attempted to use bitsandbytes native library functionality but it's not available.\n",
     "bitsandbytes native library loaded: libbitsandbytes_cuda121.so\n"),
    ("bnb-041-cuda-detection-failed", "THIRD_PARTY_EXTENSION_MISMATCH",
     "================================ERROR=====================================\n"
     "CUDA SETUP: CUDA detection failed! Possible reasons:\n"
     "1. You need to manually override the PyTorch CUDA version.\n2. CUDA driver not installed\n",
     "CUDA SETUP: Detected CUDA version 118\nCUDA SETUP: Loading binary libbitsandbytes_cuda118.so...\n"),
    ("bnb-041-cuda-runtime-not-detected", "CUDA_LIBRARY_VERSION_MISMATCH",
     "CUDA SETUP: Problem: The main issue seems to be that the main CUDA runtime library was not detected.\n"
     "CUDA SETUP: Solution 1: To solve the issue the libcudart.so location needs to be added to the "
     "LD_LIBRARY_PATH variable\n",
     "CUDA SETUP: CUDA runtime path found: /usr/local/cuda/lib64/libcudart.so.11.0\n"),
    ("bnb-041-cuda-library-not-detected", "NO_NVIDIA_DRIVER",
     "CUDA SETUP: Problem: The main issue seems to be that the main CUDA library was not detected or CUDA not "
     "installed.\n",
     "CUDA SETUP: Highest compute capability among GPUs detected: 8.6\n"),
    ("bnb-041-cuda-10-not-supported", "CUDA_LIBRARY_VERSION_MISMATCH",
     "CUDA SETUP: CUDA 10.0 not supported. Please use a different CUDA version.\n",
     "CUDA SETUP: CUDA 11.8 detected, loading libbitsandbytes_cuda118.so\n"),
    ("bnb-043-cuda-binary-not-found", "THIRD_PARTY_EXTENSION_MISMATCH",
     "WARNING:bitsandbytes.cextension:Could not find the bitsandbytes CUDA binary at "
     "PosixPath('/usr/local/lib/python3.10/dist-packages/bitsandbytes/libbitsandbytes_cuda124.so')\n",
     "DEBUG:bitsandbytes.cextension:Loading bitsandbytes native library from: "
     "/usr/local/lib/python3.10/dist-packages/bitsandbytes/libbitsandbytes_cuda121.so\n"),
    ("bnb-043-cuda-setup-failed", "THIRD_PARTY_EXTENSION_MISMATCH",
     "WARNING:bitsandbytes.cextension:\nCUDA Setup failed despite CUDA being available. Please run the following "
     "command to get more information:\n\npython -m bitsandbytes\n",
     "CUDA SETUP: Setup succeeded, CUDA available: True\n"),
    ("bnb-cuda-version-override", "ENV_VAR_HARMFUL",
     "WARNING: BNB_CUDA_VERSION=118 environment variable detected; loading libbitsandbytes_cuda118.so.\n"
     "This can be used to load a bitsandbytes version that is different from the PyTorch CUDA version.\n",
     "BNB_CUDA_VERSION is not set; loading libbitsandbytes_cuda121.so for torch's CUDA 12.1\n"),
    ("deepspeed-ops-built-for-other-torch", "THIRD_PARTY_EXTENSION_MISMATCH",
     "RuntimeError: PyTorch version mismatch! DeepSpeed ops were compiled and installed with a different version "
     "than what is being used at runtime. Please re-install DeepSpeed or switch torch versions. Install torch "
     "version=2.1, Runtime torch version=2.3\n",
     "DeepSpeed general environment info:\ntorch version .................... 2.3.0\n"
     "deepspeed install path ........... ['/usr/lib/python3/site-packages/deepspeed']\n"),
    ("deepspeed-ops-built-for-other-cuda", "THIRD_PARTY_EXTENSION_MISMATCH",
     "RuntimeError: CUDA version mismatch! DeepSpeed ops were compiled and installed with a different version than "
     "what is being used at runtime. Please re-install DeepSpeed or switch torch versions. Install CUDA "
     "version=11.8, Runtime CUDA version=12.1\n",
     "deepspeed info ................... 0.14.0, unknown, unknown\ntorch cuda version ............... 12.1\n"),
    ("deepspeed-cuda-home-missing", "DEPENDENCY_UNMET",
     "deepspeed.ops.op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to compile CUDA op(s)\n",
     "nvcc version ..................... 12.1\nCUDA_HOME=/usr/local/cuda-12.1\n"),
    ("deepspeed-op-cuda-missing-cpu-only", "DEPENDENCY_UNMET",
     " [WARNING]  cpu_adam cuda is missing or is incompatible with installed torch, only cpu ops can be compiled!\n",
     "cpu_adam ............... [NO] ....... [OKAY]\nfused_adam ............. [NO] ....... [OKAY]\n"),
    ("deepspeed-jit-builder-no-cuda-devices", "NO_GPU_VISIBLE",
     "RuntimeError: DeepSpeed JIT builder for 'fused_adam' found no CUDA devices. Set TORCH_CUDA_ARCH_LIST or make "
     "GPUs visible.\n",
     "Using /root/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n"
     "Loading extension module fused_adam...\n"),
    ("ggml-kernel-no-device-code-for-arch", "GPU_ARCH_NOT_IN_TORCH_BUILD",
     "/app/ggml/src/ggml-cuda/mmq.cuh:3884: ERROR: CUDA kernel mul_mat_q has no device code compatible with CUDA "
     "arch 520. ggml-cuda.cu was compiled for: 600,610,700,750\n",
     "ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"),
    ("llama-cpp-no-usable-gpu", "FRAMEWORK_CPU_ONLY_BUILD",
     "warning: no usable GPU found, --gpu-layers option will be ignored\n"
     "warning: one possible reason is that llama.cpp was compiled without GPU support\n"
     "warning: consult docs/build.md for compilation instructions\n",
     "load_tensors: offloaded 33/33 layers to GPU\n"),
    ("ollama-cuda-gpu-too-old", "GPU_ARCH_NOT_IN_TORCH_BUILD",
     'time=2024-05-01T10:00:00.000Z level=INFO source=gpu.go:312 msg="[0] CUDA GPU is too old. Compute Capability '
     'detected: 3.0"\n',
     # ollama/ollama#4008: a PhysX cudart found first reports 1.0, no real GPU's capability: quiet
     "Now: CUDA GPU is too old. Compute Capability detected: 1.0\n"),
    ("ollama-cc-not-in-compiled-archs", "GPU_ARCH_NOT_IN_TORCH_BUILD",
     'time=2025-10-01T10:00:00.000Z level=INFO source=llama_server.go:299 msg="skipping CUDA device \u2014 compute '
     'capability not in compiled architectures" device="NVIDIA GeForce GTX 1050" cc=61 archs="75;80;86;89;90"\n',
     'time=2025-10-01T10:00:00.000Z level=INFO source=types.go:32 msg="inference compute" id=GPU-1 library=CUDA '
     'compute=8.6 name="NVIDIA GeForce RTX 3090"\n'),
    ("ort-cuda-path-set-cuda-not-loaded", "CUDA_LIBRARY_VERSION_MISMATCH",
     "RuntimeError: D:\\a\\_work\\1\\s\\onnxruntime\\python\\onnxruntime_pybind_state.cc:857 "
     "onnxruntime::python::CreateExecutionProviderInstance CUDA_PATH is set but CUDA wasnt able to be loaded. Please "
     "install the correct version of CUDA andcuDNN as mentioned in the GPU requirements page "
     "(https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html#requirements), make sure they're "
     "in the PATH, and that your GPU is supported.\n",
     "CUDA_PATH is set to C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.4\n"),
    ("ort-provider-dll-dependency-missing", "CUDA_LIBRARY_VERSION_MISMATCH",
     "[E:onnxruntime:Default, provider_bridge_ort.cc:2395 onnxruntime::TryGetProviderInfo_CUDA] "
     "D:\\a\\_work\\1\\s\\onnxruntime\\core\\session\\provider_bridge_ort.cc:2034 onnxruntime::ProviderLibrary::Get "
     "[ONNXRuntimeError] : 1 : FAIL : Error loading \"C:\\Python312\\Lib\\site-packages\\onnxruntime\\capi\\"
     "onnxruntime_providers_cuda.dll\" which depends on \"cublasLt64_12.dll\" which is missing. (Error 126: \"The "
     "specified module could not be found.\")\n",
     "Error loading \"C:\\tools\\plugin_host.dll\" which depends on \"msvcp140.dll\" which is missing. (Error 126)\n"),
    ("ort-tensorrt-libraries-missing", "CUDA_LIBRARY_VERSION_MISMATCH",
     "*************** EP Error ***************\nEP Error /onnxruntime_src/onnxruntime/python/"
     "onnxruntime_pybind_state.cc:505 void onnxruntime::python::RegisterTensorRTPluginsAsCustomOps("
     "PySessionOptions&, const onnxruntime::ProviderOptions&) Please install TensorRT libraries as mentioned in the "
     "GPU requirements page, make sure they're in the PATH or LD_LIBRARY_PATH, and that your GPU is supported.\n",
     "Applied providers: ['TensorrtExecutionProvider', 'CUDAExecutionProvider', 'CPUExecutionProvider']\n"),
    ("paddle-built-cuda-above-driver", "DRIVER_TOO_OLD_FOR_TORCH_CUDA",
     "W0522 14:31:24.083271  3337 gpu_resources.cc:196] WARNING: device: 0. The installed Paddle is compiled with "
     "CUDA 11.8, but CUDA runtime version in your machine is 11.6, which may cause serious incompatible bug. Please "
     "recompile or reinstall Paddle with compatible CUDA version.\n",
     "W0522 14:31:24.082360  3337 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute Capability: 8.6, Driver "
     "API Version: 12.2, Runtime API Version: 11.8\n"),
    ("paddle-cuda-cudnn-both-older", "CUDA_LIBRARY_VERSION_MISMATCH",
     "InvalidArgumentError: The installed Paddle is compiled with CUDA11/cuDNN8,but CUDA/cuDNN version in your "
     "machine is CUDA10/cuDNN7. which will cause serious incompatible bug. Please recompile or reinstall Paddle with "
     "compatible CUDA/cuDNN version.\n",
     "W0522 14:31:24.083253  3337 gpu_resources.cc:164] device: 0, cuDNN Version: 8.9.\n"),
    ("paddle-cuda-library-not-configured", "CUDA_LIBRARY_VERSION_MISMATCH",
     "RuntimeError: (PreconditionNotMet) The third-party dynamic library (cudnn64_8.dll) that Paddle depends on is "
     "not configured correctly. (error code is 126)\n  Suggestions:\n",
     # Intel MKL, not a CUDA library: not this row's cause
     "PreconditionNotMetError: The third-party dynamic library (mklml.dll) that Paddle depends on is not configured "
     "correctly. (error code is 126)\n"),
    ("paddle-gpu-arch-not-in-build", "GPU_ARCH_NOT_IN_TORCH_BUILD",
     "W0601 10:00:00.000000  4321 gpu_resources.cc:106] The GPU architecture in your current machine is Pascal, "
     "which is not compatible with Paddle installation with arch: 70 75 80 86 , it is recommended to install the "
     "corresponding wheel package according to the installation information on the official Paddle website.\n",
     "W0601 10:00:00.000000  4321 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute Capability: 6.1, "
     "Driver API Version: 12.2, Runtime API Version: 11.8\n"),
    ("paddle-set-device-not-compiled-with-cuda", "FRAMEWORK_CPU_ONLY_BUILD",
     "ValueError: The device should not be 'gpu', since PaddlePaddle is not compiled with CUDA\n",
     "ValueError: The device should not be 'xpu', since PaddlePaddle is not compiled with XPU\n"),
    ("mxnet-compile-with-use-cuda", "FRAMEWORK_CPU_ONLY_BUILD",
     "terminate called after throwing an instance of 'dmlc::Error'\n  what():  [22:03:01] src/storage/storage.cc:119: "
     "Compile with USE_CUDA=1 to enable GPU usage\n",
     "make USE_CUDA=1 USE_CUDA_PATH=/usr/local/cuda USE_CUDNN=1\n"),
    ("mxnet-gpu-usage-requires-gpu", "NO_GPU_VISIBLE",
     "mxnet.base.MXNetError: [10:00:00] src/storage/storage.cc:112: Check failed: num_gpu_device > 0 (0 vs. 0) : "
     "GPU usage requires at least 1 GPU\n",
     "mxnet.context.num_gpus() = 1\n"),
    ("tensorrt-python-dll-not-on-path", "CUDA_LIBRARY_VERSION_MISMATCH",
     "FileNotFoundError: Could not find: nvinfer_10.dll. Is it on your PATH?\nNote: Paths searched were:\n"
     "['C:\\\\Python311', 'C:\\\\Windows\\\\system32']\n",
     "FileNotFoundError: Could not find: ffmpeg.exe. Is it on your PATH?\n"),
    ("triton-libcuda-cannot-found", "NO_NVIDIA_DRIVER",
     '  File "/usr/local/lib/python3.10/dist-packages/triton/common/build.py", line 30, in libcuda_dirs\n'
     "    assert any(os.path.exists(os.path.join(path, 'libcuda.so')) for path in dirs), msg\n"
     "AssertionError: libcuda.so cannot found!\n",
     "\tlibcuda.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libcuda.so.1\n"),
]


def _signature_findings(text, compat, row):
    return [f for f in findings(text, compat) if f.code.startswith(f"messages.signature/{row}")]


@pytest.mark.parametrize("row,category,message,near_miss", CASES, ids=[c[0] for c in CASES])
def test_framework_message_gives_its_category_and_its_near_miss_stays_quiet(compat, row, category, message,
                                                                          near_miss) -> None:
    got = _signature_findings(message, compat, row)
    assert got, f"{row} did not fire on the message as its source prints it"
    assert any(f.category == category and f.severity in ("warning", "error") for f in got), \
        [(f.category, f.severity) for f in got]
    assert not _signature_findings(near_miss, compat, row), f"{row} fired on its near-miss"


# a text box that wraps at 80 columns breaks these messages mid-sentence, with no indentation; the messages reader
# joins the pieces back (an unfinished sentence, a lower-case start) and each row still reads them. JAX's
# "Unable to initialize backend 'cuda':" / "FAILED_PRECONDITION: No visible GPU devices." splits after a colon
# into a line of its own that names no backend, which the row must not read alone (ROCm prints the same words)
WRAP_UNREAD = {"jax-cuda-backend-no-visible-gpu"}


@pytest.mark.parametrize("row,category,message,near_miss", [c for c in CASES if c[0] not in WRAP_UNREAD],
                         ids=[c[0] for c in CASES if c[0] not in WRAP_UNREAD])
def test_framework_message_wrapped_at_80_columns_still_gives_its_category(compat, row, category, message,
                                                                          near_miss) -> None:
    wrapped = "\n".join(textwrap.fill(line, width=80, break_long_words=False, break_on_hyphens=False)
                        for line in message.split("\n"))
    got = _signature_findings(wrapped, compat, row)
    assert any(f.category == category and f.severity in ("warning", "error") for f in got), (row, wrapped)


def test_every_case_names_a_row_of_the_catalogue(compat) -> None:
    from envdoctor.compat.signatures import signatures_from

    ids = {s.id for s in signatures_from(compat)}
    assert {c[0] for c in CASES} <= ids
    assert len({c[0] for c in CASES}) == len(CASES)


def test_cudart_stub_notice_is_only_a_note_where_the_paste_says_there_is_no_nvidia_gpu(compat) -> None:
    # TSL prints it on every CPU-only machine: there it is expected, never a problem
    text = ("I have no NVIDIA GPU on this laptop, only Intel integrated graphics.\n"
            "2024-01-08 14:10:02.113432: I external/local_tsl/tsl/cuda/cudart_stub.cc:31] Could not find cuda "
            "drivers on your machine, GPU will not be used.\n")
    got = _signature_findings(text, compat, "tf-cudart-stub-no-cuda-drivers")
    assert got and all(f.severity == "info" for f in got), [(f.category, f.severity) for f in got]
