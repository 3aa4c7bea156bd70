"""Messages of the CUDA toolchain and of GPU programs that are not ML frameworks, taken from their source before
anyone pastes them (issue 42, kbapps): nvcc's CUDA 11+ wording for an unknown architecture, FFmpeg's NVENC, Blender's
Cycles, hashcat and cuDNN 8 on Windows. Each case is the message as its source formats it, with realistic values (the
source's printf filled in), and a near miss that must not be read as that cause."""

from __future__ import annotations

import pytest

from tests.unit.diagnose.pastes import assert_names_its_cause, by_row

# (row id, the source's message with realistic values, the category, the severity)
CASES = [
    # nvcc 11.x asked for Kepler sm_30 (dropped in CUDA 11.0), as pycuda's compiler.py runs it
    ("nvcc-unsupported-gpu-architecture",
     "pycuda.driver.CompileError: nvcc compilation of /tmp/tmpab12cd/kernel.cu failed\n"
     "[command: nvcc --cubin -arch sm_30 -I/usr/lib/python3/dist-packages/pycuda/cuda kernel.cu]\n"
     "[stderr:\n"
     "nvcc fatal   : Value 'sm_30' is not defined for option 'gpu-architecture'\n"
     "]\n",
     "GPU_ARCH_NOT_IN_TORCH_BUILD", "error"),
    # an old toolkit asked for a newer GPU (CUDA 9's nvcc and Turing)
    ("nvcc-unsupported-gpu-architecture",
     '"/usr/local/cuda/bin/nvcc" -arch=sm_75 --cubin "kernel.cu" -o "cycles_kernel_sm75.cubin" -m64\n'
     "nvcc fatal   : Value 'sm_75' is not defined for option 'gpu-architecture'\n"
     "CUDA kernel compilation failed, see console for details.\n",
     "GPU_ARCH_NOT_IN_TORCH_BUILD", "error"),
    ("ffmpeg-nvenc-api-version-too-new",
     "[h264_nvenc @ 0x5612c0a3e1c0] Loaded Nvenc version 12.0\n"
     "[h264_nvenc @ 0x5612c0a3e1c0] Driver does not support the required nvenc API version. Required: 12.1 Found: 12.0\n"
     "[h264_nvenc @ 0x5612c0a3e1c0] The minimum required Nvidia driver for nvenc is 530.41.03 or newer\n"
     "Error initializing output stream 0:0 -- Error while opening encoder for output stream #0:0\n",
     "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "error"),
    ("blender-cycles-no-cuda-kernel-for-cc",
     "Error: CUDA binary kernel for this graphics card compute capability (3.0) not found.\n",
     "GPU_ARCH_NOT_IN_TORCH_BUILD", "error"),
    ("blender-cycles-cc-below-minimum",
     "CUDA backend requires compute capability 5.0 or up, but found 3.5. Your GPU is not supported.\n",
     "GPU_ARCH_NOT_IN_TORCH_BUILD", "error"),
    # the 2.7x wording
    ("blender-cycles-cc-below-minimum",
     "CUDA device requires compute capability 2.0 or up, found 1.1. Your GPU is not supported.\n",
     "GPU_ARCH_NOT_IN_TORCH_BUILD", "error"),
    ("hashcat-outdated-nvidia-driver",
     "OpenCL Platform #1: NVIDIA Corporation\n"
     "======================================\n"
     "* Device #1: GeForce GTX 970, 1009/4036 MB allocatable, 13MCU\n\n"
     "* Device #1: Outdated or broken NVIDIA driver detected!\n\n"
     "You are STRONGLY encouraged to use the official supported NVIDIA driver\n"
     "See hashcat's homepage for official supported NVIDIA drivers\n",
     "DRIVER_OUTDATED", "error"),
    ("cudnn8-windows-zlibwapi-missing",
     "[2023/03/31 03:19:20] ppocr WARNING: The first GPU is used for inference by default, GPU ID: 0\n"
     "Could not locate zlibwapi.dll. Please make sure it is in your library path!\n",
     "CUDA_LIBRARY_VERSION_MISMATCH", "error"),
    # ffnvcodec's loader in a CUDA image started without the video capability
    ("ffmpeg-nvcodec-library-not-loaded",
     "[h264_nvenc @ 0x55bd94c6bb40] Cannot load libnvidia-encode.so.1\n"
     "[h264_nvenc @ 0x55bd94c6bb40] The minimum required Nvidia driver for nvenc is 435.21 or newer\n"
     "Error initializing output stream 0:0 -- Error while opening encoder for output stream #0:0\n",
     "CONTAINER_NO_GPU_RUNTIME", "warning"),
    ("ffmpeg-nvcodec-library-not-loaded",
     "[h264_cuvid @ 0x5600d1e0a2c0] Cannot load libnvcuvid.so.1\n"
     "[h264_cuvid @ 0x5600d1e0a2c0] Failed loading nvcuvid.\n",
     "CONTAINER_NO_GPU_RUNTIME", "warning"),
    # OBS Studio's NVENC encoder, old (jim-nvenc) and new (obs-nvenc's test process) logs
    ("nvenc-api-newer-than-driver",
     "20:14:03.551: [jim-nvenc] Current driver version does not support this NVENC version, please upgrade your driver\n",
     "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "error"),
    ("nvenc-api-newer-than-driver",
     "20:14:03.552: [NVENC] Test process failed: outdated_driver\n",
     "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "error"),
    # the Video Codec SDK's NvEncoder class, as VideoProcessingFramework raises it
    ("nvenc-api-newer-than-driver",
     "RuntimeError: LoadNvEncApi : Current Driver Version does not support this NvEncodeAPI version, please upgrade "
     "driver at /src/PyNvCodec/TC/src/NvEncoder.cpp:82\n",
     "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "error"),
    # XMRig's start-up banner with a plugin whose CUDA the driver does not support
    ("xmrig-cuda-no-devices",
     " * CPU          Intel(R) Core(TM) i7-9700K CPU @ 3.60GHz (1) 64-bit AES\n"
     " * CUDA         disabled (no devices)\n",
     "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "warning"),
    # cuDNN 8's loader looking for the cuBLAS of its CUDA major (faster-whisper on Windows)
    ("cudnn-sublibrary-not-located",
     "[2023-11-22 10:01:02.345] [ctranslate2] [thread 1234] [info] CPU: GenuineIntel (SSE4.1=true, AVX=true, AVX2=true)\n"
     "Could not locate cublasLt64_12.dll. Please make sure it is in your library path!\n",
     "CUDA_LIBRARY_VERSION_MISMATCH", "error"),
    # CUDA 12's host_config.h and a Visual Studio 2026 (a torch extension build)
    ("unsupported-msvc-version",
     "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v12.3\\include\\crt/host_config.h(164): fatal error C1189: "
     "#error:  -- unsupported Microsoft Visual Studio version! Only the versions between 2017 and 2022 (inclusive) are "
     "supported! The nvcc flag '-allow-unsupported-compiler' can be used to override this version check; however, "
     "using an unsupported host compiler may cause compilation failure or incorrect run time execution. Use at your "
     "own risk.\n",
     "HOST_COMPILER_TOO_NEW", "error"),
    # CUDA 9.2's wording
    ("unsupported-msvc-version",
     "C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v9.2\\include\\crt/host_config.h(133): fatal error C1189: "
     "#error:  -- unsupported Microsoft Visual Studio version! Only the versions 2012, 2013, 2015 and 2017 are supported!\n",
     "HOST_COMPILER_TOO_NEW", "error"),
    # TensorRT 10 on a Pascal GPU: the runtime's and the builder's wordings
    ("tensorrt-unsupported-sm",
     "[04/25/2024-15:52:54] [TRT] [E] 1: [caskUtils.cpp::nvinfer1::rt::task::trtSmToCask::193] Error Code 1: "
     "Internal Error (Unsupported SM: 0x601)\n",
     "GPU_ARCH_NOT_IN_TORCH_BUILD", "error"),
    ("tensorrt-unsupported-sm",
     "[02/18/2025-07:04:51] [TRT] [E] IBuilder::buildSerializedNetwork: Error Code 9: API Usage Error "
     "(Target GPU SM 61 is not supported by this TensorRT release.)\n",
     "GPU_ARCH_NOT_IN_TORCH_BUILD", "error"),
    # Blender's Cycles log (--debug-cycles) and an OptiX program printing the status name
    ("optix-driver-too-old",
     "W0312 10:22:41.123456  4242 device.cpp:37] OptiX initialization failed because the installed NVIDIA driver is "
     "too old. Please update to the latest driver first!\n",
     "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "error"),
    ("optix-driver-too-old",
     "Optix call 'optixInit()' failed: OPTIX_ERROR_UNSUPPORTED_ABI_VERSION (7801)\n",
     "DRIVER_TOO_OLD_FOR_TORCH_CUDA", "error"),
]


@pytest.mark.parametrize("row,text,category,severity", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_the_sources_message_names_its_cause(row, text, category, severity, compat):
    assert_names_its_cause(text, compat, row, category, severity)


def test_the_versions_are_read_from_the_message(compat):
    f = by_row(CASES[0][1], compat)["nvcc-unsupported-gpu-architecture"]
    assert "sm_30" in f.summary + f.detail + str(f.evidence)
    g = by_row(CASES[2][1], compat)["ffmpeg-nvenc-api-version-too-new"]
    assert "12.1" in g.summary + g.detail + str(g.evidence)


NEAR_MISSES = [
    # another option of nvcc refused: not the architecture
    ("nvcc-unsupported-gpu-architecture", "nvcc fatal   : Value 'c++20' is not defined for option 'std'\n"),
    # FFmpeg loading NVENC fine
    ("ffmpeg-nvenc-api-version-too-new", "[h264_nvenc @ 0x5612c0a3e1c0] Loaded Nvenc version 12.1\n"
                                         "[h264_nvenc @ 0x5612c0a3e1c0] Nvenc initialized successfully\n"),
    # Cycles found its kernel
    ("blender-cycles-no-cuda-kernel-for-cc", "Using precompiled kernel for compute capability (8.6): cycles_kernel_sm_86.cubin\n"),
    ("blender-cycles-cc-below-minimum", "Device supports compute capability 8.6; CUDA backend requires no JIT for it.\n"),
    # hashcat's AMD check, another vendor and another cause
    ("hashcat-outdated-nvidia-driver", "* Device #1: Outdated or broken AMD driver detected!\n"),
    # another reason of OBS's NVENC test process: no NVENC-capable device, not the driver's age
    ("nvenc-api-newer-than-driver", "20:14:03.552: [NVENC] Test process failed: no_supported_devices\n"),
    # XMRig's backend turned off in the config, or the plugin absent: not the driver's age
    ("xmrig-cuda-no-devices", " * CUDA         disabled (failed to load CUDA plugin)\n"),
    ("cudnn-sublibrary-not-located", "Could not locate cublas.h. Please make sure CUDA_HOME points to the toolkit\n"),
    # host_config.h's deprecation note: the build goes on
    ("unsupported-msvc-version", "host_config.h(160): warning: support for this version of Microsoft Visual Studio has been "
                                 "deprecated! Only the versions between 2017 and 2022 (inclusive) are supported!\n"),
    # NVRTC's own refusal is another row's (nvrtc's architecture list), not TensorRT's kernels
    ("tensorrt-unsupported-sm", "[TRT] [W] SM version not supported in this NVRTC version\n"),
    # another OptiX status: not the driver's age
    ("optix-driver-too-old", "W0312 10:22:41.1 device.cpp:41] OptiX initialization failed with error code 7804\n"),
    # libcuda itself missing is the driver rows' case, not the video libraries'
    ("ffmpeg-nvcodec-library-not-loaded", "[AVHWDeviceContext @ 0x55d0c1a3e240] Cannot load libcuda.so.1\n"),
    ("cudnn8-windows-zlibwapi-missing", "Loaded zlibwapi.dll from C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v11.8\\bin\n"),
]


@pytest.mark.parametrize("row,text", NEAR_MISSES, ids=[c[0] for c in NEAR_MISSES])
def test_a_near_miss_is_not_read_as_that_cause(row, text, compat):
    assert row not in by_row(text, compat)  # nothing recognisable at all counts as not the row either
